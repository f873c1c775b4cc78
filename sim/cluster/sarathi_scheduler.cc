#include "sim/cluster/sarathi_scheduler.h"

#include <algorithm>

#include "sim/cluster/vllm_scheduler.h"

namespace fleetsim {

SarathiScheduler::SarathiScheduler(const SchedulerLimits& limits, const Options& options)
    : options_(options), max_num_seqs_(std::min(limits.max_num_seqs, options.chunk_size)) {}

Status SarathiScheduler::Make(const SchedulerLimits& limits, const SchedulerParams& params,
                              std::unique_ptr<BatchScheduler>* out) {
  FLEETSIM_RETURN_IF_ERROR(sched::OnlyParams(params, {"chunk_size"}));
  Options o;
  FLEETSIM_RETURN_IF_ERROR(sched::IntParam(params, "chunk_size", 1, int64_t{1} << 24, &o.chunk_size));
  *out = std::make_unique<SarathiScheduler>(limits, o);
  return Status::Ok();
}

void SarathiScheduler::Schedule(ReplicaState& state, SimTime now, Batch* batch) {
  ScheduleRunningFirst(state, now, options_.chunk_size, max_num_seqs_, batch);
}

}  // namespace fleetsim
