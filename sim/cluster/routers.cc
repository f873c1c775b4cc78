// Built-in routers. Each class's comment names the production algorithm it
// follows; its Options struct holds that source's defaults, every one
// overridable under fleet.router_options (docs/routing.md).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "sim/cluster/prefix_index.h"
#include "sim/cluster/router.h"

namespace fleetsim {
namespace {

// ---- options ----

// One option a router reads: its name, bounds (inclusive) and where it goes.
struct OptionSpec {
  const char* name;
  double lo, hi;
  double* out;
  bool integer = false;
};

// Reads ctx.options into `specs`; an option the router does not know, or
// one out of its bounds, is an error naming fleet.router_options.NAME.
Status ReadOptions(const RouterContext& ctx, const std::string& router, std::vector<OptionSpec> specs) {
  for (const auto& [name, value] : ctx.options) {
    const OptionSpec* spec = nullptr;
    for (const OptionSpec& s : specs)
      if (name == s.name) spec = &s;
    const std::string path = ctx.options_path + "." + name;
    if (!spec) {
      if (specs.empty()) return Status::Invalid(path + ": router \"" + router + "\" takes no options");
      std::string known;
      for (const OptionSpec& s : specs) known += std::string(known.empty() ? "" : ", ") + s.name;
      return Status::Invalid(path + ": unknown option of router \"" + router + "\" (known: " + known + ")");
    }
    char range[160];
    std::snprintf(range, sizeof range, "%s between %g and %g", spec->integer ? "an integer" : "a number", spec->lo,
                  spec->hi);
    if (!std::isfinite(value) || value < spec->lo || value > spec->hi ||
        (spec->integer && value != std::floor(value))) {
      char got[64];
      std::snprintf(got, sizeof got, "%g", value);
      return Status::Invalid(path + ": expected " + range + ", got " + got);
    }
    *spec->out = value;
  }
  return Status::Ok();
}

// The index of the fewest outstanding requests among `candidates`; ties go
// to the lowest index.
size_t LeastOutstanding(std::span<const ReplicaView* const> candidates) {
  size_t best = 0;
  int64_t best_load = candidates[0]->outstanding();
  for (size_t i = 1; i < candidates.size(); ++i) {
    const int64_t load = candidates[i]->outstanding();
    if (load < best_load) {
      best = i;
      best_load = load;
    }
  }
  return best;
}

// Prompt tokens of `req` covered by `blocks` leading prefix blocks.
int64_t BlockTokens(const Request& req, int64_t blocks) {
  return std::min<int64_t>(blocks * req.prefix_block_tokens, req.prompt_tokens);
}

// Leading prefix blocks of `req` each candidate holds, into *matched: the
// engines' true caches with `oracle`, else what the router's own index
// believes it sent them (*tenants is scratch).
void MatchedBlocks(const Request& req, std::span<const ReplicaView* const> candidates, bool oracle,
                   PrefixIndex& index, std::vector<int>* tenants, std::vector<int64_t>* matched) {
  matched->assign(candidates.size(), 0);
  if (oracle) {
    if (req.prefix_block_tokens <= 0) return;
    for (size_t i = 0; i < candidates.size(); ++i)
      (*matched)[i] = (candidates[i]->CachedPrefixTokens(req) + req.prefix_block_tokens - 1) / req.prefix_block_tokens;
    return;
  }
  tenants->clear();
  for (const ReplicaView* v : candidates) tenants->push_back(v->index());
  index.Match(req.prefix_blocks, *tenants, matched);
}

// ---- round_robin, random, least_outstanding, power_of_two, least_kv ----

// Cycles through the candidates with one counter (Envoy's ROUND_ROBIN with
// equal weights).
class RoundRobinRouter final : public Router {
 public:
  size_t Route(const Request&, std::span<const ReplicaView* const> candidates) override {
    return next_++ % candidates.size();
  }

 private:
  uint64_t next_ = 0;
};

// A candidate drawn uniformly at random (Envoy's RANDOM; Dynamo's
// --router-mode random).
class RandomRouter final : public Router {
 public:
  explicit RandomRouter(Rng rng) : rng_(rng) {}
  size_t Route(const Request&, std::span<const ReplicaView* const> candidates) override {
    return static_cast<size_t>(rng_.Below(candidates.size()));
  }

