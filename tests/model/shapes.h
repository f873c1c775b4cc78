// Batch shapes and shard plans the PerfModel tests build by hand.
#pragma once

#include <cstdint>

#include "model/batch_shape.h"
#include "model/shard_plan.h"

namespace fleetsim::testshapes {

inline ShardPlan Tp(int tp, int pp = 1) {
  ShardPlan s;
  s.tp = tp;
  s.pp = pp;
  return s;
}

// `seqs` sequences decoding one token each at context `context`.
inline BatchShape Decode(int seqs, int64_t context) {
  BatchShape b;
  b.decode_seqs = seqs;
  b.decode_tokens = seqs;
  b.decode_kv_tokens = seqs * context;
  b.sampled_seqs = seqs;
  return b;
}

// One sequence's prompt of `tokens` from position 0, finishing its prompt.
inline BatchShape Prefill(int64_t tokens) {
  BatchShape b;
  b.prefill_seqs = 1;
  b.prefill_tokens = tokens;
  b.prefill_attn_pairs = tokens * (tokens + 1) / 2;
  b.prefill_kv_tokens = tokens;
  b.sampled_seqs = 1;
  return b;
}

}  // namespace fleetsim::testshapes
