#include "sim/cluster/cluster.h"

#include <algorithm>
#include <cmath>

#include "sim/cluster/router.h"
#include "sim/cluster/speculation.h"

namespace fleetsim {

const char* ReplicaPhaseName(ReplicaPhase phase) {
  switch (phase) {
    case ReplicaPhase::kProvisioning: return "provisioning";
    case ReplicaPhase::kStarting: return "starting";
    case ReplicaPhase::kReady: return "ready";
    case ReplicaPhase::kDraining: return "draining";
    case ReplicaPhase::kStopped: return "stopped";
    case ReplicaPhase::kFailed: return "failed";
    case ReplicaPhase::kRepairing: return "repairing";
    case ReplicaPhase::kWarm: return "warm";
  }
  return "stopped";
}

Cluster::Cluster(Simulation& sim, RunObserver& observer, std::string default_model, SimTime measure_from)
    : sim_(sim),
      observer_(observer),
      default_model_(std::move(default_model)),
      measure_from_(measure_from),
      retry_rng_(sim.Stream("retry")) {}

Cluster::~Cluster() = default;

void Cluster::SetRouter(std::unique_ptr<Router> router) { router_ = std::move(router); }

bool Cluster::Scraped() const { return metrics_required_ || (router_ && router_->UsesMetrics()); }

bool Cluster::periodic() const {
  return scaling_ || (scrape_interval_ > 0 && Scraped());
}

void Cluster::SetMetricsScrape(SimTime interval) {
  scrape_interval_ = interval;
  const bool live = interval <= 0;
  for (Member& m : replicas_) m.view.live_metrics_ = live;
  if (!live && Scraped()) sim_.At(sim_.now(), [this] { Scrape(); });
}

void Cluster::Scrape() {
  // Replicas that answer: ready or draining, and not hung.
  for (Member& m : replicas_) {
    if (m.down) continue;
    const ReplicaPhase ph = m.view.phase_;
    if (ph != ReplicaPhase::kReady && ph != ReplicaPhase::kDraining) continue;
    m.view.scraped_ = m.replica->Metrics();
  }
  // Periodic for ever: the runner ends the run when the traffic is done.
  sim_.After(scrape_interval_, [this] { Scrape(); });
}

int Cluster::AddTarget(std::vector<int> pools) {
  targets_.push_back(std::move(pools));
  target_ready_.emplace_back();
  RebuildReady();
  return static_cast<int>(targets_.size()) - 1;
}

std::span<const ReplicaView* const> Cluster::Candidates(const Request& req) const {
  if (req.target >= 0) return target_ready_[req.target];
  auto it = ready_.find(req.model.empty() ? std::string_view(default_model_) : std::string_view(req.model));
  if (it == ready_.end()) return {};
  return it->second;
}

int Cluster::ModelId(std::string_view model) const {
  for (size_t i = 0; i < model_names_.size(); ++i)
    if (model_names_[i] == model) return static_cast<int>(i);
  return -1;
}

void Cluster::Add(std::unique_ptr<Replica> replica, int gpus, std::optional<double> usd_per_gpu_hour,
                  ReplicaPhase phase) {
  FLEETSIM_CHECK(replica->options().index == size());
  Member m;
  m.replica = std::move(replica);
  m.view = ReplicaView(m.replica.get());
  m.gpus = gpus;
  m.usd_per_gpu_hour = usd_per_gpu_hour;
  m.view.phase_ = phase;
  m.history.push_back({sim_.now(), phase, -1});
  m.ready_since = sim_.now();
  m.replica->SetRetriedEnd([this] { RetriedEnded(); });
  if (m.replica->options().role == ReplicaOptions::Role::kPrefill) {
    const int i = size();
    m.replica->SetOnPrefilled([this, i](const Request& r, const RequestRecord& rec) { HandOff(i, r, rec); });
  }
  if (m.replica->options().role == ReplicaOptions::Role::kDecode) decode_models_[m.replica->options().model]++;
  const int pool = m.replica->options().pool;
  if (static_cast<int>(serving_.size()) <= pool) {
    serving_.resize(pool + 1, 0);
    required_.resize(pool + 1, 0);
  }
  if (Serving(m)) serving_[pool]++;
  if (models_[m.replica->options().model]++ == 0) model_names_.push_back(m.replica->options().model);
  replicas_.push_back(std::move(m));
  RebuildReady();
}

void Cluster::SetPhase(int i, ReplicaPhase phase) { Transition(i, phase); }

void Cluster::Transition(int i, ReplicaPhase phase) {
  Member& m = replicas_[i];
  if (m.view.phase_ == phase) return;
  const bool was = Serving(m);
  m.view.phase_ = phase;
  m.history.push_back({sim_.now(), phase, m.cls});
  if (phase == ReplicaPhase::kReady) m.ready_since = sim_.now();  // health checks count from here
  const bool is = Serving(m);
  const int pool = m.replica->options().pool;
  if (was != is) AddServing(pool, is ? 1 : -1, 0);
  if ((reliable_ || scaling_) && phase != ReplicaPhase::kReady)
    observer_.OnReplicaEvent(i, sim_.now(), ReplicaPhaseName(phase));
  RebuildReady();
  if (scaling_) {
    NoteReady(pool);
    if (phase == ReplicaPhase::kReady) ScheduleReclaim(i);
  }
  if (phase == ReplicaPhase::kReady && buffered_count_ > 0) FlushBuffered(m.replica->options().model);
}

void Cluster::AccrueCapacity() {
  const SimTime now = sim_.now();
  const SimTime from = std::max(capacity_at_, measure_from_);
  if (now > from && short_pools_ == 0) capacity_ok_ns_ += now - from;
  capacity_at_ = std::max(capacity_at_, now);
}

void Cluster::RebuildReady() {
  // Views live in replicas_, whose elements do not move once all are added;
  // rebuilt after every Add, so the pointers are always current.
  ready_.clear();
  decode_ready_.clear();
  for (auto& t : target_ready_) t.clear();
  for (const Member& m : replicas_) {
    if (!Routable(m)) continue;
    if (m.replica->options().role == ReplicaOptions::Role::kDecode) {
      decode_ready_[m.replica->options().model].push_back(&m.view);
      continue;
    }
    ready_[m.replica->options().model].push_back(&m.view);
    for (size_t t = 0; t < targets_.size(); ++t)
      for (int p : targets_[t])
        if (p == m.replica->options().pool) target_ready_[t].push_back(&m.view);
  }
}

const char* Cluster::StateName(int i) const {
  const Member& m = replicas_[i];
  if (m.down && m.view.phase_ == ReplicaPhase::kReady) return "failed";
  if (m.ejected) return "ejected";
  return ReplicaPhaseName(m.view.phase_);
}

void Cluster::Place(int i, const Placement& placement) {
  replicas_[i].placement = placement;
  for (int node : placement.nodes) {
    if (static_cast<int>(node_replicas_.size()) <= node) node_replicas_.resize(node + 1);
    node_replicas_[node].push_back(i);
  }
}

void Cluster::SetNodes(std::vector<int> rack_of, std::vector<int> zone_of, std::vector<std::string> zones) {
  zones_ = std::move(zones);
  node_replicas_.resize(rack_of.size());
  rack_nodes_.clear();
  zone_nodes_.assign(zones_.size(), {});
  for (size_t n = 0; n < rack_of.size(); ++n) {
    if (static_cast<int>(rack_nodes_.size()) <= rack_of[n]) rack_nodes_.resize(rack_of[n] + 1);
    rack_nodes_[rack_of[n]].push_back(static_cast<int>(n));
    zone_nodes_[zone_of[n]].push_back(static_cast<int>(n));
  }
}

void Cluster::SetRequired(int pool, int required) {
  if (static_cast<int>(required_.size()) <= pool) {
    required_.resize(pool + 1, 0);
    serving_.resize(pool + 1, 0);
  }
  AddServing(pool, 0, required - required_[pool]);
}

void Cluster::AddServing(int pool, int serving, int required) {
  AccrueCapacity();
  const bool short_before = serving_[pool] < required_[pool];
  serving_[pool] += serving;
  required_[pool] += required;
  short_pools_ += static_cast<int>(serving_[pool] < required_[pool]) - static_cast<int>(short_before);
}

void Cluster::SetReliability(const ReliabilitySpec& spec, std::vector<std::unique_ptr<FailureModel>> models,
                             std::vector<int> restart_pools) {
  spec_ = spec;
  reliable_ = true;
  models_run_ = std::move(models);
  for (auto& model : models_run_) model->Start(*this);
  for (size_t r = 0; r < spec_.rolling_restarts.size(); ++r) {
    Restart rs;
    rs.spec = spec_.rolling_restarts[r];
    rs.pool = restart_pools[r];
    for (int i = 0; i < size(); ++i)
      if (replicas_[i].replica->options().pool == rs.pool) rs.todo.push_back(i);
    restarts_.push_back(std::move(rs));
    sim_.At(SecondsToTime(restarts_.back().spec.at_s), [this, r] {
      restarts_[r].began = sim_.now();
      restart_windows_.Open(sim_.now());
      RestartNextBatch(r);
    });
  }
}

void Cluster::At(SimTime t, std::function<void()> fn) { sim_.At(std::max(t, sim_.now()), std::move(fn)); }

// ---- routing ----

void Cluster::Route(Request&& req) { RouteAvoiding(std::move(req), -1); }

void Cluster::SetDisaggregation(Disaggregation d) {
  FLEETSIM_CHECK(d.network != nullptr);
  disagg_ = std::move(d);
}

int Cluster::PickDecode(const Request& req) const {
  const std::string& model = req.model.empty() ? default_model_ : req.model;
  auto it = decode_ready_.find(model);
  if (it == decode_ready_.end() || it->second.empty()) return -1;
  // Requests still in transit count as arrived: two prefilled together go
  // to two idle decoders, not both to the first.
  auto load = [this](const ReplicaView* v) -> int64_t {
    const Member& m = replicas_[v->index()];
    if (disagg_->pick == Disaggregation::Pick::kMostFreeKv) {
      const KvCacheManager& kv = m.replica->state().kv();
      return kv.BlocksFor(m.inbound_tokens) - kv.free_blocks();
    }
    return v->outstanding() + m.inbound;
  };
  const ReplicaView* best = nullptr;
  int64_t best_load = 0;
  for (const ReplicaView* v : it->second) {
    const int64_t l = load(v);
    if (!best || l < best_load) {
      best = v;
      best_load = l;
    }
  }
  return best->index();
}

void Cluster::HandOff(int from, const Request& req, const RequestRecord& rec) {
  // The request as the client sent it, for what is reported if it goes no
  // further.
  Request orig = req;
  orig.output_tokens = req.disagg_output;
  orig.disagg_output = 0;
  const int to = PickDecode(req);
  if (to < 0) {
    RequestRecord r = UnservedRecord(orig, from, sim_.now(), RequestStatus::kFailed, "no_decode_replica");
    r.first_scheduled = rec.first_scheduled;
    observer_.OnFinished(r);
    return;
  }
  Request d = orig;
  d.arrival_reported = true;
  d.attempt = 0;
  d.prefill_scheduled = rec.first_scheduled;
  d.kv_imported = req.prompt_tokens;
  if (disagg_->ttft_from_prefill) {
    // The first token came from here; the decode side continues after it.
    d.prompt_tokens = req.prompt_tokens + 1;
    d.output_tokens = req.disagg_output - 1;
    d.carried = 1;
    d.streamed_first_token = rec.first_token;
  }
  const double bytes = static_cast<double>(req.prompt_tokens) *
                       disagg_->kv_bytes_per_token[static_cast<size_t>(replicas_[from].replica->options().pool)];
  const std::vector<int>& src = disagg_->replica_gpus[static_cast<size_t>(from)];
  const std::vector<int>& dst = disagg_->replica_gpus[static_cast<size_t>(to)];
  FLEETSIM_CHECK(!src.empty() && !dst.empty());
  struct Pending {
    int flows = 0;
    SimTime start = 0;
    Request req;
    int to = -1;
  };
  auto p = std::make_shared<Pending>();
  p->flows = static_cast<int>(src.size());
  p->start = sim_.now();
  p->req = std::move(d);
  p->to = to;
  replicas_[to].inbound++;
  replicas_[to].inbound_tokens += req.prompt_tokens;
  for (size_t k = 0; k < src.size(); ++k) {
    disagg_->network->Send(src[k], dst[k % dst.size()], bytes / static_cast<double>(src.size()), [this, p, bytes] {
      if (--p->flows > 0) return;
      replicas_[p->to].inbound--;
      replicas_[p->to].inbound_tokens -= p->req.kv_imported;
      if (disagg_->on_transfer) disagg_->on_transfer(bytes, sim_.now() - p->start);
      // The decode replica may have gone meanwhile: another ready one takes
      // it (its KV would move again; the second move is not priced).
      int target = p->to;
      if (!Routable(replicas_[target])) target = PickDecode(p->req);
      if (target < 0) {
        Request o = p->req;
        o.prompt_tokens -= o.carried;
        o.output_tokens += o.carried;
        observer_.OnFinished(UnservedRecord(o, -1, sim_.now(), RequestStatus::kFailed, "no_decode_replica"));
        return;
      }
      replicas_[target].replica->Submit(std::move(p->req));
    });
  }
}

void Cluster::RouteAvoiding(Request&& req, int avoid) {
  // A retried speculative request starts again from its real output.
  Unspeculate(&req);
  const std::string& model = req.model.empty() ? default_model_ : req.model;
  if (req.model_id < 0) req.model_id = ModelId(model);
  if (disagg_ && decode_models_.count(model)) {
    if (req.prefill_scheduled >= 0) {
      // A decode-side request retried: it starts again from its prefill.
      req.prompt_tokens -= req.carried;
      req.output_tokens += req.carried;
      req.carried = 0;
      req.kv_imported = 0;
      req.streamed_first_token = -1;
      req.prefill_scheduled = -1;
    }
    if (req.disagg_output == 0 && req.output_tokens > 1) {
      req.disagg_output = req.output_tokens;
      req.output_tokens = 1;
    }
  }
  auto it = ready_.find(model);
  const std::vector<const ReplicaView*>* ready = it == ready_.end() ? nullptr : &it->second;
  if (req.target >= 0) ready = &target_ready_[req.target];
  auto turn_away = [&](std::string_view reason) {
    if (req.attempt == 0 && !req.arrival_reported) observer_.OnArrival(req, -1);
    Replica::Evicted e{req, UnservedRecord(req, -1, sim_.now(), RequestStatus::kRejected, reason)};
    if (req.attempt > 0) {
      // A retry with nowhere to go fails to its client.
      FailRequest(e, reason);
      return;
    }
    observer_.OnFinished(e.rec);
  };
  if (!ready || ready->empty()) {
    if (scaling_ && req.attempt == 0) {
      // An autoscaled pool of the model has one coming, or can start one.
      for (PoolRun& pr : pools_) {
        if (!pr.config.autoscaler || pr.members.empty() || pr.config.autoscaling.max_replicas == 0 ||
            replicas_[pr.members.front()].replica->options().model != model)
          continue;
        const int pool = static_cast<int>(&pr - pools_.data());
        if (req.target >= 0 &&
            std::find(targets_[req.target].begin(), targets_[req.target].end(), pool) == targets_[req.target].end())
          continue;
        Buffer(std::move(req), pool);
        return;
      }
    }
    // Its target (a region, a version, a pool) has nothing ready and none
    // coming, since it was picked: a region went down under a request in
    // transit or being retried, a canary was rolled back or promoted. Any
    // ready replica of its model serves it: the failover a global balancer
    // does (the round trip already paid stays as it was).
    if (req.target >= 0 && it != ready_.end() && !it->second.empty()) {
      ready = &it->second;
    } else {
      turn_away(models_.count(model) ? "no_ready_replica" : "unknown_model");
      return;
    }
  }
  const std::vector<const ReplicaView*>& cands = *ready;
  size_t pick = router_->Route(req, cands);
  if (cands[pick]->index() == avoid && cands.size() > 1) pick = (pick + 1) % cands.size();
  if (spec_.max_requests_per_replica && cands[pick]->outstanding() >= *spec_.max_requests_per_replica) {
    // The breaker of the router's choice is open: the next replica in
    // order with room, else none.
    const int64_t cap = *spec_.max_requests_per_replica;
    size_t k = 1;
    while (k < cands.size() && cands[(pick + k) % cands.size()]->outstanding() >= cap) ++k;
    if (k == cands.size()) {
      turn_away("circuit_open");
      return;
    }
    pick = (pick + k) % cands.size();
  }
  if (replica_queue_limit_ > 0 && cands[pick]->waiting() >= replica_queue_limit_) {
    turn_away("replica_queue_full");
    return;
  }
  const int target = cands[pick]->index();
  Member& m = replicas_[target];
  router_->Sent(req, m.view);
  m.arrivals++;
  if (scaling_ && req.attempt == 0 && !req.arrival_reported) pools_[m.replica->options().pool].arrivals++;
  if (!m.down) {
    m.replica->Submit(std::move(req));
    return;
  }
  // A hung replica takes the request and answers nothing: it waits until
  // the replica is noticed, or its timeout.
  if (req.attempt == 0 && !req.arrival_reported) observer_.OnArrival(req, target);
  RequestRecord rec = UnservedRecord(req, target, sim_.now(), RequestStatus::kFailed, "");
  Stall(target, {std::move(req), rec});
}

void Cluster::Stall(int i, Replica::Evicted e) {
  Member& m = replicas_[i];
  const uint64_t id = e.req.id;
  const uint64_t epoch = m.epoch;
  m.stalled.push_back(std::move(e));
  SyncStalled(m);
  // Unanswered, it times out: a failed request for outlier ejection.
  sim_.After(SecondsToTime(spec_.request_timeout_s), [this, i, id, epoch] {
    Member& mm = replicas_[i];
    if (mm.epoch != epoch) return;
    auto s = std::find_if(mm.stalled.begin(), mm.stalled.end(), [&](const auto& x) { return x.req.id == id; });
    if (s == mm.stalled.end()) return;
    std::vector<Replica::Evicted> one;
    one.push_back(std::move(*s));
    mm.stalled.erase(s);
    SyncStalled(mm);
    OnRequestError(i);
    Release(std::move(one), i, "timeout");
  });
}

int64_t Cluster::TakeArrivals(int i) {
  const int64_t n = replicas_[i].arrivals;
  replicas_[i].arrivals = 0;
  return n;
}

bool Cluster::Idle() const {
  if (!retry_wait_.empty() || buffered_count_ > 0) return false;
  for (const Member& m : replicas_)
    if (m.replica->outstanding() > 0 || m.replica->busy() || !m.stalled.empty()) return false;
  return true;
}

void Cluster::ReportUnfinished(SimTime end, std::string_view reason) {
  for (Member& m : replicas_) {
    m.replica->ReportUnfinished(end, reason);
    for (Replica::Evicted& e : m.stalled) {
      e.rec.status = RequestStatus::kUnfinished;
      e.rec.finish = end;
      e.rec.reason = reason;
      observer_.OnFinished(e.rec);
    }
    m.stalled.clear();
    SyncStalled(m);
  }
  for (auto& [seq, wait] : retry_wait_)
    observer_.OnFinished(UnservedRecord(wait.first, -1, end, RequestStatus::kUnfinished, reason));
  retry_wait_.clear();
  for (auto& [model, held] : buffered_)
    for (const Request& r : held) observer_.OnFinished(UnservedRecord(r, -1, end, RequestStatus::kUnfinished, reason));
  buffered_.clear();
  buffered_count_ = 0;
}

// ---- failures ----

SimTime Cluster::HealthCheckRemoval(const Member& m, SimTime at) const {
  const HealthCheckSpec& hc = spec_.health_check;
  const SimTime interval = SecondsToTime(hc.interval_s);
  const SimTime timeout = SecondsToTime(hc.timeout_s);
  // The first check at or after the failure: checks start every interval
  // from when the replica became ready.
  const SimTime since = at - m.ready_since;
  const SimTime k = std::max<SimTime>(1, (since + interval - 1) / interval);
  const SimTime first = m.ready_since + k * interval;
  // Each unanswered check fails at its timeout; the next starts then, or an
  // interval after the previous start if that is later.
  return first + static_cast<SimTime>(hc.unhealthy_threshold - 1) * std::max(interval, timeout) + timeout;
}

void Cluster::Fail(const std::vector<int>& replicas, FailureKind kind, std::optional<SimTime> repair,
                   std::string_view cause) {
  const SimTime now = sim_.now();
  int hit = 0;
  for (int i : replicas) {
    Member& m = replicas_[i];
    if (m.down || m.view.phase_ == ReplicaPhase::kStopped || m.view.phase_ == ReplicaPhase::kProvisioning) continue;
    // Warm workers (and those coming into the warm pool) serve nothing:
    // modelled as not failing (docs/autoscaling.md, Limits).
    if (m.view.phase_ == ReplicaPhase::kWarm || m.to_warm) continue;
    ++hit;
    const bool was_serving = Serving(m);
    m.down = true;
    m.noticed = false;
    m.kind = kind;
    m.down_since = now;
    m.downtime = static_cast<int>(downtimes_.size());
    ++m.epoch;
    downtimes_.push_back({now, kTimeNever});
    failure_windows_.Open(now);
    observer_.OnReplicaEvent(i, now, kind == FailureKind::kCrash ? "crash" : "failure");
    // The KV cache and the iteration in flight are gone.
    std::vector<Replica::Evicted> held;
    m.replica->Evict(&held);
    // Still ready to the routers; no longer serving.
    if (was_serving) AddServing(m.replica->options().pool, -1, 0);
    if (scaling_) NoteReady(m.replica->options().pool);
    if (kind == FailureKind::kCrash || m.view.phase_ != ReplicaPhase::kReady) {
      // A dead process (or a replica out of routing anyway) is known at once.
      Release(std::move(held), i, "replica_failed");
      Notice(i);
      StartRecovery(i, repair);
      continue;
    }
    // A hang: its requests wait, each until its timeout or the health
    // checks' verdict.
    const uint64_t epoch = m.epoch;
    for (Replica::Evicted& e : held) Stall(i, std::move(e));
    sim_.At(HealthCheckRemoval(m, now), [this, i, epoch, repair] {
      Member& mm = replicas_[i];
      if (mm.epoch != epoch) return;
      Notice(i);
      std::vector<Replica::Evicted> held2 = std::move(mm.stalled);
      mm.stalled.clear();
      SyncStalled(mm);
      Release(std::move(held2), i, "replica_failed");
      StartRecovery(i, repair);
    });
  }
  if (hit == 0) return;
  incidents_.push_back({now, std::string(cause), hit});
}

void Cluster::Notice(int i) {
  Member& m = replicas_[i];
  if (m.ejected) {
    m.ejected = false;
    ejected_[m.replica->options().model]--;
  }
  if (!m.noticed) {
    m.noticed = true;
    detections_.emplace_back(sim_.now(), TimeToSeconds(sim_.now() - m.down_since));
  }
  Transition(i, ReplicaPhase::kFailed);
}

void Cluster::StartRecovery(int i, std::optional<SimTime> repair) {
  Member& m = replicas_[i];
  if (m.stopping) {
    // It was draining to stop (a scale-down, a spot notice): it stops.
    m.stopping = false;
    m.down = false;
    downtimes_[m.downtime].to = sim_.now();
    failure_windows_.Close(sim_.now());
    ++m.epoch;
    Transition(i, ReplicaPhase::kStopped);
    return;
  }
  const uint64_t epoch = m.epoch;
  auto start_then_up = [this, i, epoch](SimTime at) {
    sim_.At(at, [this, i, epoch] {
      if (replicas_[i].epoch != epoch) return;
      Transition(i, ReplicaPhase::kStarting);
      sim_.After(replicas_[i].placement.start, [this, i, epoch] {
        if (replicas_[i].epoch == epoch) BackUp(i);
      });
    });
  };
  if (m.kind == FailureKind::kCrash) {
    start_then_up(sim_.now());
    return;
  }
  switch (spec_.recovery) {
    case Recovery::kReplace:
      Transition(i, ReplicaPhase::kProvisioning);
      start_then_up(sim_.now() + m.placement.provision);
      return;
    case Recovery::kRepair:
      Transition(i, ReplicaPhase::kRepairing);
      start_then_up(std::max(sim_.now(), m.down_since + repair.value_or(0)));
      return;
    case Recovery::kNone:
      Transition(i, ReplicaPhase::kStopped);
      return;
  }
}

void Cluster::BackUp(int i) {
  Member& m = replicas_[i];
  if (m.down) {
    m.down = false;
    downtimes_[m.downtime].to = sim_.now();
    failure_windows_.Close(sim_.now());
  }
  m.consecutive_errors = 0;
  m.times_ejected = 0;
  observer_.OnReplicaEvent(i, sim_.now(), "ready");
  Transition(i, ReplicaPhase::kReady);
}

void Cluster::OnRequestError(int i) {
  if (!spec_.outlier_ejection) return;
  const OutlierEjectionSpec& oe = *spec_.outlier_ejection;
  Member& m = replicas_[i];
  if (m.ejected || m.view.phase_ != ReplicaPhase::kReady) return;
  if (++m.consecutive_errors < oe.consecutive_failures) return;
  const std::string& model = m.replica->options().model;
  const int hosts = models_[model];
  const int cap = std::max(1, static_cast<int>(std::floor(hosts * oe.max_ejection_percent / 100.0)));
  if (ejected_[model] >= cap) return;  // too many out already: it stays in
  m.ejected = true;
  ejected_[model]++;
  m.times_ejected++;
  m.consecutive_errors = 0;
  if (m.down && !m.noticed) {
    m.noticed = true;
    detections_.emplace_back(sim_.now(), TimeToSeconds(sim_.now() - m.down_since));
  }
  observer_.OnReplicaEvent(i, sim_.now(), "ejected");
  RebuildReady();
  // Back at the first sweep after the ejection time.
  const SimTime until =
      sim_.now() + std::min(SecondsToTime(oe.base_ejection_s) * m.times_ejected, SecondsToTime(oe.max_ejection_s));
  const SimTime sweep = SecondsToTime(oe.interval_s);
  const SimTime back = (until + sweep - 1) / sweep * sweep;
  const uint64_t epoch = m.epoch;
  sim_.At(back, [this, i, epoch] {
    Member& mm = replicas_[i];
    if (mm.epoch != epoch || !mm.ejected) return;
    mm.ejected = false;
    ejected_[mm.replica->options().model]--;
    observer_.OnReplicaEvent(i, sim_.now(), "unejected");
    RebuildReady();
  });
}

// ---- requests let go of ----

int64_t Cluster::ActiveRequests() const {
  int64_t n = static_cast<int64_t>(retry_wait_.size());
  for (const Member& m : replicas_) n += m.replica->outstanding() + static_cast<int64_t>(m.stalled.size());
  return n;
}

void Cluster::Release(std::vector<Replica::Evicted> held, int from, std::string_view reason) {
  if (held.empty()) return;
  const std::optional<RetrySpec>& rs = spec_.retries;
  const int64_t active = rs ? ActiveRequests() + static_cast<int64_t>(held.size()) : 0;
  for (Replica::Evicted& e : held) {
    const bool streamed = e.rec.first_token >= 0;
    if (!rs || streamed || e.req.attempt >= rs->max_retries) {
      FailRequest(e, reason);
      continue;
    }
    const double budget = std::max<double>(rs->min_retry_concurrency, rs->budget_percent / 100.0 * active);
    // A retry that fails again is already counted among the active ones.
    if (e.req.attempt == 0 && static_cast<double>(active_retries_) + 1 > budget) {
      FailRequest(e, "retry_budget_exhausted");
      continue;
    }
    Retry(std::move(e), from);
  }
}

void Cluster::Retry(Replica::Evicted e, int from) {
  if (e.req.attempt == 0) {
    ++requests_retried_;
    ++active_retries_;
  }
  ++retries_;
  Request req = std::move(e.req);
  req.attempt++;
  // Fully jittered exponential back-off: uniform in [0, base x (2^n - 1)],
  // at most max_backoff_ms.
  const RetrySpec& rs = *spec_.retries;
  const double ceiling_ms =
      std::min(rs.max_backoff_ms, rs.base_backoff_ms * (std::ldexp(1.0, std::min(req.attempt, 60)) - 1));
  const SimTime delay = MillisToTime(retry_rng_.Uniform() * ceiling_ms);
  const uint64_t seq = next_retry_++;
  retry_wait_.emplace(seq, std::make_pair(std::move(req), from));
  sim_.After(delay, [this, seq] {
    auto it = retry_wait_.find(seq);
    if (it == retry_wait_.end()) return;
    Request r = std::move(it->second.first);
    const int avoid = it->second.second;
    retry_wait_.erase(it);
    RouteAvoiding(std::move(r), avoid);
  });
}

void Cluster::FailRequest(Replica::Evicted& e, std::string_view reason) {
  e.rec.status = RequestStatus::kFailed;
  e.rec.reason = reason;
  e.rec.finish = sim_.now();
  ++requests_failed_;
  partial_tokens_ += e.rec.generated_tokens;
  if (e.req.attempt > 0) --active_retries_;
  observer_.OnFinished(e.rec);
}

// ---- rolling restarts ----

void Cluster::RestartNextBatch(size_t r) {
  Restart& rs = restarts_[r];
  rs.batch.clear();
  while (!rs.todo.empty() && static_cast<int>(rs.batch.size()) < rs.spec.batch) {
    const int i = rs.todo.front();
    rs.todo.erase(rs.todo.begin());
    Member& m = replicas_[i];
    // A replica down or stopped restarts by its own recovery.
    if (m.down || m.view.phase_ != ReplicaPhase::kReady) continue;
    rs.batch.push_back(i);
    m.restarting = true;
    Transition(i, ReplicaPhase::kDraining);
    restart_drains_.push_back(sim_.now());
    PollDrain(r, i, m.epoch, sim_.now() + SecondsToTime(rs.spec.drain_timeout_s));
  }
  int ready = 0;
  for (const Member& m : replicas_)
    if (m.replica->options().pool == rs.pool && Serving(m)) ++ready;
  rs.min_ready = rs.min_ready < 0 ? ready : std::min(rs.min_ready, ready);
  if (rs.batch.empty()) {
    rs.ended = sim_.now();
    restart_windows_.Close(sim_.now());
  }
}

void Cluster::PollDrain(size_t r, int i, uint64_t epoch, SimTime deadline) {
  Member& m = replicas_[i];
  auto batch_done = [this, r] {
    Restart& rs = restarts_[r];
    for (int j : rs.batch)
      if (replicas_[j].restarting) return;
    RestartNextBatch(r);
  };
  if (m.epoch != epoch) {
    // It failed while draining: its recovery brings it back.
    m.restarting = false;
    batch_done();
    return;
  }
  const bool empty = m.replica->outstanding() == 0 && !m.replica->busy();
  if (!empty && sim_.now() < deadline) {
    // Checked every 100 ms (or at the deadline).
    sim_.At(std::min(deadline, sim_.now() + kSecond / 10), [this, r, i, epoch, deadline] { PollDrain(r, i, epoch, deadline); });
    return;
  }
  std::vector<Replica::Evicted> held;
  m.replica->Evict(&held);
  Release(std::move(held), i, "drain_timeout");
  ++m.epoch;
  const uint64_t e2 = m.epoch;
  Transition(i, ReplicaPhase::kStarting);
  sim_.After(m.placement.start, [this, i, e2, batch_done] {
    Member& mm = replicas_[i];
    mm.restarting = false;
    if (mm.epoch == e2) {
      observer_.OnReplicaEvent(i, sim_.now(), "ready");
      Transition(i, ReplicaPhase::kReady);
    }
    batch_done();
  });
}

// ---- accounting ----

Cluster::Usage Cluster::UsageUntil(SimTime to) const {
  Usage u;
  // (pool, class index + 1) -> its part.
  std::map<std::pair<int, int>, Usage::Part> parts;
  const SimTime window = std::max<SimTime>(0, to - measure_from_);
  for (const Member& m : replicas_) {
    const int pool = m.replica->options().pool;
    const PoolRun* pr = pool < static_cast<int>(pools_.size()) && !pools_[pool].members.empty() ? &pools_[pool] : nullptr;
    auto part = [&](int cls) -> Usage::Part& {
      auto [it, fresh] = parts.try_emplace({pool, cls + 1});
      Usage::Part& p = it->second;
      if (fresh) {
        p.pool = pool;
        const PriceClass* c = ClassOf(m, cls);
        p.pricing_class = c ? c->name : "on_demand";
        p.usd_gpu_ns = 0;  // until an unpriced replica runs in it
      }
      return p;
    };
    auto price = [&](int cls) { return cls < 0 ? m.usd_per_gpu_hour : ClassOf(m, cls)->usd_per_gpu_hour; };
    // Paid GPU time by class, and what it cost.
    auto add = [&](int cls, __int128 gpu_ns, long double frac) {
      if (gpu_ns <= 0) return;
      Usage::Part& p = part(cls);
      p.gpu_ns += gpu_ns;
      const std::optional<double> usd = price(cls);
      if (!usd) {
        p.usd_gpu_ns.reset();
      } else if (p.usd_gpu_ns) {
        *p.usd_gpu_ns += static_cast<long double>(gpu_ns) * static_cast<long double>(*usd) * frac;
      }
    };
    const bool reserved = pr && pr->config.price.name == "reserved";
    if (reserved) {
      // Paid whether used or not: the whole window, whatever its phase.
      add(0, static_cast<__int128>(window) * m.gpus, 1);
    } else {
      for (size_t k = 0; k < m.history.size(); ++k) {
        const Member::Segment& sg = m.history[k];
        if (sg.phase == ReplicaPhase::kStopped) continue;
        const SimTime a = std::max(sg.at, measure_from_);
        const SimTime b = std::min(k + 1 < m.history.size() ? m.history[k + 1].at : to, to);
        if (b <= a) continue;
        const long double frac =
            sg.phase == ReplicaPhase::kWarm && pr ? static_cast<long double>(pr->config.warm_cost_fraction) : 1.0L;
        add(sg.cls, static_cast<__int128>(b - a) * m.gpus, frac);
      }
    }
    // Busy time by class.
    const int cur = m.cls;
    SimTime busy[2] = {m.class_busy[0], m.class_busy[1]};
    busy[std::max(cur, 0)] += m.replica->busy_time() - m.busy_mark;
    for (int c = 0; c < 2; ++c) {
      if (busy[c] == 0) continue;
      const int cls = m.cls < 0 ? -1 : c;
      part(cls).busy_gpu_ns += static_cast<__int128>(busy[c]) * m.gpus;
    }
  }
  bool priced = true;
  long double usd = 0;
  for (auto& [key, p] : parts) {
    u.gpu_ns += p.gpu_ns;
    u.busy_gpu_ns += p.busy_gpu_ns;
    if (p.gpu_ns > 0) {
      if (p.usd_gpu_ns) {
        usd += *p.usd_gpu_ns;
      } else {
        priced = false;
      }
    }
    u.parts.push_back(std::move(p));
  }
  if (priced) u.usd_gpu_ns = usd;
  return u;
}

Cluster::Reliability Cluster::ReliabilityUntil(SimTime to) const {
  Reliability r;
  for (const Incident& inc : incidents_) {
    if (inc.at > to) continue;
    ++r.events;
    r.replica_failures += inc.replicas;
    auto it = std::find_if(r.by_cause.begin(), r.by_cause.end(), [&](const auto& p) { return p.first == inc.cause; });
    if (it == r.by_cause.end()) {
      r.by_cause.emplace_back(inc.cause, 1);
    } else {
      ++it->second;
    }
  }
  for (const Downtime& d : downtimes_)
    if (d.from <= to) r.downtime_s += TimeToSeconds(std::min(d.to, to) - d.from);
  for (const auto& [at, delay] : detections_) {
    if (at > to) continue;
    ++r.detected;
    r.detection_delay_s_sum += delay;
  }
  r.requests_failed = requests_failed_;
  r.requests_retried = requests_retried_;
  r.retries = retries_;
  r.partial_output_tokens = partial_tokens_;
  // Capacity: the time accrued so far, plus the stretch since the last
  // change when no pool is short.
  SimTime ok = capacity_ok_ns_;
  const SimTime from = std::max(capacity_at_, measure_from_);
  if (to > from && short_pools_ == 0) ok += to - from;
  const SimTime window = to - measure_from_;
  r.capacity_availability = window > 0 ? static_cast<double>(ok) / static_cast<double>(window) : 1.0;
  for (const Restart& rs : restarts_) {
    if (rs.began < 0) continue;
    r.restart_s = std::max(r.restart_s, TimeToSeconds((rs.ended >= 0 ? rs.ended : to) - rs.began));
    r.min_ready_during_restart =
        r.min_ready_during_restart < 0 ? rs.min_ready : std::min(r.min_ready_during_restart, rs.min_ready);
  }
  for (SimTime at : restart_drains_)
    if (at <= to) ++r.restarts_done;
  return r;
}

}  // namespace fleetsim
