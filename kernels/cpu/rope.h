// Rotary position embedding (Llama, rotate-half) on the CPU: the reference
// for other backends.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Runs `args` (contract: RopeArgs in kernels/backend.h) on host memory,
// single-threaded. Returns ValidateRopeArgs's error for bad arguments.
Status CpuRope(const RopeArgs& args);

}  // namespace fleetsim::kernels
