#include "sim/cluster/vllm_scheduler.h"

#include <algorithm>
#include <vector>

namespace fleetsim {

Status VllmScheduler::Make(const SchedulerLimits& limits, const SchedulerParams& params,
                           std::unique_ptr<BatchScheduler>* out) {
  FLEETSIM_RETURN_IF_ERROR(sched::OnlyParams(params, {}));
  *out = std::make_unique<VllmScheduler>(limits);
  return Status::Ok();
}

void VllmScheduler::Schedule(ReplicaState& state, SimTime now, Batch* batch) {
  int64_t budget = limits_.max_num_batched_tokens;
  const int64_t preemptions_before = state.preemptions();

  // 0. Swapped requests (swap preemption only) rejoin the decoders.
  sched::ResumeSwapped(state, limits_.max_num_seqs, batch);

  // 1. Running decoders, one token each; preempt until their blocks fit.
  budget -= sched::RunDecodes(state, now, batch);

  // 2. Running requests still in prefill, in admission order. Copy: a
  // preemption edits the list.
  std::vector<SeqId> prefilling = state.prefilling();
  for (SeqId id : prefilling) {
    if (budget <= 0) break;
    if (state.seq(id).phase != SeqPhase::kPrefill) continue;  // preempted meanwhile
    const int32_t tokens = static_cast<int32_t>(std::min<int64_t>(state.PrefillLeft(id), budget));
    bool preempted_self = false;
    while (!state.kv().CanAllocate(state.ChunkBlocksNeeded(id, tokens))) {
      SeqId victim = state.PreemptVictim(batch, now);
      if (victim == kNoSeq || victim == id) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;
    state.AddChunk(id, tokens, batch);
    budget -= tokens;
  }

  // 3. Waiting requests, first come first served, each reusing its cached
  // prefix; none in a step that preempted (schedule(): `if not
  // preempted_reqs`), when memory has just run short.
  if (state.preemptions() != preemptions_before) return;
  while (budget > 0 && !state.waiting().empty() && state.num_running() < limits_.max_num_seqs) {
    if (state.TryAdmitFront({.max_tokens = budget}, batch) == kNoSeq) break;
    budget -= batch->chunks.back().tokens;
  }
}

}  // namespace fleetsim
