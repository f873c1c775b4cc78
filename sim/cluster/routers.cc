// Built-in routers.
#include "sim/cluster/router.h"

namespace fleetsim {
namespace {

// Cycles through the candidates with one counter.
class RoundRobinRouter final : public Router {
 public:
  size_t Route(const Request&, std::span<const ReplicaView* const> candidates) override {
    return next_++ % candidates.size();
  }

 private:
  uint64_t next_ = 0;
};

// Fewest requests held (waiting + running); ties go to the lowest index, so
// the choice is deterministic.
class LeastOutstandingRouter final : public Router {
 public:
  size_t Route(const Request&, std::span<const ReplicaView* const> candidates) override {
    size_t best = 0;
    int64_t best_load = candidates[0]->outstanding();
    for (size_t i = 1; i < candidates.size(); ++i) {
      int64_t load = candidates[i]->outstanding();
      if (load < best_load) {
        best = i;
        best_load = load;
      }
    }
    return best;
  }
};

Status NoOptions(const RouterContext& ctx) {
  if (!ctx.options.empty())
    return Status::Invalid(ctx.options_path + "." + ctx.options.begin()->first + ": this router takes no options");
  return Status::Ok();
}

}  // namespace

void RegisterBuiltinRouters(RouterRegistry* registry) {
  registry->Add("round_robin", "cycle through the replicas in order",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  FLEETSIM_RETURN_IF_ERROR(NoOptions(ctx));
                  *out = std::make_unique<RoundRobinRouter>();
                  return Status::Ok();
                });
  registry->Add("least_outstanding", "fewest requests waiting or running (ties: lowest replica index)",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  FLEETSIM_RETURN_IF_ERROR(NoOptions(ctx));
                  *out = std::make_unique<LeastOutstandingRouter>();
                  return Status::Ok();
                });
}

}  // namespace fleetsim
