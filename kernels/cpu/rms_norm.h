// RMSNorm on the CPU: the reference the other backends are compared with.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Runs `args` (contract: RmsNormArgs in kernels/backend.h) on host memory,
// single-threaded. Returns ValidateRmsNormArgs's error for bad arguments.
Status CpuRmsNorm(const RmsNormArgs& args);

}  // namespace fleetsim::kernels
