// RooflinePerfModel: the fallback performance source. Each operator takes
//   max(FLOPs / (peak x compute_efficiency), bytes / (bandwidth x memory_efficiency))
//   + launch overhead (the GPU-side gap between kernels),
// summed over all layers (one batch passes every pipeline stage in turn),
// plus one activation send per stage boundary under pipeline parallelism and
// two all-reduces per layer under tensor parallelism, priced as the engine
// runs them (model/collectives.h: NCCL's ring, or vLLM's custom one-shot and
// two-shot all-reduce where it applies), plus the engine's terms
// (model/engine_spec.h):
//   - CPU time per step: fixed + per sequence + per prefill and decode token;
//   - CUDA graphs: a step the engine runs as a captured graph is padded to
//     the captured size (GEMMs, elementwise kernels and all-reduces run on
//     the padded rows); a step outside a graph waits for the CPU to launch
//     its kernels one by one, so its GPU time is at least
//     kernels x eager_launch_us (the difference is launch_stall_ns).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/engine_spec.h"
#include "model/hardware.h"
#include "model/model_spec.h"
#include "model/perf_model.h"
#include "model/shard_plan.h"

namespace fleetsim {

// Fractions of the datasheet ceilings that real kernels reach. Defaults are
// the measured ceilings in DOMAIN.md (see roofline.cc for each source).
struct RooflineOptions {
  double gemm_compute_efficiency = 0.80;       // cuBLAS bf16 reaches ~80% of dense peak
  double gemm_memory_efficiency = 0.85;
  double attention_compute_efficiency = 0.60;  // FlashAttention-class prefill
  double attention_memory_efficiency = 0.85;   // paged decode kernels
  double elementwise_memory_efficiency = 0.85;
  // Absorbed MLA decode (FlashMLA's kernel; DeepSeek-V3): FlashMLA's README
  // reports 3000 GB/s memory-bound and 660 TFLOP/s compute-bound on an
  // H800 SXM5, whose ceilings are the H100's 3.35 TB/s and 989 TFLOP/s
  // (bf16 dense): 0.896 and 0.667 of them.
  double mla_decode_compute_efficiency = 0.667;
  double mla_decode_memory_efficiency = 0.896;
  double launch_overhead_us = 2.0;             // per kernel on the critical path
  double link_efficiency = 0.85;               // achieved / datasheet link bandwidth
  // GEMM time as a function of shape (GemmShapeFit, model/hardware.h); the
  // efficiencies above then hold the fit's. Off: max(compute, memory) +
  // launch_overhead_us.
  bool gemm_shape = false;
  double gemm_overlap = 0;
  double gemm_kernel_us = 0;
  double gemm_half_output_elements = 0;
  // Prefill attention time as a function of its work (AttentionShapeFit,
  // model/hardware.h); attention_compute_efficiency then holds the fit's.
  // Off: max(compute, memory) + launch_overhead_us per layer.
  bool attention_shape = false;
  double attention_prefill_kernel_us = 0;
  double attention_prefill_half_work = 0;
  double attention_prefill_work_exponent = 1;
  // Decode attention's memory time as a function of the KV it reads per
  // layer, W = KV tokens x KV heads on one GPU: the time of bytes at
  // attention_memory_efficiency x (1 + (half / W)^exponent). A decode kernel
  // over short contexts or few sequences fills few thread blocks. 0: off
  // (the constant efficiency).
  double attention_decode_half_work = 0;
  double attention_decode_work_exponent = 1;
  // Tensor-parallel collectives within a node: the latency of one ring step
  // (negative: the GPU's scale_up.latency_us) and the fraction of the
  // fabric's bandwidth they reach (0: link_efficiency).
  double collective_latency_us = -1;
  double collective_efficiency = 0;
  // Bit i set: kernel term i (kKernelTerms) is the engine profile's
  // (ApplyKernelTerms), which Sources() reports.
  uint32_t engine_kernel_terms = 0;
  // The tensor-parallel group's ring as the fleet's topology prices it when
  // it spans nodes (sim/cluster/topology.h): alpha per step and the slowest
  // hop's bandwidth (datasheet GB/s; link_efficiency still applies). 0: the
  // GPU's scale-up fabric, within one node. When set, the engine's own
  // all-reduce (one node only) gives way to NCCL's ring.
  double collective_alpha_ns = 0;
  double collective_gbps = 0;
  // Expert parallelism with data-parallel attention (ShardPlan::dp > 1):
  // the all-to-all among the ep GPUs as the topology prices it (each GPU's
  // bandwidth to the others, its slowest shared link considered; the
  // largest path latency); 0: the GPU's scale-up fabric.
  double all_to_all_alpha_ns = 0;
  double all_to_all_gbps = 0;
  // Expert parallelism: routed rows on the busiest GPU over the mean (1:
  // the router spreads tokens evenly). The step waits for that GPU.
  double expert_load_skew = 1;
  // Expert copies an EPLB-style balancer adds across the ep GPUs: each GPU
  // holds (experts + redundant_experts) / ep of them, so reads that many of
  // the touched experts' weights.
  int redundant_experts = 0;
  // The kernels' times as a ProfilePerfModel prices them (GEMMs with the
  // lm_head, elementwise ops, prefill and decode attention, whether from
  // the profile or the roofline) multiplied by this; RooflinePerfModel
  // ignores it. Not a scenario key: fleetsim live and fit set it for a live
  // run's replay to what the run measured of those kinds over what the
  // model priced for the same batches, so that what is left is the rest of
  // the model's error (scheduling, batching, the executor's terms), not
  // the machine's drift from its calibration.
  double kernel_time_scale = 1;
};

// The options a pool's roofline runs with: the scenario's, with the GPU's
// fitted GEMM shape (when it has one) unless the scenario set either GEMM
// efficiency itself.
// The GPU's fitted shapes applied to the scenario's options, unless the
// scenario set those efficiencies itself (perf.gemm_*_efficiency,
// perf.attention_compute_efficiency): then its constants stand.
RooflineOptions RooflineOptionsFor(const GpuSpec& gpu, RooflineOptions scenario, bool gemm_efficiency_set,
                                   bool attention_efficiency_set = false);

// The engine profile's kernel terms (EngineSpec::kernel: how close this
// engine's kernels come to the GPU's ceilings) over `o`, which holds the
// GPU's own figures, except those the scenario set itself (`scenario_set`:
// the perf keys it gives, e.g. "gemm_compute_efficiency"; a scenario's
// constant GEMM or attention efficiency keeps its constant form). A GEMM
// or prefill attention term turns the shape form on; terms the profile
// lacks keep what `o` has (a GPU without a fitted shape: the constant
// form's figures, so the time is unchanged until a term moves).
RooflineOptions ApplyKernelTerms(RooflineOptions o, const EngineSpec& engine,
                                 const std::vector<std::string>& scenario_set);
// What kernel term `term` (an index into kKernelTerms) is under `o` for
// `gpu`: the value a fit starts from.
double KernelTermValue(const RooflineOptions& o, const GpuSpec& gpu, int term);
// Whether the scenario's perf keys (`scenario_set`) fix kernel term `term`,
// so that the engine's figure does not apply.
bool KernelTermFixedByScenario(int term, const std::vector<std::string>& scenario_set);

class RooflinePerfModel final : public PerfModel {
 public:
  // REQUIRES: CheckShardPlan(model, shard).ok() (memory_plan.h); the
  // caller validates user input first, a bad shard here aborts.
  RooflinePerfModel(const ModelSpec& model, const GpuSpec& gpu, const ShardPlan& shard,
                    const EngineSpec& engine, const RooflineOptions& options = {});
  int64_t IterationNs(const BatchShape& shape) const override;
  IterationParts Parts(const BatchShape& shape) const override;
  IterationSplit Split(const BatchShape& shape) const override;
  const EngineSpec& engine() const { return engine_; }
  std::vector<std::pair<std::string, std::string>> Sources() const override;

