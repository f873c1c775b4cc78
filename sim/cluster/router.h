// Router: picks the replica an arriving request goes to. Registered by name.
#pragma once

#include <functional>
#include <memory>
#include <span>

#include "base/status.h"
#include "sim/cluster/registry.h"
#include "sim/cluster/cluster.h"
#include "sim/engine/rng.h"
#include "sim/traffic/request.h"

namespace fleetsim {

class Router {
 public:
  virtual ~Router() = default;
  // Returns an index into `candidates` (the ready replicas serving the
  // request's model, in cluster order), seen as the cluster shows them.
  // REQUIRES: !candidates.empty().
  virtual size_t Route(const Request& req, std::span<const ReplicaView* const> candidates) = 0;
};

// A router gets its own random stream (Simulation::Stream("router")).
using RouterFactory = std::function<std::unique_ptr<Router>(Rng rng)>;
using RouterRegistry = Registry<RouterFactory>;

void RegisterBuiltinRouters(RouterRegistry* registry);

}  // namespace fleetsim
