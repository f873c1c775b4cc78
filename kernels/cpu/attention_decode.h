// Paged grouped-query decode attention on the CPU: the reference for other
// backends.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Runs `args` (contract: AttentionDecodeArgs in kernels/backend.h) on host memory,
// single-threaded. Returns ValidateAttentionDecodeArgs's error for bad arguments.
Status CpuAttentionDecode(const AttentionDecodeArgs& args);

}  // namespace fleetsim::kernels
