#include "sim/cluster/cluster.h"

#include <algorithm>

#include "sim/cluster/router.h"

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
  }
  return "stopped";
}

Cluster::Cluster(Simulation& sim, RunObserver& observer, std::string default_model, SimTime measure_from)
    : sim_(sim), observer_(observer), default_model_(std::move(default_model)), measure_from_(measure_from) {}

Cluster::~Cluster() = default;

void Cluster::SetRouter(std::unique_ptr<Router> router) { router_ = std::move(router); }

void Cluster::Add(std::unique_ptr<Replica> replica, int gpus, std::optional<double> usd_per_gpu_hour,
                  ReplicaPhase phase) {
  FLEETSIM_CHECK(replica->options().index == size());
  Member m{std::move(replica), ReplicaView(nullptr), gpus, usd_per_gpu_hour, {}, 0};
  m.view = ReplicaView(m.replica.get());
  m.view.phase_ = phase;
  m.history.emplace_back(sim_.now(), phase);
  models_[m.replica->options().model]++;
  replicas_.push_back(std::move(m));
  RebuildReady();
}

void Cluster::SetPhase(int i, ReplicaPhase phase) {
  Member& m = replicas_[i];
  if (m.view.phase_ == phase) return;
  m.view.phase_ = phase;
  m.history.emplace_back(sim_.now(), phase);
  RebuildReady();
}

void Cluster::RebuildReady() {
  // Views live in replicas_, whose elements do not move once all are added;
  // rebuilt after every Add, so the pointers are always current.
  ready_.clear();
  for (const Member& m : replicas_)
    if (m.view.phase_ == ReplicaPhase::kReady) ready_[m.replica->options().model].push_back(&m.view);
}

void Cluster::Route(Request&& req) {
  const std::string& model = req.model.empty() ? default_model_ : req.model;
  auto it = ready_.find(model);
  if (it == ready_.end() || it->second.empty()) {
    observer_.OnArrival(req, -1);
    observer_.OnFinished(UnservedRecord(req, -1, sim_.now(), RequestStatus::kRejected,
                                        models_.count(model) ? "no_ready_replica" : "unknown_model"));
    return;
  }
  const std::vector<const ReplicaView*>& cands = it->second;
  const int target = cands[router_->Route(req, cands)]->index();
  replicas_[target].arrivals++;
  replicas_[target].replica->Submit(std::move(req));
}

int64_t Cluster::TakeArrivals(int i) {
  const int64_t n = replicas_[i].arrivals;
  replicas_[i].arrivals = 0;
  return n;
}

bool Cluster::Idle() const {
  for (const Member& m : replicas_)
    if (m.replica->outstanding() > 0 || m.replica->busy()) return false;
  return true;
}

void Cluster::ReportUnfinished(SimTime end, std::string_view reason) {
  for (Member& m : replicas_) m.replica->ReportUnfinished(end, reason);
}

Cluster::Usage Cluster::UsageUntil(SimTime to) const {
  Usage u;
  long double usd = 0;
  bool priced = true;
  for (const Member& m : replicas_) {
    // Time not stopped, within [measure_from, to).
    __int128 live = 0;
    for (size_t k = 0; k < m.history.size(); ++k) {
      if (m.history[k].second == ReplicaPhase::kStopped) continue;
      const SimTime a = std::max(m.history[k].first, measure_from_);
      const SimTime b = std::min(k + 1 < m.history.size() ? m.history[k + 1].first : to, to);
      if (b > a) live += b - a;
    }
    const __int128 gpu_ns = live * m.gpus;
    u.gpu_ns += gpu_ns;
    u.busy_gpu_ns += static_cast<__int128>(m.replica->busy_time()) * m.gpus;
    if (gpu_ns > 0) {
      if (m.usd_per_gpu_hour)
        usd += static_cast<long double>(gpu_ns) * static_cast<long double>(*m.usd_per_gpu_hour);
      else
        priced = false;
    }
  }
  if (priced) u.usd_gpu_ns = usd;
  return u;
}

}  // namespace fleetsim
