#include "calibrate/grid.h"

#include <algorithm>
#include <set>

#include "model/memory_plan.h"
#include "model/shard_dims.h"

namespace fleetsim::calibrate {
namespace {

// Powers of two from `lo` to `hi` inclusive, plus 3·2^k between them when
// `midpoints`.
std::vector<int64_t> Ladder(int64_t lo, int64_t hi, bool midpoints) {
  std::set<int64_t> v;
  for (int64_t x = lo; x <= hi; x *= 2) {
    v.insert(x);
    if (midpoints && x >= 2 && x + x / 2 <= hi) v.insert(x + x / 2);
  }
  if (v.empty() || *v.rbegin() != hi) v.insert(hi);
  return {v.begin(), v.end()};
}

kernels::DType KernelDType(DType t) {
  switch (t) {
    case DType::kFp32:
      return kernels::DType::kFp32;
    case DType::kFp16:
      return kernels::DType::kFp16;
    default:
      // bf16, and the 8-bit formats, which our kernels do not implement:
      // they are timed as bf16 (calibrate.cc notes it in the profile).
      return kernels::DType::kBf16;
  }
}

}  // namespace

Status ParseGridSize(const std::string& name, GridSize* out) {
  if (name == "quick") {
    *out = GridSize::kQuick;
  } else if (name == "full") {
    *out = GridSize::kFull;
  } else {
    return Status::Invalid("unknown grid \"" + name + "\" (valid: quick, full)");
  }
  return Status::Ok();
}

const char* GridSizeName(GridSize size) { return size == GridSize::kQuick ? "quick" : "full"; }

GridLimits DefaultLimits(const std::string& backend) {
  GridLimits l;
  if (backend == "cpu") {
    l.max_tokens = 1024;
    l.max_prefill_len = 512;
    l.max_decode_kv_tokens = int64_t{1} << 15;
  }
  return l;
}

Status MakeGrid(const ModelSpec& model, const std::vector<int>& tps, GridSize size, const GridLimits& limits,
                Grid* out) {
  if (tps.empty()) return Status::Invalid("--tp: at least one tensor-parallel degree is needed");
  if (limits.max_tokens < 1 || limits.max_prefill_len < 1 || limits.max_decode_kv_tokens < 1)
    return Status::Invalid("grid limits must be positive");
  const bool full = size == GridSize::kFull;
  Grid g;
  g.size = size;
  g.dtype = KernelDType(model.compute_dtype);
  g.tokens = Ladder(1, limits.max_tokens, full);

  std::set<int> seen;
  for (int tp : tps) {
    if (!seen.insert(tp).second) return Status::Invalid("--tp: " + std::to_string(tp) + " is listed twice");
    ShardPlan plan;
    plan.tp = tp;
    FLEETSIM_RETURN_IF_ERROR(CheckShardPlan(model, plan).WithPrefix("--tp " + std::to_string(tp) + ": "));
    const ShardDims d = LocalDims(model, plan);
    ShardShapes s;
    s.tp = tp;
    s.heads = d.heads;
    s.kv_heads = d.kv_heads;
    s.head_dim = model.head_dim;
    s.hidden = model.hidden;
    s.intermediate = d.intermediate;
    s.vocab = model.vocab;
    const int64_t hd = model.head_dim;
    s.gemms.push_back({"qkv", (d.heads + 2 * d.kv_heads) * hd, model.hidden, false});
    s.gemms.push_back({"o", model.hidden, d.heads * hd, false});
    if (model.is_moe()) {
      s.gemms.push_back({"router", model.experts, model.hidden, false});
      s.gemms.push_back({"expert_gate_up", 2 * static_cast<int64_t>(d.intermediate), model.hidden, true});
      s.gemms.push_back({"expert_down", model.hidden, d.intermediate, true});
    } else {
      s.gemms.push_back({"gate_up", 2 * static_cast<int64_t>(d.intermediate), model.hidden, false});
      s.gemms.push_back({"down", model.hidden, d.intermediate, false});
    }
    s.lm_head = {"lm_head", (model.vocab + tp - 1) / tp, model.hidden, false};
    g.shards.push_back(std::move(s));
  }

  if (full) {
    // Square and Llama-like weights from 1k to 8k: shapes other models
    // have, so that leave-one-shape-out error speaks for them too.
    for (int64_t n : {1024, 2048, 4096, 8192}) g.extra_gemms.emplace_back(n, n);
    g.extra_gemms.emplace_back(14336, 4096);
    g.extra_gemms.emplace_back(4096, 14336);
  }

  // Attention, at the first shard's heads.
  const ShardShapes& a = g.shards.front();
  const int64_t max_len = std::min<int64_t>(limits.max_prefill_len, model.max_model_len);
  for (int64_t len : Ladder(std::min<int64_t>(64, max_len), max_len, full)) {
    g.prefill.push_back({1, len, a.heads, a.kv_heads, a.head_dim, g.dtype});
    // A batch of short prompts too: the kernel's parallelism over sequences.
    if (len <= 512 && 4 * len <= limits.max_tokens) g.prefill.push_back({4, len, a.heads, a.kv_heads, a.head_dim, g.dtype});
  }
  // Decode: batches × contexts (quick: contexts a power of four apart), up
  // to the model's context and the backend's KV cap. Both grids pair one
  // total of KV tokens with several batch sizes (1 × 2048, 4 × 512,
  // 16 × 128), so the fit can tell the per-sequence cost from the
  // per-token one; batches 1, 8, 64, 256 did not (tiny on a CPU: 9 shapes,
  // held-out median error 29%, p90 220%; these: 12 shapes, 1.6%, 5.5%).
  const std::vector<int64_t> batches{1, 4, 16, 64, 256};
  std::vector<int64_t> contexts;
  for (int64_t ctx = 128; ctx <= std::min<int64_t>(model.max_model_len, 32768); ctx *= full ? 2 : 4)
    contexts.push_back(ctx);
  for (int64_t seqs : batches) {
    for (int64_t ctx : contexts) {
      if (seqs * ctx > limits.max_decode_kv_tokens) break;
      g.decode.push_back({seqs, ctx, a.heads, a.kv_heads, a.head_dim, 16, g.dtype});
    }
  }
  *out = std::move(g);
  return Status::Ok();
}

}  // namespace fleetsim::calibrate
