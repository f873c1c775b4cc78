// The loading edge of model/: the only file that sees nlohmann::json. Each
// document is read field by field into the typed specs; every error names
// the origin and the JSON path ("H2000.json: scale_up.links: expected a
// positive integer"). Unknown keys are errors, so a misspelt key is never
// silently ignored, and missing keys are errors, so no figure takes a
// default the author did not write.
#include "model/catalog.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/json_parse.h"
#include "model/embedded_data.h"
#include "model/object_reader.h"

namespace fleetsim {
namespace {

using nlohmann::json;
using model_json::Bound;
using model_json::ObjectReader;
using model_json::ParseDocument;

// GPU figures are numbers that must each carry a source. FigureReader reads
// them and remembers which were present, so the sources object can be
// checked against them afterwards.
class FigureReader {
 public:
  // A required figure.
  Status Read(const ObjectReader& r, std::string_view key, Bound bound, double* out) {
    FLEETSIM_RETURN_IF_ERROR(r.Number(key, bound, out));
    figures_.insert(r.Path(key));
    return Status::Ok();
  }
  Status ReadInt(const ObjectReader& r, std::string_view key, Bound bound, int* out) {
    FLEETSIM_RETURN_IF_ERROR(r.Int(key, bound, out));
    figures_.insert(r.Path(key));
    return Status::Ok();
  }
  Status ReadInt64(const ObjectReader& r, std::string_view key, int64_t* out) {
    FLEETSIM_RETURN_IF_ERROR(
        r.Int64(key, Bound::kPositive, std::numeric_limits<int64_t>::max() / (1 << 20), out));
    figures_.insert(r.Path(key));
    return Status::Ok();
  }
  // A figure that may be null ("not applicable"): null reads as 0 and needs
  // no source.
  Status ReadNullable(const ObjectReader& r, std::string_view key, double* out) {
    if (r.IsNull(key)) {
      *out = 0;
      return Status::Ok();
    }
    return Read(r, key, Bound::kNonNegative, out);
  }
  // Every figure read needs a non-empty source; every source must name a
  // figure of the file (a misspelt figure name is caught here).
  Status CheckSources(const ObjectReader& sources, std::map<std::string, std::string>* out) const {
    for (auto it = sources.object().begin(); it != sources.object().end(); ++it) {
      if (figures_.count(it.key()) == 0) {
        std::vector<std::string> names(figures_.begin(), figures_.end());
        return sources.Error(it.key(), "not a figure of this file (figures: " + JoinNames(names) + ")");
      }
      std::string text;
      FLEETSIM_RETURN_IF_ERROR(sources.String(it.key(), &text));
      (*out)[it.key()] = text;
    }
    for (const std::string& figure : figures_) {
      if (out->count(figure) == 0) {
        return sources.Error(figure, "missing: every figure needs a source");
      }
    }
    return Status::Ok();
  }