 private:
  Rng rng_;
};

// Fewest requests held (waiting + running), as the proxy counts them; ties
// go to the lowest index, so the choice is deterministic.
class LeastOutstandingRouter final : public Router {
 public:
  size_t Route(const Request&, std::span<const ReplicaView* const> candidates) override {
    return LeastOutstanding(candidates);
  }
};

// Power of two choices: two distinct candidates drawn at random, the one
// with fewer outstanding requests wins (the first drawn on a tie). Ray
// Serve's PowerOfTwoChoicesReplicaScheduler (by queue length) and Envoy's
// LEAST_REQUEST with its default choice_count of 2.
class PowerOfTwoRouter final : public Router {
 public:
  explicit PowerOfTwoRouter(Rng rng) : rng_(rng) {}
  size_t Route(const Request&, std::span<const ReplicaView* const> candidates) override {
    const uint64_t n = candidates.size();
    if (n == 1) return 0;
    const size_t a = static_cast<size_t>(rng_.Below(n));
    size_t b = static_cast<size_t>(rng_.Below(n - 1));
    if (b >= a) ++b;
    return candidates[b]->outstanding() < candidates[a]->outstanding() ? b : a;
  }

 private:
  Rng rng_;
};

// Lowest KV-cache utilisation as last scraped (vLLM's kv_cache_usage_perc,
// what llm-d's kv-cache-utilization scorer reads); ties: fewer outstanding,
// then the lowest index. Replicas whose metrics are older than
// max_metrics_age_ms (llm-d's scorers accept 2 s) are passed over while any
// other is fresh: a hung replica's last figures do not draw traffic.
class LeastKvRouter final : public Router {
 public:
  struct Options {
    double max_metrics_age_ms = 2000;
  };
  LeastKvRouter(const Options& o, std::function<SimTime()> now) : o_(o), now_(std::move(now)) {}
  size_t Route(const Request&, std::span<const ReplicaView* const> candidates) override {
    const SimTime now = now_ ? now_() : 0;
    const SimTime max_age = static_cast<SimTime>(o_.max_metrics_age_ms * 1e6);
    size_t best = candidates.size();
    bool best_fresh = false;
    double best_u = 0;
    int64_t best_load = 0;
    for (size_t i = 0; i < candidates.size(); ++i) {
      const ReplicaMetrics& m = candidates[i]->metrics();
      const bool fresh = !now_ || (m.at >= 0 && now - m.at <= max_age);
      const double u = m.kv_utilization;
      const int64_t load = candidates[i]->outstanding();
      if (best == candidates.size() || (fresh && !best_fresh) ||
          (fresh == best_fresh && (u < best_u || (u == best_u && load < best_load)))) {
        best = i;
        best_fresh = fresh;
        best_u = u;
        best_load = load;
      }
    }
    return best;
  }
  bool UsesMetrics() const override { return true; }

 private:
  Options o_;
  std::function<SimTime()> now_;
};

// ---- prefix_aware: SGLang's cache-aware router ----

// SGLang's cache-aware router (sgl-router, policies/cache_aware.rs):
//   1. if the load is imbalanced, max - min > balance_abs_threshold and
//      max > balance_rel_threshold x min (load: requests in flight as the
//      router counts them), the least loaded replica;
//   2. else, if the best prefix match rate (matched prompt tokens / prompt
//      tokens) exceeds cache_threshold, the best-matching replica;
//   3. else the replica with the smallest tree (fewest blocks the router
//      has sent it).
// It matches against its own approximate radix tree of what it has sent to
// each replica (PrefixIndex), LRU-bounded, not the engines' caches; with
// `oracle` it asks the engines' true caches instead (matched tokens, and
// cached blocks as the tree size). A request with no prefix ids (unknown
// prompt contents) goes to the least loaded replica, where SGLang would
// match its text.
class PrefixAwareRouter final : public Router {
 public:
  struct Options {
    double balance_abs_threshold = 64;  // sgl-router's default
    double balance_rel_threshold = 1.5;  // sgl-router's default
    double cache_threshold = 0.3;  // issue text; a match rate above it routes by cache
    // Blocks per replica in the router's tree. SGLang bounds its tree at
    // max_tree_size = 2^26 characters per worker, ~2^24 tokens at four
    // characters a token: 32,768 blocks of Mooncake's 512 tokens.
    double max_tree_blocks = 32768;
    double oracle = 0;  // 1: the engines' true caches
  };
  explicit PrefixAwareRouter(const Options& o)
      : o_(o), index_(static_cast<int64_t>(o.max_tree_blocks)) {}

