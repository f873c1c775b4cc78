#include "sim/runner/run.h"

#include <array>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "base/sha256.h"
#include "model/expert_balance.h"
#include "model/hf_config.h"
#include "model/profile.h"
#include "model/profile_perf_model.h"
#include "model/speculative_perf_model.h"
#include "sim/cluster/cluster.h"
#include "sim/cluster/replica.h"
#include "sim/engine/simulation.h"
#include "sim/traffic/scan_traffic.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

void RegisterBuiltins(Policies* policies) {
  RegisterBuiltinRouters(&policies->routers);
  RegisterBuiltinGlobalBalancers(&policies->balancers);
  RegisterBuiltinDegradations(&policies->degradations);
  RegisterBuiltinSchedulers(&policies->schedulers);
  RegisterBuiltinFailureModels(&policies->failure_models);
  RegisterBuiltinAutoscalers(&policies->autoscalers);
  RegisterSloDrivenAutoscaler(&policies->autoscalers);
}

FleetPlacement PlaceFleet(const ScenarioSpec& spec, const std::vector<PoolPlan>& pools) {
  FleetPlacement fp;
  int per_node = spec.gpus_per_node;
  if (per_node == 0) {
    per_node = 8;
    for (size_t i = 0; i < pools.size(); ++i)
      per_node = i == 0 ? pools[i].gpu->scale_up.domain_gpus : std::min(per_node, pools[i].gpu->scale_up.domain_gpus);
  }
  std::vector<int> zone_nodes;  // nodes placed so far per zone
  std::map<std::pair<int, int>, int> rack_ids;  // (zone, rack within it) -> id
  auto new_node = [&](int zone) {
    const int local = zone_nodes[zone]++;
    const auto key = std::make_pair(zone, local / spec.nodes_per_rack);
    auto [it, fresh] = rack_ids.emplace(key, fp.racks);
    if (fresh) ++fp.racks;
    fp.node_rack.push_back(it->second);
    fp.node_zone.push_back(zone);
    fp.node_gpu.push_back(nullptr);  // the pool's, below
    return fp.nodes() - 1;
  };
  fp.gpus_per_node = per_node;
  for (const PoolPlan& p : pools) {
    int zone = static_cast<int>(std::find(fp.zones.begin(), fp.zones.end(), p.spec->zone) - fp.zones.begin());
    if (zone == static_cast<int>(fp.zones.size())) {
      fp.zones.push_back(p.spec->zone);
      zone_nodes.push_back(0);
    }
    const int g = p.shard.gpus();
    int node = -1, free = 0;
    auto take = [&](std::vector<int>* nodes, std::vector<int>* gpus) {
      if (node < 0 || free == 0) {
        node = new_node(zone);
        fp.node_gpu[static_cast<size_t>(node)] = p.gpu;
        free = per_node;
      }
      if (nodes->empty() || nodes->back() != node) nodes->push_back(node);
      gpus->push_back(node * per_node + (per_node - free));
      --free;
    };
    for (int r = 0; r < p.spec->total_replicas(); ++r) {
      std::vector<int> nodes, gpus;
      // A new node first: a replica that spans nodes takes whole ones, a
      // spread one a node of its own, a topology-aware one that does not fit
      // in what is left of the node.
      const bool fresh = spec.placement == ScenarioSpec::Placement::kSpread ||
                         (spec.placement == ScenarioSpec::Placement::kTopologyAware && (g > per_node || free < g));
      if (fresh) free = 0;
      for (int k = 0; k < g; ++k) take(&nodes, &gpus);
      if (g > per_node && spec.placement == ScenarioSpec::Placement::kTopologyAware) free = 0;
      fp.replica_nodes.push_back(std::move(nodes));
      fp.replica_gpus.push_back(std::move(gpus));
    }
  }
  return fp;
}

int64_t PeakRssKb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  int64_t kb = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmHWM:", 6) == 0) {
      kb = std::strtoll(line + 6, nullptr, 10);
      break;
    }
  }
  std::fclose(f);
  return kb;
}

namespace {

// The name is the user's and may be any length: a megabyte of it stays out
// of the one-line message.
std::string Unknown(const std::string& what, const std::string& name, const std::vector<std::string>& known) {
  const std::string shown = name.size() > 64 ? name.substr(0, 61) + "..." : name;
  return "unknown " + what + " \"" + shown + "\" (known: " + JoinNames(known) + ")";
}

// Spot reclaims when neither the pool nor the GPU's catalogue entry gives
// them: AWS's two-minute interruption notice (EC2 User Guide, "Spot
// Instance interruption notices"), and the Spot Instance Advisor's highest
// band, more than 20% of instances interrupted per month, as a constant
// hazard: -ln(1 - 0.2) / 730 per hour (the catalogue's conversion).
constexpr double kDefaultSpotReclaimsPerHour = 0.22314355131420976 / 730;
constexpr double kDefaultSpotNoticeS = 120;

// What one replica of a pool can carry, from the pool's performance model:
// the autoscalers that size a pool from capacity (slo_driven) ask it.
class PerfCapacity final : public ReplicaCapacity {
 public:
  PerfCapacity(const PerfModel& perf, const PoolPlan& pool) : perf_(perf), pool_(pool) {}

  double PrefillMs(double isl) const override {
    // The prompt in chunks of the scheduler's token budget, alone.
    const int64_t chunk = std::max<int64_t>(1, pool_.limits.max_num_batched_tokens);
    int64_t left = std::max<int64_t>(1, std::llround(isl)), pos = 0, ns = 0;
    while (left > 0) {
      const int64_t c = std::min(left, chunk);
      BatchShape b;
      b.prefill_seqs = 1;
      b.prefill_tokens = c;
      b.prefill_attn_pairs = c * pos + c * (c + 1) / 2;
      b.prefill_kv_tokens = pos + c;
      b.sampled_seqs = left == c ? 1 : 0;
      ns += perf_.IterationNs(b);
      pos += c;
      left -= c;
    }
    return static_cast<double>(ns) * 1e-6;
  }
  double DecodeStepMs(int batch, double context) const override {
    BatchShape b;
    b.decode_seqs = std::max(1, batch);
    b.decode_tokens = b.decode_seqs;
    b.decode_kv_tokens = b.decode_seqs * std::max<int64_t>(1, std::llround(context));
    b.sampled_seqs = b.decode_seqs;
    return static_cast<double>(perf_.IterationNs(b)) * 1e-6;
  }
  // A replica serves prompts and decodes on the same GPUs: a request takes
  // P seconds of prefill and osl decode steps in a batch of B. B is the
  // largest batch whose step meets the TPOT target (and that the KV cache
  // and max_num_seqs hold); decode runs in the time prefill leaves, so
  // rate x osl = (1 - rate x P) x B / step. Prefills queue: with arrivals
  // at random (M/D/1) the wait is rho / (2 (1 - rho)) x P, so the TTFT
  // target caps rho = rate x P at 2x / (1 + 2x), x = TTFT / P - 1.
  double MaxRequestsPerS(double isl, double osl, std::optional<double> ttft_ms,
                         std::optional<double> tpot_ms) const override {
    isl = std::max(1.0, isl);
    osl = std::max(1.0, osl);
    const double p_s = PrefillMs(isl) * 1e-3;
    if (ttft_ms && p_s * 1e3 > *ttft_ms) return 0;
    const double context = isl + osl / 2;
    const double kv_tokens = static_cast<double>(pool_.memory.kv_blocks) * pool_.spec->block_size;
    const int cap = static_cast<int>(std::clamp<double>(std::floor(kv_tokens / (isl + osl)), 1.0,
                                                        static_cast<double>(pool_.limits.max_num_seqs)));
    int lo = 1, hi = cap;
    if (tpot_ms && DecodeStepMs(1, context) > *tpot_ms) return 0;
    while (tpot_ms && lo < hi) {  // the largest B with step(B) <= tpot
      const int mid = lo + (hi - lo + 1) / 2;
      if (DecodeStepMs(mid, context) <= *tpot_ms) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    const int batch = tpot_ms ? lo : cap;
    const double tokens_per_s = batch / (DecodeStepMs(batch, context) * 1e-3);
    double rate = tokens_per_s / (osl + p_s * tokens_per_s);
    if (ttft_ms) {
      const double x = *ttft_ms / (p_s * 1e3) - 1;
      rate = std::min(rate, 2 * x / (1 + 2 * x) / p_s);
    }
    return std::max(0.0, rate);
  }

 private:
  const PerfModel& perf_;
  const PoolPlan& pool_;
};

// Forwards every report to `inner`, and each request's end also to `ended`.
class ForwardingObserver final : public RunObserver {
 public:
  ForwardingObserver(RunObserver* inner, std::function<void(const RequestRecord&)> ended)
      : inner_(inner), ended_(std::move(ended)) {}
  void OnArrival(const Request& r, int replica) override { inner_->OnArrival(r, replica); }
  void OnFinished(const RequestRecord& rec) override {
    inner_->OnFinished(rec);
    ended_(rec);
  }
  void OnTokenGaps(SimTime at, SimTime gap, int64_t count) override { inner_->OnTokenGaps(at, gap, count); }
  void OnDecodeSteps(const DecodeStepRun& run) override { inner_->OnDecodeSteps(run); }
  void OnIteration(int replica, SimTime start, SimTime end, const BatchShape& shape) override {
    inner_->OnIteration(replica, start, end, shape);
  }
  void OnSample(const ReplicaSample& sample) override { inner_->OnSample(sample); }
  void OnReplicaEvent(int replica, SimTime at, std::string_view event) override {
    inner_->OnReplicaEvent(replica, at, event);
  }
  bool WantsIterations() const override { return inner_->WantsIterations(); }

