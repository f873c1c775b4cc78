// BatchShape: what a performance model needs to know about one iteration,
// as aggregates (never per-sequence lists), so costing a batch is O(1).
#pragma once

#include <cstdint>

namespace fleetsim {

struct BatchShape {
  // Prefill: chunks of prompt tokens. A chunk of c tokens whose first token
  // sits at position p attends to p+1 ... p+c keys.
  int32_t prefill_seqs = 0;
  int64_t prefill_tokens = 0;      // sum of c
  int64_t prefill_attn_pairs = 0;  // sum of c*p + c*(c+1)/2 (query-key pairs)
  int64_t prefill_kv_tokens = 0;   // sum of p + c (KV read by the chunks)
  // Decode: each sequence feeds decode_tokens/decode_seqs tokens (1 without
  // speculative decoding) and attends to its whole context.
  int32_t decode_seqs = 0;
  int64_t decode_tokens = 0;
  int64_t decode_kv_tokens = 0;    // sum of context lengths read
  // Sequences that sample a token this iteration (decodes plus prefills that
  // finish their prompt): the lm_head and sampler run on these.
  int32_t sampled_seqs = 0;
  // KV moved between GPU and host memory over PCIe this iteration (swap
  // preemption), in tokens of KV; the copies block the iteration.
  int64_t swap_in_tokens = 0;
  int64_t swap_out_tokens = 0;
  // Prompt tokens found in the prefix cache by requests admitted this
  // iteration: skipped, so not costed; recorded for the timeline.
  int64_t cached_tokens = 0;

  int64_t tokens() const { return prefill_tokens + decode_tokens; }
  int32_t seqs() const { return prefill_seqs + decode_seqs; }
  bool empty() const { return tokens() == 0 && swap_in_tokens == 0 && swap_out_tokens == 0; }
};

}  // namespace fleetsim
