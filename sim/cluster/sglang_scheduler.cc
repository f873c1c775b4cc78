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
  const int64_t clip = options_.clip_max_new_tokens;
  // rem_total_tokens: free and evictable KV less the decoders' estimated
  // future tokens. The request being chunked is not among them.
  const double decoders_future =
      std::min<double>(static_cast<double>(state.DecodingTokensLeft()),
                       static_cast<double>(clip) * static_cast<double>(state.num_decoding_all())) *
      ratio_;
  double room = static_cast<double>(state.kv().free_blocks() * block) - decoders_future;
  int64_t input_budget = options_.max_prefill_tokens;   // rem_input_tokens
  int64_t chunk_budget = options_.chunked_prefill_size;  // rem_chunk_tokens
  // What a request admitted now reserves for its output: its whole
  // max_new_tokens, clipped (a retracted one's too, in v0.4).
  auto output_estimate = [&](const Seq& s) {
    return static_cast<double>(std::min<int64_t>(s.req.output_tokens, clip));
  };

  // 1. The request being chunked continues first; its output is reserved
  // with its last chunk.
  std::vector<SeqId> prefilling = state.prefilling();
  for (SeqId id : prefilling) {
    if (chunk_budget <= 0) break;
    const int64_t left = state.PrefillLeft(id);
    const int32_t tokens = static_cast<int32_t>(std::min<int64_t>(left, chunk_budget));
    if (!state.kv().CanAllocate(state.ChunkBlocksNeeded(id, tokens))) break;
    state.AddChunk(id, tokens, batch);
    chunk_budget -= tokens;
    input_budget -= tokens;
    room -= static_cast<double>(tokens) + (tokens == left ? output_estimate(state.seq(id)) : 0.0);
  }
  // 2. New requests while their uncached prompt and clipped output fit the
  // room in full (add_one_req: NO_TOKEN when total_tokens >= rem_total).
  while (chunk_budget > 0 && input_budget > 0 && !state.waiting().empty() &&
         state.num_running() < limits_.max_num_seqs) {
    const Seq& front = state.seq(state.waiting().front());
    const int64_t extend = front.prefill_target - state.FrontCachedTokens();
    const double output = output_estimate(front);
    if (static_cast<double>(extend) + output >= room) break;
    if (extend > input_budget && !batch->chunks.empty()) break;
    const bool whole = extend <= chunk_budget;
    if (state.TryAdmitFront({.max_tokens = whole ? extend : chunk_budget}, batch) == kNoSeq) break;
    const int32_t tokens = batch->chunks.back().tokens;
    chunk_budget -= tokens;
    input_budget -= tokens;
    room -= static_cast<double>(tokens) + (whole ? output : 0.0);
  }
  if (!batch->chunks.empty()) return;

  // 3. A decode step. Running out of memory retracts requests and
  // recomputes the ratio; otherwise each decode step decays it.
  sched::ResumeSwapped(state, limits_.max_num_seqs, batch);
  if (state.num_decoding() == 0) return;
  if (!state.kv().CanAllocate(state.DecodeBlocksNeeded())) {
    Retract(state, now, batch);
  } else {
    ratio_ = std::max(min_ratio_, ratio_ - decay_);
  }
  // Whatever still does not fit (the last decoder, behind a chunked
  // prefill's blocks) is preempted.
  sched::RunDecodes(state, now, batch);
}

void SglangScheduler::SkipDecodeSteps(int64_t steps) {
  // The same subtractions one at a time (the rounding is Schedule's), until
  // the floor holds it.
  for (int64_t i = 0; i < steps && ratio_ > min_ratio_; ++i) ratio_ = std::max(min_ratio_, ratio_ - decay_);
}

void SglangScheduler::Retract(ReplicaState& state, SimTime now, Batch* batch) {
  const int64_t block = state.kv().block_size();
  for (bool first = true;
       first || state.kv().free_blocks() * block < state.num_decoding() * kRetractDecodeSteps; first = false) {
    if (state.num_decoding() <= 1) break;  // always keeps one
    if (state.PreemptVictim(batch, now) == kNoSeq) break;
  }
  const int64_t n = state.num_decoding_all();
  if (n == 0) return;
  const int64_t decoded = state.DecodingOutputTokens() - state.DecodingTokensLeft();
  ratio_ = std::min(1.0, static_cast<double>(decoded + kRetractDecodeSteps * n) /
                             static_cast<double>(state.DecodingOutputTokens()));
}

}  // namespace fleetsim
