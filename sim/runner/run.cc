#include "sim/runner/run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "model/profile.h"
#include "model/profile_perf_model.h"
#include "sim/cluster/replica.h"
#include "sim/engine/simulation.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

void RegisterBuiltins(Policies* policies) {
  RegisterBuiltinRouters(&policies->routers);
  RegisterBuiltinSchedulers(&policies->schedulers);
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

std::string Unknown(const std::string& what, const std::string& name, const std::vector<std::string>& known) {
  return "unknown " + what + " \"" + name + "\" (known: " + JoinNames(known) + ")";
}

// `profile_gpu`: the device the scenario's profile describes (null if none),
// for GPU names the catalogue does not know.
Status ResolvePool(const PoolSpec& p, const Catalog& catalog, const Policies& policies, const GpuSpec* profile_gpu,
                   PoolPlan* plan) {
  plan->spec = &p;
  plan->model = catalog.FindModel(p.model);
  if (!plan->model)
    return Status::Invalid(p.path + ".model: " + Unknown("model", p.model, catalog.ModelNames()));
  plan->gpu = catalog.FindGpu(p.gpu);
  if (!plan->gpu && profile_gpu && profile_gpu->name == p.gpu) plan->gpu = profile_gpu;
  if (!plan->gpu)
    return Status::Invalid(p.path + ".gpu: " + Unknown("GPU", p.gpu, catalog.GpuNames()) +
                           (profile_gpu ? "; perf.profile describes \"" + profile_gpu->name + "\"" : ""));
  plan->engine = catalog.FindEngine(p.engine);
  if (!plan->engine)
    return Status::Invalid(p.path + ".engine: " + Unknown("engine", p.engine, catalog.EngineNames()));
  plan->scheduler = policies.schedulers.Find(p.scheduler);
  if (!plan->scheduler)
    return Status::Invalid(p.path + ".scheduler: " +
                           Unknown("scheduler", p.scheduler, policies.schedulers.Names()));
  const ModelSpec& m = *plan->model;
  if (m.heads % p.tp != 0)
    return Status::Invalid(p.path + ".tp: " + std::to_string(p.tp) + " does not divide the " +
                           std::to_string(m.heads) + " attention heads of " + m.name);
  if (p.pp != 1)
    return Status::Invalid(p.path + ".pp: pipeline parallelism is not modelled yet; pp must be 1");
  plan->shard.tp = p.tp;
  plan->shard.pp = p.pp;
  if (p.tp > 1 && plan->gpu->scale_up.CollectiveGbps(p.tp) <= 0 && plan->gpu->pcie_gbps_per_direction <= 0)
    return Status::Invalid(p.path + ".tp: " + std::to_string(p.tp) + " GPUs of \"" + plan->gpu->name +
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
  if (plan->limits.max_num_batched_tokens < plan->limits.max_num_seqs)
    return Status::Invalid(p.path + ".max_num_batched_tokens: " +
                           std::to_string(plan->limits.max_num_batched_tokens) +
                           " is less than max_num_seqs " + std::to_string(plan->limits.max_num_seqs) +
                           " (vLLM requires at least one token per running sequence)");

  MemoryOptions mo;
  mo.gpu_memory_utilization = p.gpu_memory_utilization;
  mo.block_size = p.block_size;
  mo.max_num_batched_tokens = plan->limits.max_num_batched_tokens;
  ModelSpec engine_model = m;  // the memory check is for one sequence of the engine's max_model_len
  engine_model.max_model_len = static_cast<int>(plan->max_model_len);
  FLEETSIM_RETURN_IF_ERROR(
      PlanMemory(engine_model, *plan->gpu, plan->shard, mo, &plan->memory).WithPrefix(p.path + ": "));
  // The scheduler's options are checked now, so `validate` reports them.
  std::unique_ptr<BatchScheduler> probe;
  FLEETSIM_RETURN_IF_ERROR(plan->scheduler->factory(plan->limits, p.scheduler_options, &probe)
                               .WithPrefix(p.path + "."));
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
  return Status::Ok();
}

// The pool's performance model: a ProfilePerfModel over `profile` when the
// scenario names one (perf.profile), else the roofline. Errors name the
// JSON paths.
Status MakePerfModel(const ScenarioSpec& s, const PoolPlan& p, const Profile* profile,
                     std::unique_ptr<PerfModel>* out) {
  if (!profile) {
    *out = std::make_unique<RooflinePerfModel>(*p.model, *p.gpu, p.shard, *p.engine, s.roofline);
    return Status::Ok();
  }
  std::unique_ptr<ProfilePerfModel> m;
  FLEETSIM_RETURN_IF_ERROR(ProfilePerfModel::Create(*profile, std::filesystem::path(s.perf_profile).filename().string(),
                                                    *p.model, *p.gpu, p.shard, *p.engine, s.roofline, &m)
                               .WithPrefix(s.file + ": perf.profile: " + p.spec->path + ": "));
  *out = std::move(m);
  return Status::Ok();
}

Status LoadScenarioProfile(const ScenarioSpec& s, std::optional<Profile>* out) {
  if (s.perf_profile.empty()) return Status::Ok();
  Profile p;
  FLEETSIM_RETURN_IF_ERROR(LoadProfileFile(s.perf_profile, &p).WithPrefix(s.file + ": perf.profile: "));
  *out = std::move(p);
  return Status::Ok();
}

}  // namespace

Status ScenarioRun::Build(const ScenarioSpec& spec, const Catalog& catalog, const Policies& policies,
                          std::unique_ptr<ScenarioRun>* out) {
  std::unique_ptr<ScenarioRun> run(new ScenarioRun(spec, catalog, policies));
  const ScenarioSpec& s = run->spec_;  // pool plans point into the run's own copy
  if (!s.model.empty() && !catalog.FindModel(s.model))
    return Status::Invalid(s.file + ": model: " + Unknown("model", s.model, catalog.ModelNames()));
  run->router_ = policies.routers.Find(s.router);
  if (!run->router_)
    return Status::Invalid(s.file + ": fleet.router: " + Unknown("router", s.router, policies.routers.Names()));
  // The profile first: it may describe a device the catalogue lacks (a
  // calibrated CPU or new GPU), which pools can then name.
  std::optional<Profile> profile;
  FLEETSIM_RETURN_IF_ERROR(LoadScenarioProfile(s, &profile));
  if (profile && profile->device_info && catalog.FindGpu(profile->device) == nullptr) {
    run->profile_gpu_ = std::make_unique<GpuSpec>();
    FLEETSIM_RETURN_IF_ERROR(
        GpuSpecFromProfile(*profile, run->profile_gpu_.get()).WithPrefix(s.file + ": perf.profile: " + s.perf_profile + ": "));
  }
  for (const PoolSpec& p : s.pools) {
    PoolPlan plan;
    FLEETSIM_RETURN_IF_ERROR(
        ResolvePool(p, catalog, policies, run->profile_gpu_.get(), &plan).WithPrefix(s.file + ": "));
    run->pools_.push_back(plan);
  }
  // Input files are checked here so that `validate` catches a missing one,
  // opened exactly as the readers will open them (regular files only, never
  // a blocking open; see base/file.h).
  FLEETSIM_RETURN_IF_ERROR(CheckTrafficInputs(s.traffic).WithPrefix(s.file + ": "));
  {
    // Built once here, so that `validate` checks them, and kept for Run
    // (a PerfModel is immutable).
    for (const PoolPlan& p : run->pools_) {
      run->perf_.emplace_back();
      FLEETSIM_RETURN_IF_ERROR(MakePerfModel(s, p, profile ? &*profile : nullptr, &run->perf_.back()));
    }
  }
  if (s.traffic.kind == TrafficSpec::Kind::kGenerator && !s.traffic.model.empty()) {
    bool served = false;
    for (const PoolPlan& p : run->pools_) served = served || p.model->name == s.traffic.model;
    if (!served)
      return Status::Invalid(s.file + ": traffic.generator.model: no pool serves \"" + s.traffic.model + "\"");
  }
  *out = std::move(run);
  return Status::Ok();
}

Status ScenarioRun::Run(const MetricsOptions& outputs, uint64_t seed,
                        const std::function<void(const Progress&)>& progress, RunReport* report) {
  const auto wall_start = std::chrono::steady_clock::now();
  auto wall_s = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  };
  Simulation sim(seed);

  // Nothing arrives after duration_s, so a generator may stop there.
  TrafficSpec traffic = spec_.traffic;
  if (spec_.duration_s && !std::isfinite(traffic.max_arrival_s)) traffic.max_arrival_s = *spec_.duration_s;
  std::unique_ptr<RequestSource> source;
  FLEETSIM_RETURN_IF_ERROR(
      MakeRequestSource(traffic, sim.Stream("traffic"), &source).WithPrefix(spec_.file + ": "));

  MetricsOptions mo = outputs;
  mo.warmup = SecondsToTime(spec_.warmup_s);
  mo.ttft_slo_ms = spec_.ttft_slo_ms;
  mo.tpot_slo_ms = spec_.tpot_slo_ms;
  for (const PoolPlan& p : pools_)
    for (int r = 0; r < p.spec->replicas; ++r) mo.replica_names.push_back(p.spec->name + "/" + std::to_string(r));
  std::unique_ptr<MetricsCollector> metrics;
  FLEETSIM_RETURN_IF_ERROR(MetricsCollector::Open(mo, &metrics));

  // The fleet.
  const std::vector<std::unique_ptr<PerfModel>>& perf = perf_;
  std::vector<std::unique_ptr<Replica>> replicas;
  std::map<std::string, std::vector<Replica*>, std::less<>> by_model;
  for (size_t pi = 0; pi < pools_.size(); ++pi) {
    const PoolPlan& p = pools_[pi];
    for (int r = 0; r < p.spec->replicas; ++r) {
      ReplicaOptions ro;
      ro.index = static_cast<int>(replicas.size());
      ro.pool = static_cast<int>(pi);
      ro.model = p.model->name;
      ro.max_model_len = static_cast<int>(p.max_model_len);
      ro.preemption = p.preemption;
      ro.host_kv_blocks = p.host_kv_blocks;
      ro.prefix_caching = p.spec->prefix_caching;
      ro.kv_blocks = p.memory.kv_blocks;
      ro.block_size = p.spec->block_size;
      ro.pipeline_depth = 1;
      std::unique_ptr<BatchScheduler> sched;
      FLEETSIM_RETURN_IF_ERROR(p.scheduler->factory(p.limits, p.spec->scheduler_options, &sched)
                                   .WithPrefix(spec_.file + ": " + p.spec->path + "."));
      replicas.push_back(std::make_unique<Replica>(sim, ro, std::move(sched), *perf[pi], *metrics));
      by_model[p.model->name].push_back(replicas.back().get());
    }
  }
  const std::string default_model = !spec_.model.empty() ? spec_.model : pools_.front().model->name;
  std::unique_ptr<Router> router = router_->factory(sim.Stream("router"));

  // Arrivals: one pending event at a time, pulled from the stream.
  std::vector<int64_t> arrivals_in_interval(replicas.size(), 0);
  Request next;
  bool have = source->Next(&next);
  Status source_status = source->status();
  std::function<void()> arrive = [&] {
    const std::string& model = next.model.empty() ? default_model : next.model;
    auto it = by_model.find(model);
    if (it == by_model.end()) {
      metrics->OnArrival(next, -1);
      RequestRecord rec;
      rec.id = next.id;
      rec.arrival = next.arrival;
      rec.finish = sim.now();
      rec.prompt_tokens = next.prompt_tokens;
      rec.output_tokens = next.output_tokens;
      rec.status = RequestStatus::kRejected;
      rec.reason = "unknown_model";
      metrics->OnFinished(rec);
    } else {
      const std::vector<Replica*>& cands = it->second;
      Replica* target = cands[router->Route(next, cands)];
      arrivals_in_interval[target->options().index]++;
      target->Submit(std::move(next));
    }
    next = Request();
    have = source->Next(&next);
    if (have) {
      sim.At(next.arrival, arrive);
    } else if (!source->status().ok()) {
      source_status = source->status();
      sim.Stop();
    }
  };
  if (have) sim.At(next.arrival, arrive);

  // Per-second samples for timeseries.csv and overload detection.
  SimTime last_sample = 0;
  auto sample_all = [&](SimTime t) {
    for (auto& r : replicas) {
      ReplicaSample s;
      s.t = t;
      s.interval = t - last_sample;
      s.replica = r->options().index;
      s.arrivals = arrivals_in_interval[s.replica];
      s.waiting = r->waiting();
      s.running = r->state().num_running();
      s.kv_utilization = r->state().kv().utilization();
      s.busy = r->TakeBusyTime(t);
      metrics->OnSample(s);
      arrivals_in_interval[s.replica] = 0;
    }
    last_sample = t;
  };
  std::function<void()> sampler = [&] {
    sample_all(sim.now());
    if (sim.pending() > 0 || have) sim.At(sim.now() + kSecond, sampler);
  };
  sim.At(kSecond, sampler);

  // Run in slices of simulated time so progress can be reported.
  const SimTime until = spec_.duration_s ? SecondsToTime(*spec_.duration_s) : kTimeNever;
  double last_progress = 0;
  bool stopped_by_error = false;
  while (sim.pending() > 0) {
    const SimTime slice_end = std::min(until, sim.now() + 10 * kSecond);
    sim.Run(slice_end);
    if (!source_status.ok()) {
      stopped_by_error = true;
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
  }
  if (stopped_by_error) {
    (void)metrics->Close();
    return source_status.WithPrefix(spec_.file + ": ");
  }
  const bool hit_duration = sim.pending() > 0;
  // The run ends at the last event, or at duration_s with work left.
  const SimTime end = hit_duration ? until : sim.now();
  if (end > last_sample) sample_all(end);
  for (auto& r : replicas) r->ReportUnfinished(end, "run_ended");

  RunFacts facts;
  facts.end = end;
  facts.events = sim.events_processed();
  facts.hit_duration = hit_duration;
  for (const PoolPlan& p : pools_) {
    RunFacts::Pool fp;
    fp.name = p.spec->name;
    fp.replicas = p.spec->replicas;
    fp.gpus_per_replica = p.shard.gpus();
    fp.usd_per_gpu_hour = p.usd_per_gpu_hour;
    fp.price_source = p.price_source;
    facts.pools.push_back(fp);
  }
  // Which source timed each operator kind, across pools.
  for (size_t i = 0; i < perf.size(); ++i) {
    for (const auto& [kind, src] : perf[i]->Sources()) {
      auto it = std::find_if(facts.perf_sources.begin(), facts.perf_sources.end(),
                             [&](const auto& e) { return e.first == kind; });
      if (it == facts.perf_sources.end()) {
        facts.perf_sources.emplace_back(kind, src);
      } else if (it->second.find(src) == std::string::npos) {
        it->second += "+" + src;
      }
    }
  }
  for (auto& r : replicas) {
    const ReplicaState& st = r->state();
    facts.preemptions += st.preemptions();
    if (!st.prefix_caching()) continue;
    facts.prefix_caching = true;
    facts.prefix_hit_tokens += st.prefix_hit_tokens();
    facts.prefix_prompt_tokens += st.prefix_prompt_tokens();
    facts.prefix_evicted_blocks += st.kv().cache()->evicted_blocks();
  }

  report->summary = metrics->Summarize(facts);
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