 private:
  RunObserver* inner_;
  std::function<void(const RequestRecord&)> ended_;
};

// The pool's model: a zoo entry, or a Hugging Face config.json read into
// *owned; either given the pool's kv_cache_dtype (then copied into *owned).
Status ResolveModel(const PoolSpec& p, const Catalog& catalog, PoolPlan* plan, std::unique_ptr<ModelSpec>* owned) {
  std::unique_ptr<ModelSpec> own;
  if (ModelIsFile(p.model)) {
    HfModel hf;
    FLEETSIM_RETURN_IF_ERROR(LoadHfConfigFile(p.model, &hf).WithPrefix(p.path + ".model: "));
    own = std::make_unique<ModelSpec>(std::move(hf.spec));
    for (const std::string& w : hf.warnings) plan->model_warnings.push_back("model config " + p.model + ": " + w);
  } else {
    plan->model = catalog.FindModel(p.model);
    if (!plan->model)
      return Status::Invalid(p.path + ".model: " + Unknown("model", p.model, catalog.ModelNames()) +
                             " (or a path to a Hugging Face config.json)");
    if (p.kv_cache_dtype == "auto") return Status::Ok();
    own = std::make_unique<ModelSpec>(*plan->model);
  }
  if (p.kv_cache_dtype != "auto") {
    const std::optional<DType> kv = ParseDType(p.kv_cache_dtype);
    FLEETSIM_CHECK(kv.has_value());  // the parser admits only dtype names
    // A fixed KV size (latent attention written as bytes) scales with the
    // element size.
    if (own->kv_bytes_per_token_override)
      own->kv_bytes_per_token_override = std::llround(static_cast<double>(*own->kv_bytes_per_token_override) *
                                                      DTypeBytes(*kv) / DTypeBytes(own->kv_dtype));
    own->kv_dtype = *kv;
  }
  plan->model = own.get();
  *owned = std::move(own);
  return Status::Ok();
}

// A speculating head's size in target layers: the model's own
// multi-token-prediction layers for method mtp, else head_layers.
double HeadLayers(const SpeculativeSpec& sp, const ModelSpec& m) {
  return sp.method == "mtp" ? m.mtp_layers : sp.head_layers;
}

// `profile_gpu`: the device the scenario's profile describes (null if none),
// for GPU names the catalogue does not know. A model the pool owns (see
// ResolveModel) goes to *owned.
Status ResolvePool(const PoolSpec& p, const Catalog& catalog, const Policies& policies, const GpuSpec* profile_gpu,
                   BuildCache* cache, PoolPlan* plan, std::unique_ptr<ModelSpec>* owned) {
  plan->spec = &p;
  FLEETSIM_RETURN_IF_ERROR(ResolveModel(p, catalog, plan, owned));
  plan->gpu = catalog.FindGpu(p.gpu);
  if (!plan->gpu && profile_gpu && profile_gpu->name == p.gpu) plan->gpu = profile_gpu;
  if (!plan->gpu)
    return Status::Invalid(p.path + ".gpu: " + Unknown("GPU", p.gpu, catalog.GpuNames()) +
                           (profile_gpu ? "; perf.profile describes \"" + profile_gpu->name + "\"" : ""));
  plan->scheduler = policies.schedulers.Find(p.scheduler);
  if (!plan->scheduler)
    return Status::Invalid(p.path + ".scheduler: " +
                           Unknown("scheduler", p.scheduler, policies.schedulers.Names()));
  EngineProfile profile;
  FLEETSIM_RETURN_IF_ERROR(LoadPoolEngineProfile(p, *plan->scheduler, catalog, &profile, cache));
  FLEETSIM_RETURN_IF_ERROR(ResolveEngine(profile, plan->gpu->name, plan->model->name, p.tp, &plan->engine)
                               .WithPrefix(p.path + ".engine: "));
  plan->engine_name = profile.name;
  if (p.engine_terms) plan->engine = *p.engine_terms;
  if (p.async_scheduling) plan->engine.async_scheduling = *p.async_scheduling;
  const ModelSpec& m = *plan->model;
  if (m.heads % p.tp != 0)
    return Status::Infeasible(p.path + ".tp: " + std::to_string(p.tp) + " does not divide the " +
                           std::to_string(m.heads) + " attention heads of " + m.name);
  if (p.pp > m.layers)
    return Status::Infeasible(p.path + ".pp: " + std::to_string(p.pp) + " stages for the " + std::to_string(m.layers) +
                              " layers of " + m.name);
  plan->shard.tp = p.tp;
  plan->shard.pp = p.pp;
  if (p.ep > 1 || p.dp_attention || p.expert_load_skew != 1 || p.expert_balance) {
    const std::string ep_path = p.path + (p.ep > 1            ? ".ep"
                                          : p.dp_attention    ? ".dp_attention"
                                          : p.expert_balance  ? ".expert_balance"
                                                              : ".expert_load_skew");
    if (!m.is_moe()) return Status::Invalid(ep_path + ": " + m.name + " is not a mixture of experts");
    if (p.ep <= 1) return Status::Invalid(ep_path + ": needs expert parallelism (ep > 1)");
    if (m.experts % p.ep != 0)
      return Status::Infeasible(p.path + ".ep: " + std::to_string(p.ep) + " does not divide the " +
                                std::to_string(m.experts) + " experts of " + m.name);
    if (!p.dp_attention && p.ep != p.tp)
      return Status::Invalid(p.path + ".ep: " + std::to_string(p.ep) + " is not tp (" + std::to_string(p.tp) +
                             "): without dp_attention the tensor-parallel group is the expert-parallel group; set "
                             "dp_attention to run ep / tp data-parallel attention ranks");
    if (p.dp_attention && p.ep % p.tp != 0)
      return Status::Invalid(p.path + ".ep: " + std::to_string(p.ep) + " is not a multiple of tp (" +
                             std::to_string(p.tp) + "): data-parallel ranks of tp GPUs each make up the ep GPUs");
    if (p.dp_attention && p.ep == p.tp)
      return Status::Invalid(p.path + ".dp_attention: ep equals tp, so there is one attention rank; drop "
                             "dp_attention or raise ep");
    if (p.dp_attention && p.pp > 1)
      return Status::Invalid(p.path + ".dp_attention: data-parallel attention with pipeline parallelism (pp " +
                             std::to_string(p.pp) + ") is not modelled");
    plan->shard.ep = p.ep;
    plan->shard.dp = p.dp_attention ? p.ep / p.tp : 1;
    plan->expert_load_skew = p.expert_load_skew;
    if (p.expert_balance) {
      const PoolSpec::ExpertBalanceSpec& eb = *p.expert_balance;
      const std::string where = p.path + ".expert_balance";
      if (!eb.loads.empty() && static_cast<int>(eb.loads.size()) != m.experts)
        return Status::Invalid(where + ".loads: " + std::to_string(eb.loads.size()) + " loads for the " +
                               std::to_string(m.experts) + " experts of " + m.name);
      const int redundant = eb.redundant_experts.value_or(0);
      if ((m.experts + redundant) % p.ep != 0)
        return Status::Infeasible(where + ".redundant_experts: " + std::to_string(m.experts) + " experts + " +
                                  std::to_string(redundant) + " redundant copies do not divide over ep " +
                                  std::to_string(p.ep) + " GPUs");
      const std::vector<double> loads = eb.loads.empty() ? ZipfLoads(m.experts, *eb.zipf_s) : eb.loads;
      plan->expert_load_skew = BalanceExperts(loads, p.ep, eb.redundant_experts).skew;
      plan->redundant_experts = redundant;
      if (eb.loads.empty()) {
        char skew[64];
        std::snprintf(skew, sizeof skew, "%.3f", plan->expert_load_skew);
        plan->warnings.push_back("expert_balance.zipf_s: the experts' popularity is synthetic (no published routing "
                                 "distribution of " + m.name + "); the busiest GPU's load comes to " + skew +
                                 "x the mean; give measured loads");
      }
    }
  }
  if (!p.layer_split.empty()) {
    int64_t sum = 0;
    for (int l : p.layer_split) sum += l;
    if (static_cast<int>(p.layer_split.size()) != p.pp || sum != m.layers)
      return Status::Invalid(p.path + ".layer_split: expected " + std::to_string(p.pp) + " stage(s) (pp) summing to the " +
                             std::to_string(m.layers) + " layers of " + m.name + ", got " +
                             std::to_string(p.layer_split.size()) + " summing to " + std::to_string(sum));
  }
  if (p.pp > 1) {
    PipelinePlan& pl = plan->pipeline;
    pl.layers = p.layer_split.empty() ? DefaultLayerSplit(m.layers, p.pp) : p.layer_split;
    plan->shard.stage_layers = *std::max_element(pl.layers.begin(), pl.layers.end());
    // Between stages each token's hidden state and residual go to the next
    // stage (vLLM's IntermediateTensors: "hidden_states" and "residual"),
    // over the links between their GPUs (ScenarioRun::PriceLinks).
    pl.send_bytes_per_token = 2.0 * m.hidden * DTypeBytes(m.compute_dtype);
    if (plan->gpu->scale_up.PeerGbps() <= 0 && plan->gpu->pcie_gbps_per_direction <= 0)
      return Status::Infeasible(p.path + ".pp: " + std::to_string(p.pp) + " stages on \"" + plan->gpu->name +
                                "\" have no link between them to send activations over");
  }
  if (p.tp > 1 && plan->gpu->scale_up.CollectiveGbps(p.tp) <= 0 && plan->gpu->pcie_gbps_per_direction <= 0)
    return Status::Infeasible(p.path + ".tp: " + std::to_string(p.tp) + " GPUs of \"" + plan->gpu->name +
                           "\" have no link between them to all-reduce over");

  // vLLM's serving defaults (vllm/engine/arg_utils.py, V1): large budgets on
  // big GPUs other than A100.
  const bool big = plan->gpu->memory_mib >= 70 * 1024 && plan->gpu->family != "A100";
  plan->max_model_len = m.max_model_len;
  if (p.max_model_len) {
    if (*p.max_model_len > m.max_model_len)
      return Status::Invalid(p.path + ".max_model_len: " + std::to_string(*p.max_model_len) + " exceeds " + m.name +
                             "'s context of " + std::to_string(m.max_model_len) + " tokens");
    plan->max_model_len = *p.max_model_len;
  }
  plan->limits.max_model_len = plan->max_model_len;
  plan->limits.max_num_batched_tokens = p.max_num_batched_tokens.value_or(big ? 8192 : 2048);
  plan->limits.max_num_seqs = p.max_num_seqs.value_or(big ? 1024 : 256);
  // vLLM V0 without chunked prefill (vllm/config.py SchedulerConfig, 0.6):
  // a step holds a whole prompt, so the budget is max(max_model_len, 2048),
  // and 256 sequences on every GPU.
  if (p.scheduler == "vllm_v0") {
    if (!p.max_num_batched_tokens)
      plan->limits.max_num_batched_tokens = std::max<int64_t>(plan->max_model_len, 2048);
    if (!p.max_num_seqs) plan->limits.max_num_seqs = 256;
  }
  if (plan->limits.max_num_batched_tokens < plan->limits.max_num_seqs)
    return Status::Infeasible(p.path + ".max_num_batched_tokens: " +
                           std::to_string(plan->limits.max_num_batched_tokens) +
                           " is less than max_num_seqs " + std::to_string(plan->limits.max_num_seqs) +
                           " (vLLM requires at least one token per running sequence)");

  MemoryOptions mo;
  mo.gpu_memory_utilization = p.gpu_memory_utilization;
  mo.block_size = p.block_size;
  mo.max_num_batched_tokens = plan->limits.max_num_batched_tokens;
  if (const int dp = plan->shard.dp; dp > 1) {
    // Every data-parallel rank is an engine with these limits; the replica's
    // one scheduler holds dp times them (and each rank's KV, memory_plan.h).
    plan->limits.max_num_batched_tokens *= dp;
    plan->limits.max_num_seqs *= dp;
  }
  if (const std::optional<SpeculativeSpec>& sp = p.speculative) {
    // vLLM V1 speculates on a single pipeline stage, in an engine that
    // prefills and decodes; the draft shares the target's tokenizer and
    // tensor-parallel GPUs.
    if (p.pp > 1)
      return Status::Infeasible(sp->path + ": speculative decoding with pipeline parallelism (pp " +
                                std::to_string(p.pp) + ") is not supported (vLLM runs it on one stage)");
    if (p.role != PoolSpec::Role::kBoth)
      return Status::Invalid(sp->path + ": speculative decoding on a disaggregated (prefill or decode) pool is not "
                             "modelled yet");
    if (plan->shard.dp > 1)
      return Status::Invalid(sp->path + ": speculative decoding with data-parallel attention is not modelled yet "
                             "(the proposer would be priced on the whole replica's batch)");
    if (sp->method == "draft_model") {
      plan->draft = catalog.FindModel(sp->draft_model);
      if (!plan->draft)
        return Status::Invalid(sp->path + ".draft_model: " + Unknown("model", sp->draft_model, catalog.ModelNames()));
      const ModelSpec& d = *plan->draft;
      if (d.vocab != m.vocab)
        return Status::Invalid(sp->path + ".draft_model: " + d.name + "'s vocabulary (" + std::to_string(d.vocab) +
                               ") is not " + m.name + "'s (" + std::to_string(m.vocab) +
                               "): a draft must share the target's tokenizer");
      ShardPlan ds;
      ds.tp = p.tp;
      FLEETSIM_RETURN_IF_ERROR(CheckShardPlan(d, ds).WithPrefix(sp->path + ".draft_model: "));
      mo.proposer_weight_bytes_per_gpu = (d.WeightBytes() + p.tp - 1) / p.tp;
      mo.proposer_kv_bytes_per_token_per_gpu = KvBytesPerTokenPerGpu(d, ds);
    } else {
      // An EAGLE head: head_layers decoder layers of the target's shape (it
      // shares the target's embedding and lm_head). Multi-token prediction
      // (DeepSeek-V3 section 2.2) is the same shape: each module one
      // decoder layer of the target's, sharing embedding and lm_head.
      if (sp->method == "mtp" && m.mtp_layers == 0)
        return Status::Invalid(sp->path + ".method: " + m.name +
                               " has no multi-token-prediction layers (mtp_layers 0; config.json's "
                               "num_nextn_predict_layers); use eagle or draft_model");
      const double head_layers = HeadLayers(*sp, m);
      if (head_layers > m.layers)
        return Status::Invalid(sp->path + ".head_layers: " + std::to_string(sp->head_layers) + " exceeds the " +
                               std::to_string(m.layers) + " layers of " + m.name);
      const double per_layer = head_layers / m.layers;
      ShardPlan ts;
      ts.tp = p.tp;
      const double layer_bytes = static_cast<double>(m.ParamCount() - m.EmbeddingParamCount()) * DTypeBytes(m.weight_dtype);
      mo.proposer_weight_bytes_per_gpu = std::llround(per_layer * layer_bytes / p.tp);
      mo.proposer_kv_bytes_per_token_per_gpu =
          std::llround(per_layer * static_cast<double>(KvBytesPerTokenPerGpu(m, ts)));
    }
  }
  mo.max_num_seqs = plan->limits.max_num_seqs;
  mo.redundant_experts = plan->redundant_experts;
  ModelSpec engine_model = m;  // the memory check is for one sequence of the engine's max_model_len
  engine_model.max_model_len = static_cast<int>(plan->max_model_len);
  FLEETSIM_RETURN_IF_ERROR(
      PlanMemory(engine_model, *plan->gpu, plan->shard, mo, &plan->memory).WithPrefix(p.path + ": "));
  // The scheduler's options are checked now, so `validate` reports them.
  std::unique_ptr<BatchScheduler> probe;
  FLEETSIM_RETURN_IF_ERROR(plan->scheduler->factory(plan->limits, p.scheduler_options, &probe)
                               .WithPrefix(p.path + "."));
  plan->step = probe->step_limits();
  plan->preemption = p.preemption == "swap" ? PreemptionMode::kSwap : PreemptionMode::kRecompute;
  if (p.prefix_caching.value_or(false) && !probe->prefix_cache_policy().supported)
    return Status::Invalid(p.path + ".prefix_caching: the " + p.scheduler + " scheduler has no prefix cache");
  const double block_bytes =
      static_cast<double>(p.block_size) * static_cast<double>(KvBytesPerTokenPerGpu(m, plan->shard));
  plan->host_kv_blocks = static_cast<int64_t>(p.swap_space_gib * 1073741824.0 / block_bytes);

  if (p.usd_per_gpu_hour) {
    plan->usd_per_gpu_hour = p.usd_per_gpu_hour;
    plan->price_source = "scenario";
  } else {
    auto it = plan->gpu->prices.find(p.pricing_class);
    if (it == plan->gpu->prices.end()) {
      std::vector<std::string> classes;
      for (const auto& [k, v] : plan->gpu->prices) classes.push_back(k);
      return Status::Invalid(p.path + ".pricing_class: " + Unknown("pricing class", p.pricing_class, classes));
    }
    if (it->second) {
      plan->usd_per_gpu_hour = it->second->usd_per_gpu_hour;
      plan->price_source = it->second->provider + " " + it->second->date;
    }
  }
  if (auto od = plan->gpu->prices.find("on_demand"); od != plan->gpu->prices.end() && od->second)
    plan->on_demand_usd_per_gpu_hour = od->second->usd_per_gpu_hour;
  if (p.pricing_class == "spot") {
    // The catalogue's rate is per machine of 8 GPUs (AWS's instances): a
    // replica on more machines is reclaimed when any of them is.
    const std::optional<SpotReclamation>& cat = plan->gpu->spot;
    const double machines = std::ceil(plan->shard.gpus() / 8.0);
    if (p.spot_reclaims_per_hour) {
      plan->spot_reclaims_per_hour = *p.spot_reclaims_per_hour;
    } else if (cat && cat->reclaims_per_hour) {
      plan->spot_reclaims_per_hour = *cat->reclaims_per_hour * machines;
    } else {
      plan->spot_reclaims_per_hour = kDefaultSpotReclaimsPerHour * machines;
      plan->warnings.push_back("no published spot reclamation rate for " + plan->gpu->name +
                               ": spot.reclaims_per_hour defaults to AWS's highest Spot Instance Advisor band "
                               "(more than 20% a month); set it");
    }
    plan->spot_notice_s = p.spot_notice_s.value_or(cat && cat->notice_s ? *cat->notice_s : kDefaultSpotNoticeS);
  }
  const ModelSpec& model = *plan->model;
  // The ceilings the roofline divides by, where the catalogue's figure is
  // an estimate rather than a measurement or a datasheet's.
  std::string estimated;
  for (const char* figure : {"memory_mib", "bf16_tflops", "fp8_tflops", "fp4_tflops", "mem_bandwidth_gbps"}) {
    const auto it = plan->gpu->sources.find(figure);
    if (it != plan->gpu->sources.end() && it->second.rfind("estimated", 0) == 0)
      estimated += (estimated.empty() ? "" : ", ") + std::string(figure);
  }
  if (!estimated.empty())
    plan->warnings.push_back(plan->gpu->name + ": " + estimated +
                             " estimated, neither measured nor read from a datasheet (model/hardware/" +
                             plan->gpu->name + ".json gives each figure's source)");
  const DType gemm = model.GemmDType();
  if ((gemm == DType::kFp8 && plan->gpu->fp8_tflops <= 0) || (gemm == DType::kFp4 && plan->gpu->fp4_tflops <= 0))
    plan->warnings.push_back(model.name + ": " + plan->gpu->name + " has no " + (gemm == DType::kFp8 ? "FP8" : "FP4") +
                             " tensor cores: its " + (gemm == DType::kFp8 ? "FP8" : "FP4") +
                             " products are priced at the bf16 peak (weights dequantised, as vLLM's Marlin "
                             "kernels run them)");
  return Status::Ok();
}

}  // namespace

RooflineOptions PoolRooflineOptions(const ScenarioSpec& s, const PoolPlan& p) {
  RooflineOptions o = RooflineOptionsFor(*p.gpu, s.roofline, s.gemm_efficiency_set, s.attention_efficiency_set);
  o = ApplyKernelTerms(o, p.engine, s.perf_keys);
  o.collective_alpha_ns = p.collective_alpha_ns;
  o.collective_gbps = p.collective_gbps;
  o.all_to_all_alpha_ns = p.all_to_all_alpha_ns;
  o.all_to_all_gbps = p.all_to_all_gbps;
  o.expert_load_skew = p.expert_load_skew;
  o.redundant_experts = p.redundant_experts;
  return o;
}

namespace {

// A speculative pool's performance model, owning its target's and draft's.
class SpeculatingPerf final : public PerfModel {
 public:
  SpeculatingPerf(std::unique_ptr<PerfModel> target, std::unique_ptr<PerfModel> draft, SpeculativeCost cost)
      : target_(std::move(target)), draft_(std::move(draft)), spec_(*target_, WithDraft(cost, draft_.get())) {}
  int64_t IterationNs(const BatchShape& shape) const override { return spec_.IterationNs(shape); }
  std::vector<std::pair<std::string, std::string>> Sources() const override { return spec_.Sources(); }

