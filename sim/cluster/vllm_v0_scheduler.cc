#include "sim/cluster/vllm_v0_scheduler.h"

#include <cmath>

namespace fleetsim {

Status VllmV0Scheduler::Make(const SchedulerLimits& limits, const SchedulerParams& params,
                             std::unique_ptr<BatchScheduler>* out) {
  FLEETSIM_RETURN_IF_ERROR(sched::OnlyParams(params, {"watermark"}));
  Options o;
  FLEETSIM_RETURN_IF_ERROR(sched::Param(params, "watermark", 0.0, 0.5, &o.watermark));
  if (limits.max_num_batched_tokens < limits.max_model_len)
    return Status::Invalid("max_num_batched_tokens: vllm_v0 runs whole prompts, so it needs at least "
                           "max_model_len (" + std::to_string(limits.max_model_len) + ") tokens, got " +
                           std::to_string(limits.max_num_batched_tokens));
  *out = std::make_unique<VllmV0Scheduler>(limits, o);
  return Status::Ok();
}

void VllmV0Scheduler::Schedule(ReplicaState& state, SimTime now, Batch* batch) {
  const int64_t watermark =
      static_cast<int64_t>(std::ceil(options_.watermark * static_cast<double>(state.kv().total_blocks())));
  // Prefills, only when nothing waits in swap (V0 gives swapped requests
  // precedence over new ones).
  if (state.swapped().empty()) {
    int64_t budget = limits_.max_num_batched_tokens;
    while (!state.waiting().empty() && state.num_running() < limits_.max_num_seqs) {
      if (state.TryAdmitFront({.max_tokens = budget, .whole = true, .keep_free = watermark}, batch) == kNoSeq) break;
      budget -= batch->chunks.back().tokens;
    }
    if (!batch->chunks.empty()) return;
  }
  sched::ResumeSwapped(state, limits_.max_num_seqs, batch);
  sched::RunDecodes(state, now, batch);
}

}  // namespace fleetsim
