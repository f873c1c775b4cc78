// Router: picks the replica an arriving request goes to. Registered by name;
// each router's header comment names the production algorithm it follows,
// and its Options struct holds that source's defaults (docs/routing.md).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>

#include "base/status.h"
#include "sim/cluster/registry.h"
#include "sim/cluster/cluster.h"
#include "sim/engine/rng.h"
#include "sim/traffic/request.h"

namespace fleetsim {

class Router {
 public:
  virtual ~Router() = default;
  // Returns an index into `candidates` (the routable replicas that may
  // serve the request, in cluster order), seen as the cluster shows them:
  // outstanding() as the proxy counts it, now; metrics() as last scraped.
  // REQUIRES: !candidates.empty().
  virtual size_t Route(const Request& req, std::span<const ReplicaView* const> candidates) = 0;
  // Where the request went in the end (the cluster may override the pick:
  // a retry avoids the replica that failed it, an open breaker skips one).
  // Routers that remember what they sent (an approximate prefix tree) learn
  // it here.
  virtual void Sent(const Request& req, const ReplicaView& replica) {
    (void)req;
    (void)replica;
  }
  // True: the router reads ReplicaView::metrics(), so the cluster scrapes
  // them (every fleet.metrics_scrape_ms; 0: live).
  virtual bool UsesMetrics() const { return false; }
};

// What a router is built from.
struct RouterContext {
  Rng rng;  // its own random stream (Simulation::Stream("router"))
  // fleet.router_options as given (numbers; booleans as 0/1); the factory
  // checks the names and ranges it knows and rejects the others.
  std::map<std::string, double, std::less<>> options;
  std::string options_path = "fleet.router_options";  // for messages
  // The simulated clock, for routers that judge how old scraped metrics
  // are (ReplicaMetrics::at). Unset in unit tests that need no clock.
  std::function<SimTime()> now;
  // Metrics read live (fleet.metrics_scrape_ms 0): a router's own
  // bookkeeping of what it sent since the last scrape is then moot.
  bool live_metrics = false;
};

using RouterFactory = std::function<Status(RouterContext ctx, std::unique_ptr<Router>* out)>;
using RouterRegistry = Registry<RouterFactory>;

void RegisterBuiltinRouters(RouterRegistry* registry);

}  // namespace fleetsim