 private:
  static SpeculativeCost WithDraft(SpeculativeCost c, const PerfModel* draft) {
    c.draft = draft;
    return c;
  }
  std::unique_ptr<PerfModel> target_, draft_;
  SpeculativePerfModel spec_;
};

// The pool's performance model: a ProfilePerfModel over `profile` when the
// scenario names one (perf.profile), else the roofline. Errors name the
// JSON paths.
Status MakePerfModel(const ScenarioSpec& s, const PoolPlan& p, const Profile* profile,
                     std::unique_ptr<PerfModel>* out) {
  std::unique_ptr<PerfModel> target;
  if (!profile) {
    target = std::make_unique<RooflinePerfModel>(*p.model, *p.gpu, p.shard, p.engine, PoolRooflineOptions(s, p));
  } else {
    if (p.shard.ep > 1)
      return Status::Invalid(s.file + ": " + p.spec->path + ".ep: perf.profile's per-layer times are for a "
                             "tensor-parallel layer; expert parallelism is priced by the roofline alone (drop "
                             "perf.profile or ep)");
    std::unique_ptr<ProfilePerfModel> m;
    FLEETSIM_RETURN_IF_ERROR(ProfilePerfModel::Create(*profile,
                                                      std::filesystem::path(s.perf_profile).filename().string(),
                                                      *p.model, *p.gpu, p.shard, p.engine, PoolRooflineOptions(s, p),
                                                      &m)
                                 .WithPrefix(s.file + ": perf.profile: " + p.spec->path + ": "));
    target = std::move(m);
  }
  if (!p.spec->speculative) {
    *out = std::move(target);
    return Status::Ok();
  }
  const SpeculativeSpec& sp = *p.spec->speculative;
  std::unique_ptr<PerfModel> draft;
  SpeculativeCost cost;
  cost.k = sp.k;
  if (p.draft) {
    // The draft on the target's GPUs, priced by the roofline (a profile
    // measures the target alone).
    ShardPlan ds;
    ds.tp = p.shard.tp;
    draft = std::make_unique<RooflinePerfModel>(*p.draft, *p.gpu, ds, p.engine, PoolRooflineOptions(s, p));
    cost.proposer = p.draft->name;
  } else {
    cost.head_layer_fraction = HeadLayers(sp, *p.model) / p.model->layers;
    cost.proposer = sp.method;
  }
  *out = std::make_unique<SpeculatingPerf>(std::move(target), std::move(draft), cost);
  return Status::Ok();
}

Status LoadScenarioProfile(const ScenarioSpec& s, BuildCache* cache, std::shared_ptr<const Profile>* out) {
  if (s.perf_profile.empty()) return Status::Ok();
  if (cache) return cache->LoadProfile(s.perf_profile, out).WithPrefix(s.file + ": perf.profile: ");
  auto p = std::make_shared<Profile>();
  FLEETSIM_RETURN_IF_ERROR(LoadProfileFile(s.perf_profile, p.get()).WithPrefix(s.file + ": perf.profile: "));
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace

Status BuildCache::LoadProfile(const std::string& path, std::shared_ptr<const Profile>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = profiles_.find(path);
  if (it == profiles_.end()) {
    auto p = std::make_shared<Profile>();
    Status s = LoadProfileFile(path, p.get());
    it = profiles_.emplace(path, std::make_pair(s, s.ok() ? std::move(p) : nullptr)).first;
  }
  *out = it->second.second;
  return it->second.first;
}

Status BuildCache::LoadEngine(const std::string& path, std::shared_ptr<const EngineProfile>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = engines_.find(path);
  if (it == engines_.end()) {
    auto e = std::make_shared<EngineProfile>();
    Status s = LoadEngineProfileFile(path, e.get());
    it = engines_.emplace(path, std::make_pair(s, s.ok() ? std::move(e) : nullptr)).first;
  }
  *out = it->second.second;
  return it->second.first;
}

Status LoadPoolEngineProfile(const PoolSpec& p, const SchedulerRegistry::Entry& scheduler, const Catalog& catalog,
                             EngineProfile* out, BuildCache* cache) {
  const std::string engine = !p.engine.empty() ? p.engine : scheduler.engine;
  if (EngineIsFile(engine) && cache) {
    std::shared_ptr<const EngineProfile> e;
    FLEETSIM_RETURN_IF_ERROR(cache->LoadEngine(engine, &e).WithPrefix(p.path + ".engine: "));
    *out = *e;
    return Status::Ok();
  }
  if (EngineIsFile(engine)) return LoadEngineProfileFile(engine, out).WithPrefix(p.path + ".engine: ");
  const EngineProfile* bundled = catalog.FindEngine(engine);
  if (!bundled)
    return Status::Invalid(p.path + ".engine: " + Unknown("engine", engine, catalog.EngineNames()) +
                           " (or a path to an engine profile JSON)");
  *out = *bundled;
  return Status::Ok();
}

Status ScenarioRun::Build(const ScenarioSpec& spec, const Catalog& catalog, const Policies& policies,
                          std::unique_ptr<ScenarioRun>* out, BuildCache* cache) {
  std::unique_ptr<ScenarioRun> run(new ScenarioRun(spec, catalog, policies));
  const ScenarioSpec& s = run->spec_;  // pool plans point into the run's own copy
  if (!s.model.empty() && !ModelIsFile(s.model) && !catalog.FindModel(s.model))
    return Status::Invalid(s.file + ": model: " + Unknown("model", s.model, catalog.ModelNames()) +
                           " (or a path to a Hugging Face config.json)");
  run->router_ = policies.routers.Find(s.router);
  if (!run->router_)
    return Status::Invalid(s.file + ": fleet.router: " + Unknown("router", s.router, policies.routers.Names()));
  if (s.metrics_scrape_ms > 0 && s.metrics_scrape_ms < 1) {
    char got[64];
    std::snprintf(got, sizeof got, "%g", s.metrics_scrape_ms);
    return Status::Invalid(s.file + ": fleet.metrics_scrape_ms: expected 0 (live metrics) or at least 1 ms, got " + got);
  }
  {
    // The router checks its options when built: once here, so that validate
    // and the planner refuse what the run would.
    std::unique_ptr<Router> probe;
    FLEETSIM_RETURN_IF_ERROR(
        run->router_->factory(RouterContext{Rng(0), s.router_options, "fleet.router_options", {}, false}, &probe)
            .WithPrefix(s.file + ": "));
  }
  // The profile first: it may describe a device the catalogue lacks (a
  // calibrated CPU or new GPU), which pools can then name.
  std::shared_ptr<const Profile> profile;
  FLEETSIM_RETURN_IF_ERROR(LoadScenarioProfile(s, cache, &profile));
  if (profile && profile->device_info && catalog.FindGpu(profile->device) == nullptr) {
    run->profile_gpu_ = std::make_unique<GpuSpec>();
    FLEETSIM_RETURN_IF_ERROR(
        GpuSpecFromProfile(*profile, run->profile_gpu_.get()).WithPrefix(s.file + ": perf.profile: " + s.perf_profile + ": "));
  }
  for (const PoolSpec& p : s.pools) {
    PoolPlan plan;
    std::unique_ptr<ModelSpec> owned;
    FLEETSIM_RETURN_IF_ERROR(
        ResolvePool(p, catalog, policies, run->profile_gpu_.get(), cache, &plan, &owned).WithPrefix(s.file + ": "));
    if (owned) run->models_.push_back(std::move(owned));
    run->pools_.push_back(plan);
  }
  // Input files are checked here so that `validate` catches a missing one,
  // opened exactly as the readers will open them (regular files only, never
  // a blocking open; see base/file.h).
  FLEETSIM_RETURN_IF_ERROR(CheckTrafficInputs(s.traffic).WithPrefix(s.file + ": "));
  {
    // Disaggregated models: prefill and decode pools, nothing else.
    std::map<std::string, std::array<int, 3>> roles;  // model -> pools per role
    for (const PoolPlan& p : run->pools_) roles[p.model->name][static_cast<int>(p.spec->role)]++;
    for (const PoolPlan& p : run->pools_) {
      const std::array<int, 3>& r = roles[p.model->name];
      if (p.spec->role == PoolSpec::Role::kBoth) {
        if (r[1] + r[2] > 0)
          return Status::Invalid(s.file + ": " + p.spec->path + ".role: " + p.model->name +
                                 " has prefill or decode pools, so every pool of it needs role \"prefill\" or \"decode\"");
        continue;
      }
      run->disaggregated_ = true;
      const bool prefill = p.spec->role == PoolSpec::Role::kPrefill;
      if (r[prefill ? 2 : 1] == 0)
        return Status::Invalid(s.file + ": " + p.spec->path + ".role: a " + (prefill ? "prefill" : "decode") +
                               " pool of " + p.model->name + " needs a " + (prefill ? "decode" : "prefill") +
                               " pool of the same model");
      if (!prefill && p.spec->scheduler == "orca")
        return Status::Invalid(s.file + ": " + p.spec->path + ".scheduler: orca reserves and prefills whole prompts, "
                               "so it cannot take KV moved from a prefill pool; choose another scheduler");
    }
  }
  run->placement_ = PlaceFleet(s, run->pools_);
  FLEETSIM_RETURN_IF_ERROR(run->PriceLinks().WithPrefix(s.file + ": "));
  {
    // Built once here, so that `validate` checks them, and kept for Run
    // (a PerfModel is immutable).
    for (const PoolPlan& p : run->pools_) {
      run->perf_.emplace_back();
      FLEETSIM_RETURN_IF_ERROR(MakePerfModel(s, p, profile.get(), &run->perf_.back()));
    }
  }
  FLEETSIM_RETURN_IF_ERROR(run->CheckReliability().WithPrefix(s.file + ": "));
  FLEETSIM_RETURN_IF_ERROR(run->CheckScaling());
  {
    GatewayConfig g;
    bool active = false;
    FLEETSIM_RETURN_IF_ERROR(run->MakeGateway(Rng(0), &g, &active).WithPrefix(s.file + ": "));
  }
  auto served = [&run](const std::string& model) {
    for (const PoolPlan& p : run->pools_)
      if (p.model->name == model) return true;
    return false;
  };
  if (s.traffic.kind == TrafficSpec::Kind::kGenerator && !s.traffic.model.empty() && !served(s.traffic.model))
    return Status::Invalid(s.file + ": traffic.generator.model: no pool serves \"" + s.traffic.model + "\"");
  for (size_t i = 0; i < s.traffic.mix.size(); ++i) {
    const TrafficSpec::MixEntry& m = s.traffic.mix[i];
    const std::string path = s.file + ": traffic.mix[" + std::to_string(i) + "]";
    if (!m.model.empty() && !served(m.model)) return Status::Invalid(path + ".model: no pool serves \"" + m.model + "\"");
    if (!m.location.empty()) {
      bool known = false;
      for (const ClientLocationSpec& c : s.clients) known = known || c.name == m.location;
      if (!known) return Status::Invalid(path + ".location: no fleet.clients location \"" + m.location + "\"");
    }
    if (!m.tenant.empty()) {
      std::vector<std::string> names;
      for (const TenantSpec& t : s.admission.tenants) names.push_back(t.name);
      if (std::find(names.begin(), names.end(), m.tenant) == names.end())
        return Status::Invalid(path + ".tenant: " + Unknown("tenant", m.tenant, names) +
                               " (fleet.admission.tenants lists them)");
    }
  }
  *out = std::move(run);
  return Status::Ok();
}

Status ScenarioRun::MakeGateway(Rng balancer_rng, GatewayConfig* out, bool* active) const {
  const ScenarioSpec& s = spec_;
  const AdmissionSpec& ad = s.admission;
  *active = !ad.classes.empty() || !ad.tenants.empty() || ad.max_queue > 0 || !s.degradation.empty() ||
            !s.regions.empty() || s.canary.has_value();
  GatewayConfig g;
  auto pool_index = [&](const std::string& name) {
    for (size_t i = 0; i < pools_.size(); ++i)
      if (pools_[i].spec->name == name) return static_cast<int>(i);
    return -1;
  };
  auto pool_names = [&] {
    std::vector<std::string> names;
    for (const PoolPlan& p : pools_) names.push_back(p.spec->name);
    return names;
  };
  for (const PriorityClassSpec& c : ad.classes) {
    for (const GatewayConfig::PriorityClass& o : g.classes) {
      if (o.name == c.name) return Status::Invalid(c.path + ".name: duplicate class \"" + c.name + "\"");
      if (o.priority == c.priority)
        return Status::Invalid(c.path + ".priority: class \"" + o.name + "\" has priority " + std::to_string(c.priority) + " already");
    }
    GatewayConfig::PriorityClass pc;
    pc.name = c.name;
    pc.priority = c.priority;
    if (c.queue_timeout_s) pc.queue_timeout = SecondsToTime(*c.queue_timeout_s);
    g.classes.push_back(pc);
  }
  for (const TenantSpec& t : ad.tenants) {
    for (const GatewayConfig::Tenant& o : g.tenants)
      if (o.name == t.name) return Status::Invalid(t.path + ".name: duplicate tenant \"" + t.name + "\"");
    GatewayConfig::Tenant gt;
    gt.name = t.name;
    gt.rate_per_s = t.rate_per_s.value_or(0);
    gt.burst = t.burst.value_or(std::max(1.0, gt.rate_per_s));
    g.tenants.push_back(gt);
  }
  g.max_queue = ad.max_queue;
  if (ad.queue_order == "weighted" && ad.classes.empty())
    return Status::Invalid("fleet.admission.queue_order: \"weighted\" needs fleet.admission.classes (their weights)");
  // Regions: every pool in one, every client with a round trip to each.
  g.regions = s.regions;
  auto region_index = [&](const std::string& name) {
    for (size_t r = 0; r < g.regions.size(); ++r)
      if (g.regions[r] == name) return static_cast<int>(r);
    return -1;
  };
  for (size_t i = 0; i < pools_.size(); ++i) {
    const PoolSpec& ps = *pools_[i].spec;
    GatewayConfig::Pool gp;
    gp.name = ps.name;
    gp.model = pools_[i].model->name;
    gp.replicas = ps.total_replicas();
    if (!g.regions.empty()) {
      gp.region = ps.region.empty() ? 0 : region_index(ps.region);
      if (gp.region < 0) return Status::Invalid(ps.path + ".region: " + Unknown("region", ps.region, g.regions));
    } else if (!ps.region.empty()) {
      return Status::Invalid(ps.path + ".region: no fleet.regions are defined");
    }
    const ReplicaCapacity* cap = capacity_[i].get();
    gp.prefill_ms = [cap](int64_t tokens) { return cap->PrefillMs(static_cast<double>(tokens)); };
    g.pools.push_back(std::move(gp));
  }
  if (!g.regions.empty()) {
    if (s.clients.empty()) {
      // One client location, as near to every region.
      g.locations.push_back({"default", std::vector<double>(g.regions.size(), 0.0)});
    }
    for (const ClientLocationSpec& c : s.clients) {
      GatewayConfig::Location loc;
      loc.name = c.name;
      for (const auto& [region, ms] : c.rtt_ms)
        if (region_index(region) < 0) return Status::Invalid(c.path + ".rtt_ms." + region + ": " + Unknown("region", region, g.regions));
      for (const std::string& r : g.regions) {
        auto it = c.rtt_ms.find(r);
        if (it == c.rtt_ms.end()) return Status::Invalid(c.path + ".rtt_ms: no round trip to region \"" + r + "\"");
        loc.rtt_ms.push_back(it->second);
      }
      g.locations.push_back(std::move(loc));
    }
    const GlobalBalancerRegistry::Entry* e = policies_.balancers.Find(s.global_balancer.policy);
    if (!e)
      return Status::Invalid("fleet.global_balancer.policy: " +
                             Unknown("global balancer", s.global_balancer.policy, policies_.balancers.Names()));
    GlobalBalancerOptions bo;
    bo.latency_budget_ms = s.global_balancer.latency_budget_ms;
    g.balancer = e->factory(bo, balancer_rng);
    g.saturation_outstanding = s.global_balancer.saturation_outstanding;
    if (!s.global_balancer.weights.empty()) {
      for (const auto& [region, w] : s.global_balancer.weights)
        if (region_index(region) < 0)
          return Status::Invalid("fleet.global_balancer.weights." + region + ": " + Unknown("region", region, g.regions));
      for (const std::string& r : g.regions) {
        auto it = s.global_balancer.weights.find(r);
        g.region_weights.push_back(it == s.global_balancer.weights.end() ? 0.0 : it->second);
      }
    }
  } else if (!s.clients.empty()) {
    return Status::Invalid("fleet.clients: no fleet.regions are defined");
  }
  // Degradation.
  for (const DegradationSpec& d : s.degradation) {
    GatewayConfig::Degradation gd;
    gd.name = d.policy;
    const DegradationRegistry::Entry* e = policies_.degradations.Find(d.policy);
    if (!e)
      return Status::Invalid(d.path + ".policy: " +
                             Unknown("degradation policy", d.policy, policies_.degradations.Names()));
    DegradationContext dc;
    dc.path = d.path;
    dc.max_output_tokens = d.max_output_tokens;
    if (!d.pool.empty()) {
      dc.fallback_pool = pool_index(d.pool);
      if (dc.fallback_pool < 0) return Status::Invalid(d.path + ".pool: " + Unknown("pool", d.pool, pool_names()));
      dc.fallback_model = pools_[dc.fallback_pool].model->name;
    }
    FLEETSIM_RETURN_IF_ERROR(e->factory(dc, &gd.policy));
    if (!d.class_name.empty()) {
      for (const GatewayConfig::PriorityClass& c : g.classes)
        if (c.name == d.class_name) gd.priority = c.priority;
      if (gd.priority < 0) {
        std::vector<std::string> names;
        for (const GatewayConfig::PriorityClass& c : g.classes) names.push_back(c.name);
        return Status::Invalid(d.path + ".class: " + Unknown("class", d.class_name, names));
      }
    }
    gd.queue_per_replica = d.queue_per_replica;
    gd.predicted_ttft_ms = d.predicted_ttft_ms;
    gd.saturated = d.saturated;
    g.degradation.push_back(std::move(gd));
  }
  // Canary.
  if (s.canary) {
    const CanarySpec& c = *s.canary;
    GatewayConfig::Canary gc;
    gc.pool = pool_index(c.pool);
    if (gc.pool < 0) return Status::Invalid(c.path + ".pool: " + Unknown("pool", c.pool, pool_names()));
    gc.baseline = pool_index(c.baseline);
    if (gc.baseline < 0) return Status::Invalid(c.path + ".baseline: " + Unknown("pool", c.baseline, pool_names()));
    if (gc.pool == gc.baseline) return Status::Invalid(c.path + ".pool: the canary and the baseline are one pool");
    const PoolSpec& cp = *pools_[gc.pool].spec;
    if (cp.autoscaler) return Status::Invalid(cp.path + ".autoscaler: a canary pool is sized by its rollout, not an autoscaler");
    if (pools_[gc.baseline].spec->autoscaler)
      return Status::Invalid(pools_[gc.baseline].spec->path + ".autoscaler: a canary's baseline must be a fixed pool");
    gc.start = SecondsToTime(c.start_s);
    for (const CanarySpec::Step& st : c.steps) gc.steps.push_back({st.share, SecondsToTime(st.duration_s)});
    if (c.steps.empty() || c.steps[0].share >= 1)
      return Status::Invalid(c.path + ".steps[0].share: the first step must leave the baseline some traffic "
                             "(below 1): each step compares the canary with the baseline's figures");
    gc.ttft_margin = c.ttft_p99_margin;
    gc.tpot_margin = c.tpot_p99_margin;
    gc.error_margin = c.error_rate_margin;
    gc.min_requests = c.min_requests;
    gc.max_extensions = c.max_extensions;
    g.canary = gc;
  }
  *out = std::move(g);
  return Status::Ok();
}

Status ScenarioRun::MakeAutoscaler(size_t pool, std::unique_ptr<Autoscaler>* out) const {
  const AutoscalerSpec& as = *pools_[pool].spec->autoscaler;
  AutoscalerContext ctx;
  ctx.capacity = capacity_[pool].get();
  ctx.ttft_slo_ms = spec_.ttft_slo_ms;
  ctx.tpot_slo_ms = spec_.tpot_slo_ms;
  const AutoscalerRegistry::Entry* e = policies_.autoscalers.Find(as.policy);
  if (!e) return Status::Invalid(spec_.file + ": " + as.path + ".policy: " +
                                 Unknown("autoscaler", as.policy, policies_.autoscalers.Names()));
  return e->factory(as, ctx, out).WithPrefix(spec_.file + ": ");
}

Status ScenarioRun::PriceLinks() {
  const FleetPlacement& fp = placement_;
  if (fp.nodes() == 0) return Status::Ok();
  topology_ = std::make_unique<Topology>(fp.node_gpu, fp.gpus_per_node, spec_.network);
  const double efficiency = spec_.roofline.link_efficiency;
  size_t first = 0;  // the pool's first replica
  for (PoolPlan& p : pools_) {
    const std::vector<int>& gpus = fp.replica_gpus[first];
    first += static_cast<size_t>(p.spec->total_replicas());
    const int tp = p.shard.tp, pp = p.shard.pp;
    if (tp > 1) {
      // Every replica of a pool is placed alike; stage 0's group stands for all.
      const Topology::RingCost ring = topology_->Ring(std::vector<int>(gpus.begin(), gpus.begin() + tp));
      if (ring.crosses_nodes) {
        p.collective_alpha_ns = ring.alpha_ns;
        p.collective_gbps = ring.gbps;
        std::ostringstream w;
        w << p.spec->path << ".tp: " << tp << " GPUs span " << p.spec->name << "'s nodes of " << fp.gpus_per_node
          << " GPUs: its all-reduces are priced as NCCL's ring over the network (" << ring.gbps
          << " GB/s a hop, " << ring.alpha_ns / 1e3 << " us a step), not the node's fabric";
        p.warnings.push_back(w.str());
      }
    }
    if (p.shard.dp > 1) {
      // The MoE layers' all-to-all among the ep GPUs, on their links.
      const Topology::RingCost a2a =
          topology_->AllToAll(std::vector<int>(gpus.begin(), gpus.begin() + p.shard.ep));
      p.all_to_all_alpha_ns = a2a.alpha_ns;
      p.all_to_all_gbps = a2a.gbps;
    }
    if (pp > 1) {
      // Each of the tp ranks of stage i sends its 1/tp of the activations to
      // the same rank of stage i + 1 (vLLM's send_tensor_dict with the TP
      // group as all_gather_group), all at once: the stage link carries tp
      // times the slowest rank's share of its links, after the slowest
      // rank's latency. The all-gather on the receiving side is not priced.
      PipelinePlan& pl = p.pipeline;
      pl.links.clear();
      for (int i = 0; i + 1 < pp; ++i) {
        std::vector<const Topology::Path*> paths;
        std::map<Topology::LinkId, int> uses;
        for (int k = 0; k < tp; ++k) {
          paths.push_back(&topology_->PathBetween(gpus[i * tp + k], gpus[(i + 1) * tp + k]));
          for (Topology::LinkId l : paths.back()->links) ++uses[l];
        }
        double alpha = 0, gbps = std::numeric_limits<double>::infinity();
        for (const Topology::Path* p_k : paths) {
          const Topology::Path& path = *p_k;
          alpha = std::max(alpha, path.latency_ns);
          for (Topology::LinkId l : path.links) gbps = std::min(gbps, topology_->link(l).gbps / uses[l]);
        }
        pl.links.push_back(StageLink{alpha, tp * gbps * efficiency});
      }
    }
  }
  return Status::Ok();
}

Status ScenarioRun::CheckScaling() {
  for (size_t i = 0; i < pools_.size(); ++i) {
    capacity_.push_back(std::make_unique<PerfCapacity>(*perf_[i], pools_[i]));
    if (!pools_[i].spec->autoscaler) continue;
    std::unique_ptr<Autoscaler> probe;
    FLEETSIM_RETURN_IF_ERROR(MakeAutoscaler(i, &probe));
  }
  for (const GpuCapacitySpec& c : spec_.gpu_capacity) {
    // The replicas up at 0 s must fit (they are not started through the
    // limit).
    int64_t at_start = 0;
    for (const PoolPlan& p : pools_) {
      if (p.gpu->name != c.gpu || p.spec->pricing_class != c.pricing_class) continue;
      const int n = p.spec->autoscaler ? p.spec->autoscaler->initial_replicas + p.spec->autoscaler->warm_pool
                                       : p.spec->total_replicas();
      at_start += int64_t{n} * p.shard.gpus();
    }
    if (at_start > c.gpus)
      return Status::Infeasible(spec_.file + ": " + c.path + ".gpus: " + std::to_string(c.gpus) + " " + c.gpu + " " +
                                c.pricing_class + " GPUs, but the pools using them start with " +
                                std::to_string(at_start));
    const GpuSpec* gpu = catalog_.FindGpu(c.gpu);
    if (!gpu && profile_gpu_ && profile_gpu_->name == c.gpu) gpu = profile_gpu_.get();
    if (!gpu) return Status::Invalid(spec_.file + ": " + c.path + ".gpu: " + Unknown("GPU", c.gpu, catalog_.GpuNames()));
    if (!gpu->prices.count(c.pricing_class)) {
      std::vector<std::string> classes;
      for (const auto& [k, v] : gpu->prices) classes.push_back(k);
      return Status::Invalid(spec_.file + ": " + c.path + ".pricing_class: " +
                             Unknown("pricing class", c.pricing_class, classes));
    }
  }
  return Status::Ok();
}

Status ScenarioRun::DailySchedule(size_t pool, uint64_t seed, std::vector<std::pair<double, int>>* out) const {
  const AutoscalerSpec& as = *pools_[pool].spec->autoscaler;
  TrafficStats st;
  FLEETSIM_RETURN_IF_ERROR(ScanTraffic(spec_.traffic, Rng::ForStream(seed, 0, "traffic"), &st).WithPrefix(spec_.file + ": "));
  const double per_replica =
      capacity_[pool]->MaxRequestsPerS(st.mean_prompt_tokens, st.mean_output_tokens, spec_.ttft_slo_ms, spec_.tpot_slo_ms);
  out->clear();
  for (int h = 0; h < 24; ++h) {
    // An hour starts with what it or the next hour needs, so that
    // replicas are up before a rise (a cold start takes minutes).
    const double rate = std::max(st.peak_rate_by_hour[h], st.peak_rate_by_hour[(h + 1) % 24]);
    const double need = per_replica > 0 ? std::ceil(rate / per_replica - 1e-9) : as.max_replicas;
    const int n = static_cast<int>(std::clamp<double>(need, as.min_replicas, as.max_replicas));
    if (out->empty() || out->back().second != n) out->emplace_back(h, n);
  }
  return Status::Ok();
}

Status ScenarioRun::CheckReliability() {
  const ReliabilitySpec& r = spec_.reliability;
  for (const RollingRestartSpec& rr : r.rolling_restarts) {
    int found = -1;
    std::vector<std::string> names;
    for (size_t i = 0; i < pools_.size(); ++i) {
      names.push_back(pools_[i].spec->name);
      if (pools_[i].spec->name == rr.pool) found = static_cast<int>(i);
    }
    if (found < 0) return Status::Invalid(rr.path + ".pool: " + Unknown("pool", rr.pool, names));
    restart_pools_.push_back(found);
  }
  const FleetPlacement& fp = placement_;
  for (const FailureSpec& f : r.failures) {
    const FailureModelRegistry::Entry* e = policies_.failure_models.Find(f.model);
    if (!e)
      return Status::Invalid(f.path + ".model: " + Unknown("failure model", f.model, policies_.failure_models.Names()));
    std::unique_ptr<FailureModel> model;
    FLEETSIM_RETURN_IF_ERROR(e->factory(f, Rng(0), &model));
    auto range = [&](const std::optional<int64_t>& v, const char* key, int64_t n, const char* what) -> Status {
      if (v && *v >= n)
        return Status::Invalid(f.path + "." + key + ": " + std::to_string(*v) + " is not a " + what + " of the fleet (it has " +
                               std::to_string(n) + ", numbered from 0)");
      return Status::Ok();
    };
    FLEETSIM_RETURN_IF_ERROR(range(f.replica, "replica", static_cast<int64_t>(fp.replica_nodes.size()), "replica"));
    FLEETSIM_RETURN_IF_ERROR(range(f.node, "node", fp.nodes(), "node"));
    FLEETSIM_RETURN_IF_ERROR(range(f.rack, "rack", fp.racks, "rack"));
    if (!f.zone.empty() && std::find(fp.zones.begin(), fp.zones.end(), f.zone) == fp.zones.end())
      return Status::Invalid(f.path + ".zone: " + Unknown("zone", f.zone, fp.zones));
    const bool hangs = f.model != "engine_crash" && f.kind != "crash";
    if (r.recovery == Recovery::kRepair && hangs && !f.mttr_s)
      return Status::Invalid(f.path + ".mttr_s: required when fleet.recovery is \"repair\" (how long a repair takes)");
  }
  return Status::Ok();
}

namespace {

// The identity of a run: hashes of the scenario, of every file it reads and
// of the overrides, so two summaries can be told apart without their folders.
Status Identify(const ScenarioSpec& spec, uint64_t seed, bool hash_files, RunIdentity* id) {
  id->scenario = !spec.name.empty() ? spec.name : std::filesystem::path(spec.file).stem().string();
  id->scenario_sha256 = spec.sha256;
  id->seed = seed;
  id->fleetsim_version = FLEETSIM_VERSION;
  id->overrides = spec.overrides;
  if (!hash_files) return Status::Ok();
  std::string inputs = "scenario " + spec.sha256 + "\n";
  auto add_file = [&](const std::string& role, const std::string& path) -> Status {
    if (path.empty()) return Status::Ok();
    std::string hex;
    FLEETSIM_RETURN_IF_ERROR(Sha256File(path, &hex).WithPrefix(spec.file + ": " + role + ": "));
    inputs += role + " " + hex + "\n";
    return Status::Ok();
  };
  if (spec.traffic.kind == TrafficSpec::Kind::kTrace) {
    // A ServeGen trace may be a folder of client files, each with its
    // dataset beside it: every regular file there, in name order, counts.
    std::error_code ec;
    const std::filesystem::path trace(spec.traffic.path);
    if (std::filesystem::is_directory(trace, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::directory_iterator(trace, ec))
        if (e.is_regular_file(ec)) files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files)
        FLEETSIM_RETURN_IF_ERROR(add_file("traffic.trace.path/" + f.filename().string(), f.string()));
    } else {
      FLEETSIM_RETURN_IF_ERROR(add_file("traffic.trace.path", spec.traffic.path));
      if (spec.traffic.format == TraceFormat::kServeGen) {
        std::string dataset = trace.filename().string();
        if (const size_t at = dataset.rfind("-trace.csv"); at != std::string::npos) {
          dataset.replace(at, std::string::npos, "-dataset.json");
          const std::filesystem::path sibling = trace.parent_path() / dataset;
          if (std::filesystem::is_regular_file(sibling, ec))
            FLEETSIM_RETURN_IF_ERROR(add_file("traffic.trace.dataset", sibling.string()));
        }
      }
    }
    FLEETSIM_RETURN_IF_ERROR(add_file("traffic.trace.lengths_csv", spec.traffic.lengths_csv));
  } else {
    FLEETSIM_RETURN_IF_ERROR(add_file("traffic.generator.lengths_csv", spec.traffic.lengths_csv));
  }
  FLEETSIM_RETURN_IF_ERROR(add_file("perf.profile", spec.perf_profile));
  for (const PoolSpec& p : spec.pools)
    if (EngineIsFile(p.engine)) FLEETSIM_RETURN_IF_ERROR(add_file(p.path + ".engine", p.engine));
  for (const std::string& o : spec.overrides) inputs += "set " + o + "\n";
  id->inputs_sha256 = Sha256Hex(inputs);
  return Status::Ok();
}

// A first guess of the simulated span, to pick timeseries.csv's interval
// before the run; 0 when unknown (a trace).
SimTime EstimatedSpan(const ScenarioSpec& s) {
  double span = 0;
  const TrafficSpec& t = s.traffic;
  if (t.kind == TrafficSpec::Kind::kGenerator) {
    if (std::isfinite(t.max_arrival_s)) {
      span = t.max_arrival_s;
    } else if (t.max_requests < std::numeric_limits<int64_t>::max() && t.rate_per_s > 0) {
      span = static_cast<double>(t.max_requests) / t.rate_per_s;
    }
  }
  if (s.duration_s) span = span > 0 ? std::min(span, *s.duration_s) : *s.duration_s;
  return span > 0 && span < 1e9 ? SecondsToTime(span) : 0;
}

constexpr SimTime kDay = 86400 * kSecond;

}  // namespace

Status ScenarioRun::Run(const MetricsOptions& outputs, const RunOptions& options,
                        const std::function<void(const Progress&)>& progress, RunReport* report) {
  const auto wall_start = std::chrono::steady_clock::now();
  auto wall_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  };
  const uint64_t seed = options.seed;
  RunFacts facts;
  FLEETSIM_RETURN_IF_ERROR(Identify(spec_, seed, options.identify_inputs, &facts.identity));
  Simulation sim(seed);
  ExecutionMode* const live = options.execution;
  // Whatever way the run ends, live work stops with it.
  struct FinishLive {
    ExecutionMode* live;
    ~FinishLive() {
      if (live) live->Finish();
    }
  } finish_live{live};
  if (live) live->Start(sim);