  size_t Route(const Request& req, std::span<const ReplicaView* const> candidates) override {
    int64_t max_load = std::numeric_limits<int64_t>::min(), min_load = std::numeric_limits<int64_t>::max();
    for (const ReplicaView* v : candidates) {
      max_load = std::max(max_load, v->outstanding());
      min_load = std::min(min_load, v->outstanding());
    }
    const bool imbalanced = static_cast<double>(max_load - min_load) > o_.balance_abs_threshold &&
                            static_cast<double>(max_load) > o_.balance_rel_threshold * static_cast<double>(min_load);
    if (imbalanced || req.prefix_blocks.empty() || req.prompt_tokens <= 0) return LeastOutstanding(candidates);
    MatchedBlocks(req, candidates, o_.oracle, index_, &tenants_, &matched_);
    size_t best = 0;
    for (size_t i = 1; i < candidates.size(); ++i)
      if (matched_[i] > matched_[best]) best = i;
    const double rate =
        static_cast<double>(BlockTokens(req, matched_[best])) / static_cast<double>(req.prompt_tokens);
    if (rate > o_.cache_threshold) return best;
    // The smallest tree; ties: the lowest index.
    size_t smallest = 0;
    int64_t smallest_size = TreeSize(*candidates[0]);
    for (size_t i = 1; i < candidates.size(); ++i) {
      const int64_t size = TreeSize(*candidates[i]);
      if (size < smallest_size) {
        smallest = i;
        smallest_size = size;
      }
    }
    return smallest;
  }
  void Sent(const Request& req, const ReplicaView& replica) override {
    if (!o_.oracle) index_.Insert(replica.index(), req.prefix_blocks);
  }

 private:
  int64_t TreeSize(const ReplicaView& v) const {
    return o_.oracle ? v.CachedBlocks() : index_.TenantBlocks(v.index());
  }

  Options o_;
  PrefixIndex index_;
  std::vector<int> tenants_;
  std::vector<int64_t> matched_;
};

// ---- session_affinity: consistent hashing ----

// Consistent hashing on the session id, as Envoy's RING_HASH load balancer
// does with a hash policy on a session header: every replica known gets
// ceil(ring_size / replicas) points on a ring of 64-bit hashes; a session
// goes to the first point at or after its hash whose replica may serve it,
// so a replica leaving moves only its own sessions. Requests without a
// session go to the least loaded replica.
class SessionAffinityRouter final : public Router {
 public:
  struct Options {
    double ring_size = 1024;  // Envoy's minimum_ring_size
  };
  explicit SessionAffinityRouter(const Options& o) : o_(o) {}

  size_t Route(const Request& req, std::span<const ReplicaView* const> candidates) override {
    if (req.session_id < 0) return LeastOutstanding(candidates);
    // One ring per model, as Envoy keeps one per cluster.
    Ring& ring = rings_[candidates[0]->model()];
    bool grew = false;
    for (const ReplicaView* v : candidates) {
      const size_t i = static_cast<size_t>(v->index());
      if (i >= slot_.size()) slot_.resize(i + 1, -1);
      if (i >= ring.known.size()) ring.known.resize(i + 1, false);
      if (!ring.known[i]) {
        ring.known[i] = true;
        ++ring.num_known;
        grew = true;
      }
    }
    if (grew) Rebuild(ring);
    for (size_t c = 0; c < candidates.size(); ++c) slot_[candidates[c]->index()] = static_cast<int>(c);
    const uint64_t h = Mix(static_cast<uint64_t>(req.session_id) ^ 0x5e55105e55105ULL);
    auto it = std::lower_bound(ring.points.begin(), ring.points.end(), std::make_pair(h, 0));
    size_t pick = 0;
    for (size_t step = 0; step < ring.points.size(); ++step, ++it) {
      if (it == ring.points.end()) it = ring.points.begin();
      if (slot_[it->second] >= 0) {
        pick = static_cast<size_t>(slot_[it->second]);
        break;
      }
    }
    for (const ReplicaView* v : candidates) slot_[v->index()] = -1;
    return pick;
  }

