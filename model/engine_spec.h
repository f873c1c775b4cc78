// Engine profiles: what a serving engine adds to the kernels, as data
// (model/engines/*.json, or a user's file named by fleet.pools[].engine).
//
// An EngineProfile holds the engine's own terms, each a list of values with
// provenance (source, date, engine version) and the GPU, model and tp they
// were measured for. ResolveEngine picks one value per term for a pool, in
// a documented fallback order, and returns an EngineSpec: the terms the
// performance model and the replica apply, and where each came from.
//
// Fallback order, per term (model/README.md, "engines/*.json"):
//   1. exact     an entry naming this GPU whose model and tp, where named,
//                are the pool's (the most specific such entry wins);
//   2. same_gpu  an entry measured on this GPU for another model or tp (the
//                nearest tp, then the same model, wins);
//   3. any_gpu   an entry that names no GPU: a generic figure, measured
//                where the GPU does not matter (the host's tokeniser, the
//                API server);
//   4. estimate  an entry marked "estimate": true, whatever it names. A term
// with no entry that applies is an error naming the term and the GPU.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace fleetsim {

// The numeric terms of an engine profile, in the order files list them.
inline constexpr const char* kEngineTerms[] = {
    "step_cpu_us",                   // CPU time per step: scheduling, input preparation, sampling
    "seq_cpu_us",                    // per sequence in the step (block tables, sampling, output processing)
    "prefill_token_cpu_us",          // per prefill token in the step (input preparation)
    "decode_token_cpu_us",           // per decode token in the step
    "tp_step_cpu_us",                // per step at tp > 1: handing the step to the other workers, waiting for them
    "eager_launch_us",               // CPU time to launch one kernel outside a CUDA graph
    "custom_all_reduce_latency_us",  // one synchronisation step of the engine's own all-reduce
    "server_request_us",             // API server: request parsing before the engine sees it
    "server_prompt_token_us",        // API server: tokenisation, per prompt token
    "server_output_token_us",        // API server: detokenisation and streaming of each token
};

// The GPU side of an engine: how close its kernels come to the GPU's
// ceilings (model/roofline.h), which fleetsim fit fits beside the CPU terms.
// Optional in a profile: a term without an entry for the pool's GPU keeps
// the GPU's own figure (the catalogue's fitted shapes, else the roofline's
// defaults), so a profile names only what was measured. Each has the
// physical range a file's value and a fit are held to.
struct KernelTermInfo {
  const char* name;
  const char* unit;
  double lo, hi;
  const char* doc;
};
inline constexpr KernelTermInfo kKernelTerms[] = {
    {"gemm_compute_efficiency", "fraction of dense peak", 0.2, 1.0,
     "GEMMs: the fraction of the peak large products reach"},
    {"gemm_memory_efficiency", "fraction of HBM bandwidth", 0.2, 1.0,
     "GEMMs: the fraction of the bandwidth a weight-streaming (small-M) product reaches"},
    {"gemm_overlap", "fraction", 0.0, 1.0,
     "GEMMs: how much of the shorter of compute and memory time adds to the longer (0: they overlap fully)"},
    {"gemm_kernel_us", "us per GEMM", 0.0, 100.0, "GEMMs: fixed time of each product (launch gap, tail)"},
    {"gemm_half_output_elements", "M x N elements", 0.0, 1e8,
     "GEMMs: output elements at which the compute rate is half its peak share (few tiles leave SMs idle)"},
    {"attention_prefill_efficiency", "fraction of dense peak", 0.05, 1.0,
     "prefill attention: the fraction of the peak unbounded work reaches"},
    {"attention_prefill_half_work", "query-key pairs x heads", 0.0, 1e13,
     "prefill attention: the work at which the compute time doubles (short prompts fill few tiles)"},
    {"attention_prefill_work_exponent", "exponent", 0.1, 3.0,
     "prefill attention: how fast the efficiency rises with the work"},
    {"attention_decode_efficiency", "fraction of HBM bandwidth", 0.1, 1.0,
     "decode attention: the fraction of the bandwidth reading the KV cache reaches"},
    {"attention_decode_half_work", "KV tokens x KV heads", 0.0, 1e10,
     "decode attention: the KV read per layer at which the memory time doubles (short contexts and small "
     "batches fill few thread blocks)"},
    {"attention_decode_work_exponent", "exponent", 0.1, 3.0,
     "decode attention: how fast the efficiency rises with the KV read"},
    {"elementwise_memory_efficiency", "fraction of HBM bandwidth", 0.1, 1.0,
     "norms, rotary, activation, residuals: the fraction of the bandwidth they reach"},
    {"launch_overhead_us", "us per kernel", 0.0, 50.0,
     "the GPU-side gap between kernels of a step (a CUDA graph's too)"},
    {"collective_latency_us", "us per ring step", 0.1, 500.0,
     "tensor-parallel collectives within a node: the latency (alpha) of each step of NCCL's ring"},
    {"collective_bus_efficiency", "fraction of link bandwidth", 0.05, 1.0,
     "tensor-parallel collectives: the fraction of the fabric's bandwidth they reach (bus bandwidth)"},
};
inline constexpr int kNumKernelTerms = static_cast<int>(std::size(kKernelTerms));
// The index of a kernel term's name, or -1.
int KernelTermIndex(std::string_view name);

