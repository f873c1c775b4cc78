#include "sim/cluster/gateway.h"

#include <algorithm>
#include <cmath>

namespace fleetsim {

const std::vector<std::string>& DegradeReasonNames() {
  static const std::vector<std::string> names = {"", "output_capped", "fallback_model"};
  return names;
}

// ---- global balancers ----

namespace {

// The nearest region that is up, preferring one that is not saturated: a
// DNS latency-based record with health checks (Route 53 latency routing
// fails over from an unhealthy endpoint to the next nearest), spilling when
// the nearest is full as GCP's global load balancer does when a backend is
// at capacity ("waterfall by region").
int Nearest(const std::vector<RegionState>& regions, bool skip_saturated) {
  int best = -1;
  for (size_t i = 0; i < regions.size(); ++i) {
    const RegionState& r = regions[i];
    if (!r.up || (skip_saturated && r.saturated)) continue;
    if (best < 0 || r.rtt_ms < regions[best].rtt_ms) best = static_cast<int>(i);
  }
  return best;
}

int NearestUp(const std::vector<RegionState>& regions) {
  const int b = Nearest(regions, true);
  return b >= 0 ? b : Nearest(regions, false);
}

class NearestBalancer final : public GlobalBalancer {
 public:
  int Pick(const std::vector<RegionState>& regions) override { return NearestUp(regions); }
};

// The least-loaded region among those within the latency budget of the
// client (Envoy's locality-weighted least request, bounded by a latency
// SLO); the nearest when none is within it.
class LeastLoadedBalancer final : public GlobalBalancer {
 public:
  explicit LeastLoadedBalancer(GlobalBalancerOptions o) : o_(o) {}
  int Pick(const std::vector<RegionState>& regions) override {
    const int nearest = NearestUp(regions);
    if (nearest < 0) return -1;
    const double budget = o_.latency_budget_ms > 0 ? o_.latency_budget_ms : regions[nearest].rtt_ms;
    int best = -1;
    for (size_t i = 0; i < regions.size(); ++i) {
      const RegionState& r = regions[i];
      if (!r.up || r.rtt_ms > budget) continue;
      if (best < 0 || r.load < regions[best].load ||
          (r.load == regions[best].load && r.rtt_ms < regions[best].rtt_ms))
        best = static_cast<int>(i);
    }
    return best >= 0 ? best : nearest;
  }

 private:
  GlobalBalancerOptions o_;
};

// Static weights among the regions that are up and not saturated (Route 53
// weighted records with health checks); the nearest up when none is.
class WeightedBalancer final : public GlobalBalancer {
 public:
  explicit WeightedBalancer(Rng rng) : rng_(rng) {}
  int Pick(const std::vector<RegionState>& regions) override {
    double total = 0;
    for (const RegionState& r : regions)
      if (r.up && !r.saturated) total += r.weight;
    if (total <= 0) return NearestUp(regions);
    double u = rng_.Uniform() * total;
    int last = -1;
    for (size_t i = 0; i < regions.size(); ++i) {
      const RegionState& r = regions[i];
      if (!r.up || r.saturated || r.weight <= 0) continue;
      last = static_cast<int>(i);
      if (u < r.weight) return last;
      u -= r.weight;
    }
    return last;
  }

