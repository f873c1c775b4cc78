#include "sim/cluster/sarathi_scheduler.h"

#include <algorithm>

namespace fleetsim {

Status SarathiScheduler::Make(const SchedulerLimits& limits, const SchedulerParams& params,
                              std::unique_ptr<BatchScheduler>* out) {
  FLEETSIM_RETURN_IF_ERROR(sched::OnlyParams(params, {"chunk_size"}));
  Options o;
  FLEETSIM_RETURN_IF_ERROR(sched::IntParam(params, "chunk_size", 1, int64_t{1} << 24, &o.chunk_size));
  *out = std::make_unique<SarathiScheduler>(limits, o);
  return Status::Ok();
}

void SarathiScheduler::Schedule(ReplicaState& state, SimTime now, Batch* batch) {
  const int64_t chunk = options_.chunk_size;
  // 0. Swapped requests (swap preemption only) rejoin the decoders.
  sched::ResumeSwapped(state, limits_.max_num_seqs, batch);

  // 1. Decoders, one token each, with no budget check. While their new
  // blocks do not fit, the latest-arrived running request goes: decoders
  // are visited oldest first and victims popped from the other end, so
  // every victim is later than the decoder that needed the block.
  int64_t batched = sched::RunDecodes(state, now, batch);

  // 2. Running prefills, in admission order: their blocks were taken at
  // admission; each gets what the chunk has left, none when nothing is.
  for (SeqId id : state.prefilling()) {
    const int64_t tokens = std::min<int64_t>(state.PrefillLeft(id), chunk - batched);
    if (tokens <= 0) continue;
    state.AddChunk(id, static_cast<int32_t>(tokens), batch);
    batched += tokens;
  }

  // 3. New requests while their whole prompt's blocks fit above the
  // watermark, fewer than max_num_seqs run and the chunk has room.
  const auto watermark =
      static_cast<int64_t>(kWatermark * static_cast<double>(state.kv().total_blocks()));
  while (!state.waiting().empty() && state.num_running() < limits_.max_num_seqs && batched < chunk) {
    const ReplicaState::Admission admission{
        .max_tokens = chunk - batched, .keep_free = watermark, .allocate_prefill = true};
    if (state.TryAdmitFront(admission, batch) == kNoSeq) break;
    batched += batch->chunks.back().tokens;
  }
}

}  // namespace fleetsim
