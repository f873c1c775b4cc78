// SiLU-gated activation (SwiGLU) on the CPU: the reference for other backends.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Runs `args` (contract: SiluMulArgs in kernels/backend.h) on host memory,
// single-threaded. Returns ValidateSiluMulArgs's error for bad arguments.
Status CpuSiluMul(const SiluMulArgs& args);

}  // namespace fleetsim::kernels
