// GEMM on the CPU: the reference every other backend's GEMM is compared with.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Runs `args` (see GemmArgs in kernels/backend.h for the contract) on host
// memory with Eigen, single-threaded. fp16 and bf16 operands are widened to
// fp32 scratch matrices, multiplied in fp32, and C is rounded back once.
// Returns ValidateGemmArgs's error for inconsistent arguments.
Status CpuGemm(const GemmArgs& args);

}  // namespace fleetsim::kernels