  // Nothing arrives after duration_s, so a generator may stop there.
  TrafficSpec traffic = options.traffic ? *options.traffic : spec_.traffic;
  if (spec_.duration_s && !std::isfinite(traffic.max_arrival_s)) traffic.max_arrival_s = *spec_.duration_s;
  // Closed loop: the generator supplies requests in order (their lengths);
  // the clients' pace sets their arrivals, so its own arrival times (a
  // dense constant stream) are overwritten and its limits are applied here.
  const std::optional<ClosedLoopSpec> closed_loop = traffic.closed_loop;
  const SimTime stop_sending = std::isfinite(traffic.max_arrival_s) && traffic.max_arrival_s < 9.2e9
                                   ? SecondsToTime(traffic.max_arrival_s)
                                   : kTimeNever;
  if (closed_loop) {
    traffic.closed_loop.reset();
    traffic.max_arrival_s = std::numeric_limits<double>::infinity();
    if (traffic.kind == TrafficSpec::Kind::kGenerator) {
      // A dense stream whose own arrivals are never used; bounded (as a
      // generator must be) far beyond any run: 9e15 requests.
      traffic.arrival = ArrivalProcess::kConstant;
      traffic.rate_per_s = 1e6;
      traffic.max_arrival_s = 9e9;
    }
  }
  std::unique_ptr<RequestSource> source;
  FLEETSIM_RETURN_IF_ERROR(
      MakeRequestSource(traffic, sim.Stream("traffic"), &source).WithPrefix(spec_.file + ": "));