 private:
  Rng rng_;
};

}  // namespace

void RegisterBuiltinGlobalBalancers(GlobalBalancerRegistry* registry) {
  registry->Add("nearest", "the client's nearest region that is up; the next nearest when it is saturated",
                [](const GlobalBalancerOptions&, Rng) { return std::make_unique<NearestBalancer>(); });
  registry->Add("least_loaded", "the least-loaded region within the latency budget (else the nearest)",
                [](const GlobalBalancerOptions& o, Rng) { return std::make_unique<LeastLoadedBalancer>(o); });
  registry->Add("weighted", "regions at random by static weight, among those up and not saturated",
                [](const GlobalBalancerOptions&, Rng rng) { return std::make_unique<WeightedBalancer>(rng); });
}

// ---- graceful degradation policies ----

namespace {

// Rejects the request ("shed"): the lowest class goes first when the fleet
// is short (Envoy's admission control, llm-d's sheddable requests).
class ShedPolicy final : public DegradationPolicy {
 public:
  Verdict Apply(Request*, const DegradeHooks&, int*) const override { return Verdict::kReject; }
};

// Caps the output at max_output_tokens (a request within the cap passes to
// the next policy): the cheaper answer under load.
class CapOutputPolicy final : public DegradationPolicy {
 public:
  explicit CapOutputPolicy(int32_t cap) : cap_(cap) {}
  Verdict Apply(Request* req, const DegradeHooks&, int*) const override {
    if (req->output_tokens <= cap_) return Verdict::kPass;
    req->output_tokens = cap_;
    req->degraded = kOutputCapped;
    return Verdict::kServe;
  }

 private:
  int32_t cap_;
};

// Sends the request to a smaller model's pool, flagged: a lower-quality
// answer rather than none.
class FallbackModelPolicy final : public DegradationPolicy {
 public:
  FallbackModelPolicy(int pool, std::string model) : pool_(pool), model_(std::move(model)) {}
  Verdict Apply(Request* req, const DegradeHooks& hooks, int* fallback_pool) const override {
    req->model = model_;
    req->model_id = hooks.model_id(model_);
    req->degraded = kFallbackModel;
    req->target = hooks.pool_target(pool_);
    *fallback_pool = pool_;
    return Verdict::kServe;
  }
  bool WhenNoneReady() const override { return true; }

