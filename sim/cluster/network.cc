#include "sim/cluster/network.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/status.h"

namespace fleetsim {

Network::Network(Simulation& sim, const Topology& topology, double efficiency)
    : sim_(sim), topo_(topology), efficiency_(efficiency), links_(topology.num_links()) {
  FLEETSIM_CHECK(efficiency > 0 && efficiency <= 1);
  cap_.assign(topology.num_links(), 0);
  unfrozen_.assign(topology.num_links(), 0);
}

void Network::Send(int src, int dst, double bytes, std::function<void()> done) {
  const Topology::Path& path = topo_.PathBetween(src, dst);
  if (path.links.empty() || bytes <= 0) {
    sim_.After(std::llround(path.latency_ns), std::move(done));
    return;
  }
  Advance();
  size_t f;
  if (!free_.empty()) {
    f = free_.back();
    free_.pop_back();
  } else {
    f = flows_.size();
    flows_.emplace_back();
  }
  Flow& flow = flows_[f];
  flow.links = path.links;
  flow.left = bytes;
  flow.rate = 0;
  flow.latency_ns = path.latency_ns;
  flow.done = std::move(done);
  flow.active = true;
  ++active_;
  for (Topology::LinkId l : flow.links) {
    LinkState& s = links_[static_cast<size_t>(l)];
    if (s.flows++ == 0) s.busy_since = sim_.now();
    s.used = true;
  }
  Recompute();
}

void Network::Advance() {
  const SimTime now = sim_.now();
  const double dt = static_cast<double>(now - updated_);
  updated_ = now;
  if (dt <= 0) return;
  for (Flow& f : flows_)
    if (f.active) f.left = std::max(0.0, f.left - f.rate * dt);
}

void Network::Recompute() {
  // Progressive filling over the links the flows use.
  touched_.clear();
  for (const Flow& f : flows_) {
    if (!f.active) continue;
    for (Topology::LinkId l : f.links) {
      const size_t k = static_cast<size_t>(l);
      if (unfrozen_[k] == 0) {
        touched_.push_back(l);
        cap_[k] = topo_.link(l).gbps * efficiency_;
      }
      ++unfrozen_[k];
    }
  }
  std::vector<bool> frozen(flows_.size(), false);
  int64_t left = active_;
  while (left > 0) {
    // The tightest link: least bandwidth left per flow not yet fixed.
    double share = std::numeric_limits<double>::infinity();
    Topology::LinkId tight = -1;
    for (Topology::LinkId l : touched_) {
      const size_t k = static_cast<size_t>(l);
      if (unfrozen_[k] == 0) continue;
      const double s = cap_[k] / unfrozen_[k];
      if (s < share) {
        share = s;
        tight = l;
      }
    }
    FLEETSIM_CHECK(tight >= 0);
    for (size_t i = 0; i < flows_.size(); ++i) {
      Flow& f = flows_[i];
      if (!f.active || frozen[i] || std::find(f.links.begin(), f.links.end(), tight) == f.links.end()) continue;
      frozen[i] = true;
      f.rate = share;
      --left;
      for (Topology::LinkId l : f.links) {
        const size_t k = static_cast<size_t>(l);
        cap_[k] = std::max(0.0, cap_[k] - share);
        --unfrozen_[k];
      }
    }
  }
  // The next flow to drain.
  double soonest = std::numeric_limits<double>::infinity();
  for (const Flow& f : flows_)
    if (f.active) soonest = std::min(soonest, f.left / f.rate);
  if (next_set_) sim_.Cancel(next_);
  next_set_ = false;
  if (active_ == 0) return;
  next_ = sim_.At(sim_.now() + std::max<SimTime>(0, std::llround(std::ceil(soonest))), [this] { OnNextFinish(); });
  next_set_ = true;
}

void Network::OnNextFinish() {
  next_set_ = false;
  Advance();
  // Every flow drained by now (within a byte's rounding) finishes.
  for (size_t i = 0; i < flows_.size(); ++i)
    if (flows_[i].active && flows_[i].left <= 0.5) Finish(i);
  Recompute();
}

void Network::Finish(size_t i) {
  Flow& f = flows_[i];
  f.active = false;
  --active_;
  for (Topology::LinkId l : f.links) {
    LinkState& s = links_[static_cast<size_t>(l)];
    if (--s.flows == 0) s.busy += sim_.now() - s.busy_since;
  }
  sim_.After(std::llround(f.latency_ns), std::move(f.done));
  f.done = nullptr;
  free_.push_back(i);
}

SimTime Network::LinkBusy(Topology::LinkId id) const {
  const LinkState& s = links_[static_cast<size_t>(id)];
  return s.busy + (s.flows > 0 ? sim_.now() - s.busy_since : 0);
}

std::vector<Topology::LinkId> Network::UsedLinks() const {
  std::vector<Topology::LinkId> out;
  for (size_t k = 0; k < links_.size(); ++k)
    if (links_[k].used) out.push_back(static_cast<Topology::LinkId>(k));
  return out;
}

}  // namespace fleetsim
