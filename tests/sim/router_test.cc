// Routers: one suite over the whole registry (conservation, determinism,
// never a replica that cannot serve the request), then each algorithm's own
// rule on a hand-made case: the loads, queues and prefixes are set by hand
// and the pick is worked out from the production formula.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/cluster/cluster.h"
#include "sim/cluster/prefix_index.h"
#include "sim/cluster/router.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using testing_rig::LinearPerf;
using testing_rig::Recorder;
using testing_rig::Schedulers;

const RouterRegistry& Routers() {
  static const RouterRegistry* r = [] {
    auto* reg = new RouterRegistry();
    RegisterBuiltinRouters(reg);
    return reg;
  }();
  return *r;
}

Status MakeRouter(const std::string& name, Simulation& sim, std::map<std::string, double, std::less<>> options,
                  std::unique_ptr<Router>* out, bool live_metrics = true) {
  const auto* e = Routers().Find(name);
  if (!e) return Status::Invalid("no router " + name);
  RouterContext ctx{sim.Stream("router"), std::move(options), "fleet.router_options", [&sim] { return sim.now(); },
                    live_metrics};
  return e->factory(std::move(ctx), out);
}

// A cluster of `models.size()` replicas (replica i serves models[i]) with
// prefix caching, and a router of the test's choice.
struct RouterRig {
  explicit RouterRig(std::vector<std::string> models, uint64_t seed = 1)
      : sim(seed), cluster(sim, rec, "m", 0) {
    for (size_t i = 0; i < models.size(); ++i) {
      ReplicaOptions o;
      o.index = static_cast<int>(i);
      o.model = models[i];
      o.max_model_len = 1 << 16;
      o.kv_blocks = 20000;
      o.block_size = 16;
      o.prefix_caching = true;
      SchedulerLimits limits;
      limits.max_model_len = 1 << 16;
      std::unique_ptr<BatchScheduler> sched;
      EXPECT_TRUE(Schedulers().Find("vllm")->factory(limits, {}, &sched).ok());
      cluster.Add(std::make_unique<Replica>(sim, o, std::move(sched), perf, rec), 1, 1.0);
    }
  }
  void Use(std::unique_ptr<Router> r) {
    router = r.get();
    cluster.SetRouter(std::move(r));
  }
  // `n` requests of `prompt` tokens held by replica i (not yet stepped).
  void Load(int i, int n, int32_t prompt = 100, int32_t output = 10) {
    for (int k = 0; k < n; ++k) {
      Request r;
      r.id = next_id++;
      r.arrival = sim.now();
      r.prompt_tokens = prompt;
      r.output_tokens = output;
      cluster.replica(i).Submit(std::move(r));
    }
  }
  size_t Pick(const Request& req) {
    const auto cands = cluster.Candidates(req);
    return static_cast<size_t>(cands[router->Route(req, cands)]->index());
  }
  Simulation sim;
  LinearPerf perf;
  Recorder rec;
  Cluster cluster;
  Router* router = nullptr;
  uint64_t next_id = 1000000;
};

Request Prompt(int32_t tokens, std::vector<uint64_t> blocks = {}, int32_t block_tokens = 512, int64_t session = -1) {
  Request r;
  r.prompt_tokens = tokens;
  r.output_tokens = 8;
  r.prefix_blocks = std::move(blocks);
  r.prefix_block_tokens = block_tokens;
  r.session_id = session;
  return r;
}

// ---- the registry suite ----

class EveryRouter : public testing::TestWithParam<std::string> {};

