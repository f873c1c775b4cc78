// ScenarioSpec: the typed form of a scenario JSON file. Parsing (parse.h)
// checks syntax, types, ranges and unknown keys; resolving names against the
// catalogue and the policy registries happens when the run is built
// (sim/runner), using the JSON paths kept here for its messages.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/engine_spec.h"
#include "model/roofline.h"
#include "sim/cluster/autoscaler.h"
#include "sim/cluster/reliability.h"
#include "sim/cluster/topology.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

// One group of identical replicas.
// An engine name that names a file rather than a bundled profile.
inline bool EngineIsFile(const std::string& engine) {
  return engine.find('/') != std::string::npos ||
         (engine.size() > 5 && engine.compare(engine.size() - 5, 5, ".json") == 0);
}

// A model name that names a Hugging Face config.json rather than a zoo
// entry: it contains '/' or ends with ".json" (model/hf_config.h).
inline bool ModelIsFile(const std::string& model) { return EngineIsFile(model); }

// A pool's speculative decoding (fleet.pools[].speculative; vLLM's
// --speculative-config): a proposer guesses num_speculative_tokens tokens a
// step and each request accepts them with its own probability
// (sim/cluster/speculation.h).
struct SpeculativeSpec {
  std::string path;                   // "fleet.pools[0].speculative"
  // "draft_model" (a zoo model), "eagle" (a head on the target) or "mtp"
  // (the model's own multi-token-prediction layers, DeepSeek-V3's).
  std::string method = "draft_model";
  std::string draft_model;            // method draft_model: a zoo name
  int k = 1;                          // num_speculative_tokens
  // Method eagle: the head's size in target layers (EAGLE: one decoder
  // layer); method mtp: the model's mtp_layers, set when the run is built.
  double head_layers = 1;
  double acceptance_mean = 0;         // alpha's mean
  double acceptance_concentration = 0;  // Beta's a + b; 0: alpha fixed at the mean
};

