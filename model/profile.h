// Profile: measured operator times on one device, the input of
// ProfilePerfModel (model/profile_perf_model.h). A profile is a JSON file
// ("format": "fleetsim-profile-1"), written by `fleetsim calibrate` and its
// importers (calibrate/), loaded here into plain typed tables.
//
// File layout:
//   {"format": "fleetsim-profile-1", "device": "H100-SXM", "source": "...",
//    "date": "...", "model": "Llama-2-7B" | null,
//    "ops": {"gemm":        {"tp": {"1": [[tokens, ns], ...], "2": [...]}},
//            "elementwise": {"tp": {...}},
//            "embedding":   {"tp": {...}}},
//    "collectives": {"all_reduce": {"intra_node": {"8": [[bytes, ns], ...]}},
//                    "send_recv": {"intra_node": [[bytes, ns], ...],
//                                  "inter_node": [[bytes, ns], ...]}},
//    "notes": ["...", ...]}
// gemm and elementwise are per layer (all of that kind's ops summed) and per
// GPU of a tp shard, as a function of the tokens of the iteration;
// embedding is the same but once per iteration. "model" names the model the
// compute ops were measured for; it is null only when "ops" is empty.
//
// Sections written by `fleetsim calibrate` (all optional; an importer of
// another project's data leaves them out):
//   "device_info":  the device as the backend described it (name, clocks,
//                   memory, driver and library versions) and the ceilings
//                   the calibration measured (best GEMM TFLOP/s per dtype,
//                   device copy and host-link bandwidths);
//   "calibration":  how it was measured (backend, grid, repetitions, wall
//                   time);
//   "measurements": every timed shape, per "<op>.<dtype>", as a table with
//                   named columns ending in median_ns and spread;
//   "fits":         per "<op>.<dtype>", a FittedCurve (model/fitted_curve.h)
//                   with its cross-validated error: the "fitted" source;
//   "attention":    per attention kind, the achieved fraction of roofline
//                   and whether the measured kernel is used or the roofline
//                   with a published efficiency is (never our own untuned
//                   kernel's speed reported as the hardware's);
//   "links":        measured copies per link and direction, with their
//                   alpha-beta fit; "collective_checks": ring all-reduces
//                   built from those copies, measured against the alpha-beta
//                   prediction. Under mpirun (one rank per node) also the
//                   links between ranks, host-staged and device to device;
//   "topology":     how many ranks (nodes) were measured, and which of the
//                   topology's links were measured and which are datasheet
//                   figures.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "model/fitted_curve.h"
#include "model/hardware.h"

namespace fleetsim {

// A measured time as a function of one variable (tokens or bytes).
//
// Interpolation contract (At):
//   - between grid points: piecewise-linear;
//   - below the first point: the first point's time (a kernel does not get
//     faster than its launch);
//   - above the last point: linear extrapolation from the last two points,
//     the roofline-shaped tail where time grows with work; the slope is
//     clamped at zero so a noisy final pair never predicts less time for
//     more work. A one-point curve is constant.
// REQUIRES for At: !empty(). Loading checks x strictly increasing and every
// time finite and non-negative.
struct ProfileCurve {
  std::vector<double> x;   // measured variable, strictly increasing
  std::vector<double> ns;  // time at each x, nanoseconds

