// Residual add on the CPU: the reference for other backends.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Runs `args` (contract: ResidualAddArgs in kernels/backend.h) on host memory,
// single-threaded. Returns ValidateResidualAddArgs's error for bad arguments.
Status CpuResidualAdd(const ResidualAddArgs& args);

}  // namespace fleetsim::kernels
