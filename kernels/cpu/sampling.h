// The ops live mode adds to a forward pass on the CPU (the references for
// other backends): writing new tokens' K/V into the paged cache, and greedy
// sampling.
#pragma once

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// Contract: KvCacheWriteArgs in kernels/backend.h. Host memory, one thread.
Status CpuKvCacheWrite(const KvCacheWriteArgs& args);
// Contract: ArgmaxArgs in kernels/backend.h. Host memory, one thread.
Status CpuArgmax(const ArgmaxArgs& args);

}  // namespace fleetsim::kernels
