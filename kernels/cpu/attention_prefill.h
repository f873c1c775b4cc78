// Causal grouped-query prefill attention on the CPU: the reference for other
// backends.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Runs `args` (contract: AttentionPrefillArgs in kernels/backend.h) on host memory,
// single-threaded. Returns ValidateAttentionPrefillArgs's error for bad arguments.
Status CpuAttentionPrefill(const AttentionPrefillArgs& args);

}  // namespace fleetsim::kernels
