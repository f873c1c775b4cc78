// GEMM on the CPU: the reference every other backend's GEMM is compared with.
#pragma once

#include <vector>

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// fp32 working copies of 16-bit operands, kept between calls by their owner
// (CpuBackend) so that a timed GEMM does not allocate and page-fault fresh
// scratch memory on every call. Grows, never shrinks.
struct GemmScratch {
  std::vector<float> a, b, c;
};

// Runs `args` (see GemmArgs in kernels/backend.h for the contract) on host
// memory with Eigen, single-threaded. fp16 and bf16 operands are widened to
// fp32 scratch matrices (in *scratch when given, else temporaries),
// multiplied in fp32, and C is rounded back once. Returns
// ValidateGemmArgs's error for inconsistent arguments.
Status CpuGemm(const GemmArgs& args, GemmScratch* scratch = nullptr);

}  // namespace fleetsim::kernels
