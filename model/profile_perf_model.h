// ProfilePerfModel: iteration times from a profile (model/profile.h), each
// operator kind from the best source the profile offers:
//
//   1. "profile:<name>"  the model's own shapes as measured (ops.*: per layer,
//                        per tp, by tokens; collectives.all_reduce by bytes);
//                        only for the model and tp the profile measured;
//   2. "fitted:<name>"   the profile's fitted curves (fits.*), evaluated at
//                        this model's shapes: GEMMs by (m, n·k), elementwise
//                        ops by (tokens, width), prefill attention by
//                        (query-key pairs, heads·head_dim), decode
//                        attention by (KV tokens, kv_heads·head_dim,
//                        sequences); a 16-bit dtype the profile lacks
//                        from the other 16-bit one (same peak); the TP
//                        all-reduce from the measured peer links
//                        (alpha-beta ring, model/collectives.h) when the
//                        profile measured at least tp devices. Attention
//                        is fitted only where the profile says its kernel
//                        reached the stated fraction of roofline;
//   3. "roofline"        everything else (CPU overhead, swap, lm_head and
//                        logits gather, and the kinds above when the profile
//                        lacks them). Where the profile rejected its measured
//                        attention, the roofline uses the published
//                        efficiency the profile records (over the
//                        scenario's perf.attention_*_efficiency).
// MoE token permutation and combine are not calibrated and stay roofline.
//
// Per iteration of T tokens on a tp shard, per-layer kinds are multiplied
// by the layers. The final norm before the lm_head is not in a per-layer
// profile and is left out (one small kernel).
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
  // (normally the file name). Refuses a profile measured on another GPU
  // than `gpu` (naming both), and one measured for another model that has
  // no fitted curves (its per-model times do not transfer).
  // REQUIRES: as RooflinePerfModel.
  static Status Create(const Profile& profile, const std::string& profile_name, const ModelSpec& model,
                       const GpuSpec& gpu, const ShardPlan& shard, const EngineSpec& engine,
                       const RooflineOptions& roofline, std::unique_ptr<ProfilePerfModel>* out);

  int64_t IterationNs(const BatchShape& shape) const override;
  IterationSplit Split(const BatchShape& shape) const override;
  IterationParts Parts(const BatchShape& shape) const override;
  std::vector<std::pair<std::string, std::string>> Sources() const override;

 private:
  // The iteration's time, unrounded, and the roofline breakdown it corrects.
  // `parts`, when given, gets its parts.
  double TotalNs(const BatchShape& shape, RooflinePerfModel::Breakdown* b, IterationParts* parts = nullptr) const;
  enum class Source { kRoofline, kProfile, kFitted };

  ProfilePerfModel(const ModelSpec& model, const GpuSpec& gpu, const ShardPlan& shard, const EngineSpec& engine,
                   const RooflineOptions& roofline)
      : roofline_(model, gpu, shard, engine, roofline) {}

  double GemmLayerNs(double tokens) const;
  double ElementwiseNs(double tokens) const;  // all layers plus the embedding

  RooflinePerfModel roofline_;
  double kernel_time_scale_ = 1;  // RooflineOptions::kernel_time_scale
  std::string name_;
  ModelSpec model_;
  double layers_ = 0;
  Source gemm_ = Source::kRoofline, elementwise_ = Source::kRoofline, prefill_ = Source::kRoofline,
         decode_ = Source::kRoofline, all_reduce_ = Source::kRoofline;

  // profile: per-layer curves at this tp.
  ProfileCurve gemm_curve_, elementwise_curve_, embedding_curve_, all_reduce_curve_;
  // fitted: the curves and this model's shapes.
  FittedCurve gemm_fit_;
  int dense_gemms_ = 0;            // per layer, on all tokens
  double dense_gemm_scale_ = 0;    // sum of their n·k
  std::vector<double> expert_gemm_scales_;  // MoE: n·k of each expert product
  FittedCurve rms_fit_, residual_fit_, silu_fit_, rope_fit_, embedding_fit_;
  double hidden_ = 0, silu_width_ = 0, rope_scale_ = 0;
  FittedCurve prefill_fit_, decode_fit_;
  double prefill_scale_ = 0, decode_scale_ = 0;  // heads·head_dim, kv_heads·head_dim on this GPU
  double link_alpha_ns_ = 0, link_gbps_ = 0;     // slowest measured peer link
  int tp_ = 1;
  double all_reduce_bytes_per_token_ = 0;  // hidden × activation bytes
};

}  // namespace fleetsim