  MetricsOptions mo = outputs;
  mo.warmup = SecondsToTime(spec_.warmup_s);
  mo.ttft_slo_ms = spec_.ttft_slo_ms;
  mo.tpot_slo_ms = spec_.tpot_slo_ms;
  for (const PoolPlan& p : pools_)
    for (int r = 0; r < p.spec->total_replicas(); ++r) mo.replica_names.push_back(p.spec->name + "/" + std::to_string(r));
  std::unique_ptr<MetricsCollector> metrics;
  FLEETSIM_RETURN_IF_ERROR(MetricsCollector::Open(mo, &metrics));

  // Closed-loop clients hear of each request's end: they send their next
  // one a think time after it. Everything else goes to the metrics.
  // The front door, when the scenario configures one; its canary hears of
  // each request's end.
  GatewayConfig gateway_config;
  bool front_door = false;
  FLEETSIM_RETURN_IF_ERROR(
      MakeGateway(sim.Stream("balancer"), &gateway_config, &front_door).WithPrefix(spec_.file + ": "));
  const int canary_pool = gateway_config.canary ? gateway_config.canary->pool : -1;
  Gateway* gateway_ptr = nullptr;
  std::function<void(const RequestRecord&)> on_finished;
  Cluster* scaled_cluster = nullptr;  // autoscalers' monitors hear of each request's end
  ForwardingObserver forwarding(metrics.get(), [&](const RequestRecord& rec) {
    if (options.on_request) options.on_request(rec);
    if (on_finished) on_finished(rec);
    if (scaled_cluster) scaled_cluster->OnRequestEnded(rec);
    if (gateway_ptr) gateway_ptr->OnRequestEnded(rec);
    if (options.execution) options.execution->OnRequestEnded(rec);
  });
  bool autoscaled = false;
  for (const PoolPlan& p : pools_) autoscaled = autoscaled || p.spec->autoscaler.has_value();
  // Replicas report straight to the metrics unless someone else listens
  // (the forwarding costs a call per iteration and token gap).
  RunObserver& observer =
      closed_loop || options.on_request || autoscaled || canary_pool >= 0 || options.execution
          ? static_cast<RunObserver&>(forwarding)
          : *metrics;

