// Built-in failure models.
#include <algorithm>
#include <cmath>

#include "sim/cluster/reliability.h"

namespace fleetsim {

const char* RecoveryName(Recovery r) {
  switch (r) {
    case Recovery::kReplace: return "replace";
    case Recovery::kRepair: return "repair";
    case Recovery::kNone: return "none";
  }
  return "replace";
}

namespace {

// The keys a model reads; any other key set in the spec is an error.
Status OnlyKeys(const FailureSpec& s, std::initializer_list<std::string_view> keys) {
  auto check = [&](bool set, std::string_view key) -> Status {
    if (!set || std::find(keys.begin(), keys.end(), key) != keys.end()) return Status::Ok();
    std::string valid;
    for (std::string_view k : keys) valid += (valid.empty() ? "" : ", ") + std::string(k);
    return Status::Invalid(s.path + "." + std::string(key) + ": not a key of failure model \"" + s.model +
                           "\" (its keys: model, " + valid + ")");
  };
  for (const auto& [set, key] : std::initializer_list<std::pair<bool, std::string_view>>{
           {s.mtbf_hours.has_value(), "mtbf_hours"}, {s.mttr_s.has_value(), "mttr_s"}, {s.at_s.has_value(), "at_s"},
           {s.node.has_value(), "node"}, {s.replica.has_value(), "replica"}, {s.rack.has_value(), "rack"},
           {!s.zone.empty(), "zone"}, {!s.kind.empty(), "kind"}})
    FLEETSIM_RETURN_IF_ERROR(check(set, key));
  return Status::Ok();
}

std::optional<SimTime> RepairOf(const FailureSpec& s) {
  if (!s.mttr_s) return std::nullopt;
  return SecondsToTime(*s.mttr_s);
}

// Units (GPUs' replicas, nodes, racks, zones) that fail independently, each
// as a Poisson process: a replica's GPUs at gpus / MTBF (each GPU's own
// catalogue figure when the model gives none), every other unit at
// 1 / MTBF. One pending event for the whole fleet: the superposition is a
// Poisson process of the summed rate, and each failure hits a unit chosen
// in proportion to its rate. A unit already down when its turn comes stays
// as it is (Fail leaves it).
class PoissonFailures : public FailureModel {
 public:
  enum class Unit { kReplicaGpus, kReplica, kNode, kRack, kZone };
  // mtbf_hours unset: kReplicaGpus only, each replica's GPU's own figure.
  PoissonFailures(Unit unit, std::optional<double> mtbf_hours, std::optional<SimTime> repair, FailureKind kind,
                  std::string cause, Rng rng)
      : unit_(unit), mtbf_hours_(mtbf_hours), repair_(repair), kind_(kind), cause_(std::move(cause)), rng_(rng) {}

  void Start(FailureTarget& t) override {
    target_ = &t;
    int n = 0;
    switch (unit_) {
      case Unit::kReplicaGpus:
      case Unit::kReplica: n = t.num_replicas(); break;
      case Unit::kNode: n = t.num_nodes(); break;
      case Unit::kRack: n = t.num_racks(); break;
      case Unit::kZone: n = static_cast<int>(t.zones().size()); break;
    }
    double total = 0;  // failures per hour
    for (int i = 0; i < n; ++i) {
      if (unit_ == Unit::kReplicaGpus) {
        total += t.replica_gpus(i) / mtbf_hours_.value_or(t.replica_gpu_hours_per_failure(i));
      } else {
        total += 1.0 / *mtbf_hours_;
      }
      cumulative_.push_back(total);
    }
    if (!(total > 0)) return;
    mean_gap_s_ = 3600.0 / total;
    Next();
  }

 private:
  void Next() {
    const double gap = rng_.Exponential(mean_gap_s_);
    // Beyond any run (the scenario bounds keep runs under 1e7 s).
    if (!(gap < 1e9)) return;
    target_->At(target_->now() + SecondsToTime(gap), [this] {
      const double x = rng_.Uniform() * cumulative_.back();
      const int u = static_cast<int>(std::min<size_t>(
          std::upper_bound(cumulative_.begin(), cumulative_.end(), x) - cumulative_.begin(), cumulative_.size() - 1));
      target_->Fail(ReplicasOf(u), kind_, repair_, cause_);
      Next();
    });
  }

  std::vector<int> ReplicasOf(int u) const {
    switch (unit_) {
      case Unit::kReplicaGpus:
      case Unit::kReplica: return {u};
      case Unit::kNode: return target_->node_replicas(u);
      case Unit::kRack: return NodesReplicas(target_->rack_nodes(u));
      case Unit::kZone: return NodesReplicas(target_->zone_nodes(u));
    }
    return {};
  }
  std::vector<int> NodesReplicas(const std::vector<int>& nodes) const {
    std::vector<int> out;
    for (int n : nodes)
      for (int r : target_->node_replicas(n)) out.push_back(r);
    return out;
  }

  Unit unit_;
  std::optional<double> mtbf_hours_;
  std::optional<SimTime> repair_;
  FailureKind kind_;
  std::string cause_;
  Rng rng_;
  FailureTarget* target_ = nullptr;
  std::vector<double> cumulative_;
  double mean_gap_s_ = 0;
};

// A scheduled failure of one replica, node, rack or zone.
class Drill final : public FailureModel {
 public:
  explicit Drill(const FailureSpec& s) : spec_(s) {}

