#include "sim/cluster/orca_scheduler.h"

namespace fleetsim {

Status OrcaScheduler::Make(const SchedulerLimits& limits, const SchedulerParams& params,
                           std::unique_ptr<BatchScheduler>* out) {
  FLEETSIM_RETURN_IF_ERROR(sched::OnlyParams(params, {"reserve_request_length"}));
  int64_t flag = 0;
  FLEETSIM_RETURN_IF_ERROR(sched::IntParam(params, "reserve_request_length", 0, 1, &flag));
  Options o;
  o.reserve_request_length = flag == 1;
  *out = std::make_unique<OrcaScheduler>(limits, o);
  return Status::Ok();
}

void OrcaScheduler::Schedule(ReplicaState& state, SimTime now, Batch* batch) {
  sched::ResumeSwapped(state, limits_.max_num_seqs, batch);
  sched::RunDecodes(state, now, batch);  // reserved: needs no new blocks
  int64_t budget = limits_.max_num_batched_tokens;
  bool admitted = false;
  while (!state.waiting().empty() && state.num_running() < limits_.max_num_seqs) {
    const Seq& front = state.seq(state.waiting().front());
    const int64_t reserve = options_.reserve_request_length
                                ? static_cast<int64_t>(front.req.prompt_tokens) + front.req.output_tokens
                                : limits_.max_model_len;
    const int32_t tokens = front.prefill_target;
    if (admitted && tokens > budget) break;
    if (!state.kv().CanAllocate(state.kv().BlocksFor(reserve))) break;
    const SeqId id = state.AdmitFront(reserve);
    state.AddChunk(id, tokens, batch);
    budget -= tokens;
    admitted = true;
  }
}

}  // namespace fleetsim