 private:
  std::set<std::string> figures_;
};

Status ReadPrice(const ObjectReader& prices, std::string_view key, std::optional<Price>* out) {
  if (prices.IsNull(key)) {
    *out = std::nullopt;
    return Status::Ok();
  }
  ObjectReader r;
  FLEETSIM_RETURN_IF_ERROR(prices.Object(key, &r));
  FLEETSIM_RETURN_IF_ERROR(r.CheckKeys({"usd_per_gpu_hour", "provider", "date", "source"}));
  Price p;
  FLEETSIM_RETURN_IF_ERROR(r.Number("usd_per_gpu_hour", Bound::kPositive, &p.usd_per_gpu_hour));
  FLEETSIM_RETURN_IF_ERROR(r.String("provider", &p.provider));
  FLEETSIM_RETURN_IF_ERROR(r.String("date", &p.date));
  FLEETSIM_RETURN_IF_ERROR(r.String("source", &p.source));
  *out = std::move(p);
  return Status::Ok();
}

template <typename Map>
std::vector<std::string> KeysOf(const Map& m) {
  std::vector<std::string> names;
  names.reserve(m.size());
  for (const auto& [name, value] : m) names.push_back(name);
  return names;  // std::map keeps them sorted
}

// Two keys that go together: both present or neither; the error names the
// missing one.
Status BothOrNeither(const ObjectReader& r, const char* a, const char* b) {
  if (r.Has(a) == r.Has(b)) return Status::Ok();
  const bool has_a = r.Has(a);
  return r.Error(has_a ? b : a, std::string("required with ") + (has_a ? a : b));
}

// <prefix>quant_group_size and <prefix>quant_group_bytes, both or neither
// (0, 0 when absent): a group of weights and its scale bytes.
Status ReadQuantGroup(const ObjectReader& r, const std::string& prefix, int64_t* size, double* bytes) {
  const std::string size_key = prefix + "quant_group_size", bytes_key = prefix + "quant_group_bytes";
  FLEETSIM_RETURN_IF_ERROR(BothOrNeither(r, size_key.c_str(), bytes_key.c_str()));
  if (!r.Has(size_key)) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(r.Int64(size_key, Bound::kPositive, int64_t{1} << 20, size));
  FLEETSIM_RETURN_IF_ERROR(r.Number(bytes_key, Bound::kPositive, bytes));
  if (*bytes > 64) return r.Error(bytes_key, "expected at most 64");
  return Status::Ok();
}
}  // namespace

Status Catalog::AddModelJson(std::string_view json_text, const std::string& origin) {
  json doc;
  FLEETSIM_RETURN_IF_ERROR(ParseDocument(json_text, origin, &doc));
  ObjectReader r(doc, origin, "");
  FLEETSIM_RETURN_IF_ERROR(r.CheckKeys(
      {"name", "source", "hf_repo", "layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
       "max_model_len", "experts", "experts_top_k", "tied_embeddings", "weight_dtype", "kv_dtype",
       "compute_dtype", "kv_bytes_per_token", "embedding_dtype", "qk_norm", "mla", "dense_layers",
       "dense_intermediate", "shared_experts", "mtp_layers", "quant_group_size", "quant_group_bytes",
       "gemm_dtype", "expert_weight_dtype", "expert_quant_group_size", "expert_quant_group_bytes", "sliding_window",
       "sliding_layers", "attention_sinks"}));
  ModelSpec m;
  FLEETSIM_RETURN_IF_ERROR(r.String("name", &m.name));
  FLEETSIM_RETURN_IF_ERROR(r.String("source", &m.source));
  if (r.Has("hf_repo")) FLEETSIM_RETURN_IF_ERROR(r.String("hf_repo", &m.hf_repo));
  FLEETSIM_RETURN_IF_ERROR(r.Int("layers", Bound::kPositive, &m.layers));
  FLEETSIM_RETURN_IF_ERROR(r.Int("hidden", Bound::kPositive, &m.hidden));
  FLEETSIM_RETURN_IF_ERROR(r.Int("heads", Bound::kPositive, &m.heads));
  FLEETSIM_RETURN_IF_ERROR(r.Int("kv_heads", Bound::kPositive, &m.kv_heads));
  FLEETSIM_RETURN_IF_ERROR(r.Int("head_dim", Bound::kPositive, &m.head_dim));
  FLEETSIM_RETURN_IF_ERROR(r.Int("intermediate", Bound::kPositive, &m.intermediate));
  FLEETSIM_RETURN_IF_ERROR(r.Int("vocab", Bound::kPositive, &m.vocab));
  FLEETSIM_RETURN_IF_ERROR(r.Int("max_model_len", Bound::kPositive, &m.max_model_len));
  FLEETSIM_RETURN_IF_ERROR(r.Int("experts", Bound::kNonNegative, &m.experts));
  FLEETSIM_RETURN_IF_ERROR(r.Int("experts_top_k", Bound::kNonNegative, &m.experts_top_k));
  FLEETSIM_RETURN_IF_ERROR(r.Bool("tied_embeddings", &m.tied_embeddings));
  FLEETSIM_RETURN_IF_ERROR(r.DTypeField("weight_dtype", &m.weight_dtype));
  FLEETSIM_RETURN_IF_ERROR(r.DTypeField("kv_dtype", &m.kv_dtype));
  FLEETSIM_RETURN_IF_ERROR(r.DTypeField("compute_dtype", &m.compute_dtype));
  if (r.Has("qk_norm")) FLEETSIM_RETURN_IF_ERROR(r.Bool("qk_norm", &m.qk_norm));
  if (r.Has("gemm_dtype")) {
    DType t = DType::kBf16;
    FLEETSIM_RETURN_IF_ERROR(r.DTypeField("gemm_dtype", &t));
    m.gemm_dtype = t;
  }
  if (r.Has("embedding_dtype")) {
    DType t = DType::kBf16;
    FLEETSIM_RETURN_IF_ERROR(r.DTypeField("embedding_dtype", &t));
    m.embedding_dtype = t;
  }
  if (r.Has("kv_bytes_per_token")) {
    int64_t kv = 0;
    FLEETSIM_RETURN_IF_ERROR(
        r.Int64("kv_bytes_per_token", Bound::kPositive, std::numeric_limits<int32_t>::max(), &kv));
    m.kv_bytes_per_token_override = kv;
  }
  if (r.Has("mla")) {
    // Multi-head latent attention (model_spec.h): head_dim must be
    // qk_nope_head_dim + qk_rope_head_dim.
    ObjectReader a;
    FLEETSIM_RETURN_IF_ERROR(r.Object("mla", &a));
    FLEETSIM_RETURN_IF_ERROR(
        a.CheckKeys({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}));
    ModelSpec::Mla mla;
    FLEETSIM_RETURN_IF_ERROR(a.Int("q_lora_rank", Bound::kNonNegative, &mla.q_lora_rank));
    FLEETSIM_RETURN_IF_ERROR(a.Int("kv_lora_rank", Bound::kPositive, &mla.kv_lora_rank));
    FLEETSIM_RETURN_IF_ERROR(a.Int("qk_nope_head_dim", Bound::kPositive, &mla.qk_nope_head_dim));
    FLEETSIM_RETURN_IF_ERROR(a.Int("qk_rope_head_dim", Bound::kPositive, &mla.qk_rope_head_dim));
    FLEETSIM_RETURN_IF_ERROR(a.Int("v_head_dim", Bound::kPositive, &mla.v_head_dim));
    if (m.head_dim != mla.qk_nope_head_dim + mla.qk_rope_head_dim)
      return r.Error("head_dim", "expected mla.qk_nope_head_dim + mla.qk_rope_head_dim (" +
                                     std::to_string(mla.qk_nope_head_dim + mla.qk_rope_head_dim) + ")");
    m.mla = mla;
  }
  if (r.Has("dense_layers")) FLEETSIM_RETURN_IF_ERROR(r.Int("dense_layers", Bound::kNonNegative, &m.dense_layers));
  if (r.Has("dense_intermediate"))
    FLEETSIM_RETURN_IF_ERROR(r.Int("dense_intermediate", Bound::kPositive, &m.dense_intermediate));
  if (r.Has("shared_experts"))
    FLEETSIM_RETURN_IF_ERROR(r.Int("shared_experts", Bound::kNonNegative, &m.shared_experts));
  if (r.Has("mtp_layers")) FLEETSIM_RETURN_IF_ERROR(r.Int("mtp_layers", Bound::kNonNegative, &m.mtp_layers));
  FLEETSIM_RETURN_IF_ERROR(ReadQuantGroup(r, "", &m.quant_group_size, &m.quant_group_bytes));
  if (r.Has("expert_weight_dtype")) {
    if (m.experts == 0) return r.Error("expert_weight_dtype", "only for an MoE model (experts > 0)");
    DType t = DType::kBf16;
    FLEETSIM_RETURN_IF_ERROR(r.DTypeField("expert_weight_dtype", &t));
    m.expert_weight_dtype = t;
  }
  if (r.Has("expert_quant_group_size") && !m.expert_weight_dtype)
    return r.Error("expert_quant_group_size", "only with expert_weight_dtype");
  FLEETSIM_RETURN_IF_ERROR(ReadQuantGroup(r, "expert_", &m.expert_quant_group_size, &m.expert_quant_group_bytes));
  FLEETSIM_RETURN_IF_ERROR(BothOrNeither(r, "sliding_window", "sliding_layers"));
  if (r.Has("sliding_window")) {
    FLEETSIM_RETURN_IF_ERROR(r.Int("sliding_window", Bound::kPositive, &m.sliding_window));
    FLEETSIM_RETURN_IF_ERROR(r.Int("sliding_layers", Bound::kPositive, &m.sliding_layers));
    if (m.sliding_layers >= m.layers)
      return r.Error("sliding_layers", "expected fewer than layers (" + std::to_string(m.layers) +
                                           "): a model of sliding-window layers alone is not modelled");
  }
  if (r.Has("attention_sinks")) FLEETSIM_RETURN_IF_ERROR(r.Bool("attention_sinks", &m.attention_sinks));
  if ((m.dense_layers > 0 || m.shared_experts > 0) && m.experts == 0)
    return r.Error(m.dense_layers > 0 ? "dense_layers" : "shared_experts", "only for an MoE model (experts > 0)");
  if (m.dense_layers > m.layers)
    return r.Error("dense_layers", "expected at most layers (" + std::to_string(m.layers) + ")");
  if (m.dense_layers > 0 && m.dense_intermediate == 0)
    return r.Error("dense_intermediate", "required with dense_layers (the leading dense layers' MLP columns)");
  if (m.mtp_layers > m.layers) return r.Error("mtp_layers", "expected at most layers (" + std::to_string(m.layers) + ")");
  // Grouped-query attention shares each KV head among heads / kv_heads
  // query heads.
  if (m.heads % m.kv_heads != 0) {
    return r.Error("kv_heads", "expected a divisor of heads (" + std::to_string(m.heads) + ")");
  }
  if (m.experts == 0 && m.experts_top_k != 0) {
    return r.Error("experts_top_k", "expected 0 for a dense model (experts is 0)");
  }
  if (m.experts > 0 && (m.experts_top_k < 1 || m.experts_top_k > m.experts)) {
    return r.Error("experts_top_k",
                   "expected an integer from 1 to experts (" + std::to_string(m.experts) + ")");
  }
  if (models_.count(m.name) != 0) {
    return r.Error("name", "duplicate model \"" + m.name + "\" (already in the catalogue)");
  }
  std::string name = m.name;
  models_.emplace(std::move(name), std::move(m));
  return Status::Ok();
}

Status Catalog::AddGpuJson(std::string_view json_text, const std::string& origin) {
  json doc;
  FLEETSIM_RETURN_IF_ERROR(ParseDocument(json_text, origin, &doc));
  ObjectReader r(doc, origin, "");
  FLEETSIM_RETURN_IF_ERROR(r.CheckKeys(
      {"name", "vendor", "family", "memory_mib", "bf16_tflops", "fp8_tflops", "fp4_tflops",
       "fp32_tflops", "mem_bandwidth_gbps", "scale_up", "pcie_gbps_per_direction", "network_gbps_per_direction",
       "prices", "sources", "gemm_shape", "attention_shape", "failures", "spot"}));
  GpuSpec g;
  FigureReader figures;
  FLEETSIM_RETURN_IF_ERROR(r.String("name", &g.name));
  FLEETSIM_RETURN_IF_ERROR(r.String("vendor", &g.vendor));
  FLEETSIM_RETURN_IF_ERROR(r.String("family", &g.family));
  FLEETSIM_RETURN_IF_ERROR(figures.ReadInt64(r, "memory_mib", &g.memory_mib));
  FLEETSIM_RETURN_IF_ERROR(figures.Read(r, "bf16_tflops", Bound::kPositive, &g.bf16_tflops));
  FLEETSIM_RETURN_IF_ERROR(figures.ReadNullable(r, "fp8_tflops", &g.fp8_tflops));
  if (r.Has("fp4_tflops")) FLEETSIM_RETURN_IF_ERROR(figures.ReadNullable(r, "fp4_tflops", &g.fp4_tflops));
  FLEETSIM_RETURN_IF_ERROR(figures.Read(r, "fp32_tflops", Bound::kPositive, &g.fp32_tflops));
  FLEETSIM_RETURN_IF_ERROR(
      figures.Read(r, "mem_bandwidth_gbps", Bound::kPositive, &g.mem_bandwidth_gbps));

  ObjectReader link;
  FLEETSIM_RETURN_IF_ERROR(r.Object("scale_up", &link));
  FLEETSIM_RETURN_IF_ERROR(
      link.CheckKeys({"kind", "topology", "gbps_per_direction_per_link", "links", "latency_us", "domain_gpus"}));
  FLEETSIM_RETURN_IF_ERROR(link.String("kind", &g.scale_up.kind));
  FLEETSIM_RETURN_IF_ERROR(link.String("topology", &g.scale_up.topology));
  const std::string& topology = g.scale_up.topology;
  if (topology != "switch" && topology != "mesh" && topology != "none") {
    return link.Error("topology", "unknown topology \"" + topology + "\" (known: mesh, none, switch)");
  }
  // A GPU with no peer fabric has no links; one with a fabric has at least
  // one link of non-zero bandwidth.
  const Bound link_bound = topology == "none" ? Bound::kNonNegative : Bound::kPositive;
  FLEETSIM_RETURN_IF_ERROR(figures.Read(link, "gbps_per_direction_per_link", link_bound,
                                        &g.scale_up.gbps_per_direction_per_link));
  FLEETSIM_RETURN_IF_ERROR(figures.ReadInt(link, "links", link_bound, &g.scale_up.links));
  if (topology == "none" && (g.scale_up.links != 0 || g.scale_up.gbps_per_direction_per_link != 0)) {
    return link.Error(g.scale_up.links != 0 ? "links" : "gbps_per_direction_per_link",
                      "expected 0 when topology is \"none\"");
  }
  FLEETSIM_RETURN_IF_ERROR(
      figures.Read(link, "latency_us", Bound::kNonNegative, &g.scale_up.latency_us));
  if (link.Has("domain_gpus")) {
    FLEETSIM_RETURN_IF_ERROR(figures.ReadInt(link, "domain_gpus", Bound::kPositive, &g.scale_up.domain_gpus));
    if (g.scale_up.domain_gpus > 1024) return link.Error("domain_gpus", "expected at most 1024");
  }

  FLEETSIM_RETURN_IF_ERROR(
      figures.Read(r, "pcie_gbps_per_direction", Bound::kPositive, &g.pcie_gbps_per_direction));
  FLEETSIM_RETURN_IF_ERROR(figures.Read(r, "network_gbps_per_direction", Bound::kNonNegative,
                                        &g.network_gbps_per_direction));

  if (r.Has("gemm_shape")) {
    ObjectReader fit;
    FLEETSIM_RETURN_IF_ERROR(r.Object("gemm_shape", &fit));
    FLEETSIM_RETURN_IF_ERROR(fit.CheckKeys({"compute_efficiency", "memory_efficiency", "overlap", "kernel_us",
                                           "half_output_elements", "source"}));
    GemmShapeFit f;
    FLEETSIM_RETURN_IF_ERROR(fit.Number("compute_efficiency", Bound::kPositive, &f.compute_efficiency));
    FLEETSIM_RETURN_IF_ERROR(fit.Number("memory_efficiency", Bound::kPositive, &f.memory_efficiency));
    FLEETSIM_RETURN_IF_ERROR(fit.Number("overlap", Bound::kNonNegative, &f.overlap));
    FLEETSIM_RETURN_IF_ERROR(fit.Number("kernel_us", Bound::kNonNegative, &f.kernel_us));
    FLEETSIM_RETURN_IF_ERROR(fit.Number("half_output_elements", Bound::kNonNegative, &f.half_output_elements));
    for (const char* k : {"compute_efficiency", "memory_efficiency", "overlap"}) {
      double v = 0;
      FLEETSIM_RETURN_IF_ERROR(fit.Number(k, Bound::kNonNegative, &v));
      if (v > 1) return fit.Error(k, "expected at most 1");
    }
    if (f.kernel_us > 1e6) return fit.Error("kernel_us", "expected at most 1000000");
    if (f.half_output_elements > 1e12) return fit.Error("half_output_elements", "expected at most 1e12");
    FLEETSIM_RETURN_IF_ERROR(fit.String("source", &f.source));
    g.gemm_shape = f;
  }
  if (r.Has("attention_shape")) {
    ObjectReader fit;
    FLEETSIM_RETURN_IF_ERROR(r.Object("attention_shape", &fit));
    FLEETSIM_RETURN_IF_ERROR(fit.CheckKeys({"prefill_compute_efficiency", "prefill_kernel_us", "prefill_half_work",
                                           "prefill_work_exponent", "source"}));
    AttentionShapeFit f;
    FLEETSIM_RETURN_IF_ERROR(
        fit.Number("prefill_compute_efficiency", Bound::kPositive, &f.prefill_compute_efficiency));
    FLEETSIM_RETURN_IF_ERROR(fit.Number("prefill_kernel_us", Bound::kNonNegative, &f.prefill_kernel_us));
    FLEETSIM_RETURN_IF_ERROR(fit.Number("prefill_half_work", Bound::kNonNegative, &f.prefill_half_work));
    FLEETSIM_RETURN_IF_ERROR(fit.Number("prefill_work_exponent", Bound::kPositive, &f.prefill_work_exponent));
    if (f.prefill_compute_efficiency > 1) return fit.Error("prefill_compute_efficiency", "expected at most 1");
    if (f.prefill_kernel_us > 1e6) return fit.Error("prefill_kernel_us", "expected at most 1000000");
    if (f.prefill_half_work > 1e15) return fit.Error("prefill_half_work", "expected at most 1e15");
    if (f.prefill_work_exponent > 4) return fit.Error("prefill_work_exponent", "expected at most 4");
    FLEETSIM_RETURN_IF_ERROR(fit.String("source", &f.source));
    g.attention_shape = f;
  }

  if (r.Has("failures")) {
    ObjectReader f;
    FLEETSIM_RETURN_IF_ERROR(r.Object("failures", &f));
    FLEETSIM_RETURN_IF_ERROR(f.CheckKeys({"gpu_hours_per_interruption", "source"}));
    double h = 0;
    FLEETSIM_RETURN_IF_ERROR(f.Number("gpu_hours_per_interruption", Bound::kPositive, &h));
    if (h > 1e9) return f.Error("gpu_hours_per_interruption", "expected at most 1e9");
    FLEETSIM_RETURN_IF_ERROR(f.String("source", &g.interruption_source));
    g.gpu_hours_per_interruption = h;
  }

  if (r.Has("spot")) {
    ObjectReader sp;
    FLEETSIM_RETURN_IF_ERROR(r.Object("spot", &sp));
    FLEETSIM_RETURN_IF_ERROR(sp.CheckKeys({"provider", "notice_s", "reclaims_per_hour", "source"}));
    SpotReclamation spot;
    FLEETSIM_RETURN_IF_ERROR(sp.String("provider", &spot.provider));
    if (sp.Has("notice_s")) {
      double v = 0;
      FLEETSIM_RETURN_IF_ERROR(sp.Number("notice_s", Bound::kNonNegative, &v));
      if (v > 86400) return sp.Error("notice_s", "expected at most 86400 (a day)");
      spot.notice_s = v;
    }
    if (sp.Has("reclaims_per_hour")) {
      double v = 0;
      FLEETSIM_RETURN_IF_ERROR(sp.Number("reclaims_per_hour", Bound::kPositive, &v));
      if (v > 3600) return sp.Error("reclaims_per_hour", "expected at most 3600 (one a second)");
      spot.reclaims_per_hour = v;
    }
    if (!spot.notice_s && !spot.reclaims_per_hour) {
      return sp.Error("notice_s", "missing: a spot block gives notice_s, reclaims_per_hour or both");
    }
    FLEETSIM_RETURN_IF_ERROR(sp.String("source", &spot.source));
    g.spot = std::move(spot);
  }

  ObjectReader prices;
  FLEETSIM_RETURN_IF_ERROR(r.Object("prices", &prices));
  FLEETSIM_RETURN_IF_ERROR(prices.CheckKeys({"on_demand", "reserved", "spot"}));
  for (std::string_view cls : {"on_demand", "reserved", "spot"}) {
    if (!prices.Has(cls)) return prices.Error(cls, "missing required key (null when unknown)");
    FLEETSIM_RETURN_IF_ERROR(ReadPrice(prices, cls, &g.prices[std::string(cls)]));
  }

  ObjectReader sources;
  FLEETSIM_RETURN_IF_ERROR(r.Object("sources", &sources));
  FLEETSIM_RETURN_IF_ERROR(figures.CheckSources(sources, &g.sources));

  if (gpus_.count(g.name) != 0) {
    return r.Error("name", "duplicate GPU \"" + g.name + "\" (already in the catalogue)");
  }
  std::string name = g.name;
  gpus_.emplace(std::move(name), std::move(g));
  return Status::Ok();
}

namespace {

// The largest value of any engine term: 1 s, whether per step, per token or
// per request; far beyond any engine, and small enough that no product with
// the other bounds overflows int64 nanoseconds.
constexpr double kMaxEngineTermUs = 1e6;
constexpr int64_t kMaxGraphSize = 1 << 20;

// A string key naming one of `choices` (listed in the order the error
// message gives them).
template <typename T>
Status ReadChoice(const ObjectReader& r, std::string_view key,
                  std::initializer_list<std::pair<std::string_view, T>> choices, T* out) {
  std::string value;
  FLEETSIM_RETURN_IF_ERROR(r.String(key, &value));
  std::string known;
  for (const auto& [name, v] : choices) {
    if (name == value) {
      *out = v;
      return Status::Ok();
    }
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  return r.Error(key, "unknown \"" + value + "\" (known: " + known + ")");
}

// One entry of a term's list. `kernel`: the kernel term's range, which
// its value must lie in; null for an engine (time) term, held to
// kMaxEngineTermUs.
Status ReadTermEntry(const ObjectReader& r, const KernelTermInfo* kernel, EngineTermEntry* e) {
  FLEETSIM_RETURN_IF_ERROR(
      r.CheckKeys({"value", "gpu", "model", "tp", "source", "date", "engine_version", "estimate"}));
  FLEETSIM_RETURN_IF_ERROR(r.Number("value", Bound::kNonNegative, &e->value));
  if (!kernel && e->value > kMaxEngineTermUs)
    return r.Error("value", "expected at most " + std::to_string(static_cast<int64_t>(kMaxEngineTermUs)) + " us");
  if (kernel && (e->value < kernel->lo || e->value > kernel->hi)) {
    char range[96];
    std::snprintf(range, sizeof range, "expected %g to %g (%s)", kernel->lo, kernel->hi, kernel->unit);
    return r.Error("value", range);
  }
  if (r.Has("gpu")) FLEETSIM_RETURN_IF_ERROR(r.String("gpu", &e->gpu));
  if (r.Has("model")) FLEETSIM_RETURN_IF_ERROR(r.String("model", &e->model));
  if (r.Has("tp")) {
    int64_t tp = 0;
    FLEETSIM_RETURN_IF_ERROR(r.Int64("tp", Bound::kPositive, 1024, &tp));
    e->tp = static_cast<int>(tp);
  }
  FLEETSIM_RETURN_IF_ERROR(r.String("source", &e->source));
  FLEETSIM_RETURN_IF_ERROR(r.String("date", &e->date));
  if (r.Has("estimate")) FLEETSIM_RETURN_IF_ERROR(r.Bool("estimate", &e->estimate));
  if (r.Has("engine_version")) {
    FLEETSIM_RETURN_IF_ERROR(r.String("engine_version", &e->engine_version));
  } else if (!e->estimate && !e->gpu.empty()) {
    return r.Error("engine_version", "missing: a measured value names the engine version it was measured on");
  }
  return Status::Ok();
}

// terms.<term> of the profile read from `origin`: a non-empty list of
// entries, appended to `out`.
Status ReadTermList(const ObjectReader& terms, const std::string& origin, const char* term,
                    const KernelTermInfo* kernel, std::vector<EngineTermEntry>* out) {
  const json& list = terms.object()[term];
  if (!list.is_array() || list.empty()) return terms.Error(term, "expected a non-empty array of entries");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = terms.Path(term) + "[" + std::to_string(i) + "]";
    if (!list[i].is_object()) return Status::Invalid(origin + ": " + where + ": expected an object");
    EngineTermEntry entry;
    FLEETSIM_RETURN_IF_ERROR(ReadTermEntry(ObjectReader(list[i], origin, where + "."), kernel, &entry));
    out->push_back(std::move(entry));
  }
  return Status::Ok();
}

}  // namespace

Status ParseEngineProfile(std::string_view json_text, const std::string& origin, EngineProfile* out) {
  json doc;
  FLEETSIM_RETURN_IF_ERROR(ParseDocument(json_text, origin, &doc));
  ObjectReader r(doc, origin, "");
  FLEETSIM_RETURN_IF_ERROR(
      r.CheckKeys({"format", "version", "name", "engine", "description", "cuda_graphs", "all_reduce", "async_scheduling", "terms"}));
  FLEETSIM_RETURN_IF_ERROR(r.FormatAndVersion("fleetsim-engine-profile", 1));
  EngineProfile e;
  e.origin = origin;
  FLEETSIM_RETURN_IF_ERROR(r.String("name", &e.name));
  FLEETSIM_RETURN_IF_ERROR(r.String("engine", &e.engine));
  FLEETSIM_RETURN_IF_ERROR(r.String("description", &e.description));

  ObjectReader graphs;
  FLEETSIM_RETURN_IF_ERROR(r.Object("cuda_graphs", &graphs));
  FLEETSIM_RETURN_IF_ERROR(graphs.CheckKeys({"mode", "sizes", "source"}));
  FLEETSIM_RETURN_IF_ERROR(ReadChoice(graphs, "mode",
                                      {{"all_steps", CudaGraphMode::kAllSteps},
                                       {"decode_only", CudaGraphMode::kDecodeOnly},
                                       {"none", CudaGraphMode::kNone}},
                                      &e.cuda_graphs));
  FLEETSIM_RETURN_IF_ERROR(graphs.String("source", &e.cuda_graphs_source));
  if (e.cuda_graphs != CudaGraphMode::kNone || graphs.Has("sizes")) {
    const json* sizes = graphs.object().contains("sizes") ? &graphs.object()["sizes"] : nullptr;
    if (!sizes || !sizes->is_array() || sizes->empty())
      return graphs.Error("sizes", "expected a non-empty array of captured sizes");
    for (size_t i = 0; i < sizes->size(); ++i) {
      const json& v = (*sizes)[i];
      const std::string where = "sizes[" + std::to_string(i) + "]";
      if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > kMaxGraphSize)
        return graphs.Error(where, "expected a positive integer at most " + std::to_string(kMaxGraphSize));
      const int size = static_cast<int>(v.get<int64_t>());
      if (!e.cuda_graph_sizes.empty() && size <= e.cuda_graph_sizes.back())
        return graphs.Error(where, "sizes must increase");
      e.cuda_graph_sizes.push_back(size);
    }
  }

