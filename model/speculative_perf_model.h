// SpeculativePerfModel: the time of one iteration of an engine that decodes
// speculatively (vLLM's --speculative-config): before the target model's
// pass, a proposer guesses k tokens for every decoding sequence, one
// forward pass per guess; the target then scores all k + 1 positions of
// each decoder at once (the guesses and the token after them) and accepts
// a prefix of the guesses (sim/cluster/speculation.h decides how long).
//
// A step with d decoders therefore costs
//   target pass over the batch with d (k + 1) decode tokens (the KV read
//     once per decoder; GEMMs, lm_head and sampler on every position)
// + the proposer's first pass over the batch's prefill chunks and the d
//     decode tokens (it keeps its own KV of every prompt)
// + k - 1 further passes over the d decode tokens alone,
// the proposer's passes counted as GPU time only (the engine's CPU time is
// the target's). The proposer is either a draft model (its own
// PerfModel, on the same GPUs) or an EAGLE/MTP head, priced as a fraction
// of the target's layers plus the target's lm_head. Prefill-only
// iterations cost the target's plus the proposer's prefill of the chunks.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/perf_model.h"

namespace fleetsim {

struct SpeculativeCost {
  int k = 1;                            // guesses per step (num_speculative_tokens)
  const PerfModel* draft = nullptr;     // a draft model; null: a head on the target
  double head_layer_fraction = 0;       // the head's layers / the target's (no draft model)
  std::string proposer;                 // for Sources(): the draft model's name, or "eagle"
};

class SpeculativePerfModel final : public PerfModel {
 public:
  // `target` and `cost.draft` must outlive the model. REQUIRES: k >= 1,
  // and a draft or a fraction in (0, 1].
  SpeculativePerfModel(const PerfModel& target, SpeculativeCost cost);
  int64_t IterationNs(const BatchShape& shape) const override;
  std::vector<std::pair<std::string, std::string>> Sources() const override;
  // The proposer's GPU time for `shape` (tests, reports).
  int64_t ProposerNs(const BatchShape& shape) const;
  // The shape of the target's verification pass of `shape`.
  BatchShape VerifyShape(const BatchShape& shape) const;

 private:
  // One proposer pass over `shape`: GPU time only.
  double PassNs(const BatchShape& shape) const;

  const PerfModel& target_;
  SpeculativeCost cost_;
};

}  // namespace fleetsim