 private:
  static uint64_t Mix(uint64_t x) {  // SplitMix64's finaliser
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  struct Ring {
    std::vector<std::pair<uint64_t, int>> points;  // (point, replica index), sorted
    std::vector<bool> known;                      // replicas with points
    int64_t num_known = 0;
  };
  void Rebuild(Ring& ring) const {
    ring.points.clear();
    const int64_t per = (static_cast<int64_t>(o_.ring_size) + ring.num_known - 1) / ring.num_known;
    for (size_t r = 0; r < ring.known.size(); ++r) {
      if (!ring.known[r]) continue;
      for (int64_t k = 0; k < per; ++k)
        ring.points.emplace_back(Mix((uint64_t{r} << 32) ^ static_cast<uint64_t>(k)), static_cast<int>(r));
    }
    std::sort(ring.points.begin(), ring.points.end());
  }

  Options o_;
  std::map<std::string, Ring, std::less<>> rings_;  // by model
  std::vector<int> slot_;  // replica index -> position among the candidates (-1: not one)
};

// ---- weighted_scorers: llm-d's endpoint picker ----

// llm-d's inference scheduler (the Gateway API inference extension's
// endpoint picker): score = sum of weight x scorer over
//   queue:  (maxQ - q) / (maxQ - minQ), q the waiting queue scraped (all 1
//           when every queue is the same);
//   kv:     1 - KV-cache utilisation scraped;
//   prefix: blocks of the prompt matched in its own LRU index of what it
//           has sent each endpoint / prompt blocks (the engines' true
//           caches with `oracle`);
// default weights 2, 2, 3 (llm-d's default scheduling profile), the highest
// score wins, ties broken at random. Endpoints whose metrics are older
// than max_metrics_age_ms (2 s: what its scorers accept) are left out
// while any other is fresh.
class WeightedScorersRouter final : public Router {
 public:
  struct Options {
    double queue_weight = 2, kv_weight = 2, prefix_weight = 3;
    double max_metrics_age_ms = 2000;
    double max_tree_blocks = 32768;  // blocks per endpoint in the prefix index
    double oracle = 0;
  };
  WeightedScorersRouter(const Options& o, Rng rng, std::function<SimTime()> now)
      : o_(o), rng_(rng), now_(std::move(now)), index_(static_cast<int64_t>(o.max_tree_blocks)) {}