  ObjectReader ar;
  FLEETSIM_RETURN_IF_ERROR(r.Object("all_reduce", &ar));
  FLEETSIM_RETURN_IF_ERROR(ar.CheckKeys({"algorithm", "source"}));
  FLEETSIM_RETURN_IF_ERROR(ReadChoice(
      ar, "algorithm",
      {{"nccl_ring", AllReduceAlgorithm::kNcclRing}, {"vllm_custom", AllReduceAlgorithm::kVllmCustom}},
      &e.all_reduce));
  FLEETSIM_RETURN_IF_ERROR(ar.String("source", &e.all_reduce_source));

  // Optional: a profile that does not say schedules between steps.
  if (r.Has("async_scheduling")) {
    ObjectReader as;
    FLEETSIM_RETURN_IF_ERROR(r.Object("async_scheduling", &as));
    FLEETSIM_RETURN_IF_ERROR(as.CheckKeys({"enabled", "new_requests", "source"}));
    FLEETSIM_RETURN_IF_ERROR(as.Bool("enabled", &e.async_scheduling));
    // Required when enabled: when a request that comes during a step runs.
    if (e.async_scheduling || as.Has("new_requests"))
      FLEETSIM_RETURN_IF_ERROR(
          ReadChoice(as, "new_requests", {{"next_step", false}, {"step_after_next", true}}, &e.admit_after_next_step));
    FLEETSIM_RETURN_IF_ERROR(as.String("source", &e.async_scheduling_source));
  }

