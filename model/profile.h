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
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

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

  bool has_compute_ops() const { return !gemm.empty() || !elementwise.empty() || !embedding.empty(); }
  bool operator==(const Profile& o) const;
};

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
