// The roofline performance model: every operator is bounded by the compute
// ceiling or the memory ceiling of the GPU, whichever is slower, scaled by
// the fraction of that ceiling real kernels reach, plus a launch overhead.
//
// Default efficiencies (RooflineOptions), from DOMAIN.md's measured figures:
//   gemm_compute_efficiency 0.80       best bf16 matmul on H100 SXM reached
//                                      794.5 of 989 TFLOP/s (stas00/ml-engineering);
//                                      769-798 on an H200 here
//   *_memory_efficiency 0.85           memory-bound kernels reach ~3.0 of
//                                      3.35 TB/s on H100-class HBM3 (FlashMLA,
//                                      0.90); 0.85 leaves room for kernels
//                                      less tuned than FlashMLA
//   attention_compute_efficiency 0.60  FlashAttention-class prefill kernels
//                                      run well below cuBLAS GEMMs (softmax,
//                                      causal masking); an estimate
//   link_efficiency 0.85               NVLink pairwise copies reach 380-396 of
//                                      450 GB/s one way (nvbandwidth,
//                                      p2pBandwidthLatencyTest)
//   launch_overhead_us 2.0             an estimate of the gap between
//                                      back-to-back kernels
//
// Shapes on one GPU of the shard: tensor parallelism divides heads, KV
// heads (at least one per GPU) and MLP columns; pipeline parallelism divides
// the layers, but one batch passes every stage in turn, so an iteration
// costs all layers. Pipeline stages are assumed to sit in one scale-up
// domain (their activations cross the same links as the all-reduces).
// Expert parallelism (ep > 1): each GPU holds E / ep whole experts and the
// step waits for the busiest (expert_load_skew x the mean routed rows);
// with data-parallel attention (dp > 1) each rank runs attention, the dense
// products and the sampler on 1/dp of the batch, and every MoE layer
// dispatches each token's k routed copies to the experts' GPUs and
// combines them back (two all-to-alls, (ep - 1)/ep of the copies leaving
// the GPU). With dp = 1 (ep = tp) the MoE output is all-reduced as under
// tensor parallelism, as vLLM does with the TP group as its EP group.
#include "model/roofline.h"

#include <algorithm>
#include <cmath>

#include "base/status.h"
#include "model/collectives.h"
#include "model/memory_plan.h"
#include "model/shard_dims.h"