  size_t Route(const Request& req, std::span<const ReplicaView* const> candidates) override {
    const size_t n = candidates.size();
    // Fresh metrics only, unless none is.
    const SimTime now = now_ ? now_() : 0;
    const SimTime max_age = static_cast<SimTime>(o_.max_metrics_age_ms * 1e6);
    // Each candidate's metrics read once (live ones cost a walk of its queue).
    metrics_.resize(n);
    for (size_t i = 0; i < n; ++i) metrics_[i] = candidates[i]->metrics();
    use_.assign(n, true);
    if (now_) {
      bool any = false;
      for (size_t i = 0; i < n; ++i) {
        const ReplicaMetrics& m = metrics_[i];
        use_[i] = m.at >= 0 && now - m.at <= max_age;
        any = any || use_[i];
      }
      if (!any) use_.assign(n, true);
    }
    int64_t max_q = std::numeric_limits<int64_t>::min(), min_q = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < n; ++i) {
      if (!use_[i]) continue;
      max_q = std::max(max_q, metrics_[i].waiting);
      min_q = std::min(min_q, metrics_[i].waiting);
    }
    matched_.assign(n, 0);
    const int64_t blocks = static_cast<int64_t>(req.prefix_blocks.size());
    if (o_.prefix_weight > 0 && blocks > 0) MatchedBlocks(req, candidates, o_.oracle, index_, &tenants_, &matched_);
    double best = -std::numeric_limits<double>::infinity();
    ties_.clear();
    for (size_t i = 0; i < n; ++i) {
      if (!use_[i]) continue;
      const ReplicaMetrics& m = metrics_[i];
      const double queue = max_q == min_q ? 1.0
                                          : static_cast<double>(max_q - m.waiting) / static_cast<double>(max_q - min_q);
      const double kv = 1.0 - m.kv_utilization;
      const double prefix = blocks > 0 ? static_cast<double>(matched_[i]) / static_cast<double>(blocks) : 0.0;
      const double score = o_.queue_weight * queue + o_.kv_weight * kv + o_.prefix_weight * prefix;
      if (score > best) {
        best = score;
        ties_.assign(1, i);
      } else if (score == best) {
        ties_.push_back(i);
      }
    }
    return ties_.size() == 1 ? ties_[0] : ties_[rng_.Below(ties_.size())];
  }
  void Sent(const Request& req, const ReplicaView& replica) override {
    if (!o_.oracle && o_.prefix_weight > 0) index_.Insert(replica.index(), req.prefix_blocks);
  }
  bool UsesMetrics() const override { return true; }

 private:
  Options o_;
  Rng rng_;
  std::function<SimTime()> now_;
  PrefixIndex index_;
  std::vector<ReplicaMetrics> metrics_;
  std::vector<bool> use_;
  std::vector<int> tenants_;
  std::vector<int64_t> matched_;
  std::vector<size_t> ties_;
};

// ---- kv_aware_cost: NVIDIA Dynamo's KV router ----

// Dynamo's KV router (lib/llm/src/kv_router, scheduler.rs / selector.rs):
//   logit = overlap_score_weight x (prefill tokens queued on the worker +
//           this request's tokens not cached there) / block size
//         + the worker's decode blocks (active, and this request's own),
// lowest wins at router temperature 0 (ties at random); above 0 a worker
// is drawn with probability proportional to exp(-(logit - min) / ((max -
// min) x T)), Dynamo's softmax_sample. Dynamo tracks the workers' cached blocks from
// their KV events (the engines' true caches, as here by default; with
// `approximate` from its own record of what it sent, as its
// ApproxKvIndexer does) and their active prefill tokens and blocks from
// its own bookkeeping: here the scraped metrics plus what it has sent each
// worker since its last scrape.
class KvAwareCostRouter final : public Router {
 public:
  struct Options {
    double overlap_score_weight = 1;  // Dynamo's default
    double router_temperature = 0;    // Dynamo's default
    double approximate = 0;           // 1: its own index of what it sent
    double max_tree_blocks = 32768;   // with approximate: blocks per worker
  };
  KvAwareCostRouter(const Options& o, Rng rng, bool live_metrics)
      : o_(o), rng_(rng), live_(live_metrics), index_(static_cast<int64_t>(o.max_tree_blocks)) {}