// A mixed traffic: sessions, shared prefixes, two models, one replica of
// "m" down for a while. Returns each request's replica, by id.
std::map<uint64_t, int> RunMixed(const std::string& name, uint64_t seed, Recorder** rec_out = nullptr,
                                 std::unique_ptr<RouterRig>* keep = nullptr) {
  auto rig = std::make_unique<RouterRig>(std::vector<std::string>{"m", "m", "other", "m"}, seed);
  std::unique_ptr<Router> r;
  EXPECT_TRUE(MakeRouter(name, rig->sim, {}, &r).ok());
  rig->Use(std::move(r));
  rig->cluster.SetMetricsScrape(50 * kMillisecond);
  rig->sim.At(200 * kMillisecond, [&c = rig->cluster] { c.SetPhase(1, ReplicaPhase::kFailed); });
  rig->sim.At(700 * kMillisecond, [&c = rig->cluster] { c.SetPhase(1, ReplicaPhase::kReady); });
  for (uint64_t id = 0; id < 400; ++id) {
    const SimTime t = static_cast<SimTime>(id) * 3 * kMillisecond;
    rig->sim.At(t, [&rig = *rig, id, t] {
      Request q = Prompt(600 + 37 * static_cast<int32_t>(id % 11),
                         {id % 5, 100 + id % 3, 1000 + id}, 256, static_cast<int64_t>(id % 7) - 1);
      q.id = id;
      q.arrival = t;
      q.model = id % 9 == 0 ? "other" : "";
      // Never to a replica that cannot serve it.
      const auto cands = rig.cluster.Candidates(q);
      for (const ReplicaView* v : cands) {
        EXPECT_EQ(v->phase(), ReplicaPhase::kReady);
        EXPECT_EQ(v->model(), q.model.empty() ? "m" : q.model);
      }
      rig.cluster.Route(std::move(q));
    });
  }
  rig->sim.Run(60 * kSecond);
  std::map<uint64_t, int> where;
  for (const RequestRecord& rec : rig->rec.finished) where[rec.id] = rec.replica;
  if (rec_out) *rec_out = &rig->rec;
  if (keep) *keep = std::move(rig);
  return where;
}

TEST_P(EveryRouter, EveryRequestEndsOnceOnAReplicaOfItsModel) {
  Recorder* rec = nullptr;
  std::unique_ptr<RouterRig> rig;
  RunMixed(GetParam(), 1, &rec, &rig);
  std::set<uint64_t> seen;
  int64_t completed = 0;
  for (const RequestRecord& r : rec->finished) {
    EXPECT_TRUE(seen.insert(r.id).second) << "request " << r.id << " ended twice";
    if (r.status != RequestStatus::kCompleted) continue;
    ++completed;
    if (r.id % 9 == 0) {
      EXPECT_EQ(r.replica, 2) << "request " << r.id << " of model other";
    } else {
      EXPECT_NE(r.replica, 2) << "request " << r.id << " of model m";
    }
    if (r.arrival >= 200 * kMillisecond && r.arrival < 700 * kMillisecond)
      EXPECT_NE(r.replica, 1) << "request " << r.id << " went to a replica that was down";
  }
  EXPECT_EQ(seen.size(), 400u);
  EXPECT_EQ(completed, 400);
}

TEST_P(EveryRouter, SameSeedSameChoices) {
  EXPECT_EQ(RunMixed(GetParam(), 7), RunMixed(GetParam(), 7));
}