struct PoolSpec {
  std::string path;            // JSON path, "fleet.pools[0]", for messages
  std::string name;            // defaults to "pool<i>"
  // Defaults to the scenario's model. A zoo name, or a path to a Hugging
  // Face config.json (ModelIsFile; resolved against the scenario's folder).
  std::string model;
  std::string gpu;
  int replicas = 1;
  int tp = 1;
  int pp = 1;
  // Layers per pipeline stage, pp entries summing to the model's layers;
  // empty: vLLM's default split (sim/cluster/executor.h).
  std::vector<int> layer_split;
  // MoE expert parallelism (vLLM's --enable-expert-parallel): experts whole
  // on ep GPUs. Without dp_attention ep must be tp (the TP group is the EP
  // group); with it, dp = ep / tp data-parallel attention ranks of tp GPUs
  // each (vLLM's --data-parallel-size), the MoE layers exchanging tokens by
  // all-to-all. expert_load_skew: the busiest GPU's routed tokens over the
  // mean (1: balanced).
  int ep = 1;
  bool dp_attention = false;
  double expert_load_skew = 1;
  // The busiest GPU's load derived instead of given (model/expert_balance.h):
  // each expert's share of the routed tokens (a router log's counts, or a
  // Zipf popularity of exponent zipf_s), placed statically or, with
  // redundant_experts set (0 too), by an EPLB-style balancer that adds that
  // many expert copies across the group. Excludes expert_load_skew.
  struct ExpertBalanceSpec {
    std::vector<double> loads;        // one per expert; empty: zipf_s
    std::optional<double> zipf_s;
    std::optional<int> redundant_experts;
  };
  std::optional<ExpertBalanceSpec> expert_balance;
  std::optional<SpeculativeSpec> speculative;
  // Engine profile: a bundled name (model/engines), or a user's file (a
  // path, resolved against the scenario's folder; EngineIsFile). Empty:
  // the scheduler's own engine (sglang for sglang, else vllm).
  std::string engine;
  // Set by a program, never by a scenario file (`fleetsim fit`): the
  // engine's terms as given, instead of the profile's resolved ones.
  std::optional<EngineSpec> engine_terms;
  // Whether the engine overlaps scheduling with the step on the GPU (vLLM's
  // --async-scheduling). Unset: the engine profile's.
  std::optional<bool> async_scheduling;
  std::string scheduler = "vllm";  // batch scheduler (registry)
  // Scheduler-specific options, checked by the scheduler's factory.
  std::map<std::string, double, std::less<>> scheduler_options;
  std::string preemption = "recompute";  // "recompute" or "swap"
  double swap_space_gib = 4;             // host memory per GPU for swapped KV (vLLM's --swap-space)
  std::optional<int64_t> max_model_len;  // engine's context limit, at most the model's
  // A request whose prompt + output exceeds max_model_len: "reject" it (as
  // the engines do) or "truncate" it to fit, as other simulators do (the
  // prompt keeps max_model_len - output tokens, then the output is cut).
  std::string over_max_model_len = "reject";
  // Disaggregated serving: a prefill pool takes the router's requests and
  // hands each, prefilled, to a decode pool of its model (Cluster).
  enum class Role { kBoth, kPrefill, kDecode };
  Role role = Role::kBoth;
  std::optional<bool> prefix_caching;    // unset: the scheduler's engine default (vllm, sglang on)
  // vLLM defaults when unset: 8192 tokens and 1024 sequences on GPUs of
  // 70 GiB or more other than A100, else 2048 and 256.
  std::optional<int64_t> max_num_batched_tokens;
  std::optional<int64_t> max_num_seqs;
  double gpu_memory_utilization = 0.9;
  int block_size = 16;
  // The KV cache's dtype, as vLLM's --kv-cache-dtype: "auto" (the model's),
  // "fp8", "bf16" or "fp16". fp8 halves the KV bytes per token.
  std::string kv_cache_dtype = "auto";
  std::string pricing_class = "on_demand";
  std::optional<double> usd_per_gpu_hour;  // overrides the catalogue price
  // N+k: replicas kept beyond `replicas` (serving like the others; the pool
  // needs `replicas` ready, what availability.capacity measures).
  int spares = 0;
  std::string zone = "zone0";  // its nodes' zone (failures of a zone take them all)
  // Its region (fleet.regions); empty: the first. A pool in a region whose
  // zone is not given is in the zone named after the region, so a drill on
  // that zone is a region outage.
  std::string region;
  // Set: the pool scales between its bounds (docs/autoscaling.md);
  // `replicas` is then the count ready at time 0.
  std::optional<AutoscalerSpec> autoscaler;
  // A warm worker to ready (weights loaded: wake the engine), and its cost
  // as a fraction of the price while idle warm (the GPUs are held: 1).
  double warm_start_s = 5;
  double warm_cost_fraction = 1;
  // Spot pools: reclaims per replica-hour and the notice before each
  // (unset: the GPU's catalogue figures), and whether a start the spot
  // market refuses falls back to on-demand.
  std::optional<double> spot_reclaims_per_hour;
  std::optional<double> spot_notice_s;
  bool spot_fallback_on_demand = true;
  // Replica slots: every replica the pool may ever run at once.
  int total_replicas() const {
    return autoscaler ? autoscaler->max_replicas + autoscaler->warm_pool : replicas + spares;
  }
};

// GPUs of a type that can be had in a pricing class, at most
// (fleet.gpu_capacity[]): starts beyond it are refused.
struct GpuCapacitySpec {
  std::string path;
  std::string gpu;
  std::string pricing_class;
  int64_t gpus = 0;
};

// fleet.admission: the front door's limits and classes (sim/cluster/gateway.h).
struct PriorityClassSpec {
  std::string path, name;
  int32_t priority = 0;                   // requests of this priority value (a trace column or the mix)
  double weight = 1;                      // its share under queue_order "weighted"
  std::optional<double> queue_timeout_s;  // rejected "queue_timeout" when still waiting after this
};
struct TenantSpec {
  std::string path, name;
  std::optional<double> rate_per_s;  // token bucket: requests per second (unset: no limit)
  std::optional<double> burst;       // bucket size (unset: max(1, rate_per_s))
};
struct AdmissionSpec {
  std::string queue_order = "fcfs";  // replica queues: "fcfs", "strict" (by priority), "weighted" (WFQ by class weight)
  int64_t max_queue_per_replica = 0; // 0: none; else "replica_queue_full"
  int64_t max_queue = 0;             // requests waiting across the model's ready replicas; 0: none
  std::vector<PriorityClassSpec> classes;
  std::vector<TenantSpec> tenants;
};
struct DegradationSpec {
  std::string path;
  std::string policy;        // "shed", "cap_output", "fallback_model"
  std::string class_name;    // empty: the lowest class
  double queue_per_replica = 0;
  double predicted_ttft_ms = 0;
  bool saturated = false;    // llm-d's saturation detector: every replica saturated
  int32_t max_output_tokens = 0;
  std::string pool;          // fallback_model: the pool serving the smaller model
};
struct ClientLocationSpec {
  std::string path, name;
  std::map<std::string, double, std::less<>> rtt_ms;  // region -> round trip
};
struct GlobalBalancerSpec {
  std::string policy = "nearest";
  double latency_budget_ms = 0;
  double saturation_outstanding = 0;  // 0: regions never count as saturated
  std::map<std::string, double, std::less<>> weights;
};
struct CanarySpec {
  std::string path;
  std::string pool, baseline;
  double start_s = 0;
  struct Step {
    double share = 0;
    double duration_s = 0;
  };
  std::vector<Step> steps;
  // Rolled back when the canary is worse than the baseline by more than:
  double ttft_p99_margin = 0.2;   // relative
  double tpot_p99_margin = 0.2;   // relative
  double error_rate_margin = 0.01;  // absolute
  int64_t min_requests = 20;      // per version and step, else the step is extended
  int max_extensions = 3;
};