  bool empty() const { return x.empty(); }
  // O(log n), no allocation: called for every simulated iteration.
  double At(double v) const;
  bool operator==(const ProfileCurve& o) const { return x == o.x && ns == o.ns; }
};

// The device a calibration ran on, as its backend described it, plus the
// ceilings the calibration measured. Zero where unknown or not measured.
struct ProfileDeviceInfo {
  std::string backend;   // "cuda", "cpu"
  std::string name;      // as the driver says, "NVIDIA H200"
  std::string software;  // driver and library versions
  int64_t memory_bytes = 0;
  int compute_units = 0;
  int compute_capability = 0;
  int sm_clock_khz = 0;
  int memory_clock_khz = 0;
  int memory_bus_width_bits = 0;
  int64_t l2_cache_bytes = 0;
  // Measured ceilings: the best GEMM throughput seen on the grid, per dtype
  // name (TFLOP/s; a floor of the true peak), a large device-to-device copy
  // (bytes read + written per ns, i.e. GB/s) and host links one way (GB/s).
  std::map<std::string, double> gemm_tflops;
  double copy_gbps = 0;
  double h2d_gbps = 0;
  double d2h_gbps = 0;
  bool operator==(const ProfileDeviceInfo& o) const;
};

// How a calibration was run.
struct ProfileCalibration {
  std::string backend;     // "cuda", "cpu"
  std::string grid;        // "quick", "full"
  std::vector<int> tp;     // tensor-parallel degrees measured
  int warmup = 0;
  int repetitions = 0;
  bool flush_cache = false;
  double wall_seconds = 0;
  bool operator==(const ProfileCalibration& o) const;
};

// Timed shapes of one op and dtype: `fields` names the columns, the last
// two of which are "median_ns" and "spread" (interquartile range / median).
struct MeasurementTable {
  std::vector<std::string> fields;
  std::vector<std::vector<double>> rows;  // each of fields.size() numbers
  bool operator==(const MeasurementTable& o) const { return fields == o.fields && rows == o.rows; }
};

// Whether an attention kind is timed from its measurements or from the
// roofline with a published efficiency. The measured kernel is used only
// when it reaches `threshold` of its roofline (at 100% of the ceilings
// named in `ceiling`): fleetsim's own kernels are plain, and a slow one
// must not be reported as the hardware's speed.
struct AttentionDecision {
  double achieved_fraction = 0;  // median over measured shapes of roofline_ns / measured_ns
  double threshold = 0;          // fraction required to use the measurements
  std::string ceiling;           // what the roofline was computed against
  bool use_measured = false;
  double published_efficiency = 0;  // fraction of roofline applied otherwise
  std::string published_source;     // where that fraction comes from
  bool operator==(const AttentionDecision& o) const;
};

// One measured link, one direction.
struct ProfileLink {
  std::string src, dst;  // "host", "device0", ...; between ranks "rank0", "rank1", ...
  // "h2d", "d2h", "peer"; between ranks (calibrate/rank_links.h)
  // "rank_staged" (device -> host -> MPI -> host -> device) and
  // "rank_direct" (MPI on device memory: CUDA-aware MPI, or the CPU backend)
  std::string kind;
  double alpha_ns = 0;   // fitted latency
  double gbps = 0;       // fitted bandwidth, bytes per ns
  ProfileCurve points;   // x = bytes, median ns
  bool operator==(const ProfileLink& o) const;
};

// A ring all-reduce built from peer copies, measured and predicted.
struct CollectiveCheck {
  std::string collective;  // "ring_all_reduce"
  int ranks = 0;
  double bytes = 0;         // per rank
  double measured_ns = 0;   // median
  double predicted_ns = 0;  // alpha-beta from the measured links
  // The same plus the reduction's arithmetic: the p-1 adds of one chunk
  // each rank runs, timed on the device (0 when not measured). Links alone
  // miss it; on a CPU it dominates.
  double predicted_with_reduce_ns = 0;
  bool operator==(const CollectiveCheck& o) const;
};

// What a calibration measured of the topology, and what it left to the
// datasheet (each a sentence naming the link class).
struct ProfileTopology {
  int ranks = 1;                      // MPI ranks (one per node) that took part
  std::vector<std::string> measured;
  std::vector<std::string> datasheet;
  bool operator==(const ProfileTopology& o) const {
    return ranks == o.ranks && measured == o.measured && datasheet == o.datasheet;
  }
};

struct Profile {
  std::string device;                 // hardware catalogue name, "H100-SXM"
  std::string source;                 // where the measurements come from
  std::string date;                   // when measured or converted (free text)
  std::optional<std::string> model;   // model the compute ops were measured for
  // Compute ops by tensor-parallel degree (per GPU of the shard).
  std::map<int, ProfileCurve> gemm;         // per layer, x = tokens
  std::map<int, ProfileCurve> elementwise;  // per layer, x = tokens
  std::map<int, ProfileCurve> embedding;    // per iteration, x = tokens
  // Collectives within one node, by number of workers; x = bytes.
  std::map<int, ProfileCurve> all_reduce_intra_node;
  ProfileCurve send_recv_intra_node;  // x = bytes
  ProfileCurve send_recv_inter_node;  // x = bytes
  std::vector<std::string> notes;

  // Written by `fleetsim calibrate` (see the file layout above).
  std::optional<ProfileDeviceInfo> device_info;
  std::optional<ProfileCalibration> calibration;
  std::map<std::string, MeasurementTable> measurements;  // "<op>.<dtype>"
  std::map<std::string, FittedCurve> fits;               // "<op>.<dtype>"
  std::map<std::string, AttentionDecision> attention;    // "attention_prefill", "attention_decode"
  std::vector<ProfileLink> links;
  std::vector<CollectiveCheck> collective_checks;
  std::optional<ProfileTopology> topology;

  // The pace-setting peer link over all measured device pairs: the lowest
  // bandwidth and the highest latency (a ring moves at its slowest link's
  // speed), and how many devices the peer links join. False when the
  // profile measured no peer link.
  bool SlowestPeerLink(double* alpha_ns, double* gbps, int* devices) const;

  bool has_compute_ops() const { return !gemm.empty() || !elementwise.empty() || !embedding.empty(); }
  bool operator==(const Profile& o) const;
};

// One layer's elementwise time as fleetsim's calibration composes it from
// its own unfused kernels: two RMSNorms, two residual adds, RoPE on Q and K
// and SiLU·up (over the k routed copies of each token for MoE). The
// calibrator's per-layer curves and the fitted source both sum this way.
inline double ElementwiseLayerNs(double rms_norm, double residual_add, double rope, double silu_mul) {
  return 2 * rms_norm + 2 * residual_add + rope + silu_mul;
}

// A device a calibration measured but the hardware catalogue does not list
// (a CPU, a new GPU), described from the profile's device_info so that a
// scenario can simulate it: name = profile.device; bf16/fp16 and fp32 peaks
// = the best GEMM measured (a floor of the true peak); memory bandwidth =
// the device copy; host link = the slower measured direction; peer links
// from the measured peer copies (a "switch" of the slowest one), or none.
// No prices (every pricing class null). Fails, naming what is missing,
// without device_info or its measured ceilings.
Status GpuSpecFromProfile(const Profile& profile, GpuSpec* out);

// Parses a profile. `origin` (the file name) prefixes every error, which
// names the JSON path: "p.json: ops.gemm.tp.1[3]: x must increase".
// Unknown keys are errors.
Status LoadProfile(std::string_view text, const std::string& origin, Profile* out);
// Reads and parses a file; errors name `path`.
Status LoadProfileFile(const std::string& path, Profile* out);

// Serialises deterministically: keys sorted, one point per line, numbers in
// their shortest round-trip form, so LoadProfile(WriteProfileJson(p)) == p.
Status WriteProfileJson(const Profile& profile, std::string* out);

}  // namespace fleetsim
