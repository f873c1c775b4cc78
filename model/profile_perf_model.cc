#include "model/profile_perf_model.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "model/collectives.h"
#include "model/shard_dims.h"

namespace fleetsim {
namespace {

// The kernels' name for a compute dtype: the calibrator times 8-bit
// formats as bf16 (calibrate/grid.cc), so their fits are under bf16.
std::string FitDType(DType t) {
  if (t == DType::kFp32) return "fp32";
  if (t == DType::kFp16) return "fp16";
  return "bf16";
}

// The fit of `op` in `dtype`, or else in the other 16-bit float type: fp16
// and bf16 GEMMs and elementwise kernels run at the same speed on the
// tensor cores and memory system (the catalogue holds one 16-bit peak,
// GpuSpec::PeakTflops), and a profile may hold only one (Vidur's is fp16).
const FittedCurve* FindFit(const Profile& p, const std::string& op, const std::string& dtype) {
  auto find = [&](const std::string& dt) -> const FittedCurve* {
    auto it = p.fits.find(op + "." + dt);
    return it == p.fits.end() || it->second.empty() ? nullptr : &it->second;
  };
  if (const FittedCurve* f = find(dtype)) return f;
  if (dtype == "bf16") return find("fp16");
  if (dtype == "fp16") return find("bf16");
  return nullptr;
}

}  // namespace

Status ProfilePerfModel::Create(const Profile& profile, const std::string& profile_name, const ModelSpec& model,
                                const GpuSpec& gpu, const ShardPlan& shard, const EngineSpec& engine,
                                const RooflineOptions& roofline, std::unique_ptr<ProfilePerfModel>* out) {
  const bool same_model = profile.model && *profile.model == model.name;
  // A profile's per-layer curves and fits are of a Llama-style layer (QKV,
  // O, one MLP or one kind of MoE layer); the calibrator does not measure
  // latent attention or a stack of two layer kinds.
  if (model.mla || model.shared_experts > 0 || model.dense_layers > 0 || model.sliding_layers > 0)
    return Status::Invalid(model.name + " has " +
                           std::string(model.mla             ? "multi-head latent attention"
                                       : model.sliding_layers ? "sliding-window layers"
                                                              : "shared experts or leading dense layers") +
                           ", which a profile's per-layer times do not describe; it is priced by the roofline alone "
                           "(drop perf.profile)");
  if (profile.has_compute_ops() && !same_model && profile.fits.empty())
    return Status::Invalid("profile \"" + profile_name + "\" was measured for model \"" + *profile.model +
                           "\", not \"" + model.name +
                           "\", and has no fitted curves; per-model compute times do not transfer between models");
  if (profile.device != gpu.name)
    return Status::Invalid("profile \"" + profile_name + "\" was measured on \"" + profile.device + "\", not \"" +
                           gpu.name + "\"");
  // Attention the profile rejected is timed by the roofline at the
  // published efficiency the profile names, in place of the scenario's
  // attention efficiencies.
  RooflineOptions ro = roofline;
  auto decision = [&](const char* kind) -> const AttentionDecision* {
    auto it = profile.attention.find(kind);
    return it == profile.attention.end() ? nullptr : &it->second;
  };
  const AttentionDecision* pre = decision("attention_prefill");
  const AttentionDecision* dec = decision("attention_decode");
  if (pre != nullptr && !pre->use_measured) ro.attention_compute_efficiency = pre->published_efficiency;
  if (dec != nullptr && !dec->use_measured) ro.attention_memory_efficiency = dec->published_efficiency;

  std::unique_ptr<ProfilePerfModel> m(new ProfilePerfModel(model, gpu, shard, engine, ro));
  m->name_ = profile_name;
  m->kernel_time_scale_ = ro.kernel_time_scale;
  m->model_ = model;
  m->layers_ = model.layers;
  m->tp_ = shard.tp;
  m->all_reduce_bytes_per_token_ = static_cast<double>(model.hidden) * DTypeBytes(model.compute_dtype);
  const std::string dt = FitDType(model.compute_dtype);
  const ShardDims d = LocalDims(model, shard);

  auto find = [&](const std::map<int, ProfileCurve>& table, int n, ProfileCurve* c) {
    auto it = table.find(n);
    if (it == table.end() || it->second.empty()) return false;
    *c = it->second;
    return true;
  };

  // GEMMs.
  if (same_model && find(profile.gemm, shard.tp, &m->gemm_curve_)) {
    m->gemm_ = Source::kProfile;
  } else if (const FittedCurve* f = FindFit(profile, "gemm", dt)) {
    m->gemm_ = Source::kFitted;
    m->gemm_fit_ = *f;
    const double hd = model.head_dim, hidden = model.hidden, inter = d.intermediate;
    const double qkv = hidden * (d.heads + 2.0 * d.kv_heads) * hd, o = d.heads * hd * hidden;
    m->dense_gemms_ = 2;
    m->dense_gemm_scale_ = qkv + o;
    if (model.is_moe()) {
      m->dense_gemms_ += 1;
      m->dense_gemm_scale_ += hidden * model.experts;  // router
      m->expert_gemm_scales_ = {hidden * 2 * inter, inter * hidden};
    } else {
      m->dense_gemms_ += 2;
      m->dense_gemm_scale_ += hidden * 2 * inter + inter * hidden;
    }
  }

  // Elementwise: the profile needs both the per-layer ops and the
  // embedding, so that the kind is timed by one source.
  if (same_model && find(profile.elementwise, shard.tp, &m->elementwise_curve_) &&
      find(profile.embedding, shard.tp, &m->embedding_curve_)) {
    m->elementwise_ = Source::kProfile;
  } else {
    const FittedCurve* rms = FindFit(profile, "rms_norm", dt);
    const FittedCurve* res = FindFit(profile, "residual_add", dt);
    const FittedCurve* silu = FindFit(profile, "silu_mul", dt);
    const FittedCurve* rope = FindFit(profile, "rope", dt);
    const FittedCurve* emb = FindFit(profile, "embedding", dt);
    if (rms && res && silu && rope && emb) {
      m->elementwise_ = Source::kFitted;
      m->rms_fit_ = *rms;
      m->residual_fit_ = *res;
      m->silu_fit_ = *silu;
      m->rope_fit_ = *rope;
      m->embedding_fit_ = *emb;
      m->hidden_ = model.hidden;
      // MoE: SiLU·up runs on the k routed copies of each token.
      m->silu_width_ = static_cast<double>(d.intermediate) * (model.is_moe() ? model.experts_top_k : 1);
      m->rope_scale_ = static_cast<double>(d.heads + d.kv_heads) * model.head_dim;
    }
  }

  // Attention: fitted only where the measured kernel passed its threshold.
  if (pre != nullptr && pre->use_measured) {
    if (const FittedCurve* f = FindFit(profile, "attention_prefill", dt)) {
      m->prefill_ = Source::kFitted;
      m->prefill_fit_ = *f;
      m->prefill_scale_ = static_cast<double>(d.heads) * model.head_dim;
    }
  }
  if (dec != nullptr && dec->use_measured) {
    if (const FittedCurve* f = FindFit(profile, "attention_decode", dt)) {
      m->decode_ = Source::kFitted;
      m->decode_fit_ = *f;
      m->decode_scale_ = static_cast<double>(d.kv_heads) * model.head_dim;
    }
  }

  // TP all-reduce within a node (a group spanning nodes keeps the
  // roofline's ring over the topology: no single-node profile describes it).
  // Pipeline sends stay the roofline's (the executor prices them).
  if (shard.tp > 1 && roofline.collective_gbps <= 0) {
    if (find(profile.all_reduce_intra_node, shard.tp, &m->all_reduce_curve_)) {
      m->all_reduce_ = Source::kProfile;
    } else {
      double alpha = 0, gbps = 0;
      int devices = 0;
      if (profile.SlowestPeerLink(&alpha, &gbps, &devices) && devices >= shard.tp) {
        m->all_reduce_ = Source::kFitted;
        m->link_alpha_ns_ = alpha;
        m->link_gbps_ = gbps;
      }
    }
  }
  *out = std::move(m);
  return Status::Ok();
}

double ProfilePerfModel::GemmLayerNs(double tokens) const {
  if (gemm_ == Source::kProfile) return gemm_curve_.At(tokens);
  double ns = dense_gemms_ * gemm_fit_.fixed_ns + dense_gemm_scale_ * gemm_fit_.PerUnit(tokens);
  if (!expert_gemm_scales_.empty()) {
    const ModelSpec::ExpertLoad load = model_.ExpectedExpertLoad(tokens);
    for (double scale : expert_gemm_scales_) ns += load.touched * gemm_fit_.Predict(load.rows_each, scale);
  }
  return ns;
}

double ProfilePerfModel::ElementwiseNs(double tokens) const {
  if (elementwise_ == Source::kProfile) return layers_ * elementwise_curve_.At(tokens) + embedding_curve_.At(tokens);
  const double layer = ElementwiseLayerNs(rms_fit_.Predict(tokens, hidden_), residual_fit_.Predict(tokens, hidden_),
                                          rope_fit_.Predict(tokens, rope_scale_), silu_fit_.Predict(tokens, silu_width_));
  return layers_ * layer + embedding_fit_.Predict(tokens, hidden_);
}

int64_t ProfilePerfModel::IterationNs(const BatchShape& shape) const {
  FLEETSIM_CHECK(!shape.empty());
  // A swap-only iteration runs no layer: nothing for the profile to time.
  if (shape.tokens() == 0) return roofline_.IterationNs(shape);
  RooflinePerfModel::Breakdown b;
  const double total = TotalNs(shape, &b);
  return std::max<int64_t>(1, std::llround(std::min(total, 1e15)));
}

IterationSplit ProfilePerfModel::Split(const BatchShape& shape) const {
  FLEETSIM_CHECK(!shape.empty());
  if (shape.tokens() == 0) return roofline_.Split(shape);
  RooflinePerfModel::Breakdown b;
  const double total = TotalNs(shape, &b);
  return SplitOf(b, total);
}

double ProfilePerfModel::TotalNs(const BatchShape& shape, RooflinePerfModel::Breakdown* out,
                                 IterationParts* parts) const {
  RooflinePerfModel::Breakdown& b = *out = roofline_.Explain(shape);
  double total = b.serial_ns();
  // A step the engine runs as a CUDA graph computes its GEMMs, elementwise
  // kernels and all-reduces on the captured size's rows (as the roofline's
  // breakdown does).
  const double tokens = static_cast<double>(b.graph_tokens > 0 ? b.graph_tokens : shape.tokens());
  // Each measured kind replaces the roofline's figure: total and parts
  // change by the same delta.
  double d_gemm = 0, d_elementwise = 0, d_prefill = 0, d_decode = 0, d_all_reduce = 0;
  if (gemm_ != Source::kRoofline) total += d_gemm = layers_ * GemmLayerNs(tokens) - (b.gemm_ns - b.lm_head_ns);
  if (elementwise_ != Source::kRoofline)
    total += d_elementwise = ElementwiseNs(tokens) - (b.elementwise_ns - b.moe_elementwise_ns);
  if (prefill_ != Source::kRoofline && shape.prefill_tokens > 0)
    total += d_prefill = layers_ * prefill_fit_.Predict(static_cast<double>(shape.prefill_attn_pairs), prefill_scale_) -
                         b.attention_prefill_ns;
  if (decode_ != Source::kRoofline && shape.decode_tokens > 0)
    total += d_decode = layers_ * decode_fit_.Predict(static_cast<double>(shape.decode_kv_tokens), decode_scale_,
                                                      static_cast<double>(shape.decode_seqs)) -
                        b.attention_decode_ns;
  if (all_reduce_ != Source::kRoofline) {
    const double bytes = tokens * all_reduce_bytes_per_token_;
    // Two all-reduces per layer: after attention's O and the MLP's down.
    const double one = all_reduce_ == Source::kProfile ? all_reduce_curve_.At(bytes)
                                                       : RingAllReduceNs(link_alpha_ns_, link_gbps_, tp_, bytes);
    total += d_all_reduce = layers_ * 2.0 * one - (b.all_reduce_ns - b.gather_ns - b.pp_send_ns);
  }
  if (kernel_time_scale_ != 1) {
    // The kernels' four kinds as priced (the profile's figures, and the
    // roofline's where it prices a kind or the lm_head), each times the
    // scale: the same sum the live run's ratio was taken over.
    const double k = kernel_time_scale_ - 1;
    const double gemm = b.gemm_ns + d_gemm, elementwise = b.elementwise_ns + d_elementwise,
                 prefill = b.attention_prefill_ns + d_prefill, decode = b.attention_decode_ns + d_decode;
    d_gemm += k * gemm;
    d_elementwise += k * elementwise;
    d_prefill += k * prefill;
    d_decode += k * decode;
    total += k * (gemm + elementwise + prefill + decode);
  }
  // The profile's kernels, not the roofline's, are what the CPU hides under.
  b.cpu_hidden_ns = HiddenCpuNs(roofline_.engine().async_scheduling, total, b.cpu_overhead_ns);
  total -= b.cpu_hidden_ns;
  if (parts) {
    parts->gemm = b.gemm_ns + d_gemm;
    parts->elementwise = b.elementwise_ns + d_elementwise;
    parts->attention_prefill = b.attention_prefill_ns + d_prefill;
    parts->attention_decode = b.attention_decode_ns + d_decode;
    parts->other = b.all_reduce_ns + d_all_reduce + b.cpu_overhead_ns - b.cpu_hidden_ns + b.swap_ns + b.launch_stall_ns;
    parts->collective = b.all_reduce_ns + d_all_reduce;
  }
  // Profiles are bounded on load (model/profile.cc), so total is finite;
  // an absurd but accepted profile is capped at 1e15 ns (11.6 days) per
  // iteration rather than overflowing the clock.
  FLEETSIM_CHECK(!std::isnan(total));
  return total;
}

IterationParts ProfilePerfModel::Parts(const BatchShape& shape) const {
  if (shape.tokens() == 0) return roofline_.Parts(shape);
  RooflinePerfModel::Breakdown b;
  IterationParts p;
  TotalNs(shape, &b, &p);
  return p;
}

std::vector<std::pair<std::string, std::string>> ProfilePerfModel::Sources() const {
  std::vector<std::pair<std::string, std::string>> out = roofline_.Sources();
  auto name = [&](Source s) {
    switch (s) {
      case Source::kProfile:
        return "profile:" + name_;
      case Source::kFitted:
        return "fitted:" + name_;
      default:
        return std::string("roofline");
    }
  };
  for (auto& [kind, src] : out) {
    if (kind == "gemm") src = name(gemm_);
    if (kind == "elementwise") src = name(elementwise_);
    if (kind == "attention_prefill") src = name(prefill_);
    if (kind == "attention_decode") src = name(decode_);
    if (kind == "all_reduce" && all_reduce_ != Source::kRoofline) src = name(all_reduce_);
  }
  return out;
}

}  // namespace fleetsim