TEST_P(EveryRouter, RefusesAnUnknownOption) {
  Simulation sim(1);
  std::unique_ptr<Router> r;
  Status s = MakeRouter(GetParam(), sim, {{"no_such_option", 1}}, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fleet.router_options.no_such_option"), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryRouter, testing::ValuesIn(Routers().Names()),
                         [](const testing::TestParamInfo<std::string>& i) { return i.param; });

// ---- hand-made cases ----

TEST(PrefixIndex, MatchesLeadingBlocksPerTenantAndEvictsLeastRecentFirst) {
  PrefixIndex index(3);
  index.Insert(0, {1, 2, 3});
  index.Insert(1, {1, 2});
  std::vector<int64_t> m;
  index.Match({1, 2, 3, 4}, {0, 1, 2}, &m);
  EXPECT_EQ(m, (std::vector<int64_t>{3, 2, 0}));
  // Tenant 0 at its bound: a new path evicts its least recently touched
  // node, the deepest of the old path (3), and keeps block 1, touched again.
  index.Insert(0, {1, 9});
  index.Match({1, 2, 3}, {0, 1}, &m);
  EXPECT_EQ(m, (std::vector<int64_t>{2, 2}));
  index.Match({1, 9}, {0, 1}, &m);
  EXPECT_EQ(m, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(index.TenantBlocks(0), 3);
  EXPECT_EQ(index.TenantBlocks(1), 2);
  EXPECT_EQ(index.nodes(), 3u);  // 1, 2, 9: node 3, held by nobody now, is gone
  // A prompt longer than the bound keeps its leading blocks.
  PrefixIndex small(2);
  small.Insert(0, {1, 2, 3});
  small.Match({1, 2, 3}, {0}, &m);
  EXPECT_EQ(m, (std::vector<int64_t>{2}));
}

// SGLang's balance guard: imbalanced when max - min > 64 AND max > 1.5 x min.
TEST(PrefixAwareRouter, ImbalanceGuardFiresExactlyAtItsThresholds) {
  struct Case {
    int min_load, max_load;
    bool imbalanced;
  };
  for (const Case& c : {Case{100, 164, false}, Case{100, 165, true}, Case{200, 300, false}, Case{200, 301, true}}) {
    RouterRig rig({"m", "m"});
    std::unique_ptr<Router> r;
    ASSERT_TRUE(MakeRouter("prefix_aware", rig.sim, {}, &r).ok());
    rig.Use(std::move(r));
    rig.Load(0, c.min_load);
    rig.Load(1, c.max_load);
    // Replica 1 was sent this prompt's prefix: a full match.
    const Request req = Prompt(1024, {7, 8});
    rig.router->Sent(req, rig.cluster.view(1));
    EXPECT_EQ(rig.Pick(req), c.imbalanced ? 0u : 1u) << c.min_load << " vs " << c.max_load;
  }
}

TEST(PrefixAwareRouter, RoutesByCacheOnlyAboveTheMatchThresholdElseToTheSmallestTree) {
  for (double threshold : {0.3, 0.5}) {
    RouterRig rig({"m", "m", "m"});
    std::unique_ptr<Router> r;
    ASSERT_TRUE(MakeRouter("prefix_aware", rig.sim, {{"cache_threshold", threshold}}, &r).ok());
    rig.Use(std::move(r));
    // Replica 0: 3 blocks of other prompts; replica 1: this prompt's first
    // block and 3 more; replica 2: 1 block.
    rig.router->Sent(Prompt(1536, {50, 51, 52}), rig.cluster.view(0));
    rig.router->Sent(Prompt(1024, {7, 60}), rig.cluster.view(1));
    rig.router->Sent(Prompt(1024, {7, 61, 62}), rig.cluster.view(1));
    rig.router->Sent(Prompt(512, {70}), rig.cluster.view(2));
    // 512 of 1024 prompt tokens matched on replica 1: rate 0.5.
    const Request req = Prompt(1024, {7, 8});
    EXPECT_EQ(rig.Pick(req), threshold < 0.5 ? 1u : 2u) << "threshold " << threshold;
  }
}

TEST(PrefixAwareRouter, OracleMatchesTheEnginesTrueCache) {
  RouterRig rig({"m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("prefix_aware", rig.sim, {{"oracle", 1}}, &r).ok());
  rig.Use(std::move(r));
  // Replica 1 really served the prefix (the router was told nothing).
  Request first = Prompt(1024, {7, 8}, 512);
  first.id = 1;
  rig.cluster.replica(1).Submit(first);
  rig.sim.Run(10 * kSecond);
  ASSERT_GT(rig.cluster.view(1).CachedPrefixTokens(first), 0);
  EXPECT_EQ(rig.Pick(Prompt(1024, {7, 8})), 1u);
}

TEST(SessionAffinityRouter, ASessionStaysAndOnlyALeavingReplicasSessionsMove) {
  RouterRig rig({"m", "m", "m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("session_affinity", rig.sim, {}, &r).ok());
  rig.Use(std::move(r));
  std::map<int64_t, size_t> home;
  std::set<size_t> used;
  for (int64_t s = 0; s < 200; ++s) {
    home[s] = rig.Pick(Prompt(100, {}, 512, s));
    used.insert(home[s]);
    EXPECT_EQ(rig.Pick(Prompt(300, {}, 512, s)), home[s]);
  }
  EXPECT_EQ(used.size(), 4u) << "200 sessions should reach every replica";
  rig.cluster.SetPhase(2, ReplicaPhase::kFailed);
  for (int64_t s = 0; s < 200; ++s) {
    const size_t now = rig.Pick(Prompt(100, {}, 512, s));
    if (home[s] != 2) {
      EXPECT_EQ(now, home[s]) << "session " << s << " moved though its replica stayed";
    } else {
      EXPECT_NE(now, 2u);
    }
  }
  // No session: the least loaded.
  rig.Load(0, 3);
  rig.Load(1, 1);
  rig.Load(3, 2);
  EXPECT_EQ(rig.Pick(Prompt(100)), 1u);
}

TEST(PowerOfTwoRouter, NeverPicksTheMostLoadedOfThree) {
  RouterRig rig({"m", "m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("power_of_two", rig.sim, {}, &r).ok());
  rig.Use(std::move(r));
  rig.Load(0, 1);
  rig.Load(1, 5);
  rig.Load(2, 3);
  std::map<size_t, int> picks;
  for (int k = 0; k < 3000; ++k) picks[rig.Pick(Prompt(100))]++;
  EXPECT_EQ(picks[1], 0);
  // The least loaded wins whenever drawn: 2 pairs of 3.
  EXPECT_NEAR(picks[0] / 3000.0, 2.0 / 3.0, 0.03);
}

TEST(RandomRouter, SpreadsUniformly) {
  RouterRig rig({"m", "m", "m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("random", rig.sim, {}, &r).ok());
  rig.Use(std::move(r));
  std::map<size_t, int> picks;
  for (int k = 0; k < 8000; ++k) picks[rig.Pick(Prompt(100))]++;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(picks[i] / 8000.0, 0.25, 0.025) << i;
}

TEST(LeastKvRouter, PicksTheLowestKvUtilisation) {
  RouterRig rig({"m", "m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("least_kv", rig.sim, {}, &r).ok());
  rig.Use(std::move(r));
  // Long decodes hold KV: replica 0 two of them, replica 2 one, replica 1
  // none.
  for (int i : {0, 0, 2}) {
    Request q = Prompt(4000);
    q.id = rig.next_id++;
    q.output_tokens = 50000;
    rig.cluster.replica(i).Submit(q);
  }
  rig.sim.Run(rig.sim.now() + 50 * kMillisecond);
  ASSERT_GT(rig.cluster.view(0).kv_utilization(), rig.cluster.view(2).kv_utilization());
  ASSERT_GT(rig.cluster.view(2).kv_utilization(), 0);
  EXPECT_EQ(rig.Pick(Prompt(100)), 1u);
}

// llm-d: 2 x (maxQ - q) / (maxQ - minQ) + 2 x (1 - kv) + 3 x matched / blocks.
TEST(WeightedScorersRouter, ScoresQueueKvAndPrefixWithTheirWeights) {
  RouterRig rig({"m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("weighted_scorers", rig.sim, {}, &r).ok());
  rig.Use(std::move(r));
  rig.Load(1, 4);  // queue 0 vs 4: queue scores 1 and 0; kv 0 on both
  // No prefix known: 2 + 2 + 0 beats 0 + 2 + 0.
  EXPECT_EQ(rig.Pick(Prompt(1536, {1, 2, 3})), 0u);
  // Replica 1 holds 2 of the 3 blocks: 0 + 2 + 3 x 2/3 = 4 ties 4: at random.
  rig.router->Sent(Prompt(1024, {1, 2}), rig.cluster.view(1));
  std::map<size_t, int> picks;
  for (int k = 0; k < 400; ++k) picks[rig.Pick(Prompt(1536, {1, 2, 3}))]++;
  EXPECT_GT(picks[0], 120);
  EXPECT_GT(picks[1], 120);
  // All 3 blocks: 0 + 2 + 3 = 5 beats 4.
  rig.router->Sent(Prompt(1536, {1, 2, 3}), rig.cluster.view(1));
  EXPECT_EQ(rig.Pick(Prompt(1536, {1, 2, 3})), 1u);
  // With the prefix weight at 0, the queue decides again.
  std::unique_ptr<Router> r2;
  ASSERT_TRUE(MakeRouter("weighted_scorers", rig.sim, {{"prefix_weight", 0}}, &r2).ok());
  rig.Use(std::move(r2));
  rig.router->Sent(Prompt(1536, {1, 2, 3}), rig.cluster.view(1));
  EXPECT_EQ(rig.Pick(Prompt(1536, {1, 2, 3})), 0u);
}

TEST(WeightedScorersRouter, SeesQueuesAsLastScraped) {
  RouterRig rig({"m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("weighted_scorers", rig.sim, {}, &r, /*live_metrics=*/false).ok());
  rig.Use(std::move(r));
  rig.cluster.SetMetricsScrape(kSecond);
  rig.sim.Run(10 * kMillisecond);  // the first scrape, at 0: both idle
  rig.Load(0, 6, 100, 50000);      // after it: the router does not see these
  std::map<size_t, int> picks;
  for (int k = 0; k < 200; ++k) picks[rig.Pick(Prompt(100))]++;
  EXPECT_GT(picks[0], 50) << "a stale scrape shows equal queues: ties at random";
  rig.sim.Run(kSecond + kMillisecond);  // scraped again: replica 0's KV is in use
  EXPECT_GT(rig.cluster.view(0).metrics().kv_utilization, 0);
  EXPECT_EQ(rig.Pick(Prompt(100)), 1u);
}

// Dynamo: logit = w x (queued prefill + uncached prompt) / block
//                + decode blocks (active, plus the request's own uncached ones).
TEST(KvAwareCostRouter, LowestLogitWinsAndTemperatureSamplesBySoftmax) {
  RouterRig rig({"m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("kv_aware_cost", rig.sim, {{"approximate", 1}}, &r).ok());
  rig.Use(std::move(r));
  // Replica 0 queues 160 prefill tokens and (the router believes) caches
  // the whole 320-token prompt: (160 + 0) / 16 + 0 = 10 against
  // (0 + 320) / 16 + 320 / 16 = 40.
  rig.Load(0, 1, 160);
  const Request req = Prompt(320, {1, 2}, 160);
  rig.router->Sent(req, rig.cluster.view(0));
  EXPECT_EQ(rig.Pick(req), 0u);
  // Two more waiting there: 480 / 16 = 30, still below 40.
  rig.Load(0, 2, 160);
  EXPECT_EQ(rig.Pick(req), 0u);
  // Two more: 800 / 16 = 50 > 40.
  rig.Load(0, 2, 160);
  EXPECT_EQ(rig.Pick(req), 1u);

  // Temperature 1: logits 50 and 40, shifted by the least and scaled by
  // their range, are 1 and 0, so replica 1 is drawn with probability
  // 1 / (1 + exp(-1)).
  std::unique_ptr<Router> warm;
  ASSERT_TRUE(MakeRouter("kv_aware_cost", rig.sim, {{"approximate", 1}, {"router_temperature", 1}}, &warm).ok());
  rig.Use(std::move(warm));
  rig.router->Sent(req, rig.cluster.view(0));
  int ones = 0;
  const int n = 20000;
  for (int k = 0; k < n; ++k) ones += rig.Pick(req) == 1u;
  EXPECT_NEAR(ones / static_cast<double>(n), 1.0 / (1.0 + std::exp(-1.0)), 0.015);
}

TEST(KvAwareCostRouter, CountsWhatItSentSinceTheLastScrape) {
  RouterRig rig({"m", "m"});
  std::unique_ptr<Router> r;
  ASSERT_TRUE(MakeRouter("kv_aware_cost", rig.sim, {}, &r, /*live_metrics=*/false).ok());
  rig.Use(std::move(r));
  rig.cluster.SetMetricsScrape(kSecond);
  rig.sim.Run(10 * kMillisecond);
  // Between scrapes, a burst alternates: each request it sends counts on
  // its replica's logit until the next scrape shows it.
  std::vector<size_t> picks;
  for (int k = 0; k < 4; ++k) {
    Request q = Prompt(320);
    q.id = static_cast<uint64_t>(k);
    const auto cands = rig.cluster.Candidates(q);
    const size_t i = rig.router->Route(q, cands);
    rig.router->Sent(q, *cands[i]);
    picks.push_back(static_cast<size_t>(cands[i]->index()));
  }
  EXPECT_NE(picks[0], picks[1]);
  EXPECT_NE(picks[2], picks[3]);
}

TEST(RouterOptions, OutOfRangeNamesThePathAndTheBounds) {
  Simulation sim(1);
  std::unique_ptr<Router> r;
  Status s = MakeRouter("prefix_aware", sim, {{"cache_threshold", 2}}, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("fleet.router_options.cache_threshold: expected a number between 0 and 1, got 2"),
            std::string::npos)
      << s.message();
  s = MakeRouter("session_affinity", sim, {{"ring_size", 1.5}}, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("an integer"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fleetsim