  // The fleet.
  const std::vector<std::unique_ptr<PerfModel>>& perf = perf_;
  const std::string default_model = !spec_.model.empty() ? spec_.model : pools_.front().model->name;
  // A pool's replicas share one table of decode step times (one perf model).
  std::vector<std::unique_ptr<DecodeStepTimes>> step_times;
  for (size_t pi = 0; pi < pools_.size(); ++pi) step_times.push_back(std::make_unique<DecodeStepTimes>(*perf[pi]));
  Cluster cluster(sim, observer, default_model, mo.warmup);
  for (size_t pi = 0; pi < pools_.size(); ++pi) {
    const PoolPlan& p = pools_[pi];
    const std::optional<AutoscalerSpec>& as = p.spec->autoscaler;
    for (int r = 0; r < p.spec->total_replicas(); ++r) {
      // An autoscaled pool starts with its initial replicas ready and its
      // warm pool warm; its other slots wait stopped.
      ReplicaPhase phase = ReplicaPhase::kReady;
      if (as && r >= as->initial_replicas)
        phase = r < as->initial_replicas + as->warm_pool ? ReplicaPhase::kWarm : ReplicaPhase::kStopped;
      // A canary's replicas come with its rollout.
      if (static_cast<int>(pi) == canary_pool) phase = ReplicaPhase::kStopped;
      ReplicaOptions ro;
      ro.index = cluster.size();
      ro.pool = static_cast<int>(pi);
      ro.model = p.model->name;
      ro.max_model_len = static_cast<int>(p.max_model_len);
      ro.truncate_over_max_model_len = p.spec->over_max_model_len == "truncate";
      ro.preemption = p.preemption;
      ro.host_kv_blocks = p.host_kv_blocks;
      ro.prefix_caching = p.spec->prefix_caching;
      ro.kv_blocks = p.memory.kv_blocks;
      ro.block_size = p.spec->block_size;
      ro.pipeline = p.shard.pp > 1 ? &p.pipeline : nullptr;
      ro.role = p.spec->role == PoolSpec::Role::kPrefill  ? ReplicaOptions::Role::kPrefill
                : p.spec->role == PoolSpec::Role::kDecode ? ReplicaOptions::Role::kDecode
                                                          : ReplicaOptions::Role::kBoth;
      ro.server_request = std::llround(p.engine.server_request_us * 1e3);
      ro.server_prompt_token_ns = p.engine.server_prompt_token_us * 1e3;
      ro.server_output_token = std::llround(p.engine.server_output_token_us * 1e3);
      ro.admit_after_next_step = p.engine.async_scheduling && p.engine.admit_after_next_step;
      ro.busy_from = mo.warmup;
      ro.decode_step_times = step_times[pi].get();
      if (live) ro.make_executor = [live, idx = ro.index](Executor::Done d) { return live->MakeExecutor(idx, std::move(d)); };
      if (const std::optional<SpeculativeSpec>& sp = p.spec->speculative) {
        SpeculationOptions so;
        so.k = sp->k;
        so.acceptance_mean = sp->acceptance_mean;
        so.concentration = sp->acceptance_concentration;
        so.seed = options.seed;
        ro.speculation = so;
      }
      {
        const AdmissionSpec& ad = spec_.admission;
        ro.queue_order = ad.queue_order == "strict"     ? ReplicaOptions::QueueOrder::kStrict
                         : ad.queue_order == "weighted" ? ReplicaOptions::QueueOrder::kWeighted
                                                        : ReplicaOptions::QueueOrder::kFcfs;
        for (const PriorityClassSpec& c : ad.classes) ro.class_weights.emplace_back(c.priority, c.weight);
      }
      std::unique_ptr<BatchScheduler> sched;
      FLEETSIM_RETURN_IF_ERROR(p.scheduler->factory(p.limits, p.spec->scheduler_options, &sched)
                                   .WithPrefix(spec_.file + ": " + p.spec->path + "."));
      cluster.Add(std::make_unique<Replica>(sim, ro, std::move(sched), *perf[pi], observer), p.shard.gpus(),
                  p.usd_per_gpu_hour, phase);
      // A start loads this GPU's shard of the weights.
      const ColdStartSpec& cs = spec_.reliability.cold_start;
      Cluster::Placement pl;
      pl.nodes = placement_.replica_nodes[ro.index];
      pl.provision = SecondsToTime(ProvisionS(cs, p.spec->pricing_class));
      pl.start = SecondsToTime(cs.container_start_s +
                               static_cast<double>(p.memory.weight_bytes_per_gpu) /
                                   (WeightLoadGbPerS(cs, p.gpu->network_gbps_per_direction) * 1e9) +
                               cs.warmup_s);
      pl.gpu_hours_per_failure = p.gpu->gpu_hours_per_interruption.value_or(kLlama3GpuHoursPerInterruption);
      cluster.Place(ro.index, pl);
    }
    cluster.SetRequired(static_cast<int>(pi), as ? as->min_replicas : p.spec->replicas);
    // Prices, scaling and spot.
    Cluster::PoolConfig pc;
    pc.name = p.spec->name;
    pc.gpu = p.gpu->name;
    pc.gpus_per_replica = p.shard.gpus();
    pc.price.name = p.spec->pricing_class;
    pc.price.usd_per_gpu_hour = p.usd_per_gpu_hour;
    pc.price.provision = SecondsToTime(ProvisionS(spec_.reliability.cold_start, p.spec->pricing_class));
    if (p.spec->pricing_class == "spot") {
      pc.reclaims_per_hour = p.spot_reclaims_per_hour;
      pc.reclaim_notice = SecondsToTime(p.spot_notice_s);
      if (p.spec->spot_fallback_on_demand) {
        Cluster::PriceClass od;
        od.name = "on_demand";
        od.usd_per_gpu_hour = p.on_demand_usd_per_gpu_hour;
        od.provision = SecondsToTime(ProvisionS(spec_.reliability.cold_start, "on_demand"));
        pc.fallback = od;
      }
    }
    pc.desired = as ? as->initial_replicas : static_cast<int>(pi) == canary_pool ? 0 : p.spec->total_replicas();
    pc.warm_start = SecondsToTime(p.spec->warm_start_s);
    pc.warm_cost_fraction = p.spec->warm_cost_fraction;
    if (as) {
      FLEETSIM_RETURN_IF_ERROR(MakeAutoscaler(pi, &pc.autoscaler));
      pc.autoscaling = *as;
    }
    cluster.ConfigurePool(static_cast<int>(pi), std::move(pc));
  }
  {
    std::vector<Cluster::CapacityLimit> limits;
    for (const GpuCapacitySpec& c : spec_.gpu_capacity) limits.push_back({c.gpu, c.pricing_class, c.gpus});
    cluster.SetCapacityLimits(std::move(limits));
    cluster.SetActivatorTimeout(SecondsToTime(spec_.activator_timeout_s));
    cluster.SetReplicaQueueLimit(spec_.admission.max_queue_per_replica);
  }
  cluster.SetNodes(placement_.node_rack, placement_.node_zone, placement_.zones);
  // Disaggregated pools move KV over a topology of their own per run (its
  // path cache is the run's).
  std::unique_ptr<Topology> topology;
  std::unique_ptr<Network> network;
  LogHistogram transfer_ns;
  double transfer_bytes = 0;
  if (disaggregated_) {
    topology = std::make_unique<Topology>(placement_.node_gpu, placement_.gpus_per_node, spec_.network);
    network = std::make_unique<Network>(sim, *topology, spec_.roofline.link_efficiency);
    Cluster::Disaggregation d;
    d.pick = spec_.disaggregation.most_free_kv ? Cluster::Disaggregation::Pick::kMostFreeKv
                                               : Cluster::Disaggregation::Pick::kLeastOutstanding;
    d.ttft_from_prefill = spec_.disaggregation.ttft_from_prefill;
    d.network = network.get();
    d.replica_gpus = placement_.replica_gpus;
    for (const PoolPlan& p : pools_) d.kv_bytes_per_token.push_back(static_cast<double>(p.model->KvBytesPerToken()));
    d.on_transfer = [&transfer_ns, &transfer_bytes](double bytes, SimTime latency) {
      transfer_ns.Add(latency);
      transfer_bytes += bytes;
    };
    cluster.SetDisaggregation(std::move(d));
  }
  {
    RouterContext rc{sim.Stream("router"), spec_.router_options, "fleet.router_options",
                     [&sim] { return sim.now(); }, spec_.metrics_scrape_ms <= 0};
    std::unique_ptr<Router> router;
    FLEETSIM_RETURN_IF_ERROR(router_->factory(std::move(rc), &router).WithPrefix(spec_.file + ": "));
    cluster.SetRouter(std::move(router));
    for (const DegradationSpec& d : spec_.degradation)
      if (d.predicted_ttft_ms > 0 || d.saturated) cluster.RequireMetrics();
    cluster.SetMetricsScrape(std::llround(spec_.metrics_scrape_ms * 1e6));
  }
  const bool reliability = spec_.reliability.active();
  if (reliability) {
    std::vector<std::unique_ptr<FailureModel>> models;
    for (size_t f = 0; f < spec_.reliability.failures.size(); ++f) {
      const FailureSpec& fs = spec_.reliability.failures[f];
      models.emplace_back();
      FLEETSIM_RETURN_IF_ERROR(policies_.failure_models.Find(fs.model)->factory(
          fs, sim.Stream("failures/" + std::to_string(f)), &models.back()));
    }
    cluster.SetReliability(spec_.reliability, std::move(models), restart_pools_);
    metrics->SetWindows(&cluster.failure_windows(), &cluster.restart_windows());
  }
  cluster.StartScaling();
  if (cluster.scaling()) scaled_cluster = &cluster;
  std::optional<Gateway> gateway;
  if (front_door) {
    gateway.emplace(sim, cluster, observer, std::move(gateway_config), sim.Stream("gateway"));
    if (canary_pool >= 0) gateway_ptr = &*gateway;
  }
  {
    // Per-group figures: every model; classes, tenants, regions and
    // degradation where the scenario has them.
    GroupNames groups;
    groups.models = cluster.model_names();
    if (gateway) {
      groups.classes = gateway->ClassNames();
      groups.tenants = gateway->TenantNames();
      groups.regions = gateway->RegionNames();
    }
    if (!spec_.degradation.empty()) groups.degrade_reasons = DegradeReasonNames();
    metrics->SetGroups(std::move(groups));
  }
  // Failures and autoscalers schedule events for ever: the run is over when
  // no request is to come or held.
  const bool endless = reliability || cluster.periodic() || (gateway && gateway->active());
  // A request reaches the router: to a ready replica of its model, or rejected.
  TrafficMix mix(spec_.traffic.mix, sim.Stream("traffic_mix"));
  auto route = [&](Request&& req) {
    mix.Apply(&req);
    if (gateway) {
      gateway->Arrive(std::move(req));
    } else {
      cluster.Route(std::move(req));
    }
  };

