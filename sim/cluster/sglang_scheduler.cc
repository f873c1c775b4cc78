#include "sim/cluster/sglang_scheduler.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fleetsim {

SglangScheduler::SglangScheduler(const SchedulerLimits& limits, const Options& options)
    : limits_(limits), options_(options) {
  if (options_.chunked_prefill_size <= 0) options_.chunked_prefill_size = limits.max_num_batched_tokens;
  init_ratio_ = std::min(1.0, options_.init_new_token_ratio * options_.schedule_conservativeness);
  min_ratio_ = std::min(init_ratio_, options_.min_new_token_ratio * options_.schedule_conservativeness);
  decay_ = (init_ratio_ - min_ratio_) / static_cast<double>(options_.new_token_ratio_decay_steps);
  ratio_ = init_ratio_;
}

Status SglangScheduler::Make(const SchedulerLimits& limits, const SchedulerParams& params,
                             std::unique_ptr<BatchScheduler>* out) {
  FLEETSIM_RETURN_IF_ERROR(sched::OnlyParams(
      params, {"chunked_prefill_size", "max_prefill_tokens", "schedule_conservativeness", "init_new_token_ratio",
               "min_new_token_ratio", "new_token_ratio_decay_steps", "clip_max_new_tokens"}));
  Options o;
  const int64_t kBig = int64_t{1} << 30;
  FLEETSIM_RETURN_IF_ERROR(sched::IntParam(params, "chunked_prefill_size", 1, kBig, &o.chunked_prefill_size));
  FLEETSIM_RETURN_IF_ERROR(sched::IntParam(params, "max_prefill_tokens", 1, kBig, &o.max_prefill_tokens));
  FLEETSIM_RETURN_IF_ERROR(sched::Param(params, "schedule_conservativeness", 0.01, 100, &o.schedule_conservativeness));
  FLEETSIM_RETURN_IF_ERROR(sched::Param(params, "init_new_token_ratio", 0, 1, &o.init_new_token_ratio));
  FLEETSIM_RETURN_IF_ERROR(sched::Param(params, "min_new_token_ratio", 0, 1, &o.min_new_token_ratio));
  FLEETSIM_RETURN_IF_ERROR(sched::IntParam(params, "new_token_ratio_decay_steps", 1, kBig, &o.new_token_ratio_decay_steps));
  FLEETSIM_RETURN_IF_ERROR(sched::IntParam(params, "clip_max_new_tokens", 1, kBig, &o.clip_max_new_tokens));
  *out = std::make_unique<SglangScheduler>(limits, o);
  return Status::Ok();
}

void SglangScheduler::Schedule(ReplicaState& state, SimTime now, Batch* batch) {
  const int64_t block = state.kv().block_size();
  // Tokens of KV the running requests are expected to still need. The clip
  // is applied to the total, an upper bound of SGLang's per-request clip.
  const double running_future =
      std::min<double>(static_cast<double>(state.RemainingOutputTokens()),
                       static_cast<double>(options_.clip_max_new_tokens) * static_cast<double>(state.num_running())) *
      ratio_;
  double room = static_cast<double>(state.kv().free_blocks() * block) - running_future;
  int64_t prefill_budget = options_.max_prefill_tokens;
  int64_t chunk_budget = options_.chunked_prefill_size;

  // 1. The request being chunked continues first.
  std::vector<SeqId> prefilling = state.prefilling();
  for (SeqId id : prefilling) {
    if (chunk_budget <= 0) break;
    const int32_t tokens = static_cast<int32_t>(std::min<int64_t>(state.PrefillLeft(id), chunk_budget));
    if (!state.kv().CanAllocate(state.ChunkBlocksNeeded(id, tokens))) break;
    state.AddChunk(id, tokens, batch);
    chunk_budget -= tokens;
    prefill_budget -= tokens;
    room -= tokens;
  }
  // 2. New requests while their prompt and estimated output fit the room.
  while (chunk_budget > 0 && prefill_budget > 0 && !state.waiting().empty() &&
         state.num_running() < limits_.max_num_seqs) {
    const Seq& front = state.seq(state.waiting().front());
    const double estimate =
        static_cast<double>(std::min<int64_t>(front.req.output_tokens - front.generated, options_.clip_max_new_tokens)) *
        ratio_;
    // A radix-tree hit needs no new KV for the cached part.
    const double extend = static_cast<double>(front.prefill_target - state.FrontCachedTokens());
    if (extend + estimate > room) break;
    if (state.TryAdmitFront(std::min(chunk_budget, prefill_budget), /*whole=*/false, /*keep_free=*/0, batch) ==
        kNoSeq)
      break;
    const int32_t tokens = batch->chunks.back().tokens;
    chunk_budget -= tokens;
    prefill_budget -= tokens;
    room -= extend + estimate;
  }
  if (!batch->chunks.empty()) return;

  // 3. A decode step. Running out of memory retracts requests (recompute
  // or swap) and resets the ratio; each decode step decays it.
  sched::ResumeSwapped(state, limits_.max_num_seqs, batch);
  const int64_t before = state.preemptions();
  sched::RunDecodes(state, now, batch);
  if (state.preemptions() > before) {
    ratio_ = init_ratio_;
  } else if (batch->decodes) {
    ratio_ = std::max(min_ratio_, ratio_ - decay_);
  }
}

}  // namespace fleetsim
