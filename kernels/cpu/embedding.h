// Token embedding lookup on the CPU: the reference for other backends.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Runs `args` (contract: EmbeddingArgs in kernels/backend.h) on host memory,
// single-threaded. Returns ValidateEmbeddingArgs's error for bad arguments.
Status CpuEmbedding(const EmbeddingArgs& args);

}  // namespace fleetsim::kernels