  ObjectReader terms;
  FLEETSIM_RETURN_IF_ERROR(r.Object("terms", &terms));
  {
    std::vector<std::string> known(std::begin(kEngineTerms), std::end(kEngineTerms));
    for (const KernelTermInfo& k : kKernelTerms) known.emplace_back(k.name);
    FLEETSIM_RETURN_IF_ERROR(terms.CheckKeys(known));
  }
  // Kernel terms are optional (the GPU's figures stand in), each value
  // within its physical range.
  for (const KernelTermInfo& k : kKernelTerms)
    if (terms.Has(k.name)) FLEETSIM_RETURN_IF_ERROR(ReadTermList(terms, origin, k.name, &k, &e.terms[k.name]));
  for (const char* term : kEngineTerms) {
    // tp_step_cpu_us came after version 1 files were first written (every
    // `fleetsim fit` output before it): a file without it reads as 0, an
    // estimate that says so, rather than failing to load.
    if (std::string_view(term) == "tp_step_cpu_us" && !terms.Has(term)) {
      EngineTermEntry none;
      none.source = "not in this profile (written before fleetsim had tp_step_cpu_us): 0";
      none.date = "-";
      none.estimate = true;
      e.terms[term].push_back(none);
      continue;
    }
    if (!terms.Has(term)) return terms.Error(term, "missing required key (a list of values with their sources)");
    FLEETSIM_RETURN_IF_ERROR(ReadTermList(terms, origin, term, /*kernel=*/nullptr, &e.terms[term]));
  }
  *out = std::move(e);
  return Status::Ok();
}

