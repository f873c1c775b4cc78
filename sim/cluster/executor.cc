#include "sim/cluster/executor.h"

#include <algorithm>

namespace fleetsim {

void SimulatedExecutor::Launch(uint64_t batch_id, const BatchShape& shape) {
  // With pp stages a batch occupies the first stage for 1/pp of its time;
  // the next batch can enter once the stage frees. In the spine pp = 1, so
  // batches run back to back.
  const SimTime duration = perf_.IterationNs(shape);
  const SimTime start = std::max(sim_.now(), busy_until_);
  const SimTime end = start + duration;
  busy_until_ = start + duration / depth_;
  sim_.At(end, [this, batch_id] { done_(batch_id); });
}

}  // namespace fleetsim