  // Time of one operator kind for `shape`, in ns, summed over all layers
  // (exposed for tests and for reports that break an iteration down).
  struct Breakdown {
    double gemm_ns = 0, attention_prefill_ns = 0, attention_decode_ns = 0,
           elementwise_ns = 0, all_reduce_ns = 0, cpu_overhead_ns = 0, swap_ns = 0;
    // Parts of the above that are per iteration rather than per layer: the
    // lm_head product of the sampled rows (in gemm_ns) and the logits
    // all-gather under tp (in all_reduce_ns). Per-layer sources (profiles)
    // replace the rest and keep these.
    double lm_head_ns = 0, gather_ns = 0;
    // The activation sends between pipeline stages (in all_reduce_ns), as
    // priced on the GPU's peer link; a pipeline executor prices them on the
    // topology instead (IterationSplit leaves them out).
    double pp_send_ns = 0;
    // Time the GPU waits for the CPU to launch the kernels of a step that
    // runs outside a CUDA graph (in total_ns).
    double launch_stall_ns = 0;
    // The captured size the step was padded to; 0: it ran outside a graph.
    int64_t graph_tokens = 0;
    // Expert parallelism with dp > 1: each MoE layer's dispatch and combine
    // all-to-all (in all_reduce_ns).
    double all_to_all_ns = 0;
    // The MoE token permutation and weighted combine (in elementwise_ns):
    // kernels a calibration does not measure, kept by profile sources.
    double moe_elementwise_ns = 0;
    // Kernel launches on the critical path; each adds launch_overhead_us,
    // already included in the times above.
    int64_t kernel_launches = 0;
    // Of cpu_overhead_ns, what runs under the GPU's work when the engine
    // schedules asynchronously (EngineSpec::async_scheduling): the step
    // costs max(GPU, CPU), so min(GPU, CPU) is hidden. 0 otherwise.
    double cpu_hidden_ns = 0;
    // Everything in sequence, the CPU's time included in full.
    double serial_ns() const {
      return gemm_ns + attention_prefill_ns + attention_decode_ns + elementwise_ns +
             all_reduce_ns + cpu_overhead_ns + swap_ns + launch_stall_ns;
    }
    double total_ns() const { return serial_ns() - cpu_hidden_ns; }
  };
  Breakdown Explain(const BatchShape& shape) const;