Status LoadEngineProfileFile(const std::string& path, EngineProfile* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "engine profile", &text));
  return ParseEngineProfile(text, path, out);
}

Status WriteEngineProfileJson(const EngineProfile& e, std::string* out) {
  // Keys in the order the bundled files use; dump() keeps insertion order
  // only with ordered_json.
  nlohmann::ordered_json top;
  top["format"] = "fleetsim-engine-profile";
  top["version"] = 1;
  top["name"] = e.name;
  top["engine"] = e.engine;
  top["description"] = e.description;
  auto& graphs = top["cuda_graphs"];
  graphs["mode"] = e.cuda_graphs == CudaGraphMode::kNone         ? "none"
                   : e.cuda_graphs == CudaGraphMode::kDecodeOnly ? "decode_only"
                                                                 : "all_steps";
  // The captured sizes go on one line (dump(2) would give each its own):
  // a placeholder, replaced below.
  constexpr const char* kSizes = "@@cuda_graph_sizes@@";
  if (!e.cuda_graph_sizes.empty()) graphs["sizes"] = kSizes;
  graphs["source"] = e.cuda_graphs_source;
  top["all_reduce"]["algorithm"] = e.all_reduce == AllReduceAlgorithm::kVllmCustom ? "vllm_custom" : "nccl_ring";
  top["all_reduce"]["source"] = e.all_reduce_source;
  if (e.async_scheduling || !e.async_scheduling_source.empty()) {
    top["async_scheduling"]["enabled"] = e.async_scheduling;
    top["async_scheduling"]["new_requests"] = e.admit_after_next_step ? "step_after_next" : "next_step";
    top["async_scheduling"]["source"] = e.async_scheduling_source;
  }
  auto& terms = top["terms"];
  std::vector<std::pair<std::string, std::pair<double, double>>> order;
  for (const char* term : kEngineTerms) order.push_back({term, {0.0, kMaxEngineTermUs}});
  for (const KernelTermInfo& k : kKernelTerms) order.push_back({k.name, {k.lo, k.hi}});
  for (const auto& [term, range] : order) {
    auto it = e.terms.find(term);
    const bool kernel = KernelTermIndex(term) >= 0;
    if (kernel && (it == e.terms.end() || it->second.empty())) continue;  // optional
    if (it == e.terms.end() || it->second.empty())
      return Status::Invalid("engine profile " + e.name + ": terms." + term + ": no entry");
    auto& list = terms[term] = nlohmann::ordered_json::array();
    for (const EngineTermEntry& v : it->second) {
      if (!std::isfinite(v.value) || v.value < range.first || v.value > range.second)
        return Status::Invalid("engine profile " + e.name + ": terms." + term + ": value out of range");
      nlohmann::ordered_json entry;
      entry["value"] = v.value;
      if (!v.gpu.empty()) entry["gpu"] = v.gpu;
      if (!v.model.empty()) entry["model"] = v.model;
      if (v.tp > 0) entry["tp"] = v.tp;
      entry["source"] = v.source;
      entry["date"] = v.date;
      if (!v.engine_version.empty()) entry["engine_version"] = v.engine_version;
      if (v.estimate) entry["estimate"] = true;
      list.push_back(std::move(entry));
    }
  }
  std::string text = top.dump(2) + "\n";
  if (!e.cuda_graph_sizes.empty()) {
    std::string sizes = "[";  // becomes "sizes": [1, 2, ...]
    for (size_t i = 0; i < e.cuda_graph_sizes.size(); ++i)
      sizes += (i ? ", " : "") + std::to_string(e.cuda_graph_sizes[i]);
    sizes = "\"sizes\": " + sizes + "]";
    const std::string quoted = std::string("\"sizes\": \"") + kSizes + "\"";
    text.replace(text.find(quoted), quoted.size(), sizes);
  }
  *out = std::move(text);
  return Status::Ok();
}