struct EngineTermEntry {
  double value = 0;
  std::string gpu;    // empty: any GPU (a generic figure)
  std::string model;  // empty: any model
  int tp = 0;         // 0: any tp
  std::string source;
  std::string date;
  std::string engine_version;  // may be empty for estimates
  bool estimate = false;
};

// Which decode steps run as captured CUDA graphs.
enum class CudaGraphMode {
  kNone,        // every step launches its kernels one by one
  kDecodeOnly,  // steps with only decode tokens, up to the largest captured batch (SGLang)
  kAllSteps,    // any step up to the largest captured token count (vLLM V1 piecewise graphs)
};

// The all-reduce a tensor-parallel engine runs (model/collectives.h).
enum class AllReduceAlgorithm {
  kNcclRing,    // NCCL's ring for every size
  kVllmCustom,  // vLLM's custom all-reduce (one-shot / two-shot) where it applies, else NCCL's ring
};

struct EngineProfile {
  std::string name;            // "vllm"
  std::string engine;          // "vllm", "sglang": whose scheduler defaults it matches
  std::string origin;          // file it was read from
  std::string description;
  // Every kEngineTerms key; kKernelTerms keys where the profile has them.
  std::map<std::string, std::vector<EngineTermEntry>, std::less<>> terms;
  CudaGraphMode cuda_graphs = CudaGraphMode::kNone;
  std::vector<int> cuda_graph_sizes;  // captured sizes, increasing (empty when kNone)
  std::string cuda_graphs_source;
  AllReduceAlgorithm all_reduce = AllReduceAlgorithm::kNcclRing;
  std::string all_reduce_source;
  // The engine schedules step N+1 on the CPU while step N runs on the GPU
  // (vLLM's async scheduling): a step costs the longer of the two.
  bool async_scheduling = false;
  // With it: a request that reaches the engine while a step runs joins the
  // step after the next (the next was built when the running one began:
  // SGLang's overlap scheduler), rather than the next (vLLM V1's, as its
  // published TTFTs show). JSON: async_scheduling.new_requests.
  bool admit_after_next_step = false;
  std::string async_scheduling_source;  // empty when the profile does not say
};

// An engine's terms resolved for one pool (GPU, model, tp).
struct EngineSpec {
  std::string name;
  double cpu_overhead_fixed_us = 0;    // step_cpu_us
  double cpu_overhead_per_seq_us = 0;  // seq_cpu_us
  double cpu_per_prefill_token_us = 0;
  double cpu_per_decode_token_us = 0;
  double tp_step_cpu_us = 0;  // added to every step of a pool with tp > 1
  double eager_launch_us = 0;
  CudaGraphMode cuda_graphs = CudaGraphMode::kNone;
  std::vector<int> cuda_graph_sizes;
  AllReduceAlgorithm all_reduce = AllReduceAlgorithm::kNcclRing;
  bool async_scheduling = false;  // the profile's, or the pool's async_scheduling
  bool admit_after_next_step = false;  // the profile's (applies with async_scheduling)
  double custom_all_reduce_latency_us = 0;
  double server_request_us = 0;
  double server_prompt_token_us = 0;
  double server_output_token_us = 0;
  // GPU-side terms (kKernelTerms order) the profile gives for this GPU;
  // unset: the GPU's own figures (model/roofline.h, ApplyKernelTerms).
  std::array<std::optional<double>, kNumKernelTerms> kernel;

  // Where each term came from.
  struct TermSource {
    std::string term;
    std::string level;  // "exact", "same_gpu", "any_gpu", "estimate"; "unused" for a term the pool never
                        // applies (tp_step_cpu_us at tp 1; the custom all-reduce at tp 1 or
                        // under nccl_ring). Kernel terms are listed only where the profile
                        // gives one.
    std::string source;
  };
  std::vector<TermSource> sources;

  // The field that holds the term named `term` (one of kEngineTerms);
  // nullptr for another name.
  double* Term(std::string_view term);
  // The kernel term named `term` (one of kKernelTerms); nullptr otherwise.
  std::optional<double>* KernelTerm(std::string_view term);
  // True when the profile gives any kernel term for this pool.
  bool HasKernelTerms() const;

  // The captured size a step of `tokens` tokens (`decode_only`: every
  // token a decode) is padded to, or 0 when it runs outside a graph.
  int GraphSize(int64_t tokens, bool decode_only) const;
  // "exact" when every term is, else the weakest level of any term; of
  // `terms` only, when given.
  // Levels from strongest: exact, same_gpu, any_gpu, estimate.
  std::string WeakestLevel(std::initializer_list<std::string_view> terms = {}) const {
    return WeakestLevelOf(std::span<const std::string_view>(terms.begin(), terms.size()));
  }
  std::string WeakestLevelOf(std::span<const std::string_view> terms) const;
  // Terms resolved at `level`, in kEngineTerms order.
  std::vector<std::string> TermsAt(std::string_view level) const;
};

// Resolves every term of `profile` for a pool. Errors name the profile's
// origin and the term: "vllm.json: terms.step_cpu_us: no entry for
// A100-80G, and no generic entry (one without \"gpu\")".
Status ResolveEngine(const EngineProfile& profile, const std::string& gpu, const std::string& model, int tp,
                     EngineSpec* out);

}  // namespace fleetsim