  // One GEMM of M rows, N outputs and K inputs (16-bit operands) on `gpu`
  // under `options`, as the model prices each of its products: for tests
  // and the fidelity checks against measured GEMMs.
  static double GemmTimeNs(const GpuSpec& gpu, const RooflineOptions& options, double m, double n, double k);

 private:
  // One matrix product y = x W, per token of an iteration: time is
  // max(T x compute, weight + T x activation). For an MoE expert the
  // figures are one expert's, scaled by the experts touched and the routed
  // rows (see roofline.cc).
  struct GemmCost {
    double compute_ns_per_token = 0;  // 2 * |W| / (peak x efficiency)
    double weight_ns = 0;             // |W| bytes / (bandwidth x efficiency)
    double activation_ns_per_token = 0;  // (in + out) activations / (bandwidth x efficiency)
    double out = 0;                   // N: outputs per token
  };
  // One product over `rows` rows (`weights` weight matrices read), launch
  // or fixed kernel time included.
  double GemmNs(const GemmCost& c, double rows, double weights = 1) const {
    return GemmNsOf(c, rows, weights, options_);
  }
  static double GemmNsOf(const GemmCost& c, double rows, double weights, const RooflineOptions& options);

  // Constants precomputed at construction so IterationNs is a few dozen
  // floating-point operations.
  double layers_ = 0;               // all layers: one batch passes every stage
  double sliding_layers_ = 0;       // of them, sliding-window layers (ModelSpec::sliding_layers)
  double window_ = 0;               // their window, in tokens
  double launch_ns_ = 0;
  // Every layer's attention projections: QKV and O; under multi-head latent
  // attention the fused q_a + kv_a down-projection (replicated on every
  // tensor-parallel GPU), q_b and O (split by heads).
  GemmCost attn_gemms_[3];
  int attn_gemm_count_ = 0;
  // MLA: kv_b, the latent's up-projection to the heads' keys and values.
  // Prefill multiplies every KV token the chunks read by it (the latent
  // expanded to full heads); decode runs it absorbed, once per decode
  // token (W_UK into the query, W_UV onto the output: half the matrix
  // each).
  bool mla_ = false;
  GemmCost mla_kv_b_;
  // Layers with a dense MLP (all of a dense model's; DeepSeek's leading
  // dense_layers) and its gate+up and down products.
  double dense_mlp_layers_ = 0;
  GemmCost dense_mlp_[2];
  // MoE layers: the router (replicated), one routed expert's gate+up and
  // down, and the shared experts every token passes (split like a dense
  // MLP).
  double moe_layers_ = 0;
  GemmCost router_;
  GemmCost expert_gemms_[2];        // MoE: one expert's gate+up and down
  int expert_gemm_count_ = 0;
  GemmCost shared_gemms_[2];
  int shared_gemm_count_ = 0;
  double experts_ = 0, top_k_ = 0;
  double log_expert_miss_ = 0;      // log(1 - k/E): P(an expert is untouched by one token)
  GemmCost lm_head_;                // per sampled sequence
  double elementwise_ns_per_token_ = 0;  // all layers + embedding + final norm
  double moe_elementwise_ns_per_token_ = 0;  // the MoE permute + combine share of it
  int64_t elementwise_launches_ = 0;
  double attn_flop_ns_ = 0;         // ns per prefill query-key pair per layer (4 * h * head_dim FLOPs)
  double attn_heads_ = 0;           // query heads on this GPU (the attention shape's work)
  double attn_kv_heads_ = 0;        // KV heads on this GPU (the decode attention shape's work; 1 for MLA's latent)
  double attn_prefill_token_ns_ = 0;     // Q, K, V, O of one prefill token, per layer
  double attn_prefill_kv_ns_ = 0;        // one KV token read by prefill, per layer
  double attn_decode_flop_ns_ = 0;  // ns per decode context token per layer (compute)
  double attn_decode_kv_ns_ = 0;    // one KV token read by decode, per layer
  double attn_decode_token_ns_ = 0; // Q, O and the new K, V of one decode token, per layer
  // The tp all-reduces (2 per layer) of S = tokens x ar_bytes_per_token_.
  double all_reduces_ = 0;          // per iteration
  int ar_p_ = 1;
  double ar_bytes_per_token_ = 0;
  double ar_alpha_ns_ = 0;          // NCCL ring: per step
  double ar_gbps_ = 0;              // collective bandwidth per GPU, one way
  bool ar_custom_ = false;          // the engine runs vLLM's custom all-reduce here
  double ar_custom_latency_ns_ = 0;
  double AllReduceNs(double bytes) const;
  // Expert parallelism (ep > 1): each expert whole on its GPU, the busiest
  // GPU's rows; with dp > 1 the attention side runs 1/dp of the batch per
  // rank and each MoE layer sends its routed copies there and back.
  int ep_ = 1, dp_ = 1;
  double expert_skew_ = 1;
  double expert_copies_ = 1;        // (experts + redundant copies) / experts
  double a2a_alpha_ns_ = 0;         // per all-to-all
  double a2a_ns_per_token_ = 0;     // per token entering the MoE layer, one way
  double pp_fixed_ns_ = 0;          // pipeline sends: latency
  double pp_ns_per_token_ = 0;      // and bandwidth, per token
  double gather_fixed_ns_ = 0;      // logits all-gather latency (tp > 1)
  double gather_ns_per_sampled_ = 0;
  double cpu_fixed_ns_ = 0, cpu_per_seq_ns_ = 0;
  double cpu_per_prefill_token_ns_ = 0, cpu_per_decode_token_ns_ = 0;
  double eager_launch_ns_ = 0;
  double swap_ns_per_token_ = 0;  // one token's KV share over this GPU's PCIe link

  ModelSpec model_;
  GpuSpec gpu_;
  ShardPlan shard_;
  EngineSpec engine_;
  RooflineOptions options_;
};

// The split of an iteration whose breakdown is `b` and whose total (the
// breakdown's, or a profile's with per-layer parts replaced) is `total_ns`:
// the CPU and head parts as `b` prices them, the rest less the pipeline
// sends in the layers.
IterationSplit SplitOf(const RooflinePerfModel::Breakdown& b, double total_ns);

// What an engine that schedules asynchronously hides of a step's CPU time
// `cpu_ns` under the rest, `serial_ns` less it: the smaller of the two
// (the step costs the larger). 0 when it does not.
double HiddenCpuNs(bool async_scheduling, double serial_ns, double cpu_ns);

}  // namespace fleetsim
