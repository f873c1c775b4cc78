// Cluster: pools' prices, scaling, warm pools and spot reclaims (see
// cluster.h). Split from cluster.cc, which holds routing and failures.
#include <algorithm>
#include <cmath>

#include "sim/cluster/cluster.h"

namespace fleetsim {

const Cluster::PriceClass* Cluster::ClassOf(const Member& m, int cls) const {
  if (cls < 0) return nullptr;
  const PoolRun& pr = pools_[m.replica->options().pool];
  return cls == 0 ? &pr.config.price : &*pr.config.fallback;
}

void Cluster::ConfigurePool(int pool, PoolConfig config) {
  if (static_cast<int>(pools_.size()) <= pool) pools_.resize(pool + 1);
  PoolRun& pr = pools_[pool];
  pr.config = std::move(config);
  pr.members.clear();
  for (int i = 0; i < size(); ++i) {
    Member& m = replicas_[i];
    if (m.replica->options().pool != pool) continue;
    pr.members.push_back(i);
    m.cls = 0;
    for (Member::Segment& sg : m.history) sg.cls = 0;
  }
  pr.desired = pr.config.desired;
  if (pr.config.autoscaler) {
    // The longest window any query asks for, behind the delay (which
    // PoolMonitor adds), with room for a period.
    const Autoscaler& as = *pr.config.autoscaler;
    const SimTime retention = std::max<SimTime>(60 * kSecond, as.longest_window() + as.period());
    pr.monitor = std::make_unique<PoolMonitor>(pr.config.autoscaler->metric_delay(), retention);
  }
  pr.spot_rng = sim_.Stream("spot/" + std::to_string(pool));
}

void Cluster::SetDesired(int pool, int n) {
  pools_[pool].desired = n;
  Reconcile(pool);
}

void Cluster::StartScaling() {
  for (const PoolRun& pr : pools_)
    scaling_ = scaling_ || pr.config.autoscaler || (pr.config.reclaims_per_hour > 0 && pr.config.price.name == "spot");
  if (!scaling_) return;
  for (int p = 0; p < static_cast<int>(pools_.size()); ++p) {
    PoolRun& pr = pools_[p];
    if (pr.members.empty()) continue;
    NoteReady(p);
    for (int i : pr.members)
      if (replicas_[i].view.phase_ == ReplicaPhase::kReady) ScheduleReclaim(i);
    if (!pr.config.autoscaler) continue;
    sim_.At(PoolSignals::kSampleInterval, [this, p] { SamplePool(p); });
    sim_.At(pr.config.autoscaler->period(), [this, p] { Decide(p); });
  }
}

void Cluster::SamplePool(int pool) {
  PoolRun& pr = pools_[pool];
  PoolMonitor::Gauges g;
  for (int i : pr.members) {
    const Member& m = replicas_[i];
    if (!Serving(m)) continue;
    ++g.ready;
    g.concurrency += static_cast<double>(m.view.outstanding());
    g.queue_depth += static_cast<double>(m.view.waiting());
    g.kv_utilization_sum += m.view.kv_utilization();
  }
  // The activator's queue counts as the pool's (Knative's activator reports
  // the requests it holds to the autoscaler).
  auto it = buffered_.find(replicas_[pr.members.front()].replica->options().model);
  if (it != buffered_.end()) {
    g.concurrency += static_cast<double>(it->second.size());
    g.queue_depth += static_cast<double>(it->second.size());
  }
  pr.monitor->AddSample(sim_.now(), g, pr.arrivals);
  pr.arrivals = 0;
  sim_.After(PoolSignals::kSampleInterval, [this, pool] { SamplePool(pool); });
}

void Cluster::Decide(int pool) {
  PoolRun& pr = pools_[pool];
  int ready = 0, starting = 0;
  for (int i : pr.members) {
    const Member& m = replicas_[i];
    if (Serving(m)) ++ready;
    const ReplicaPhase ph = m.view.phase_;
    if (!m.to_warm && (ph == ReplicaPhase::kProvisioning || ph == ReplicaPhase::kStarting)) ++starting;
  }
  pr.monitor->SetNow(sim_.now(), ready, starting, pr.desired);
  const AutoscalerSpec& a = pr.config.autoscaling;
  pr.desired = std::clamp(pr.config.autoscaler->Decide(*pr.monitor), a.min_replicas, a.max_replicas);
  Reconcile(pool);
  sim_.After(pr.config.autoscaler->period(), [this, pool] { Decide(pool); });
}

void Cluster::Reconcile(int pool) {
  PoolRun& pr = pools_[pool];
  int want = pr.desired;
  const std::string& model = replicas_[pr.members.front()].replica->options().model;
  if (want == 0 && pr.config.autoscaling.max_replicas > 0) {
    auto it = buffered_.find(model);
    if (it != buffered_.end() && !it->second.empty()) want = 1;  // requests wait for it
  }
  auto count = [&](int* active, int* warm) {
    *active = *warm = 0;
    for (int i : pr.members) {
      const Member& m = replicas_[i];
      const ReplicaPhase ph = m.view.phase_;
      if (ph == ReplicaPhase::kStopped || ph == ReplicaPhase::kDraining) continue;
      if (ph == ReplicaPhase::kWarm || m.to_warm) {
        ++*warm;
      } else {
        ++*active;
      }
    }
  };
  int active = 0, warm = 0;
  count(&active, &warm);
  while (active < want && StartOne(pool, false)) ++active;
  while (active > want && StopOne(pool)) --active;
  count(&active, &warm);
  const int w = pr.config.autoscaler ? pr.config.autoscaling.warm_pool : 0;
  while (warm < w && StartOne(pool, true)) ++warm;
}

bool Cluster::HasCapacity(const PoolRun& pr, const PriceClass& c) const {
  const CapacityLimit* limit = nullptr;
  for (const CapacityLimit& l : limits_)
    if (l.gpu == pr.config.gpu && l.pricing_class == c.name) limit = &l;
  if (!limit) return true;
  int64_t used = 0;
  for (const PoolRun& other : pools_) {
    if (other.config.gpu != pr.config.gpu) continue;
    for (int i : other.members) {
      const Member& m = replicas_[i];
      const PriceClass* mc = ClassOf(m, m.cls);
      if (m.view.phase_ != ReplicaPhase::kStopped && mc && mc->name == c.name) used += m.gpus;
    }
  }
  return used + pr.config.gpus_per_replica <= limit->gpus;
}

void Cluster::SetClass(int i, int cls) {
  Member& m = replicas_[i];
  if (m.cls == cls) return;
  const SimTime busy = m.replica->busy_time();
  m.class_busy[std::max(m.cls, 0)] += busy - m.busy_mark;
  m.busy_mark = busy;
  m.cls = cls;
}

bool Cluster::StartOne(int pool, bool to_warm) {
  PoolRun& pr = pools_[pool];
  auto clear_down = [&](Member& m) {
    if (!m.down) return;
    m.down = false;
    downtimes_[m.downtime].to = sim_.now();
    failure_windows_.Close(sim_.now());
  };
  if (!to_warm) {
    // A warm worker first: its weights are loaded.
    for (int i : pr.members) {
      Member& m = replicas_[i];
      if (m.view.phase_ != ReplicaPhase::kWarm) continue;
      ++scaled_.scale_ups;
      const uint64_t epoch = ++m.epoch;
      Transition(i, ReplicaPhase::kStarting);
      sim_.After(pr.config.warm_start, [this, i, epoch] {
        if (replicas_[i].epoch != epoch) return;
        observer_.OnReplicaEvent(i, sim_.now(), "ready");
        Transition(i, ReplicaPhase::kReady);
      });
      return true;
    }
  }
  for (int i : pr.members) {
    Member& m = replicas_[i];
    if (m.view.phase_ != ReplicaPhase::kStopped) continue;
    int cls = 0;
    if (!HasCapacity(pr, pr.config.price)) {
      if (!pr.config.fallback || !HasCapacity(pr, *pr.config.fallback)) {
        ++scaled_.refused;
        return false;
      }
      cls = 1;
      ++scaled_.fallbacks;
    }
    clear_down(m);
    m.stopping = false;
    SetClass(i, cls);
    m.to_warm = to_warm;
    if (!to_warm) ++scaled_.scale_ups;
    const uint64_t epoch = ++m.epoch;
    Transition(i, ReplicaPhase::kProvisioning);
    const PriceClass& c = cls == 0 ? pr.config.price : *pr.config.fallback;
    sim_.After(c.provision, [this, i, epoch] {
      if (replicas_[i].epoch != epoch) return;
      Transition(i, ReplicaPhase::kStarting);
      sim_.After(replicas_[i].placement.start, [this, i, epoch] {
        Member& mm = replicas_[i];
        if (mm.epoch != epoch) return;
        if (mm.to_warm) {
          mm.to_warm = false;
          Transition(i, ReplicaPhase::kWarm);
          return;
        }
        observer_.OnReplicaEvent(i, sim_.now(), "ready");
        Transition(i, ReplicaPhase::kReady);
      });
    });
    return true;
  }
  // Every slot is in use (replicas draining hold theirs): none to start
  // until one stops.
  return false;
}

bool Cluster::StopOne(int pool) {
  PoolRun& pr = pools_[pool];
  // A replica called off while down (coming back from a failure) is down
  // no longer: its downtime ends now.
  auto end_downtime = [&](Member& m) {
    if (!m.down) return;
    m.down = false;
    downtimes_[m.downtime].to = sim_.now();
    failure_windows_.Close(sim_.now());
  };
  // A replica still coming is cancelled first (its machine released), the
  // newest first.
  for (auto it = pr.members.rbegin(); it != pr.members.rend(); ++it) {
    Member& m = replicas_[*it];
    const ReplicaPhase ph = m.view.phase_;
    if (m.to_warm || (ph != ReplicaPhase::kProvisioning && ph != ReplicaPhase::kStarting)) continue;
    ++m.epoch;
    end_downtime(m);
    Transition(*it, ReplicaPhase::kStopped);
    ++scaled_.scale_downs;
    return true;
  }
  // Else the ready replica holding the fewest requests (the newest of
  // equals) drains.
  int pick = -1;
  for (int i : pr.members) {
    const Member& m = replicas_[i];
    if (!Serving(m)) continue;
    if (pick < 0 || m.view.outstanding() <= replicas_[pick].view.outstanding()) pick = i;
  }
  if (pick >= 0) {
    replicas_[pick].stopping = true;
    Transition(pick, ReplicaPhase::kDraining);
    PollStop(pick, replicas_[pick].epoch);
    ++scaled_.scale_downs;
    return true;
  }
  // Else one the fleet knows is down and recovering: its recovery is called
  // off. (A hung replica not yet noticed looks ready to the controller: it
  // stays until the health checks or outlier ejection find it.)
  for (auto it = pr.members.rbegin(); it != pr.members.rend(); ++it) {
    Member& m = replicas_[*it];
    const ReplicaPhase ph = m.view.phase_;
    if (ph == ReplicaPhase::kStopped || ph == ReplicaPhase::kDraining || ph == ReplicaPhase::kWarm || m.to_warm ||
        ph == ReplicaPhase::kReady)
      continue;
    ++m.epoch;
    end_downtime(m);
    Transition(*it, ReplicaPhase::kStopped);
    ++scaled_.scale_downs;
    return true;
  }
  return false;
}

void Cluster::PollStop(int i, uint64_t epoch) {
  Member& m = replicas_[i];
  if (m.epoch != epoch || m.view.phase_ != ReplicaPhase::kDraining) return;  // failed while draining
  if (m.replica->outstanding() > 0 || m.replica->busy()) {
    sim_.After(kSecond / 10, [this, i, epoch] { PollStop(i, epoch); });
    return;
  }
  // Empty: the process ends, and its caches with it.
  std::vector<Replica::Evicted> none;
  m.replica->Evict(&none);
  ++m.epoch;
  m.stopping = false;
  Transition(i, ReplicaPhase::kStopped);
}

void Cluster::ScheduleReclaim(int i) {
  Member& m = replicas_[i];
  PoolRun& pr = pools_[m.replica->options().pool];
  const PriceClass* c = ClassOf(m, m.cls);
  if (pr.config.reclaims_per_hour <= 0 || !c || c->name != "spot") return;
  const uint64_t epoch = m.epoch;
  const double hours = pr.spot_rng.Exponential(1.0 / pr.config.reclaims_per_hour);
  if (!(hours * 3600 < 9e9)) return;
  sim_.After(SecondsToTime(hours * 3600), [this, i, epoch] {
    Member& mm = replicas_[i];
    if (mm.epoch != epoch || mm.down || mm.view.phase_ != ReplicaPhase::kReady) return;
    // The notice: no new requests; then the machine is gone.
    observer_.OnReplicaEvent(i, sim_.now(), "spot_notice");
    mm.stopping = true;
    Transition(i, ReplicaPhase::kDraining);
    const int pool = mm.replica->options().pool;
    if (pools_[pool].config.autoscaler) Reconcile(pool);  // a replacement starts during the notice
    sim_.After(pools_[pool].config.reclaim_notice, [this, i, epoch, pool] {
      Member& m2 = replicas_[i];
      if (m2.epoch != epoch) return;
      ++scaled_.spot_reclaims;
      std::vector<Replica::Evicted> held;
      m2.replica->Evict(&held);
      ++m2.epoch;
      m2.stopping = false;
      observer_.OnReplicaEvent(i, sim_.now(), "spot_reclaimed");
      Transition(i, ReplicaPhase::kStopped);
      Release(std::move(held), i, "spot_reclaimed");
      Reconcile(pool);
    });
  });
}

void Cluster::Buffer(Request&& req, int pool) {
  const bool fresh = !req.arrival_reported;  // else routed back here from the queue: counted already
  if (fresh) {
    req.arrival_reported = true;
    observer_.OnArrival(req, -1);
  }
  const std::string model = req.model.empty() ? default_model_ : req.model;
  const uint64_t id = req.id;
  const int32_t attempt = req.attempt;
  buffered_[model].push_back(std::move(req));
  ++buffered_count_;
  // Not served within the activator's timeout: it fails to its client.
  sim_.After(activator_timeout_, [this, model, id, attempt] {
    auto it = buffered_.find(model);
    if (it == buffered_.end()) return;
    std::vector<Request>& held = it->second;
    auto r = std::find_if(held.begin(), held.end(), [&](const Request& x) { return x.id == id && x.attempt == attempt; });
    if (r == held.end()) return;
    Replica::Evicted e{std::move(*r), {}};
    held.erase(r);
    --buffered_count_;
    e.rec = UnservedRecord(e.req, -1, sim_.now(), RequestStatus::kFailed, "activator_timeout");
    FailRequest(e, "activator_timeout");
  });
  // The pool that will serve it (of its model and route target) counts the
  // arrival; at zero it starts one now (the activator pokes the autoscaler).
  PoolRun& pr = pools_[pool];
  if (fresh) pr.arrivals++;
  if (pr.desired == 0) Reconcile(pool);
}

void Cluster::FlushBuffered(const std::string& model) {
  sim_.At(sim_.now(), [this, model] {
    auto it = buffered_.find(model);
    if (it == buffered_.end() || it->second.empty()) return;
    std::vector<Request> held = std::move(it->second);
    it->second.clear();
    buffered_count_ -= static_cast<int64_t>(held.size());
    // Their arrivals were counted when they reached the activator (Buffer);
    // routing them now counts none again (arrival_reported).
    for (Request& r : held) RouteAvoiding(std::move(r), -1);
  });
}

void Cluster::NoteReady(int pool) {
  if (pool >= static_cast<int>(pools_.size())) return;
  PoolRun& pr = pools_[pool];
  if (!pr.config.autoscaler) return;
  int ready = 0;
  for (int i : pr.members) ready += Serving(replicas_[i]) ? 1 : 0;
  if (pr.ready_steps.empty() || pr.ready_steps.back().second != ready) {
    if (!pr.ready_steps.empty() && pr.ready_steps.back().first == sim_.now()) {
      pr.ready_steps.back().second = ready;
    } else {
      pr.ready_steps.emplace_back(sim_.now(), ready);
    }
  }
}

void Cluster::OnRequestEnded(const RequestRecord& rec) {
  if (!scaling_ || rec.replica < 0 || rec.status != RequestStatus::kCompleted) return;
  PoolRun& pr = pools_[replicas_[rec.replica].replica->options().pool];
  if (!pr.monitor) return;
  const double ttft = TimeToMillis(rec.first_token - rec.arrival);
  const double tpot =
      rec.generated_tokens > 1 ? TimeToMillis(rec.finish - rec.first_token) / (rec.generated_tokens - 1) : -1.0;
  pr.monitor->AddFinished(rec.finish, ttft, tpot, rec.prompt_tokens, rec.generated_tokens);
}

Cluster::Scaling Cluster::ScalingUntil(SimTime to) const {
  Scaling s = scaled_;
  // Ready replicas of the scaled pools, summed, as steps over the window.
  std::vector<std::pair<SimTime, int>> changes;  // (at, delta)
  bool any = false;
  for (const PoolRun& pr : pools_) {
    if (!pr.config.autoscaler) continue;
    any = true;
    int prev = 0;
    for (const auto& [at, n] : pr.ready_steps) {
      changes.emplace_back(at, n - prev);
      prev = n;
    }
    for (int i : pr.members) {
      const Member& m = replicas_[i];
      for (size_t k = 0; k < m.history.size(); ++k) {
        if (m.history[k].phase == ReplicaPhase::kStopped) continue;
        const SimTime a = std::max(m.history[k].at, measure_from_);
        const SimTime b = std::min(k + 1 < m.history.size() ? m.history[k + 1].at : to, to);
        if (b > a) s.replica_seconds += TimeToSeconds(b - a);
      }
    }
  }
  if (!any) return s;
  std::stable_sort(changes.begin(), changes.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  int cur = 0;
  size_t k = 0;
  for (; k < changes.size() && changes[k].first <= measure_from_; ++k) cur += changes[k].second;
  s.replicas_min = s.replicas_max = cur;
  while (k < changes.size() && changes[k].first <= to) {
    const SimTime at = changes[k].first;
    for (; k < changes.size() && changes[k].first == at; ++k) cur += changes[k].second;
    s.replicas_min = std::min(s.replicas_min, cur);
    s.replicas_max = std::max(s.replicas_max, cur);
  }
  return s;
}

std::optional<double> Cluster::UsdPerHour(int i) const {
  const Member& m = replicas_[i];
  const int pool = m.replica->options().pool;
  const PoolRun* pr = pool < static_cast<int>(pools_.size()) && !pools_[pool].members.empty() ? &pools_[pool] : nullptr;
  const bool reserved = pr && pr->config.price.name == "reserved";
  if (m.view.phase_ == ReplicaPhase::kStopped && !reserved) return 0.0;
  const PriceClass* c = ClassOf(m, m.cls);
  const std::optional<double> usd = c ? c->usd_per_gpu_hour : m.usd_per_gpu_hour;
  if (!usd) return std::nullopt;
  double rate = *usd * m.gpus;
  if (m.view.phase_ == ReplicaPhase::kWarm && pr && !reserved) rate *= pr->config.warm_cost_fraction;
  return rate;
}

}  // namespace fleetsim
