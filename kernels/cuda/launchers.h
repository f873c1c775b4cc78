// Launchers of fleetsim's own CUDA kernels, one op per .cu file (CUDA sources
// only). Each validates `args` (Validate<Op>Args in kernels/backend.h), checks
// the kernel's own limits, enqueues the kernel on `stream` and checks the
// launch; errors are Statuses with file:line. The contracts are the Args
// structs in kernels/backend.h.
#pragma once

#include <cuda_runtime.h>

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

Status LaunchRmsNorm(cudaStream_t stream, const RmsNormArgs& args);
Status LaunchSiluMul(cudaStream_t stream, const SiluMulArgs& args);
Status LaunchResidualAdd(cudaStream_t stream, const ResidualAddArgs& args);
Status LaunchEmbedding(cudaStream_t stream, const EmbeddingArgs& args);
Status LaunchRope(cudaStream_t stream, const RopeArgs& args);
// Limits of the simple kernels: head_dim <= 512, num_heads <= 65535.
Status LaunchAttentionPrefill(cudaStream_t stream, const AttentionPrefillArgs& args);
Status LaunchAttentionDecode(cudaStream_t stream, const AttentionDecodeArgs& args);
Status LaunchKvCacheWrite(cudaStream_t stream, const KvCacheWriteArgs& args);
Status LaunchArgmax(cudaStream_t stream, const ArgmaxArgs& args);

}  // namespace fleetsim::kernels