 private:
  int pool_;
  std::string model_;
};

}  // namespace

void RegisterBuiltinDegradations(DegradationRegistry* registry) {
  registry->Add("shed", "reject the class's requests (\"shed\")",
                [](const DegradationContext&, std::unique_ptr<DegradationPolicy>* out) {
                  *out = std::make_unique<ShedPolicy>();
                  return Status::Ok();
                });
  registry->Add("cap_output", "cap the class's output at max_output_tokens (flagged output_capped)",
                [](const DegradationContext& ctx, std::unique_ptr<DegradationPolicy>* out) {
                  if (ctx.max_output_tokens <= 0)
                    return Status::Invalid(ctx.path + ".max_output_tokens: required by cap_output");
                  *out = std::make_unique<CapOutputPolicy>(ctx.max_output_tokens);
                  return Status::Ok();
                });
  registry->Add("fallback_model", "send the class to a smaller model's pool (flagged fallback_model)",
                [](const DegradationContext& ctx, std::unique_ptr<DegradationPolicy>* out) {
                  if (ctx.fallback_pool < 0) return Status::Invalid(ctx.path + ".pool: required by fallback_model");
                  *out = std::make_unique<FallbackModelPolicy>(ctx.fallback_pool, ctx.fallback_model);
                  return Status::Ok();
                });
}

// ---- the gateway ----

Gateway::Gateway(Simulation& sim, Cluster& cluster, RunObserver& observer, GatewayConfig config, Rng rng)
    : sim_(sim),
      cluster_(cluster),
      observer_(observer),
      config_(std::move(config)),
      rng_(rng),
      canary_rng_(sim.Stream("canary")) {
  hooks_.pool_target = [this](int pool) { return PoolTarget(pool); };
  hooks_.model_id = [this](const std::string& model) { return cluster_.ModelId(model); };
  for (const GatewayConfig::PriorityClass& c : config_.classes) lowest_priority_ = std::max(lowest_priority_, c.priority);
  for (size_t t = 0; t < config_.tenants.size(); ++t) {
    tenant_index_[config_.tenants[t].name] = static_cast<int>(t);
    buckets_.push_back({config_.tenants[t].burst, 0});
  }
  if (config_.canary) {
    const GatewayConfig::Canary& c = *config_.canary;
    canary_report_ = CanaryReport{};
    canary_report_->pool = config_.pools[c.pool].name;
    canary_report_->baseline = config_.pools[c.baseline].name;
    sim_.At(c.start, [this] { StartStep(0); });
  }
}

std::vector<std::pair<int32_t, std::string>> Gateway::ClassNames() const {
  std::vector<std::pair<int32_t, std::string>> out;
  for (const GatewayConfig::PriorityClass& c : config_.classes) out.emplace_back(c.priority, c.name);
  return out;
}

std::vector<std::string> Gateway::TenantNames() const {
  std::vector<std::string> out;
  for (const GatewayConfig::Tenant& t : config_.tenants) out.push_back(t.name);
  return out;
}

void Gateway::Reject(Request&& req, std::string_view reason) {
  observer_.OnArrival(req, -1);
  observer_.OnFinished(UnservedRecord(req, -1, sim_.now(), RequestStatus::kRejected, reason));
}

int Gateway::Target(const std::string& model, int region, int version) {
  const auto key = std::make_tuple(model, region, version);
  auto it = targets_.find(key);
  if (it != targets_.end()) return it->second;
  std::vector<int> pools;
  const int canary = config_.canary ? config_.canary->pool : -1;
  for (size_t p = 0; p < config_.pools.size(); ++p) {
    const GatewayConfig::Pool& gp = config_.pools[p];
    const int pi = static_cast<int>(p);
    if (version == 2) {
      if (pi == canary) pools.push_back(pi);
      continue;
    }
    if (gp.model != model || (region >= 0 && gp.region != region) || (version == 1 && pi == canary)) continue;
    pools.push_back(pi);
  }
  const int t = cluster_.AddTarget(std::move(pools));
  targets_.emplace(key, t);
  return t;
}

int Gateway::PoolTarget(int pool) {
  auto it = pool_targets_.find(pool);
  if (it != pool_targets_.end()) return it->second;
  const int t = cluster_.AddTarget({pool});
  pool_targets_.emplace(pool, t);
  return t;
}

bool Gateway::Triggered(const GatewayConfig::Degradation& d, const Request& req) {
  const std::span<const ReplicaView* const> cands = cluster_.Candidates(req);
  // Nothing ready to serve it: a smaller model may (a fallback fires);
  // shedding or capping would only turn away what the activator queue may
  // hold while a replica starts, or the cluster rejects anyway.
  if (cands.empty()) return d.policy->WhenNoneReady();
  if (d.queue_per_replica > 0) {
    int64_t waiting = 0;
    for (const ReplicaView* v : cands) waiting += v->waiting();
    if (static_cast<double>(waiting) / static_cast<double>(cands.size()) >= d.queue_per_replica) return true;
  }
  if (d.saturated) {
    const GatewayConfig::SaturationDetector& sd = config_.saturation;
    const SimTime now = sim_.now();
    bool all = true;
    for (const ReplicaView* v : cands) {
      const ReplicaMetrics& m = v->metrics();
      const bool stale = m.at < 0 || now - m.at > sd.metrics_staleness;
      if (!stale && m.waiting < sd.queue_depth && m.kv_utilization < sd.kv_utilization) {
        all = false;
        break;
      }
    }
    if (all) return true;
  }
  if (d.predicted_ttft_ms > 0) {
    // The best replica's queued prefill plus this prompt, at its pool's
    // prefill speed: a lower bound on the TTFT it would see (decode steps
    // interleaved with the prefill only add to it).
    double best = std::numeric_limits<double>::infinity();
    for (const ReplicaView* v : cands) {
      const GatewayConfig::Pool& gp = config_.pools[v->pool()];
      if (!gp.prefill_ms) continue;
      best = std::min(best, gp.prefill_ms(v->metrics().queued_prefill_tokens + req.prompt_tokens));
    }
    if (best >= d.predicted_ttft_ms) return true;
  }
  return false;
}

void Gateway::Arrive(Request&& req) {
  const SimTime now = sim_.now();
  // 1. Tenant and class.
  if (!req.tenant.empty()) {
    auto it = tenant_index_.find(req.tenant);
    if (it != tenant_index_.end()) req.tenant_id = it->second;
  }
  for (const GatewayConfig::PriorityClass& c : config_.classes) {
    if (c.priority != req.priority || c.queue_timeout == kTimeNever) continue;
    req.queue_deadline = now > kTimeNever - c.queue_timeout ? kTimeNever : now + c.queue_timeout;
  }
  if (req.model_id < 0) req.model_id = cluster_.ModelId(req.model.empty() ? cluster_.default_model() : req.model);
  if (req.model_id < 0) {
    // No pool serves it: turned away before it costs a route target.
    Reject(std::move(req), "unknown_model");
    return;
  }
  // 2. The tenant's token bucket.
  if (req.tenant_id >= 0) {
    const GatewayConfig::Tenant& t = config_.tenants[req.tenant_id];
    if (t.rate_per_s > 0) {
      Bucket& b = buckets_[req.tenant_id];
      b.tokens = std::min(t.burst, b.tokens + TimeToSeconds(now - b.at) * t.rate_per_s);
      b.at = now;
      if (b.tokens < 1) {
        Reject(std::move(req), "rate_limited");
        return;
      }
      b.tokens -= 1;
    }
  }
  // 3. Degradation: the first policy of the request's class that fires.
  int fallback_pool = -1;
  for (const GatewayConfig::Degradation& d : config_.degradation) {
    const int32_t cls = d.priority >= 0 ? d.priority : lowest_priority_;
    if (req.priority != cls || !Triggered(d, req)) continue;
    const DegradationPolicy::Verdict v = d.policy->Apply(&req, hooks_, &fallback_pool);
    if (v == DegradationPolicy::Verdict::kPass) continue;
    if (v == DegradationPolicy::Verdict::kReject) {
      Reject(std::move(req), d.policy->reject_reason());
      return;
    }
    break;
  }
  const std::string& served = req.model.empty() ? cluster_.default_model() : req.model;
  // 4. The fleet-wide queue limit.
  if (config_.max_queue > 0) {
    int64_t waiting = 0;
    for (const ReplicaView* v : cluster_.Candidates(req)) waiting += v->waiting();
    if (waiting >= config_.max_queue) {
      Reject(std::move(req), "fleet_queue_full");
      return;
    }
  }
  // 5. Canary: the new version's share of the baseline model's traffic,
  // while its replicas are ready to take it.
  int version = 0;
  if (config_.canary && fallback_pool < 0 && served == config_.pools[config_.canary->baseline].model) {
    version = 1;
    if (share_ > 0) {
      const int canary_target = Target(served, -1, 2);
      req.target = canary_target;
      const bool ready = !cluster_.Candidates(req).empty();
      req.target = -1;
      if (ready && (share_ >= 1 || canary_rng_.Uniform() < share_)) version = 2;
    }
    if (!canary_done_) version_of_[req.id] = static_cast<uint8_t>(version);
  }
  // 6. Regions.
  if (config_.regions.empty()) {
    if (version > 0) req.target = Target(served, -1, version);
    if (fallback_pool >= 0) req.target = PoolTarget(fallback_pool);
    Send(std::move(req));
    return;
  }
  int loc = 0;
  if (!req.location.empty()) {
    loc = -1;
    for (size_t l = 0; l < config_.locations.size(); ++l)
      if (config_.locations[l].name == req.location) loc = static_cast<int>(l);
    if (loc < 0) {
      Reject(std::move(req), "unknown_location");
      return;
    }
  }
  const GatewayConfig::Location& where = config_.locations[loc];
  if (fallback_pool >= 0) {
    // A fallback goes to its own pool, in that pool's region, round trip
    // and all.
    const int r = config_.pools[fallback_pool].region;
    req.region = r;
    req.target = PoolTarget(fallback_pool);
    SendAfter(std::move(req), std::llround(where.rtt_ms[r] * 1e6));
    return;
  }
  region_scratch_.resize(config_.regions.size());
  for (size_t r = 0; r < config_.regions.size(); ++r) {
    RegionState& st = region_scratch_[r];
    req.target = Target(served, static_cast<int>(r), version == 2 ? 0 : version);
    const std::span<const ReplicaView* const> cands = cluster_.Candidates(req);
    int64_t outstanding = 0;
    for (const ReplicaView* v : cands) outstanding += v->outstanding();
    st.rtt_ms = where.rtt_ms[r];
    st.up = !cands.empty();
    st.load = cands.empty() ? 0 : static_cast<double>(outstanding) / static_cast<double>(cands.size());
    st.saturated = config_.saturation_outstanding > 0 && st.load >= config_.saturation_outstanding;
    st.weight = config_.region_weights.empty() ? 1 : config_.region_weights[r];
  }
  int pick = config_.balancer->Pick(region_scratch_);
  if (pick < 0) {
    // No region up: the nearest takes it (and turns it away, or holds it
    // while an autoscaled pool starts a replica).
    pick = 0;
    for (size_t r = 1; r < region_scratch_.size(); ++r)
      if (region_scratch_[r].rtt_ms < region_scratch_[pick].rtt_ms) pick = static_cast<int>(r);
  }
  req.region = pick;
  req.target = version == 2 ? Target(served, -1, 2) : Target(served, pick, version);
  SendAfter(std::move(req), std::llround(where.rtt_ms[pick] * 1e6));
}

void Gateway::SendAfter(Request&& req, SimTime rtt) {
  if (rtt <= 0) {
    Send(std::move(req));
    return;
  }
  const uint64_t seq = next_transit_++;
  in_transit_.emplace(seq, std::move(req));
  sim_.After(rtt, [this, seq] {
    auto node = in_transit_.extract(seq);
    Send(std::move(node.mapped()));
  });
}

void Gateway::Send(Request&& req) { cluster_.Route(std::move(req)); }

void Gateway::ReportUnfinished(SimTime end, std::string_view reason) {
  for (auto& [seq, req] : in_transit_) {
    observer_.OnArrival(req, -1);
    observer_.OnFinished(UnservedRecord(req, -1, end, RequestStatus::kUnfinished, reason));
  }
  in_transit_.clear();
}

// ---- canary ----

int Gateway::CanaryReplicas(double share) const {
  // Argo Rollouts without setCanaryScale: the canary runs share x the
  // stable replicas, rounded up.
  const GatewayConfig::Canary& c = *config_.canary;
  const int base = config_.pools[c.baseline].replicas;
  const int n = static_cast<int>(std::ceil(share * base - 1e-9));
  return std::clamp(n, share > 0 ? 1 : 0, config_.pools[c.pool].replicas);
}

void Gateway::StartStep(size_t step) {
  const GatewayConfig::Canary& c = *config_.canary;
  step_ = step;
  extensions_ = 0;
  share_ = c.steps[step].share;
  step_start_ = sim_.now();
  for (SideStats& s : side_) s = SideStats{};
  cluster_.SetDesired(c.pool, CanaryReplicas(share_));
  sim_.After(c.steps[step].duration, [this] { EndStep(); });
}

namespace {

std::optional<double> P99(std::vector<double>& v) {
  if (v.empty()) return std::nullopt;
  // Nearest rank, as the run's percentiles.
  const size_t k = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(v.size()))) - 1;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

const char* CanaryWorse(const CanaryStepReport::Side& canary, const CanaryStepReport::Side& base, double ttft_margin,
                        double tpot_margin, double error_margin) {
  if (canary.ttft_p99_ms && base.ttft_p99_ms && *canary.ttft_p99_ms > *base.ttft_p99_ms * (1 + ttft_margin))
    return "ttft_p99";
  if (canary.tpot_p99_ms && base.tpot_p99_ms && *canary.tpot_p99_ms > *base.tpot_p99_ms * (1 + tpot_margin))
    return "tpot_p99";
  if (canary.error_rate > base.error_rate + error_margin) return "error_rate";
  return nullptr;
}

void Gateway::EndStep() {
  const GatewayConfig::Canary& c = *config_.canary;
  CanaryStepReport rep;
  rep.share = share_;
  rep.start_s = TimeToSeconds(step_start_);
  rep.end_s = TimeToSeconds(sim_.now());
  auto side = [](SideStats& s) {
    CanaryStepReport::Side out;
    out.requests = s.requests;
    out.completed = s.completed;
    out.errors = s.errors;
    out.ttft_p99_ms = P99(s.ttft_ms);
    out.tpot_p99_ms = P99(s.tpot_ms);
    const int64_t ended = s.completed + s.errors;
    out.error_rate = ended > 0 ? static_cast<double>(s.errors) / static_cast<double>(ended) : 0;
    return out;
  };
  rep.baseline = side(side_[0]);
  rep.canary = side(side_[1]);
  // The baseline takes nothing at a 100% step: compare with its figures
  // from the last step that had enough of them.
  const bool full = share_ >= 1;
  if (!full && rep.baseline.completed >= c.min_requests) last_baseline_ = rep.baseline;
  const CanaryStepReport::Side& base = full && last_baseline_ ? *last_baseline_ : rep.baseline;
  auto finish = [&](const char* decision, const char* reason) {
    rep.decision = decision;
    rep.reason = reason;
    canary_report_->steps.push_back(rep);
  };
  const bool enough = rep.canary.completed + rep.canary.errors >= c.min_requests &&
                      base.completed >= c.min_requests && base.ttft_p99_ms;
  if (!enough) {
    if (extensions_ < c.max_extensions) {
      ++extensions_;
      finish("extend", "insufficient_data");
      sim_.After(c.steps[step_].duration, [this] { EndStep(); });
      return;
    }
    finish("rollback", "insufficient_data");
    Rollback();
    return;
  }
  const char* worse = CanaryWorse(rep.canary, base, c.ttft_margin, c.tpot_margin, c.error_margin);
  if (worse) {
    finish("rollback", worse);
    Rollback();
    return;
  }
  if (step_ + 1 == c.steps.size()) {
    finish("promote", "");
    // The new version takes everything; the old one drains.
    share_ = 1;
    canary_done_ = true;
    canary_report_->outcome = "promoted";
    cluster_.SetDesired(c.pool, CanaryReplicas(1));
    cluster_.SetDesired(c.baseline, 0);
    version_of_.clear();
    return;
  }
  finish("continue", "");
  StartStep(step_ + 1);
}

void Gateway::Rollback() {
  share_ = 0;
  canary_done_ = true;
  canary_report_->outcome = "rolled_back";
  cluster_.SetDesired(config_.canary->pool, 0);
  version_of_.clear();
}

void Gateway::OnRequestEnded(const RequestRecord& rec) {
  if (version_of_.empty()) return;
  auto it = version_of_.find(rec.id);
  if (it == version_of_.end()) return;
  const int v = it->second;
  version_of_.erase(it);
  if (canary_done_ || v == 0) return;
  SideStats& s = side_[v - 1];
  ++s.requests;
  if (rec.status == RequestStatus::kCompleted) {
    ++s.completed;
    if (rec.first_token >= 0) s.ttft_ms.push_back(TimeToSeconds(rec.first_token - rec.arrival) * 1e3);
    if (rec.generated_tokens > 1)
      s.tpot_ms.push_back(TimeToSeconds(rec.finish - rec.first_token) * 1e3 / (rec.generated_tokens - 1));
  } else if (rec.status != RequestStatus::kUnfinished) {
    ++s.errors;
  }
}

}  // namespace fleetsim
