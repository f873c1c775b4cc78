// GEMM launcher on cuBLAS (CUDA sources only; see gemm.cu).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Enqueues `args` (contract: GemmArgs in kernels/backend.h) on `stream`
// through `handle`. Returns ValidateGemmArgs's error, an error for sizes
// beyond cuBLAS's 32-bit int arguments, or the cuBLAS error with file:line.
Status LaunchGemm(cublasHandle_t handle, cudaStream_t stream, const GemmArgs& args);

}  // namespace fleetsim::kernels
