#include "sim/cluster/batch_scheduler.h"

#include <cmath>

#include "sim/cluster/orca_scheduler.h"
#include "sim/cluster/sarathi_scheduler.h"
#include "sim/cluster/sglang_scheduler.h"
#include "sim/cluster/vllm_scheduler.h"
#include "sim/cluster/vllm_v0_scheduler.h"

namespace fleetsim {
namespace sched {

int64_t RunDecodes(ReplicaState& state, SimTime now, Batch* batch) {
  while (state.num_decoding() > 0 && !state.kv().CanAllocate(state.DecodeBlocksNeeded())) {
    if (state.PreemptVictim(batch, now) == kNoSeq) break;
  }
  if (state.num_decoding() == 0 || !state.kv().CanAllocate(state.DecodeBlocksNeeded())) return 0;
  state.AddDecodes(batch);
  return batch->decode_seqs;
}

void ResumeSwapped(ReplicaState& state, int64_t max_num_seqs, Batch* batch) {
  while (!state.swapped().empty() && state.num_running() < max_num_seqs) {
    // Room for its KV, the decoders' next blocks and its own next block.
    const int64_t need = state.SwapInBlocks() + state.DecodeBlocksNeeded() + 1;
    if (!state.kv().CanAllocate(need)) break;
    state.ResumeSwappedFront(batch);
  }
}

Status Param(const SchedulerParams& params, const char* name, double lo, double hi, double* out) {
  auto it = params.find(name);
  if (it == params.end()) return Status::Ok();
  if (!(it->second >= lo && it->second <= hi))
    return Status::Invalid(std::string("scheduler_options.") + name + ": expected a number in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got " + std::to_string(it->second));
  *out = it->second;
  return Status::Ok();
}

Status IntParam(const SchedulerParams& params, const char* name, int64_t lo, int64_t hi, int64_t* out) {
  auto it = params.find(name);
  if (it == params.end()) return Status::Ok();
  const double v = it->second;
  if (!(std::floor(v) == v && v >= static_cast<double>(lo) && v <= static_cast<double>(hi)))
    return Status::Invalid(std::string("scheduler_options.") + name + ": expected an integer in [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "], got " + std::to_string(v));
  *out = static_cast<int64_t>(v);
  return Status::Ok();
}

Status OnlyParams(const SchedulerParams& params, std::initializer_list<const char*> known) {
  for (const auto& [name, value] : params) {
    bool ok = false;
    std::string valid;
    for (const char* k : known) {
      ok = ok || name == k;
      valid += std::string(valid.empty() ? "" : ", ") + k;
    }
    if (!ok)
      return Status::Invalid("scheduler_options." + name + ": not an option of this scheduler (its options: " +
                             (valid.empty() ? std::string("none") : valid) + ")");
  }
  return Status::Ok();
}

}  // namespace sched

void RegisterBuiltinSchedulers(SchedulerRegistry* registry) {
  registry->Add("vllm",
                "vLLM V1 (default): running first, chunked prefill fills one token budget, "
                "preempt the running queue's tail by recompute",
                &VllmScheduler::Make, "vllm");
  registry->Add("vllm_v0",
                "vLLM V0: prefill-first, whole prompts in one step, decodes only in steps without prefill",
                &VllmV0Scheduler::Make, "vllm_v0");
  registry->Add("sarathi",
                "Sarathi-Serve: decodes first, then prefill chunks up to a fixed chunk-size budget",
                &SarathiScheduler::Make, "vllm");  // Sarathi-Serve is built on vLLM
  registry->Add("orca",
                "Orca/FasterTransformer: whole prefills, KV reserved for the full length at admission",
                &OrcaScheduler::Make, "vllm");  // no profile of its own: vLLM's overheads
  registry->Add("sglang",
                "SGLang: prefill-first with admission by estimated future KV use (decaying new-token ratio)",
                &SglangScheduler::Make, "sglang");
}

}  // namespace fleetsim