struct ScenarioSpec {
  std::string file;            // the scenario file, for messages
  std::string sha256;          // of the scenario text as read (before overrides)
  std::vector<std::string> overrides;  // "--set KEY=VALUE" applied, in order
  std::string name;
  std::string description;
  uint64_t seed = 0;
  std::optional<double> duration_s;  // hard stop; unset: run until drained
  double warmup_s = 0;
  std::string model;           // default model of pools and requests (a path already resolved)
  std::string router = "round_robin";
  // fleet.router_options: numbers (booleans as 0/1), checked by the router.
  std::map<std::string, double, std::less<>> router_options;
  // Routers that read replica metrics see them scraped this often (llm-d's
  // 50 ms); 0: live, as an oracle would see them.
  double metrics_scrape_ms = 50;
  std::vector<PoolSpec> pools;
  AdmissionSpec admission;
  std::vector<DegradationSpec> degradation;
  std::vector<std::string> regions;
  std::vector<ClientLocationSpec> clients;
  GlobalBalancerSpec global_balancer;
  std::optional<CanarySpec> canary;
  // Placement: replicas go onto nodes of gpus_per_node GPUs in pool order
  // (each pool starting a node of its own), nodes_per_rack nodes to a rack
  // within a zone:
  //   kTopologyAware  a replica that fits in a node stays in one; a larger
  //                   one takes whole nodes (the default);
  //   kPacked         GPUs in order, a replica may straddle two nodes;
  //   kSpread         every replica starts a node of its own.
  enum class Placement { kTopologyAware, kPacked, kSpread };
  // 0 (unset): the smallest scale_up.domain_gpus of the pools' GPUs, 8 on
  // HGX boards and 72 on a GB200 NVL72 rack (one NVLink domain).
  int gpus_per_node = 0;
  int nodes_per_rack = 4;
  Placement placement = Placement::kTopologyAware;
  // The network between nodes (sim/cluster/topology.h).
  NetworkSpec network;
  struct Disaggregation {
    bool most_free_kv = false;       // decode_pick: most free KV, else least outstanding
    bool ttft_from_prefill = false;  // ttft: "prefill", else "decode"
  };
  Disaggregation disaggregation;
  ReliabilitySpec reliability;
  std::vector<GpuCapacitySpec> gpu_capacity;
  // A request waiting for a replica of an autoscaled pool (none ready, one
  // coming) fails after this long: Knative's revision timeout, 300 s.
  double activator_timeout_s = 300;
  TrafficSpec traffic;         // paths already resolved against the scenario's folder
  std::optional<double> ttft_slo_ms;
  std::optional<double> tpot_slo_ms;
  RooflineOptions roofline;    // "perf" section
  // perf.gemm_*_efficiency given: the scenario's constant GEMM efficiencies
  // replace the GPU's fitted GEMM shape (RooflineOptionsFor).
  bool gemm_efficiency_set = false;
  // perf.attention_compute_efficiency given: the constant replaces the GPU's
  // fitted prefill attention shape.
  bool attention_efficiency_set = false;
  // Every key the perf section gives ("gemm_compute_efficiency", ...): an
  // engine profile's kernel term does not override one (ApplyKernelTerms).
  std::vector<std::string> perf_keys;
  // perf.profile: a measured profile (model/profile.h), path resolved
  // against the scenario's folder; empty: roofline only.
  std::string perf_profile;
};

}  // namespace fleetsim