  Request next;
  Status source_status = source->status();
  bool have = false;  // an open-loop arrival is pending
  // Closed loop: a client sends now, if sending has not stopped.
  int64_t sent = 0;
  int64_t sends_pending = 0;  // clients thinking, their next send scheduled
  bool closing = false;
  std::unordered_map<uint64_t, int64_t> client_of;  // request in flight -> its client
  Rng think = sim.Stream("think");
  std::function<void(int64_t)> send = [&](int64_t client) {
    if (sent >= traffic.max_requests || sim.now() >= stop_sending) return;
    Request req;
    if (!source->Next(&req)) {
      if (!source->status().ok()) {
        source_status = source->status();
        sim.Stop();
      }
      return;
    }
    ++sent;
    req.arrival = sim.now();
    client_of.emplace(req.id, client);
    route(std::move(req));
  };
  // Arrivals: one pending event at a time, pulled from the stream.
  std::function<void()> arrive = [&] {
    route(std::move(next));
    next = Request();
    have = source->Next(&next);
    if (have) {
      sim.At(next.arrival, arrive);
    } else if (!source->status().ok()) {
      source_status = source->status();
      sim.Stop();
    }
  };
  const bool external = live && live->external_arrivals();
  if (external) {
    // Live mode's server sends the requests; the traffic is not read.
    live->AttachArrivals([&](Request&& req) {
      req.arrival = sim.now();
      route(std::move(req));
    });
  } else if (closed_loop) {
    on_finished = [&](const RequestRecord& rec) {
      if (closing) return;
      auto it = client_of.find(rec.id);
      if (it == client_of.end()) return;
      const int64_t client = it->second;
      client_of.erase(it);
      // The client has the response when its last token reaches it (or at
      // once, when it was turned away).
      SimTime gap = SecondsToTime(closed_loop->think_time_s);
      if (closed_loop->exponential && gap > 0) gap = SecondsToTime(think.Exponential(closed_loop->think_time_s));
      // A client turned away at once (rejected on arrival) tries its next
      // request no sooner than 1 ms later, so a loop of refusals moves the
      // clock rather than spinning in one instant.
      if (rec.status != RequestStatus::kCompleted) gap = std::max<SimTime>(gap, kSecond / 1000);
      ++sends_pending;
      sim.At(std::max(rec.finish, sim.now()) + gap, [&send, &sends_pending, client] {
        --sends_pending;
        send(client);
      });
    };
    sim.At(0, [&] {
      for (int64_t c = 0; c < closed_loop->users; ++c) send(c);
    });
  } else {
    have = source->Next(&next);
    source_status = source->status();
    if (have) sim.At(next.arrival, arrive);
  }

  // Samples for timeseries.csv: every `interval`, coarsened so the file
  // stays within options.timeseries_max_rows; idle stretches are skipped.
  const int64_t nrep = cluster.size();
  SimTime interval = options.timeseries_interval > 0 ? options.timeseries_interval : kSecond;
  if (const SimTime span = EstimatedSpan(spec_); span > 0) {
    // Aim at a quarter of the budget, leaving room for the drain.
    const int64_t ticks_allowed = std::max<int64_t>(1, options.timeseries_max_rows / 4 / std::max<int64_t>(nrep, 1));
    while (span / interval > ticks_allowed) interval *= 2;
  }
  report->timeseries_intervals = {{0.0, TimeToSeconds(interval)}};
  int64_t rows = 0, rows_at_interval_start = 0;
  SimTime last_sample = 0;
  auto sample_all = [&](SimTime t) {
    for (int i = 0; i < cluster.size(); ++i) {
      Replica& r = cluster.replica(i);
      ReplicaSample s;
      s.t = t;
      s.interval = t - last_sample;
      s.replica = i;
      s.arrivals = cluster.TakeArrivals(i);
      s.waiting = r.waiting();
      s.running = r.state().num_running();
      s.kv_utilization = r.state().kv().utilization();
      s.busy = r.TakeBusyTime(t);
      s.state = cluster.StateName(i);
      s.usd_per_hour = cluster.UsdPerHour(i);
      metrics->OnSample(s);
    }
    rows += nrep;
    last_sample = t;
  };
  // With failures configured, their events never run out: the run is over
  // when no request is to come or held.
  auto traffic_done = [&] {
    return !have && sends_pending == 0 && cluster.Idle() && (!gateway || gateway->Idle()) &&
           !(live && live->arrivals_open());
  };
  std::function<void()> sampler = [&] {
    if (sim.pending() == 0 && !have && !(live && live->busy())) return;  // only the sampler was left: the run is over
    if (endless && traffic_done()) return;
    sample_all(sim.now());
    if (rows - rows_at_interval_start >= (options.timeseries_max_rows - rows_at_interval_start) / 2) {
      // Half the rows left are spent: coarsen so that the next half of what
      // remains covers at least four times the time simulated so far. Each
      // phase then covers five times the span before it, so the budget
      // reaches any span a run can have (doubling alone would cover the same
      // time per phase, and stop early on a large fleet).
      const int64_t ticks = std::max<int64_t>(1, (options.timeseries_max_rows - rows) / 2 / std::max<int64_t>(nrep, 1));
      const double wanted = 4.0 * static_cast<double>(sim.now()) / static_cast<double>(ticks);
      interval *= 2;
      while (static_cast<double>(interval) < wanted && interval < kTimeNever / 4) interval *= 2;
      rows_at_interval_start = rows;
      report->timeseries_intervals.emplace_back(TimeToSeconds(sim.now()), TimeToSeconds(interval));
    }
    // The end-of-run sample needs room too.
    if (options.timeseries_max_rows - rows < 2 * nrep) {
      report->timeseries_stopped_s = TimeToSeconds(sim.now());
      return;
    }
    SimTime next = sim.now() + interval;
    const SimTime next_event = sim.next_time();
    if (cluster.Idle() && next_event > next && next_event != kTimeNever) next = sim.now() + (next_event - sim.now() + interval - 1) / interval * interval;
    sim.At(next, sampler);
  };
  sim.At(interval, sampler);