  void Start(FailureTarget& t) override {
    target_ = &t;
    t.At(SecondsToTime(*spec_.at_s), [this] {
      std::vector<int> replicas;
      auto add_node = [&](int n) {
        for (int r : target_->node_replicas(n)) replicas.push_back(r);
      };
      if (spec_.replica) replicas.push_back(static_cast<int>(*spec_.replica));
      if (spec_.node) add_node(static_cast<int>(*spec_.node));
      if (spec_.rack)
        for (int n : target_->rack_nodes(static_cast<int>(*spec_.rack))) add_node(n);
      if (!spec_.zone.empty()) {
        const std::vector<std::string>& zones = target_->zones();
        const int z = static_cast<int>(std::find(zones.begin(), zones.end(), spec_.zone) - zones.begin());
        for (int n : target_->zone_nodes(z)) add_node(n);
      }
      target_->Fail(replicas, spec_.kind == "crash" ? FailureKind::kCrash : FailureKind::kHang, RepairOf(spec_),
                    "drill");
    });
  }

 private:
  FailureSpec spec_;
  FailureTarget* target_ = nullptr;
};

Status NeedMtbf(const FailureSpec& s) {
  if (!s.mtbf_hours) return Status::Invalid(s.path + ".mtbf_hours: required by failure model \"" + s.model + "\"");
  return Status::Ok();
}

}  // namespace

void RegisterBuiltinFailureModels(FailureModelRegistry* registry) {
  registry->Add("gpu",
                "each GPU fails independently (exponential, mtbf_hours per GPU; default its catalogue figure, "
                "Llama 3's one per 50,677 GPU-hours for H100) and hangs its replica",
                [](const FailureSpec& s, Rng rng, std::unique_ptr<FailureModel>* out) {
                  FLEETSIM_RETURN_IF_ERROR(OnlyKeys(s, {"mtbf_hours", "mttr_s"}));
                  *out = std::make_unique<PoissonFailures>(PoissonFailures::Unit::kReplicaGpus, s.mtbf_hours,
                                                           RepairOf(s), FailureKind::kHang, "gpu", rng);
                  return Status::Ok();
                });
  // Hardware that hangs its replicas, with no default rate.
  auto hangs = [registry](const char* name, const char* description, PoissonFailures::Unit unit) {
    registry->Add(name, description, [name, unit](const FailureSpec& s, Rng rng, std::unique_ptr<FailureModel>* out) {
      FLEETSIM_RETURN_IF_ERROR(OnlyKeys(s, {"mtbf_hours", "mttr_s"}));
      FLEETSIM_RETURN_IF_ERROR(NeedMtbf(s));
      *out = std::make_unique<PoissonFailures>(unit, *s.mtbf_hours, RepairOf(s), FailureKind::kHang, name, rng);
      return Status::Ok();
    });
  };
  hangs("node", "whole nodes fail (exponential, mtbf_hours per node), hanging every replica on them",
        PoissonFailures::Unit::kNode);
  hangs("rack", "correlated outages of a rack's nodes (exponential, mtbf_hours per rack)", PoissonFailures::Unit::kRack);
  hangs("zone", "correlated outages of a zone's nodes (exponential, mtbf_hours per zone)", PoissonFailures::Unit::kZone);
  registry->Add("engine_crash",
                "the engine process dies (exponential, mtbf_hours per replica): noticed at once, restarted on the "
                "same GPUs",
                [](const FailureSpec& s, Rng rng, std::unique_ptr<FailureModel>* out) {
                  FLEETSIM_RETURN_IF_ERROR(OnlyKeys(s, {"mtbf_hours"}));
                  FLEETSIM_RETURN_IF_ERROR(NeedMtbf(s));
                  *out = std::make_unique<PoissonFailures>(PoissonFailures::Unit::kReplica, *s.mtbf_hours,
                                                           std::nullopt, FailureKind::kCrash, "engine_crash", rng);
                  return Status::Ok();
                });
  registry->Add("drill",
                "a scheduled failure: at_s, one of replica, node, rack or zone; kind hang (default) or crash",
                [](const FailureSpec& s, Rng, std::unique_ptr<FailureModel>* out) {
                  FLEETSIM_RETURN_IF_ERROR(OnlyKeys(s, {"at_s", "mttr_s", "node", "replica", "rack", "zone", "kind"}));
                  if (!s.at_s) return Status::Invalid(s.path + ".at_s: required by failure model \"drill\"");
                  const int targets = s.node.has_value() + s.replica.has_value() + s.rack.has_value() + !s.zone.empty();
                  if (targets != 1)
                    return Status::Invalid(s.path + ": a drill names exactly one of replica, node, rack or zone");
                  if (!s.kind.empty() && s.kind != "hang" && s.kind != "crash")
                    return Status::Invalid(s.path + ".kind: expected \"hang\" or \"crash\", got \"" + s.kind + "\"");
                  *out = std::make_unique<Drill>(s);
                  return Status::Ok();
                });
}

}  // namespace fleetsim
