#include "sim/cluster/vllm_scheduler.h"

#include <algorithm>
#include <vector>

namespace fleetsim {

void VllmScheduler::Schedule(ReplicaState& state, SimTime now, Batch* batch) {
  int64_t budget = limits_.max_num_batched_tokens;

  // 1. Running decoders, one token each. They come first in the running
  // order; preempt until their new blocks fit.
  while (state.num_decoding() > 0 && !state.kv().CanAllocate(state.DecodeBlocksNeeded())) {
    if (state.PreemptLowestPriority(*batch, now) == kNoSeq) break;
  }
  if (state.num_decoding() > 0 && state.kv().CanAllocate(state.DecodeBlocksNeeded())) {
    state.AddDecodes(batch);
    budget -= batch->decode_seqs;
  }

  // 2. Running requests still in prefill, in admission order. Copy: a
  // preemption edits the list.
  std::vector<SeqId> prefilling = state.prefilling();
  for (SeqId id : prefilling) {
    if (budget <= 0) break;
    if (state.seq(id).phase != SeqPhase::kPrefill) continue;  // preempted meanwhile
    const int32_t tokens = static_cast<int32_t>(std::min<int64_t>(state.PrefillLeft(id), budget));
    bool preempted_self = false;
    while (!state.kv().CanAllocate(state.ChunkBlocksNeeded(id, tokens))) {
      SeqId victim = state.PreemptLowestPriority(*batch, now);
      if (victim == kNoSeq || victim == id) {
        preempted_self = true;
        break;
      }
    }
    if (preempted_self) break;
    state.AddChunk(id, tokens, batch);
    budget -= tokens;
  }

  // 3. Waiting requests, first come first served.
  while (budget > 0 && !state.waiting().empty() && state.num_running() < limits_.max_num_seqs) {
    const Seq& front = state.seq(state.waiting().front());
    const int64_t need = front.prefill_target;  // nothing in KV yet
    const int32_t tokens = static_cast<int32_t>(std::min<int64_t>(need, budget));
    if (!state.kv().CanAllocate(state.kv().BlocksFor(tokens))) break;
    SeqId id = state.AdmitFront();
    state.AddChunk(id, tokens, batch);
    budget -= tokens;
  }
}

void RegisterBuiltinSchedulers(SchedulerRegistry* registry) {
  registry->Add("vllm",
                "vLLM V1 (default): running first, chunked prefill fills one token budget, "
                "preempt latest-arrived by recompute",
                [](const SchedulerLimits& limits, std::unique_ptr<BatchScheduler>* out) {
                  *out = std::make_unique<VllmScheduler>(limits);
                  return Status::Ok();
                });
}

}  // namespace fleetsim