  // Run in slices of simulated time so progress can be reported.
  const SimTime until = spec_.duration_s ? SecondsToTime(*spec_.duration_s) : kTimeNever;
  double last_progress = 0;
  bool stopped_by_error = false;
  bool interrupted = false;
  Status live_status;
  while (sim.pending() > 0 || (live && live->busy())) {
    // Slices of 10 simulated seconds, or up to the next event across a gap.
    const SimTime slice_end = std::min(until, std::max(sim.now() + 10 * kSecond, sim.next_time()));
    if (live) {
      live->Advance(sim, slice_end);
      live_status = live->status();
      if (!live_status.ok()) {
        stopped_by_error = true;
        break;
      }
    } else {
      sim.Run(slice_end);
    }
    if (!source_status.ok()) {
      stopped_by_error = true;
      break;
    }
    if (options.stop && *options.stop) {
      interrupted = true;
      break;
    }
    if (progress) {
      const double w = wall_s();
      if (w - last_progress >= 0.5) {
        last_progress = w;
        progress(Progress{sim.now(), metrics->arrived(), metrics->finished(), w});
      }
    }
    if (sim.now() >= until) break;
    if (endless && traffic_done()) break;
  }
  if (stopped_by_error || interrupted) {
    (void)metrics->Close();
    if (interrupted) return Status::Invalid("interrupted");
    if (!live_status.ok()) return live_status;
    return source_status.WithPrefix(spec_.file + ": ");
  }
  // Work left (arrivals to come, requests held) means duration_s cut the run;
  // a pending sampler tick alone does not.
  const bool hit_duration = have || sends_pending > 0 || !cluster.Idle() || (gateway && !gateway->Idle());
  // The run ends at the last request to leave (its exact time, not a
  // sampling tick), or at duration_s with work left.
  const SimTime end =
      hit_duration ? until : std::max<SimTime>({metrics->last_finish(), metrics->last_arrival(), 0});
  if (end > last_sample) sample_all(end);
  closing = true;
  if (gateway) gateway->ReportUnfinished(end, "run_ended");
  cluster.ReportUnfinished(end, "run_ended");

  facts.end = end;
  if (network) {
    RunFacts::Transfers t;
    t.count = transfer_ns.count();
    t.bytes = transfer_bytes;
    t.latency_ms_p50 = transfer_ns.Quantile(0.5) * 1e-6;
    t.latency_ms_p99 = transfer_ns.Quantile(0.99) * 1e-6;
    facts.transfers = t;
    for (Topology::LinkId l : network->UsedLinks())
      facts.link_busy_fraction.emplace_back(
          topology->link(l).name, end > 0 ? static_cast<double>(network->LinkBusy(l)) / static_cast<double>(end) : 0.0);
  }
  {
    const Cluster::Usage u = cluster.UsageUntil(end);
    facts.gpu_ns = static_cast<long double>(u.gpu_ns);
    facts.busy_gpu_ns = static_cast<long double>(u.busy_gpu_ns);
    if (u.usd_gpu_ns) facts.usd_gpu_ns = *u.usd_gpu_ns;
    for (const Cluster::Usage::Part& part : u.parts) {
      RunFacts::CostPart c;
      c.pool = pools_[part.pool].spec->name;
      c.pricing_class = part.pricing_class;
      c.gpu_ns = static_cast<long double>(part.gpu_ns);
      c.busy_gpu_ns = static_cast<long double>(part.busy_gpu_ns);
      if (part.usd_gpu_ns) c.usd_gpu_ns = *part.usd_gpu_ns;
      facts.cost_parts.push_back(std::move(c));
    }
  }
  if (cluster.scaling()) {
    const Cluster::Scaling sc = cluster.ScalingUntil(end);
    RunFacts::Autoscaling a;
    a.scale_ups = sc.scale_ups;
    a.scale_downs = sc.scale_downs;
    a.refused = sc.refused;
    a.fallbacks = sc.fallbacks;
    a.spot_reclaims = sc.spot_reclaims;
    a.replicas_min = sc.replicas_min;
    a.replicas_max = sc.replicas_max;
    a.replica_seconds = sc.replica_seconds;
    facts.autoscaling = a;
  }
  if (reliability) {
    const Cluster::Reliability r = cluster.ReliabilityUntil(end);
    RunFacts::Reliability fr;
    fr.events = r.events;
    fr.replica_failures = r.replica_failures;
    fr.by_cause = r.by_cause;
    fr.requests_failed = r.requests_failed;
    fr.requests_retried = r.requests_retried;
    fr.retries = r.retries;
    fr.partial_output_tokens = r.partial_output_tokens;
    fr.detected = r.detected;
    if (r.detected > 0) fr.detection_delay_s_mean = r.detection_delay_s_sum / static_cast<double>(r.detected);
    fr.replica_downtime_s = r.downtime_s;
    fr.capacity = r.capacity_availability;
    fr.restarts = r.restarts_done;
    fr.restart_s = r.restart_s;
    fr.min_ready_during_restart = r.min_ready_during_restart;
    facts.reliability = fr;
  }
  if (gateway && gateway->canary()) facts.canary = gateway->canary();
  facts.router = spec_.router;
  {
    // Busy fractions over the measured window, of the replicas that were
    // ever ready in it (a slot never started is not a replica to balance).
    const SimTime window = end - mo.warmup;
    for (int i = 0; i < cluster.size() && window > 0; ++i) {
      if (cluster.replica(i).iterations() == 0 && cluster.view(i).phase() != ReplicaPhase::kReady) continue;
      facts.replica_busy_fraction.push_back(static_cast<double>(cluster.replica(i).busy_time()) /
                                            static_cast<double>(window));
    }
  }
  facts.events = sim.events_processed();
  facts.hit_duration = hit_duration;
  for (const PoolPlan& p : pools_) {
    RunFacts::Pool fp;
    fp.name = p.spec->name;
    fp.model = p.model->name;
    fp.gpu = p.gpu->name;
    fp.scheduler = p.spec->scheduler;
    fp.engine = p.engine_name;
    fp.async_scheduling = p.engine.async_scheduling;
    fp.tp = p.shard.tp;
    fp.pp = p.shard.pp;
    fp.ep = p.shard.ep;
    fp.dp = p.shard.dp;
    fp.expert_load_skew = p.expert_load_skew;
    fp.redundant_experts = p.redundant_experts;
    if (p.spec->speculative) fp.speculative = p.draft ? p.draft->name : p.spec->speculative->method;
    fp.replicas = p.spec->total_replicas();
    fp.gpus_per_replica = p.shard.gpus();
    fp.usd_per_gpu_hour = p.usd_per_gpu_hour;
    fp.price_source = p.price_source;
    facts.pools.push_back(fp);
  }
  // Which source timed each operator kind, across pools.
  for (size_t i = 0; i < perf.size(); ++i) {
    for (const auto& [kind, src] : perf[i]->Sources()) {
      auto it = std::find_if(facts.perf_sources.begin(), facts.perf_sources.end(),
                             [&k = kind](const auto& e) { return e.first == k; });
      if (it == facts.perf_sources.end()) {
        facts.perf_sources.emplace_back(kind, src);
      } else if (it->second.find(src) == std::string::npos) {
        it->second += "+" + src;
      }
    }
  }
  for (int i = 0; i < cluster.size(); ++i) {
    const ReplicaState& st = cluster.replica(i).state();
    facts.preemptions += st.preemptions();
    if (!st.prefix_caching()) continue;
    facts.prefix_caching = true;
    facts.prefix_hit_tokens += st.prefix_hit_tokens();
    facts.prefix_prompt_tokens += st.prefix_prompt_tokens();
    facts.prefix_evicted_blocks += st.kv().cache()->evicted_blocks();
  }

  report->summary = metrics->Summarize(facts);
  if (metrics->max_arrival_gap() > kDay || metrics->last_arrival() > 30 * kDay) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "the simulated span is %.1f days for %lld requests (arrivals up to %.1f days apart): "
                  "check the trace's timestamps and traffic.trace.rate_scale",
                  TimeToSeconds(metrics->last_arrival()) / 86400.0, static_cast<long long>(metrics->arrived()),
                  TimeToSeconds(metrics->max_arrival_gap()) / 86400.0);
    report->summary.warnings.push_back(buf);
  }
  // Engine terms that are not measurements: the figures carry their
  // uncertainty, and the user should know which.
  // The gpu failure model's default rate is a published figure for some
  // GPUs only.
  bool gpu_failures_by_catalogue = false;
  for (const FailureSpec& f : spec_.reliability.failures)
    gpu_failures_by_catalogue = gpu_failures_by_catalogue || (f.model == "gpu" && !f.mtbf_hours);
  for (const PoolPlan& p : pools_) {
    if (gpu_failures_by_catalogue && !p.gpu->gpu_hours_per_interruption)
      report->summary.warnings.push_back("pool " + p.spec->name + ": no published failure rate for " + p.gpu->name +
                                         ": the gpu failure model uses the H100's (Llama 3: one interruption per "
                                         "50,677 GPU-hours); set failures[].mtbf_hours");
    for (const std::string& w : p.model_warnings) report->summary.warnings.push_back("pool " + p.spec->name + ": " + w);
    for (const std::string& w : p.warnings) report->summary.warnings.push_back("pool " + p.spec->name + ": " + w);
    const std::vector<std::string> estimated = p.engine.TermsAt("estimate");
    const std::vector<std::string> borrowed = p.engine.TermsAt("same_gpu");
    auto join = [](const std::vector<std::string>& v) {
      std::string out;
      for (const std::string& t : v) out += (out.empty() ? "" : ", ") + t;
      return out;
    };
    if (!estimated.empty())
      report->summary.warnings.push_back("pool " + p.spec->name + ": engine profile \"" + p.engine_name +
                                         "\" has no measurement for " + p.gpu->name + " in " +
                                         std::to_string(estimated.size()) + " of its terms (" + join(estimated) +
                                         "): they are estimates, each with its source in the profile");
    if (!borrowed.empty())
      report->summary.warnings.push_back("pool " + p.spec->name + ": engine profile \"" + p.engine_name +
                                         "\" terms " + join(borrowed) + " were measured on " + p.gpu->name +
                                         " for another model or tp");
  }
  if (report->timeseries_stopped_s) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "timeseries.csv stops at %.0f s: its row budget (%lld rows) ran out; pass a coarser "
                  "--timeseries-interval",
                  *report->timeseries_stopped_s, static_cast<long long>(options.timeseries_max_rows));
    report->summary.warnings.push_back(buf);
  }
  report->timeseries_rows = rows;
  report->trace_sampled = metrics->trace_sampled();
  FLEETSIM_RETURN_IF_ERROR(metrics->Close());
  FLEETSIM_CHECK(report->summary.arrived ==
                 report->summary.completed + report->summary.rejected + report->summary.failed +
                     report->summary.unfinished);
  report->events = facts.events;
  report->wall_s = wall_s();
  report->peak_rss_kb = PeakRssKb();
  return Status::Ok();
}

}  // namespace fleetsim
