// ProfilePerfModel: iteration times from measured profiles (model/profile.h)
// where the profile has them, the roofline for everything else.
//
// Per iteration of T tokens on a tp shard:
//   layers x (gemm(T) + elementwise(T))          profile, per layer, at tp
//   + embedding(T)                               profile, once
//   + layers x 2 x all_reduce(T x hidden x 2 B)  profile, at tp workers (tp > 1)
//   + attention prefill/decode, CPU overhead, swap, lm_head and the logits
//     gather                                     roofline
// A kind the profile lacks for this tp (or worker count) is timed by the
// roofline instead, and Sources() says so. The final norm before the
// lm_head is not in a per-layer profile and is left out (one small kernel).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "model/profile.h"
#include "model/roofline.h"

namespace fleetsim {

class ProfilePerfModel final : public PerfModel {
 public:
  // Builds the model for one pool. `profile_name` is what Sources() reports
  // ("profile:<profile_name>", normally the file name). Refuses a profile
  // whose compute ops were measured for another model than `model` (their
  // times do not transfer), naming both, or one measured on another GPU
  // than `gpu`. REQUIRES: as RooflinePerfModel.
  static Status Create(const Profile& profile, const std::string& profile_name, const ModelSpec& model,
                       const GpuSpec& gpu, const ShardPlan& shard, const EngineSpec& engine,
                       const RooflineOptions& roofline, std::unique_ptr<ProfilePerfModel>* out);

  int64_t IterationNs(const BatchShape& shape) const override;
  std::vector<std::pair<std::string, std::string>> Sources() const override;

 private:
  ProfilePerfModel(const ModelSpec& model, const GpuSpec& gpu, const ShardPlan& shard, const EngineSpec& engine,
                   const RooflineOptions& roofline)
      : roofline_(model, gpu, shard, engine, roofline) {}

  RooflinePerfModel roofline_;
  // Curves for this shard's tp; null where the roofline times the kind.
  ProfileCurve gemm_, elementwise_, embedding_, all_reduce_;
  bool use_gemm_ = false, use_elementwise_ = false, use_all_reduce_ = false;
  double layers_ = 0;
  double all_reduce_bytes_per_token_ = 0;  // hidden x 2 bytes (bf16 activations)
  std::string source_;                      // "profile:<name>"
};

}  // namespace fleetsim