  size_t Route(const Request& req, std::span<const ReplicaView* const> candidates) override {
    const size_t n = candidates.size();
    cached_.assign(n, 0);
    if (!req.prefix_blocks.empty()) {
      if (o_.approximate) {
        MatchedBlocks(req, candidates, false, index_, &tenants_, &cached_);
        for (int64_t& c : cached_) c = BlockTokens(req, c);
      } else {
        for (size_t i = 0; i < n; ++i) cached_[i] = candidates[i]->CachedPrefixTokens(req);
      }
    }
    logits_.resize(n);
    double max_logit = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < n; ++i) {
      const ReplicaView& v = *candidates[i];
      const ReplicaMetrics& m = v.metrics();
      const Pending p = PendingOf(v.index(), m.at);
      const double block = std::max(1, v.block_size());
      const double prefill = static_cast<double>(m.queued_prefill_tokens + p.prefill_tokens + req.prompt_tokens -
                                                 cached_[i]);
      // Active blocks plus those this request would add (its prompt's
      // blocks beyond what the worker holds): Dynamo's potential blocks.
      const int64_t own = (std::max<int64_t>(0, req.prompt_tokens - cached_[i]) + v.block_size() - 1) /
                          std::max(1, v.block_size());
      const double decode = static_cast<double>(m.kv_blocks_used + p.blocks + own);
      logits_[i] = o_.overlap_score_weight * prefill / block + decode;
      max_logit = std::max(max_logit, logits_[i]);
    }
    size_t pick = 0;
    if (o_.router_temperature <= 0) {
      double best = std::numeric_limits<double>::infinity();
      ties_.clear();
      for (size_t i = 0; i < n; ++i) {
        if (logits_[i] < best) {
          best = logits_[i];
          ties_.assign(1, i);
        } else if (logits_[i] == best) {
          ties_.push_back(i);
        }
      }
      pick = ties_.size() == 1 ? ties_[0] : ties_[rng_.Below(ties_.size())];
    } else {
      // Dynamo's softmax_sample: logits shifted by their minimum and
      // scaled by their range, so the draw depends on how the workers
      // compare, not on the logits' size; uniform when all are equal.
      double lo = std::numeric_limits<double>::infinity();
      for (double l : logits_) lo = std::min(lo, l);
      const double range = max_logit - lo;
      double total = 0;
      for (double& l : logits_) {
        l = range > 0 ? std::exp(-(l - lo) / (range * o_.router_temperature)) : 1.0;
        total += l;
      }
      double u = rng_.Uniform() * total;
      pick = n - 1;
      for (size_t i = 0; i < n; ++i) {
        if (u < logits_[i]) {
          pick = i;
          break;
        }
        u -= logits_[i];
      }
    }
    last_cached_ = cached_[pick];
    return pick;
  }
  void Sent(const Request& req, const ReplicaView& replica) override {
    // Its own bookkeeping until the next scrape shows the request. (The
    // cluster may have overridden the pick: the cached figure is then a
    // guess, as Dynamo's would be.)
    const int i = replica.index();
    if (i >= static_cast<int>(pending_.size())) pending_.resize(i + 1);
    Pending& p = pending_[i];
    const SimTime at = replica.metrics().at;
    if (p.as_of != at) p = Pending{at, 0, 0};
    const int64_t block = std::max(1, replica.block_size());
    p.prefill_tokens += std::max<int64_t>(0, req.prompt_tokens - last_cached_);
    p.blocks += (req.prompt_tokens + block - 1) / block;
    if (o_.approximate) index_.Insert(i, req.prefix_blocks);
  }
  bool UsesMetrics() const override { return true; }

 private:
  struct Pending {
    SimTime as_of = -1;  // the scrape they are on top of
    int64_t prefill_tokens = 0, blocks = 0;
  };
  Pending PendingOf(int i, SimTime at) const {
    if (live_ || i >= static_cast<int>(pending_.size()) || pending_[i].as_of != at) return Pending{};
    return pending_[i];
  }

  Options o_;
  Rng rng_;
  bool live_;
  PrefixIndex index_;
  std::vector<Pending> pending_;
  std::vector<int> tenants_;
  std::vector<int64_t> cached_;
  std::vector<double> logits_;
  std::vector<size_t> ties_;
  int64_t last_cached_ = 0;
};

}  // namespace

