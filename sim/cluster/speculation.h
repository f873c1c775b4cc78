// Speculative decoding, as the replica sees it: how many decode steps a
// request needs for its output, drawn once per request.
//
// Each step the proposer guesses k tokens; the target accepts them one by
// one, each with probability alpha, until the first rejection, and adds
// one token of its own (the correction, or the bonus token after k
// accepted), so a step emits 1 + min(k, accepted) tokens. alpha is the
// request's own (prompts differ in how predictable their continuations
// are), drawn from a Beta distribution of the given mean and concentration
// (mean * c, (1 - mean) * c), or fixed when the concentration is 0.
//
// The replica keeps its aggregate decode state (replica_state.h), in which
// every decoder advances one position per step: a speculative request
// enters it with output_tokens = 1 + its steps (the first token comes from
// the prefill), Request::spec_output holding the real output, and the
// tokens emitted per step beyond one enter the attention's KV read
// (SpecExtraQ). Its KV blocks are counted one position per step, an
// undercount of its KV by the tokens accepted beyond one (docs/sharding.md).
#pragma once

#include <cstdint>

#include "sim/traffic/request.h"

namespace fleetsim {

struct SpeculationOptions {
  int k = 1;                   // num_speculative_tokens
  double acceptance_mean = 0;  // alpha's mean, in [0, 1]
  double concentration = 0;    // Beta's a + b; 0: alpha = mean for every request
  uint64_t seed = 0;           // the run's seed: a request's draws depend on it and its id alone
};

struct SpeculativePlan {
  double alpha = 0;     // the request's acceptance probability
  int32_t steps = 0;    // decode steps to emit its output after the first token
};

// The request's alpha and the steps that emit `decode_tokens` tokens (its
// output less the first). Deterministic in (options.seed, request_id).
SpeculativePlan PlanSpeculation(const SpeculationOptions& options, uint64_t request_id, int32_t decode_tokens);

// 1/1024 tokens of KV a speculative decoder gains per step beyond the one
// position the state counts: ((spec_output - 1) / (output_tokens - 1) - 1)
// in fixed point (integers keep the state's sums exact). 0 for others.
int64_t SpecExtraQ(const Request& req);
inline constexpr int kSpecExtraShift = 10;

// The request as it arrived: a speculative request's real output back.
inline void Unspeculate(Request* req) {
  if (req->spec_output > 0) req->output_tokens = req->spec_output;
  req->spec_output = 0;
}

}  // namespace fleetsim
