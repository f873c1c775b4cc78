#include "model/profile_perf_model.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace fleetsim {

Status ProfilePerfModel::Create(const Profile& profile, const std::string& profile_name, const ModelSpec& model,
                                const GpuSpec& gpu, const ShardPlan& shard, const EngineSpec& engine,
                                const RooflineOptions& roofline, std::unique_ptr<ProfilePerfModel>* out) {
  if (profile.has_compute_ops() && profile.model && *profile.model != model.name)
    return Status::Invalid("profile \"" + profile_name + "\" was measured for model \"" + *profile.model +
                           "\", not \"" + model.name + "\"; compute times do not transfer between models");
  if (profile.device != gpu.name)
    return Status::Invalid("profile \"" + profile_name + "\" was measured on \"" + profile.device + "\", not \"" +
                           gpu.name + "\"");
  std::unique_ptr<ProfilePerfModel> m(new ProfilePerfModel(model, gpu, shard, engine, roofline));
  m->source_ = "profile:" + profile_name;
  m->layers_ = model.layers;
  m->all_reduce_bytes_per_token_ = static_cast<double>(model.hidden) * 2.0;
  // gemm needs only its own table; elementwise is only taken from the
  // profile when both the per-layer ops and the embedding are there, so the
  // kind is timed by one source.
  auto find = [&](const std::map<int, ProfileCurve>& table, int n, ProfileCurve* c) {
    auto it = table.find(n);
    if (it == table.end()) return false;
    *c = it->second;
    return true;
  };
  m->use_gemm_ = find(profile.gemm, shard.tp, &m->gemm_);
  m->use_elementwise_ =
      find(profile.elementwise, shard.tp, &m->elementwise_) && find(profile.embedding, shard.tp, &m->embedding_);
  // pp > 1 adds activation sends the profile does not describe; keep the
  // roofline's communication then.
  m->use_all_reduce_ = shard.tp > 1 && shard.pp == 1 && find(profile.all_reduce_intra_node, shard.tp, &m->all_reduce_);
  *out = std::move(m);
  return Status::Ok();
}

int64_t ProfilePerfModel::IterationNs(const BatchShape& shape) const {
  FLEETSIM_CHECK(!shape.empty());
  // A swap-only iteration runs no layer: nothing for the profile to time.
  if (shape.tokens() == 0) return roofline_.IterationNs(shape);
  const RooflinePerfModel::Breakdown b = roofline_.Explain(shape);
  double total = b.total_ns();
  const double tokens = static_cast<double>(shape.tokens());
  if ((use_gemm_ || use_all_reduce_) && shape.sampled_seqs > 0) {
    // The roofline's gemm and all_reduce include the lm_head and the logits
    // gather, which stay roofline: split them off with the same shape minus
    // the sampled sequences.
    BatchShape unsampled = shape;
    unsampled.sampled_seqs = 0;
    const RooflinePerfModel::Breakdown u = roofline_.Explain(unsampled);
    if (use_gemm_) total -= u.gemm_ns;
    if (use_all_reduce_) total -= u.all_reduce_ns;
  } else {
    if (use_gemm_) total -= b.gemm_ns;
    if (use_all_reduce_) total -= b.all_reduce_ns;
  }
  if (use_elementwise_) total -= b.elementwise_ns;
  if (use_gemm_) total += layers_ * gemm_.At(tokens);
  if (use_elementwise_) total += layers_ * elementwise_.At(tokens) + embedding_.At(tokens);
  if (use_all_reduce_) total += layers_ * 2.0 * all_reduce_.At(tokens * all_reduce_bytes_per_token_);
  return std::max<int64_t>(1, std::llround(total));
}

std::vector<std::pair<std::string, std::string>> ProfilePerfModel::Sources() const {
  std::vector<std::pair<std::string, std::string>> out = roofline_.Sources();
  for (auto& [kind, src] : out) {
    if ((kind == "gemm" && use_gemm_) || (kind == "elementwise" && use_elementwise_) ||
        (kind == "all_reduce" && use_all_reduce_))
      src = source_;
  }
  return out;
}

}  // namespace fleetsim