void RegisterBuiltinRouters(RouterRegistry* registry) {
  registry->Add("round_robin", "cycle through the replicas in order",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  FLEETSIM_RETURN_IF_ERROR(ReadOptions(ctx, "round_robin", {}));
                  *out = std::make_unique<RoundRobinRouter>();
                  return Status::Ok();
                });
  registry->Add("least_outstanding", "fewest requests waiting or running (ties: lowest replica index)",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  FLEETSIM_RETURN_IF_ERROR(ReadOptions(ctx, "least_outstanding", {}));
                  *out = std::make_unique<LeastOutstandingRouter>();
                  return Status::Ok();
                });
  registry->Add("random", "a replica drawn uniformly at random (Envoy RANDOM)",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  FLEETSIM_RETURN_IF_ERROR(ReadOptions(ctx, "random", {}));
                  *out = std::make_unique<RandomRouter>(ctx.rng);
                  return Status::Ok();
                });
  registry->Add("power_of_two",
                "two random replicas, fewer outstanding wins (Ray Serve's router, Envoy LEAST_REQUEST)",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  FLEETSIM_RETURN_IF_ERROR(ReadOptions(ctx, "power_of_two", {}));
                  *out = std::make_unique<PowerOfTwoRouter>(ctx.rng);
                  return Status::Ok();
                });
  registry->Add("least_kv", "lowest KV-cache utilisation as scraped (ties: fewer outstanding)",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  LeastKvRouter::Options o;
                  FLEETSIM_RETURN_IF_ERROR(
                      ReadOptions(ctx, "least_kv", {{"max_metrics_age_ms", 0, 3.6e6, &o.max_metrics_age_ms}}));
                  *out = std::make_unique<LeastKvRouter>(o, ctx.now);
                  return Status::Ok();
                });
  registry->Add("prefix_aware",
                "SGLang's cache-aware router: balance guard, then best prefix match over 0.3, else smallest tree",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  PrefixAwareRouter::Options o;
                  FLEETSIM_RETURN_IF_ERROR(
                      ReadOptions(ctx, "prefix_aware",
                                  {{"balance_abs_threshold", 0, 1e9, &o.balance_abs_threshold},
                                   {"balance_rel_threshold", 1, 1e9, &o.balance_rel_threshold},
                                   {"cache_threshold", 0, 1, &o.cache_threshold},
                                   {"max_tree_blocks", 1, 1e9, &o.max_tree_blocks, true},
                                   {"oracle", 0, 1, &o.oracle, true}}));
                  *out = std::make_unique<PrefixAwareRouter>(o);
                  return Status::Ok();
                });
  registry->Add("session_affinity", "consistent hashing (Envoy RING_HASH) on the session id; least loaded without one",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  SessionAffinityRouter::Options o;
                  FLEETSIM_RETURN_IF_ERROR(
                      ReadOptions(ctx, "session_affinity", {{"ring_size", 1, 8388608, &o.ring_size, true}}));
                  *out = std::make_unique<SessionAffinityRouter>(o);
                  return Status::Ok();
                });
  registry->Add("weighted_scorers",
                "llm-d's endpoint picker: 2 x queue + 2 x (1 - KV) + 3 x prefix match, ties at random",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  WeightedScorersRouter::Options o;
                  FLEETSIM_RETURN_IF_ERROR(
                      ReadOptions(ctx, "weighted_scorers",
                                  {{"queue_weight", 0, 1e6, &o.queue_weight},
                                   {"kv_weight", 0, 1e6, &o.kv_weight},
                                   {"prefix_weight", 0, 1e6, &o.prefix_weight},
                                   {"max_metrics_age_ms", 0, 3.6e6, &o.max_metrics_age_ms},
                                   {"max_tree_blocks", 1, 1e9, &o.max_tree_blocks, true},
                                   {"oracle", 0, 1, &o.oracle, true}}));
                  *out = std::make_unique<WeightedScorersRouter>(o, ctx.rng, ctx.now);
                  return Status::Ok();
                });
  registry->Add("kv_aware_cost",
                "NVIDIA Dynamo's KV router: overlap x (queued + uncached prefill) / block + decode blocks, softmax",
                [](RouterContext ctx, std::unique_ptr<Router>* out) {
                  KvAwareCostRouter::Options o;
                  FLEETSIM_RETURN_IF_ERROR(
                      ReadOptions(ctx, "kv_aware_cost",
                                  {{"overlap_score_weight", 0, 1e6, &o.overlap_score_weight},
                                   {"router_temperature", 0, 1e6, &o.router_temperature},
                                   {"approximate", 0, 1, &o.approximate, true},
                                   {"max_tree_blocks", 1, 1e9, &o.max_tree_blocks, true}}));
                  *out = std::make_unique<KvAwareCostRouter>(o, ctx.rng, ctx.live_metrics);
                  return Status::Ok();
                });
}

}  // namespace fleetsim
