// Reliability: how a fleet's replicas fail, how the fleet notices, and how
// it recovers. The typed settings a scenario's "fleet" and "failures"
// sections hold (sim/scenario parses them), and the failure models,
// registered by name like routers and schedulers.
//
// Defaults are published figures, each named where it is set: Ray Serve's
// health checks, Envoy's outlier detection, retry policy and retry budget,
// and Meta's Llama 3 failure rate (docs/reliability.md gives the sources and
// says what each covers, and which defaults are estimates).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/cluster/registry.h"
#include "sim/engine/rng.h"
#include "sim/engine/time.h"

namespace fleetsim {

// Active health checks (Ray Serve's defaults: health_check_period_s 10,
// health_check_timeout_s 30, three consecutive failures). A replica's checks
// start every interval_s from when it became ready; a check a hung replica
// does not answer fails timeout_s after it started, and the next one starts
// then (or interval_s after the previous start, if later). The replica is
// removed from routing when `unhealthy_threshold` checks in a row fail.
struct HealthCheckSpec {
  double interval_s = 10;
  double timeout_s = 30;
  int unhealthy_threshold = 3;
};

// Passive outlier ejection in the router (Envoy's outlier detection:
// consecutive_5xx 5, interval 10 s, base_ejection_time 30 s,
// max_ejection_time 300 s, max_ejection_percent 10). A replica whose
// requests fail `consecutive_failures` times in a row is ejected at once
// for base_ejection_s x the times it has been ejected (at most
// max_ejection_s), and returns at the first sweep (every interval_s) after
// that. At most max_ejection_percent of a model's replicas are ejected at a
// time, but always at least one.
struct OutlierEjectionSpec {
  int consecutive_failures = 5;
  double interval_s = 10;
  double base_ejection_s = 30;
  double max_ejection_s = 300;
  double max_ejection_percent = 10;
};

// Retries of requests a failed replica let go of (Envoy's retry policy and
// retry budget: num_retries 1, back-off base 25 ms and at most 10 x base,
// fully jittered; budget 20% of active requests, at least 3 retries). A
// request that has streamed a token is never retried: it fails to the
// client.
struct RetrySpec {
  int max_retries = 1;
  double base_backoff_ms = 25;
  double max_backoff_ms = 250;
  double budget_percent = 20;
  int min_retry_concurrency = 3;
};

// What happens to a replica whose hardware failed, once the fleet knows:
// kReplace provisions a replacement (provision + cold start); kRepair waits
// for the failure's own repair time, then cold-starts on the repaired
// hardware; kNone stops it for good (its GPUs are given back).
enum class Recovery { kReplace, kRepair, kNone };
const char* RecoveryName(Recovery r);

// How long a replica takes to come up (DOMAIN.md, Operations): a
// replacement waits provision_s (a machine, its image pulled), then every
// start — replacement, repair, restart after a crash or a rolling restart —
// takes container_start_s + the replica's weight bytes per GPU / the
// weight load bandwidth + warmup_s. The bandwidth is weight_load_gb_per_s
// when given, else the weight source's (WeightLoadGbPerS). Reserved
// machines are held already: they skip provision_s.
enum class WeightSource {
  kDisk,     // the safetensors loader from local disk: 16 GB in 48 s, 0.33 GB/s (Run:ai Model Streamer's comparison, A10G)
  kNetwork,  // a streaming loader from object storage: 16 GB in 7.5-14 s; the slow end, 16/14 = 1.14 GB/s (ibid.)
  kPeer,     // from a GPU already serving, over the scale-out network: the GPU's NIC bandwidth per direction
};
struct ColdStartSpec {
  double provision_s = 600;        // estimate: image pull 5-6 min + extraction 3-4 min (BentoML), machine ready
  double container_start_s = 120;  // "start ~2 min" (BentoML, Llama-3.1-8B)
  WeightSource weight_source = WeightSource::kDisk;
  std::optional<double> weight_load_gb_per_s;  // overrides the source's bandwidth
  double warmup_s = 30;            // estimate: memory profiling and CUDA graph capture
  // Provisioning by pricing class ("on_demand", "reserved", "spot"), where
  // it differs from provision_s; unset: provision_s, and 0 for reserved
  // machines (held already).
  std::map<std::string, double, std::less<>> provision_s_by_class;
};
// Seconds to provision a machine of pricing class `cls`.
inline double ProvisionS(const ColdStartSpec& cs, std::string_view cls) {
  if (auto it = cs.provision_s_by_class.find(cls); it != cs.provision_s_by_class.end()) return it->second;
  return cls == "reserved" ? 0.0 : cs.provision_s;
}
// GB/s a replica's GPU loads its weights at: the override, else the
// source's figure (kPeer: `nic_gb_per_s`, the GPU's scale-out NIC, or the
// network figure when the catalogue has none).
inline double WeightLoadGbPerS(const ColdStartSpec& cs, double nic_gb_per_s) {
  if (cs.weight_load_gb_per_s) return *cs.weight_load_gb_per_s;
  switch (cs.weight_source) {
    case WeightSource::kDisk: return 0.33;
    case WeightSource::kNetwork: return 16.0 / 14.0;
    case WeightSource::kPeer: return nic_gb_per_s > 0 ? nic_gb_per_s : 16.0 / 14.0;
  }
  return 0.33;
}

// A rolling restart: `batch` replicas of `pool` at a time, each drained
// first (no new requests; at most drain_timeout_s for those it holds, the
// rest are let go of as on a failure), restarted (a cold start without
// provisioning), and back before the next batch starts.
struct RollingRestartSpec {
  std::string path;  // JSON path, for messages
  std::string pool;
  double at_s = 0;
  int batch = 1;
  double drain_timeout_s = 60;
};

// One entry of a scenario's "failures": a failure model by name, with the
// keys that model reads (its factory refuses the others).
struct FailureSpec {
  std::string path;   // "failures[0]", for messages
  std::string model;  // registry name
  std::optional<double> mtbf_hours, mttr_s, at_s;
  std::optional<int64_t> node, replica, rack;
  std::string zone;
  std::string kind;   // drills: "hang" or "crash"
};

// Everything the fleet does about failures.
struct ReliabilitySpec {
  HealthCheckSpec health_check;
  std::optional<OutlierEjectionSpec> outlier_ejection;
  std::optional<RetrySpec> retries;
  // Circuit breaker per replica (Envoy's max_requests): a replica holding
  // this many requests takes no more; when every ready replica of a model
  // is full, the request is turned away ("circuit_open"). Unset: none.
  std::optional<int64_t> max_requests_per_replica;
  // A request held by a replica that stopped answering (a hang) fails after
  // this long without a token (Envoy's route timeout, 15 s).
  double request_timeout_s = 15;
  Recovery recovery = Recovery::kReplace;
  ColdStartSpec cold_start;
  std::vector<FailureSpec> failures;
  std::vector<RollingRestartSpec> rolling_restarts;
  // Anything configured that can take a replica down.
  bool active() const { return !failures.empty() || !rolling_restarts.empty(); }
};

// ---- failure models ----

// How a replica goes down. kHang: the process lives but answers nothing (a
// failed GPU under it, a node or rack gone): noticed by health checks or
// outlier ejection, its requests wait until then. kCrash: the process dies
// and the fleet knows at once (Ray Serve marks a dead actor unhealthy
// immediately); the GPUs are fine.
enum class FailureKind { kHang, kCrash };

// What a failure model sees of the fleet and may do to it: the placement
// (nodes in pool order, racks, zones) and Fail.
class FailureTarget {
 public:
  virtual ~FailureTarget() = default;
  virtual int num_replicas() const = 0;
  virtual int replica_gpus(int replica) const = 0;
  // GPU-hours per failure of one of the replica's GPUs when a model gives
  // none: its GPU's published figure (the hardware catalogue's "failures"),
  // else kLlama3GpuHoursPerInterruption.
  virtual double replica_gpu_hours_per_failure(int replica) const = 0;
  virtual int num_nodes() const = 0;
  virtual const std::vector<int>& node_replicas(int node) const = 0;
  virtual int num_racks() const = 0;
  virtual const std::vector<int>& rack_nodes(int rack) const = 0;
  virtual const std::vector<std::string>& zones() const = 0;
  virtual const std::vector<int>& zone_nodes(int zone) const = 0;
  virtual SimTime now() const = 0;
  virtual void At(SimTime t, std::function<void()> fn) = 0;
  // `replicas` fail together now: one failure event, named `cause`. A
  // replica already down is left as it is. `repair`: how long until the
  // hardware is back (Recovery::kRepair); unset: the fleet's cold start.
  virtual void Fail(const std::vector<int>& replicas, FailureKind kind, std::optional<SimTime> repair,
                    std::string_view cause) = 0;
};

class FailureModel {
 public:
  virtual ~FailureModel() = default;
  // Schedules the model's failures on `target`, which outlives the model.
  virtual void Start(FailureTarget& target) = 0;
};

// A failure model gets its own random stream ("failures/<index>").
using FailureModelFactory = std::function<Status(const FailureSpec& spec, Rng rng, std::unique_ptr<FailureModel>* out)>;
using FailureModelRegistry = Registry<FailureModelFactory>;

void RegisterBuiltinFailureModels(FailureModelRegistry* registry);

// Meta's Llama 3 405B pre-training: 419 unexpected interruptions in 54 days
// on 16,384 H100s (Dubey et al., "The Llama 3 Herd of Models", 2024,
// table 5): 16,384 x 54 x 24 / 419 GPU-hours per interruption. The H100's
// catalogue entry carries it with its source; GPUs without a figure of
// their own borrow it (the run warns).
inline constexpr double kLlama3GpuHoursPerInterruption = 16384.0 * 54 * 24 / 419;

}  // namespace fleetsim