Status Catalog::AddEngineJson(std::string_view json_text, const std::string& origin) {
  EngineProfile e;
  FLEETSIM_RETURN_IF_ERROR(ParseEngineProfile(json_text, origin, &e));
  if (engines_.count(e.name) != 0)
    return Status::Invalid(origin + ": name: duplicate engine \"" + e.name + "\" (already in the catalogue)");
  std::string name = e.name;
  engines_.emplace(std::move(name), std::move(e));
  return Status::Ok();
}

Status Catalog::LoadBuiltin(Catalog* out) {
  Catalog c;
  for (const EmbeddedFile& f : EmbeddedZoo()) {
    FLEETSIM_RETURN_IF_ERROR(c.AddModelJson(f.contents, "model/zoo/" + std::string(f.name)));
  }
  for (const EmbeddedFile& f : EmbeddedHardware()) {
    FLEETSIM_RETURN_IF_ERROR(c.AddGpuJson(f.contents, "model/hardware/" + std::string(f.name)));
  }
  for (const EmbeddedFile& f : EmbeddedEngines()) {
    FLEETSIM_RETURN_IF_ERROR(c.AddEngineJson(f.contents, "model/engines/" + std::string(f.name)));
  }
  *out = std::move(c);
  return Status::Ok();
}

const ModelSpec* Catalog::FindModel(std::string_view name) const {
  auto it = models_.find(name);
  return it == models_.end() ? nullptr : &it->second;
}

const GpuSpec* Catalog::FindGpu(std::string_view name) const {
  auto it = gpus_.find(name);
  return it == gpus_.end() ? nullptr : &it->second;
}

const EngineProfile* Catalog::FindEngine(std::string_view name) const {
  auto it = engines_.find(name);
  return it == engines_.end() ? nullptr : &it->second;
}

std::vector<std::string> Catalog::ModelNames() const { return KeysOf(models_); }
std::vector<std::string> Catalog::GpuNames() const { return KeysOf(gpus_); }
std::vector<std::string> Catalog::EngineNames() const { return KeysOf(engines_); }

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

}  // namespace fleetsim