namespace fleetsim {
namespace {

// Kernels per layer that touch only activations: two fused residual-add +
// RMSNorm, rotary embedding, SiLU * up. Per iteration: embedding lookup and
// the final norm.
constexpr int kElementwiseKernelsPerLayer = 4;
constexpr int kElementwiseKernelsPerIteration = 2;
// MoE adds the token permutation to experts and the weighted combine back.
constexpr int kMoeElementwiseKernelsPerLayer = 2;

}  // namespace

RooflinePerfModel::RooflinePerfModel(const ModelSpec& model, const GpuSpec& gpu,
                                     const ShardPlan& shard, const EngineSpec& engine,
                                     const RooflineOptions& options)
    : model_(model), gpu_(gpu), shard_(shard), engine_(engine), options_(options) {
  FLEETSIM_CHECK(CheckShardPlan(model, shard).ok());
  FLEETSIM_CHECK(options.gemm_compute_efficiency > 0 && options.gemm_memory_efficiency > 0 &&
                 options.attention_compute_efficiency > 0 &&
                 options.attention_memory_efficiency > 0 &&
                 options.elementwise_memory_efficiency > 0 && options.link_efficiency > 0);
  const ShardDims d = LocalDims(model, shard);
  const double cb = DTypeBytes(model.compute_dtype);
  // Quantised weights carry their groups' scales; the embedding and lm_head
  // stay in embedding_dtype (model_spec.h).
  const double wb = model.WeightBytesPerParam();
  const double eb = DTypeBytes(model.embedding_dtype.value_or(model.weight_dtype));
  const double kvb = DTypeBytes(model.kv_dtype);
  const double hidden = model.hidden;
  const double head_dim = model.head_dim;
  const double h = d.heads, g = d.kv_heads, inter = d.intermediate;
  const double k = model.is_moe() ? model.experts_top_k : 1;

  // Ceilings in FLOPs per ns (1 TFLOP/s = 1e3 FLOP/ns) and bytes per ns
  // (1 GB/s = 1 byte/ns).
  const double peak = gpu.PeakTflops(model.compute_dtype) * 1e3;
  const double gemm_peak = gpu.PeakTflops(model.GemmDType()) * 1e3;
  FLEETSIM_CHECK(peak > 0 && gemm_peak > 0 && gpu.mem_bandwidth_gbps > 0);
  const double gemm_flops = gemm_peak * options.gemm_compute_efficiency;
  const double gemm_bw = gpu.mem_bandwidth_gbps * options.gemm_memory_efficiency;
  const double attn_flops = peak * options.attention_compute_efficiency;
  const double attn_bw = gpu.mem_bandwidth_gbps * options.attention_memory_efficiency;
  const double elem_bw = gpu.mem_bandwidth_gbps * options.elementwise_memory_efficiency;

  layers_ = model.layers;
  sliding_layers_ = model.sliding_layers;
  window_ = model.sliding_window;
  launch_ns_ = options.launch_overhead_us * 1e3;

  auto gemm = [&](double in, double out, double weight_bytes) {
    GemmCost c;
    c.compute_ns_per_token = 2.0 * in * out / gemm_flops;
    c.weight_ns = in * out * weight_bytes / gemm_bw;
    c.activation_ns_per_token = (in + out) * cb / gemm_bw;
    c.out = out;
    return c;
  };
  // Elementwise bytes read + written per token and layer, and kernels per
  // layer: two fused residual-add + RMSNorm (read x and residual, write
  // both: 4 x hidden each), rotary (read + write the rotated parts of Q
  // and K), SiLU * up (read 2i, write i per MLP row).
  double layer_bytes = cb * 8 * hidden;
  int64_t layer_kernels = kElementwiseKernelsPerLayer;
  if (model.mla) {
    // Multi-head latent attention (DeepSeek-V2/V3 modelling code; vLLM's
    // MLA backends): a fused down-projection of hidden to the query latent
    // and the KV latent with its rotary key, both replicated; q_b splits
    // the heads; O takes the heads' v_head_dim outputs.
    const ModelSpec::Mla& a = *model.mla;
    const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim, latent = a.kv_lora_rank + a.qk_rope_head_dim;
    mla_ = true;
    if (a.q_lora_rank > 0) {
      attn_gemms_[attn_gemm_count_++] = gemm(hidden, a.q_lora_rank + latent, wb);  // q_a + kv_a
      attn_gemms_[attn_gemm_count_++] = gemm(a.q_lora_rank, h * qk, wb);           // q_b
    } else {
      attn_gemms_[attn_gemm_count_++] = gemm(hidden, h * qk + latent, wb);  // q + kv_a
    }
    attn_gemms_[attn_gemm_count_++] = gemm(h * a.v_head_dim, hidden, wb);  // O
    mla_kv_b_ = gemm(a.kv_lora_rank, h * (a.qk_nope_head_dim + a.v_head_dim), wb);
    // The latents' RMSNorms (q_a's and kv_a's) and rotary on each head's
    // and the shared key's rope dimensions.
    layer_bytes += cb * (2 * (a.q_lora_rank + a.kv_lora_rank) + 2 * (h + 1) * a.qk_rope_head_dim);
    layer_kernels += a.q_lora_rank > 0 ? 2 : 1;
  } else {
    attn_gemms_[attn_gemm_count_++] = gemm(hidden, (h + 2 * g) * head_dim, wb);  // QKV
    attn_gemms_[attn_gemm_count_++] = gemm(h * head_dim, hidden, wb);            // O
    layer_bytes += cb * 2 * (h + g) * head_dim;
  }
  if (model.qk_norm) {
    // Per-head RMSNorm of Q and K: read and write both.
    layer_bytes += cb * 2 * (h + g) * head_dim;
    layer_kernels += 2;
  }
  // MLP rows' SiLU * up bytes per token, per layer of each kind.
  double dense_mlp_bytes = 0, moe_mlp_bytes = 0;
  dense_mlp_layers_ = model.layers - model.moe_layers();
  if (dense_mlp_layers_ > 0) {
    // A dense model's MLP, or the leading dense layers' wider one.
    const double di = model.dense_layers > 0 ? (model.dense_intermediate + shard.tp - 1) / shard.tp : inter;
    dense_mlp_[0] = gemm(hidden, 2 * di, wb);  // gate + up
    dense_mlp_[1] = gemm(di, hidden, wb);      // down
    dense_mlp_bytes = cb * 3 * di;
  }
  if (model.is_moe()) {
    moe_layers_ = model.moe_layers();
    router_ = gemm(hidden, model.experts, wb);  // replicated
    // Under expert parallelism each expert is whole on its GPU.
    const double expert_inter = shard.ep > 1 ? model.intermediate : inter;
    const double ewb = model.ExpertBytesPerParam();
    expert_gemms_[expert_gemm_count_++] = gemm(hidden, 2 * expert_inter, ewb);  // gate + up
    expert_gemms_[expert_gemm_count_++] = gemm(expert_inter, hidden, ewb);      // down
    if (model.shared_experts > 0) {
      // Shared experts as one MLP, split over the (attention) tp group as
      // vLLM and SGLang split them.
      const double si = model.shared_experts * inter;
      shared_gemms_[shared_gemm_count_++] = gemm(hidden, 2 * si, wb);
      shared_gemms_[shared_gemm_count_++] = gemm(si, hidden, wb);
    }
    experts_ = model.experts;
    top_k_ = model.experts_top_k;
    // log(1 - k/E); -inf when every token uses every expert, which the
    // expert count below handles as "all touched".
    log_expert_miss_ = model.experts_top_k == model.experts
                           ? -INFINITY
                           : std::log1p(-top_k_ / experts_);
    // SiLU * up of k routed copies and the shared experts; the routed
    // copies' way to their experts and back. A tensor-parallel group's fused
    // MoE kernels (vLLM's and SGLang's fused_moe) gather each expert's rows
    // inside the GEMM by sorted token ids and sum the k outputs once
    // (moe_sum: k copies of hidden read, one written); with data-parallel
    // attention the all-to-all's tokens are scattered into per-expert
    // buffers and gathered back (DeepEP's layout; SGLang's ep_scatter and
    // ep_gather): k copies read and written, twice.
    const double permute = shard.dp > 1 ? 4 * k * hidden : (k + 1) * hidden;
    moe_mlp_bytes = cb * (3 * k * inter + 3 * model.shared_experts * inter + permute);
    moe_elementwise_ns_per_token_ = moe_layers_ * cb * permute / elem_bw;
  }
  // Vocabulary-parallel lm_head: each GPU computes vocab / tp logits, in
  // the unquantised compute dtype.
  lm_head_ = gemm(hidden, std::ceil(static_cast<double>(model.vocab) / shard.tp), eb);
  lm_head_.compute_ns_per_token *= gemm_peak / peak;

  // Embedding: read one row (weight dtype), write it; final norm: 4 x hidden.
  const double iteration_bytes = hidden * (eb + cb) + 4 * hidden * cb;
  elementwise_ns_per_token_ =
      (layers_ * layer_bytes + dense_mlp_layers_ * dense_mlp_bytes + moe_layers_ * moe_mlp_bytes + iteration_bytes) /
      elem_bw;
  elementwise_launches_ = model.layers * layer_kernels + model.moe_layers() * kMoeElementwiseKernelsPerLayer +
                          kElementwiseKernelsPerIteration;

  if (model.mla) {
    // MLA attention (FlashMLA; vLLM's and SGLang's MLA backends). Prefill
    // runs as ordinary multi-head attention on the up-projected keys
    // (nope + rope dims) and values (v_head_dim): 2 h (qk + v) FLOPs per
    // query-key pair. Decode runs absorbed, as multi-query attention of
    // every head over the shared latent: keys of kv_lora_rank + rope dims,
    // values of kv_lora_rank, so 2 h (2 kv_lora_rank + rope) FLOPs per
    // pair, while a KV token is one latent read once for all heads. With
    // many heads on a GPU (data-parallel attention) decode turns
    // compute-bound, which is why FlashMLA quotes both ceilings.
    const ModelSpec::Mla& a = *model.mla;
    const double qk = a.qk_nope_head_dim + a.qk_rope_head_dim, latent = a.kv_lora_rank + a.qk_rope_head_dim;
    attn_flop_ns_ = 2 * h * (qk + a.v_head_dim) / attn_flops;
    attn_heads_ = h;
    attn_kv_heads_ = 1;
    // Q, K, V in and O out per prefill token; the expanded K and V of each
    // KV token read (workspace, compute dtype).
    attn_prefill_token_ns_ = (2 * h * qk + 2 * h * a.v_head_dim) * cb / attn_bw;
    attn_prefill_kv_ns_ = h * (qk + a.v_head_dim) * cb / attn_bw;
    // At FlashMLA's measured share of the ceilings (RooflineOptions).
    FLEETSIM_CHECK(options.mla_decode_compute_efficiency > 0 && options.mla_decode_memory_efficiency > 0);
    const double mla_flops = peak * options.mla_decode_compute_efficiency;
    const double mla_bw = gpu.mem_bandwidth_gbps * options.mla_decode_memory_efficiency;
    attn_decode_flop_ns_ = 2 * h * (2 * a.kv_lora_rank + a.qk_rope_head_dim) / mla_flops;
    attn_decode_kv_ns_ = latent * kvb / mla_bw;
    // The absorbed query in, the latent output out, the new latent written.
    attn_decode_token_ns_ = ((h * latent + h * a.kv_lora_rank) * cb + latent * kvb) / mla_bw;
  } else {
    // Attention: QK^T and PV are 2 FLOPs per multiply-add each, per query
    // head and head_dim element: 4 * h * head_dim FLOPs per query-key pair.
    attn_flop_ns_ = 4 * h * head_dim / attn_flops;
    attn_heads_ = h;
    attn_kv_heads_ = g;
    attn_prefill_token_ns_ = (2 * h + 2 * g) * head_dim * cb / attn_bw;  // Q, K, V in, O out
    attn_prefill_kv_ns_ = 2 * g * head_dim * kvb / attn_bw;              // K, V from the cache
    attn_decode_flop_ns_ = attn_flop_ns_;
    attn_decode_kv_ns_ = attn_prefill_kv_ns_;
    // Q in and O out in compute dtype, the new K and V written to the cache.
    attn_decode_token_ns_ = (2 * h * head_dim * cb + 2 * g * head_dim * kvb) / attn_bw;
  }

  // Communication, one way per GPU: collectives over the tp GPUs use the
  // fabric's collective bandwidth, pipeline sends one peer link; a GPU with
  // no scale-up fabric falls back to PCIe for both.
  auto link_bw = [&](double gbps) {
    if (gbps <= 0) gbps = gpu.pcie_gbps_per_direction;
    FLEETSIM_CHECK(gbps > 0);
    return gbps * options.link_efficiency;
  };
  const double alpha_ns = gpu.scale_up.latency_us * 1e3;
  const double token_bytes = hidden * cb;
  if (shard.tp > 1) {
    const bool spans_nodes = options.collective_gbps > 0;
    // Collectives reach their own share of the fabric (bus bandwidth),
    // link_efficiency where no figure says otherwise.
    double gbps = spans_nodes ? options.collective_gbps : gpu.scale_up.CollectiveGbps(shard.tp);
    if (gbps <= 0) gbps = gpu.pcie_gbps_per_direction;
    FLEETSIM_CHECK(gbps > 0);
    const double bw =
        gbps * (options.collective_efficiency > 0 ? options.collective_efficiency : options.link_efficiency);
    const double ring_alpha_ns = spans_nodes                          ? options.collective_alpha_ns
                                 : options.collective_latency_us >= 0 ? options.collective_latency_us * 1e3
                                                                      : alpha_ns;
    // Two all-reduces of T x hidden per layer (after attention's O
    // projection and after the MLP's down projection), priced per step by
    // AllReduceNs as the engine runs them.
    all_reduces_ = 2 * layers_;
    ar_p_ = shard.tp;
    ar_bytes_per_token_ = token_bytes;
    ar_alpha_ns_ = ring_alpha_ns;
    ar_gbps_ = bw;
    const bool nvlink = gpu.scale_up.kind == "nvlink" && gpu.scale_up.CollectiveGbps(shard.tp) > 0;
    ar_custom_ = !spans_nodes && engine.all_reduce == AllReduceAlgorithm::kVllmCustom &&
                 VllmCustomAllReduce::Enabled(shard.tp, nvlink);
    ar_custom_latency_ns_ = engine.custom_all_reduce_latency_us * 1e3;
    // The sampled rows' logits are gathered from the vocab shards (NCCL):
    //   (p-1) alpha + (p-1)/p * rows * vocab * c / B.
    const double p = shard.tp;
    gather_fixed_ns_ = (p - 1) * ring_alpha_ns;
    gather_ns_per_sampled_ = (p - 1) / p * model.vocab * cb / bw;
  }
  ep_ = shard.ep;
  dp_ = shard.dp;
  FLEETSIM_CHECK(options.expert_load_skew >= 1);
  expert_skew_ = options.expert_load_skew;
  FLEETSIM_CHECK(options.redundant_experts >= 0);
  expert_copies_ = model.is_moe() ? 1.0 + static_cast<double>(options.redundant_experts) / model.experts : 1.0;
  if (shard.dp > 1) {
    // Per MoE layer and way: each GPU sends its 1/ep of the tokens' k
    // copies, (ep - 1)/ep of them to other GPUs.
    const bool priced = options.all_to_all_gbps > 0;
    const double bw = link_bw(priced ? options.all_to_all_gbps : gpu.scale_up.CollectiveGbps(shard.ep));
    a2a_alpha_ns_ = priced ? options.all_to_all_alpha_ns : alpha_ns;
    const double ep = shard.ep;
    a2a_ns_per_token_ = k * token_bytes * (ep - 1) / (ep * ep) / bw;
  }
  if (shard.pp > 1) {
    // Each stage boundary sends T x hidden activations once.
    const double bw = link_bw(gpu.scale_up.PeerGbps());
    const double sends = shard.pp - 1;
    pp_fixed_ns_ = sends * alpha_ns;
    pp_ns_per_token_ = sends * token_bytes / bw;
  }

  // A step of a tensor-parallel pool also waits for its workers.
  cpu_fixed_ns_ = (engine.cpu_overhead_fixed_us + (shard.tp > 1 ? engine.tp_step_cpu_us : 0)) * 1e3;
  cpu_per_seq_ns_ = engine.cpu_overhead_per_seq_us * 1e3;
  cpu_per_prefill_token_ns_ = engine.cpu_per_prefill_token_us * 1e3;
  cpu_per_decode_token_ns_ = engine.cpu_per_decode_token_us * 1e3;
  eager_launch_ns_ = engine.eager_launch_us * 1e3;
  // Swap: every GPU of the shard copies its share of the KV over its own
  // PCIe link, one way, at the link efficiency.
  if (gpu.pcie_gbps_per_direction > 0)
    swap_ns_per_token_ = static_cast<double>(KvBytesPerTokenPerGpu(model, shard)) /
                         (gpu.pcie_gbps_per_direction * options.link_efficiency);
}

double RooflinePerfModel::GemmNsOf(const GemmCost& c, double rows, double weights, const RooflineOptions& options) {
  double compute = rows * c.compute_ns_per_token;
  const double memory = weights * c.weight_ns + rows * c.activation_ns_per_token;
  if (!options.gemm_shape) return std::max(compute, memory) + options.launch_overhead_us * 1e3;
  // Few output tiles leave SMs idle: the compute rate falls with the
  // output elements M x N below the fitted half-saturation point.
  const double outputs = rows * c.out;
  if (outputs > 0) compute *= (outputs + options.gemm_half_output_elements) / outputs;
  return std::max(compute, memory) + options.gemm_overlap * std::min(compute, memory) +
         options.gemm_kernel_us * 1e3;
}

double RooflinePerfModel::GemmTimeNs(const GpuSpec& gpu, const RooflineOptions& options, double m, double n,
                                     double k) {
  const double peak = gpu.PeakTflops(DType::kBf16) * 1e3;
  const double bw = gpu.mem_bandwidth_gbps;
  GemmCost c;
  c.compute_ns_per_token = 2.0 * k * n / (peak * options.gemm_compute_efficiency);
  c.weight_ns = k * n * 2 / (bw * options.gemm_memory_efficiency);
  c.activation_ns_per_token = (k + n) * 2 / (bw * options.gemm_memory_efficiency);
  c.out = n;
  return GemmNsOf(c, m, 1, options);
}

RooflineOptions RooflineOptionsFor(const GpuSpec& gpu, RooflineOptions scenario, bool gemm_efficiency_set,
                                   bool attention_efficiency_set) {
  if (gpu.attention_shape && !attention_efficiency_set) {
    const AttentionShapeFit& a = *gpu.attention_shape;
    scenario.attention_compute_efficiency = a.prefill_compute_efficiency;
    scenario.attention_shape = true;
    scenario.attention_prefill_kernel_us = a.prefill_kernel_us;
    scenario.attention_prefill_half_work = a.prefill_half_work;
    scenario.attention_prefill_work_exponent = a.prefill_work_exponent;
  }
  if (!gpu.gemm_shape || gemm_efficiency_set) return scenario;
  const GemmShapeFit& f = *gpu.gemm_shape;
  scenario.gemm_compute_efficiency = f.compute_efficiency;
  scenario.gemm_memory_efficiency = f.memory_efficiency;
  scenario.gemm_shape = true;
  scenario.gemm_overlap = f.overlap;
  scenario.gemm_kernel_us = f.kernel_us;
  scenario.gemm_half_output_elements = f.half_output_elements;
  return scenario;
}

namespace {

// The scenario perf key that fixes each kernel term (kKernelTerms order):
// GEMM terms go with either GEMM efficiency (a scenario's constants keep
// the constant form), prefill attention's with its compute efficiency.
const char* const kKernelTermScenarioKeys[][2] = {
    {"gemm_compute_efficiency", "gemm_memory_efficiency"},  // gemm_compute_efficiency
    {"gemm_compute_efficiency", "gemm_memory_efficiency"},  // gemm_memory_efficiency
    {"gemm_compute_efficiency", "gemm_memory_efficiency"},  // gemm_overlap
    {"gemm_compute_efficiency", "gemm_memory_efficiency"},  // gemm_kernel_us
    {"gemm_compute_efficiency", "gemm_memory_efficiency"},  // gemm_half_output_elements
    {"attention_compute_efficiency", nullptr},              // attention_prefill_efficiency
    {"attention_compute_efficiency", nullptr},              // attention_prefill_half_work
    {"attention_compute_efficiency", nullptr},              // attention_prefill_work_exponent
    {"attention_memory_efficiency", nullptr},               // attention_decode_efficiency
    {"attention_memory_efficiency", nullptr},               // attention_decode_half_work
    {"attention_memory_efficiency", nullptr},               // attention_decode_work_exponent
    {"elementwise_memory_efficiency", nullptr},             // elementwise_memory_efficiency
    {"launch_overhead_us", nullptr},                        // launch_overhead_us
    {nullptr, nullptr},                                     // collective_latency_us
    {"link_efficiency", nullptr},                           // collective_bus_efficiency
};
static_assert(std::size(kKernelTermScenarioKeys) == kNumKernelTerms);

}  // namespace

bool KernelTermFixedByScenario(int term, const std::vector<std::string>& scenario_set) {
  for (const char* key : kKernelTermScenarioKeys[term])
    if (key && std::find(scenario_set.begin(), scenario_set.end(), key) != scenario_set.end()) return true;
  return false;
}

RooflineOptions ApplyKernelTerms(RooflineOptions o, const EngineSpec& engine,
                                 const std::vector<std::string>& scenario_set) {
  auto term = [&](int i) -> std::optional<double> {
    if (!engine.kernel[static_cast<size_t>(i)] || KernelTermFixedByScenario(i, scenario_set)) return std::nullopt;
    return engine.kernel[static_cast<size_t>(i)];
  };
  // A shape term turns its shape form on; the constant form is the shape
  // form with no overlap, no half point and the launch gap as fixed time.
  bool gemm = false, prefill = false;
  for (int i = 0; i <= 4; ++i) gemm = gemm || term(i).has_value();
  for (int i = 5; i <= 7; ++i) prefill = prefill || term(i).has_value();
  if (gemm && !o.gemm_shape) {
    o.gemm_shape = true;
    o.gemm_overlap = 0;
    o.gemm_half_output_elements = 0;
    o.gemm_kernel_us = o.launch_overhead_us;
  }
  if (prefill && !o.attention_shape) {
    o.attention_shape = true;
    o.attention_prefill_half_work = 0;
    o.attention_prefill_work_exponent = 1;
    o.attention_prefill_kernel_us = o.launch_overhead_us;
  }
  double* fields[] = {&o.gemm_compute_efficiency,         &o.gemm_memory_efficiency,
                      &o.gemm_overlap,                    &o.gemm_kernel_us,
                      &o.gemm_half_output_elements,       &o.attention_compute_efficiency,
                      &o.attention_prefill_half_work,     &o.attention_prefill_work_exponent,
                      &o.attention_memory_efficiency,     &o.attention_decode_half_work,
                      &o.attention_decode_work_exponent,  &o.elementwise_memory_efficiency,
                      &o.launch_overhead_us,              &o.collective_latency_us,
                      &o.collective_efficiency};
  static_assert(std::size(fields) == kNumKernelTerms);
  for (int i = 0; i < kNumKernelTerms; ++i) {
    if (auto v = term(i)) {
      *fields[i] = *v;
      o.engine_kernel_terms |= 1u << i;
    }
  }
  return o;
}

double KernelTermValue(const RooflineOptions& o, const GpuSpec& gpu, int term) {
  switch (term) {
    case 0: return o.gemm_compute_efficiency;
    case 1: return o.gemm_memory_efficiency;
    case 2: return o.gemm_shape ? o.gemm_overlap : 0.0;
    case 3: return o.gemm_shape ? o.gemm_kernel_us : o.launch_overhead_us;
    case 4: return o.gemm_shape ? o.gemm_half_output_elements : 0.0;
    case 5: return o.attention_compute_efficiency;
    case 6: return o.attention_shape ? o.attention_prefill_half_work : 0.0;
    case 7: return o.attention_shape ? o.attention_prefill_work_exponent : 1.0;
    case 8: return o.attention_memory_efficiency;
    case 9: return o.attention_decode_half_work;
    case 10: return o.attention_decode_work_exponent;
    case 11: return o.elementwise_memory_efficiency;
    case 12: return o.launch_overhead_us;
    case 13: return o.collective_latency_us >= 0 ? o.collective_latency_us : gpu.scale_up.latency_us;
    case 14: return o.collective_efficiency > 0 ? o.collective_efficiency : o.link_efficiency;
    default: FLEETSIM_CHECK(false);
  }
  return 0;
}

double RooflinePerfModel::AllReduceNs(double bytes) const {
  if (ar_custom_ && bytes < VllmCustomAllReduce::kMaxBytes)
    return VllmCustomAllReduce::Ns(ar_custom_latency_ns_, ar_gbps_, ar_p_, bytes);
  return RingAllReduceNs(ar_alpha_ns_, ar_gbps_, ar_p_, bytes);
}

RooflinePerfModel::Breakdown RooflinePerfModel::Explain(const BatchShape& shape) const {
  FLEETSIM_CHECK(!shape.empty());
  Breakdown b;
  // A step run as a CUDA graph computes its GEMMs, elementwise kernels and
  // all-reduces on the captured size's rows.
  // With data-parallel attention each rank runs its 1/dp of the batch (the
  // batch spread evenly), padded to its own captured size.
  const int64_t rank_tokens = dp_ > 1 ? (shape.tokens() + dp_ - 1) / dp_ : shape.tokens();
  b.graph_tokens = engine_.GraphSize(rank_tokens, shape.prefill_tokens == 0);
  const double tokens = static_cast<double>(b.graph_tokens > 0 ? b.graph_tokens : rank_tokens);
  const double inv_dp = 1.0 / dp_;
  const double moe_tokens = tokens * dp_;  // every rank's tokens meet in the MoE layers
  int64_t launches = 0;

  // GEMMs: max(compute, weights + activations) per product, per layer
  // (GemmNs: or the GPU's fitted shape model).
  double attn_gemm_ns = 0;
  for (int i = 0; i < attn_gemm_count_; ++i) attn_gemm_ns += GemmNs(attn_gemms_[i], tokens);
  int64_t gemms_per_layer = attn_gemm_count_;
  if (mla_) {
    // kv_b: over the KV tokens the prefill chunks read (expanded) and, in
    // a separate kernel pair, absorbed into the decodes' queries and outputs.
    if (shape.prefill_tokens > 0) {
      attn_gemm_ns += GemmNs(mla_kv_b_, static_cast<double>(shape.prefill_kv_tokens) * inv_dp);
      gemms_per_layer += 1;
    }
    if (shape.decode_tokens > 0) {
      // A decode-only step's rows are the (graph-padded) tokens.
      const double rows = shape.prefill_tokens > 0 ? static_cast<double>(shape.decode_tokens) * inv_dp : tokens;
      attn_gemm_ns += GemmNs(mla_kv_b_, rows);
      gemms_per_layer += 2;
    }
  }
  double dense_mlp_ns = 0;
  if (dense_mlp_layers_ > 0) dense_mlp_ns = GemmNs(dense_mlp_[0], tokens) + GemmNs(dense_mlp_[1], tokens);
  double moe_ns = 0;
  if (expert_gemm_count_ > 0) {
    // T tokens each pick k of E experts; an expert is untouched by all of
    // them with probability (1 - k/E)^T, so E (1 - (1 - k/E)^T) experts are
    // read. FLOPs and activations follow the T k routed rows.
    const double untouched = std::exp(moe_tokens * log_expert_miss_);
    double touched = experts_ * (1.0 - untouched);
    double routed = moe_tokens * top_k_;
    if (ep_ > 1) {
      // This GPU's E / ep experts: its share of the touched ones, and the
      // busiest GPU's share of the routed rows.
      touched *= expert_copies_ / ep_;
      routed *= expert_skew_ / ep_;
    }
    moe_ns = GemmNs(router_, tokens);
    for (int i = 0; i < expert_gemm_count_; ++i) moe_ns += GemmNs(expert_gemms_[i], routed, touched);
    for (int i = 0; i < shared_gemm_count_; ++i) moe_ns += GemmNs(shared_gemms_[i], tokens);
  }
  b.gemm_ns = layers_ * attn_gemm_ns + dense_mlp_layers_ * dense_mlp_ns + moe_layers_ * moe_ns;
  launches += static_cast<int64_t>(layers_) * gemms_per_layer +
              static_cast<int64_t>(dense_mlp_layers_) * 2 +
              static_cast<int64_t>(moe_layers_) * (1 + expert_gemm_count_ + shared_gemm_count_);
  const double sampled = dp_ > 1 ? std::ceil(shape.sampled_seqs * inv_dp) : shape.sampled_seqs;
  if (shape.sampled_seqs > 0) {
    b.lm_head_ns = GemmNs(lm_head_, sampled);
    b.gemm_ns += b.lm_head_ns;
    launches += 1;
  }

  // Attention, one kernel per layer for the prefill chunks and one for the
  // decodes. Sliding-window layers see at most window_ keys per query: a
  // chunk's pairs are capped at its tokens x window and the keys it reads
  // at window + its tokens; a decode reads at most window keys. The caps
  // apply to the batch's sums, which is exact when every context reaches
  // the window and an upper bound otherwise.
  const double full_layers = layers_ - sliding_layers_;
  if (shape.prefill_tokens > 0) {
    const double tokens_here = static_cast<double>(shape.prefill_tokens) * inv_dp;
    auto layer_ns = [&](double pairs, double kv_tokens) {
      double compute = pairs * attn_flop_ns_;
      const double memory = tokens_here * attn_prefill_token_ns_ + kv_tokens * attn_prefill_kv_ns_;
      double fixed = launch_ns_;
      if (options_.attention_shape) {
        // Little work leaves the kernel far from its efficiency (tiles, waves).
        const double work = pairs * attn_heads_;
        compute *= 1 + std::pow(options_.attention_prefill_half_work / work, options_.attention_prefill_work_exponent);
        fixed = options_.attention_prefill_kernel_us * 1e3;
      }
      return std::max(compute, memory) + fixed;
    };
    const double pairs = static_cast<double>(shape.prefill_attn_pairs) * inv_dp;
    const double kv = static_cast<double>(shape.prefill_kv_tokens) * inv_dp;
    b.attention_prefill_ns = full_layers * layer_ns(pairs, kv);
    if (sliding_layers_ > 0)
      b.attention_prefill_ns +=
          sliding_layers_ * layer_ns(std::min(pairs, tokens_here * window_),
                                     std::min(kv, tokens_here + shape.prefill_seqs * inv_dp * window_));
    launches += static_cast<int64_t>(layers_);
  }
  if (shape.decode_tokens > 0) {
    const double tokens_here = static_cast<double>(shape.decode_tokens) * inv_dp;
    auto layer_ns = [&](double kv) {
      const double compute = kv * attn_decode_flop_ns_;
      double memory = kv * attn_decode_kv_ns_ + tokens_here * attn_decode_token_ns_;
      if (options_.attention_decode_half_work > 0 && kv > 0)
        memory *= 1 + std::pow(options_.attention_decode_half_work / (kv * attn_kv_heads_),
                               options_.attention_decode_work_exponent);
      return std::max(compute, memory) + launch_ns_;
    };
    const double kv = static_cast<double>(shape.decode_kv_tokens) * inv_dp;
    b.attention_decode_ns = full_layers * layer_ns(kv);
    if (sliding_layers_ > 0) {
      // Each sequence's window plus its extra (speculated) tokens.
      const double seqs = shape.decode_seqs * inv_dp;
      b.attention_decode_ns += sliding_layers_ * layer_ns(std::min(kv, seqs * window_ + (tokens_here - seqs)));
    }
    launches += static_cast<int64_t>(layers_);
  }

  b.elementwise_ns = tokens * elementwise_ns_per_token_ + elementwise_launches_ * launch_ns_;
  if (expert_gemm_count_ > 0)
    b.moe_elementwise_ns =
        tokens * moe_elementwise_ns_per_token_ + moe_layers_ * kMoeElementwiseKernelsPerLayer * launch_ns_;
  launches += elementwise_launches_;

  if (shard_.tp > 1) b.all_reduce_ns = all_reduces_ * AllReduceNs(tokens * ar_bytes_per_token_);
  if (dp_ > 1) {
    b.all_to_all_ns = 2 * moe_layers_ * (a2a_alpha_ns_ + moe_tokens * a2a_ns_per_token_);
    b.all_reduce_ns += b.all_to_all_ns;
  }
  if (shard_.pp > 1) {
    b.pp_send_ns = pp_fixed_ns_ + tokens * pp_ns_per_token_;
    b.all_reduce_ns += b.pp_send_ns;
  }
  if (shard_.tp > 1 && shape.sampled_seqs > 0) {
    b.gather_ns = gather_fixed_ns_ + sampled * gather_ns_per_sampled_;
    b.all_reduce_ns += b.gather_ns;
  }

  // Each data-parallel rank's engine schedules its own share.
  b.cpu_overhead_ns = cpu_fixed_ns_ + (cpu_per_seq_ns_ * shape.seqs() +
                                       cpu_per_prefill_token_ns_ * static_cast<double>(shape.prefill_tokens) +
                                       cpu_per_decode_token_ns_ * static_cast<double>(shape.decode_tokens)) *
                                          inv_dp;
  if (shape.swap_in_tokens + shape.swap_out_tokens > 0)
    b.swap_ns = static_cast<double>(shape.swap_in_tokens + shape.swap_out_tokens) * swap_ns_per_token_;
  if (b.graph_tokens == 0 && eager_launch_ns_ > 0) {
    // Outside a graph the CPU launches kernel after kernel; when that is
    // slower than the GPU runs them, the GPU waits.
    const double gpu_ns = b.gemm_ns + b.attention_prefill_ns + b.attention_decode_ns + b.elementwise_ns +
                          b.all_reduce_ns;
    const double kernels = static_cast<double>(launches) + (shard_.tp > 1 ? all_reduces_ : 0.0);
    b.launch_stall_ns = std::max(0.0, kernels * eager_launch_ns_ - gpu_ns);
  }
  b.kernel_launches = launches;
  b.cpu_hidden_ns = HiddenCpuNs(engine_.async_scheduling, b.serial_ns(), b.cpu_overhead_ns);
  return b;
}

double HiddenCpuNs(bool async_scheduling, double serial_ns, double cpu_ns) {
  // The step's scheduling and input preparation ran while the step before
  // it was on the GPU (and this step's output processing runs under the
  // next). A step after an idle engine has nothing to hide under: priced
  // the same (a perf model sees one step), which is optimistic by up to
  // the CPU time, a millisecond or two, on an idle replica's first step.
  if (!async_scheduling) return 0;
  return std::max(0.0, std::min(cpu_ns, serial_ns - cpu_ns));
}

int64_t RooflinePerfModel::IterationNs(const BatchShape& shape) const {
  // Scenario bounds keep a step far below this (efficiencies >= 1e-3); the
  // cap, as in ProfilePerfModel, keeps llround defined whatever the inputs.
  return std::max<int64_t>(1, std::llround(std::min(Explain(shape).total_ns(), 1e15)));
}

IterationSplit SplitOf(const RooflinePerfModel::Breakdown& b, double total_ns) {
  IterationSplit s;
  const double cpu = b.cpu_overhead_ns;
  const double head = b.lm_head_ns + b.gather_ns;
  s.cpu_ns = std::llround(cpu);
  s.head_ns = std::llround(head);
  // A pipeline executor overlaps the CPU with the stages itself (its CPU
  // runs ahead of them): the split is of the serial time.
  s.layers_ns = std::max<int64_t>(
      1, std::llround(std::min(total_ns + b.cpu_hidden_ns - cpu - head - b.pp_send_ns, 1e15)));
  return s;
}

IterationSplit RooflinePerfModel::Split(const BatchShape& shape) const {
  const Breakdown b = Explain(shape);
  return SplitOf(b, b.total_ns());
}

std::vector<std::pair<std::string, std::string>> RooflinePerfModel::Sources() const {
  std::vector<std::pair<std::string, std::string>> out;
  const std::string engine = "engine:" + engine_.name + ":";
  for (const char* kind : kOpKinds) {
    const std::string k = kind;
    if (k == "cpu_overhead") {
      // tp_step_cpu_us resolves as "unused" at tp 1, which WeakestLevel skips.
      out.emplace_back(kind, engine + engine_.WeakestLevel({"step_cpu_us", "seq_cpu_us", "prefill_token_cpu_us",
                                                            "decode_token_cpu_us", "tp_step_cpu_us"}));
    } else if (k == "launch") {
      out.emplace_back(kind, engine + engine_.WeakestLevel({"eager_launch_us"}));
    } else if (k == "server") {
      out.emplace_back(kind, engine + engine_.WeakestLevel({"server_request_us", "server_prompt_token_us",
                                                            "server_output_token_us"}));
    } else {
      // The engine's kernel terms that price this kind, where it gives any.
      std::vector<std::string_view> terms;
      auto add = [&](int first, int last) {
        for (int i = first; i <= last; ++i)
          if (options_.engine_kernel_terms & (1u << i)) terms.push_back(kKernelTerms[i].name);
      };
      if (k == "gemm") add(0, 4);
      if (k == "attention_prefill") add(5, 7);
      if (k == "attention_decode") add(8, 10);
      if (k == "elementwise") add(11, 11);
      if (k == "all_reduce") {
        add(13, 14);
        if (ar_custom_) terms.push_back("custom_all_reduce_latency_us");
      }
      if (terms.empty()) {
        out.emplace_back(kind, "roofline");
        continue;
      }
      // The weakest level of the terms used (terms is not empty).
      out.emplace_back(kind, "roofline+" + engine + engine_.WeakestLevelOf(terms));
    }
  }
  return out;
}

IterationParts RooflinePerfModel::Parts(const BatchShape& shape) const {
  const Breakdown b = Explain(shape);
  IterationParts p;
  p.gemm = b.gemm_ns;
  p.attention_prefill = b.attention_prefill_ns;
  p.attention_decode = b.attention_decode_ns;
  p.elementwise = b.elementwise_ns;
  p.other = b.all_reduce_ns + b.cpu_overhead_ns - b.cpu_hidden_ns + b.swap_ns + b.launch_stall_ns;
  p.collective = b.all_reduce_ns;
  return p;
}

}  // namespace fleetsim
