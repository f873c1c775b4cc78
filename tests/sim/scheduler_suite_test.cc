// Every registered batch scheduler through the same suite (TEST_P over the
// registry), plus hand-computed cases for each engine's defining rule.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <vector>

#include "tests/model/builtin.h"
#include "model/catalog.h"
#include "model/roofline.h"
#include "sim/cluster/batch_scheduler.h"
#include "sim/cluster/replica.h"
#include "sim/cluster/sglang_scheduler.h"
#include "sim/engine/simulation.h"
#include "tests/sim/replica_rig.h"

namespace fleetsim {
namespace {

using namespace testing_rig;

// ---- The shared suite ---------------------------------------------------------

struct SuiteCase {
  std::string scheduler;
  PreemptionMode mode;
  bool prefixes = false;  // requests share prefixes; prefix caching on where the engine has one
};

class EverySchedulerTest : public ::testing::TestWithParam<SuiteCase> {
 protected:
  Rig MakeRig() const {
    Rig s;
    s.scheduler = GetParam().scheduler;
    s.limits.max_model_len = 1000;
    s.limits.max_num_batched_tokens = 1024;  // vllm_v0 needs >= max_model_len
    s.limits.max_num_seqs = 32;
    s.kv_blocks = 160;  // 2560 tokens: tight, so preemption happens
    s.mode = GetParam().mode;
    s.host_blocks = 200;
    s.prefix_caching = GetParam().prefixes;
    return s;
  }
  // Random steady load; returns the records sorted by id.
  std::vector<RequestRecord> RunLoad(uint64_t seed, Fixture& f, int n) {
    Rng rng(seed);
    SimTime t = 0;
    for (int i = 0; i < n; ++i) {
      t += static_cast<SimTime>(rng.Exponential(40e6));
      const int32_t prompt = 1 + static_cast<int32_t>(rng.Below(400));
      const int32_t output = 1 + static_cast<int32_t>(rng.Below(300));
      std::vector<uint64_t> ids;
      if (GetParam().prefixes) {
        // One of 4 families of 64-token blocks: a shared head, then ids
        // unique to the request.
        const uint64_t family = rng.Below(4);
        for (int32_t b = 0; b * 64 < prompt; ++b)
          ids.push_back(b < 3 ? family * 100 + static_cast<uint64_t>(b) : 1000000 + static_cast<uint64_t>(i) * 100 + b);
      }
      f.SubmitAt(t, prompt, output, i, ids, GetParam().prefixes ? 64 : 0);
    }
    f.RunChecked();
    std::vector<RequestRecord> out = f.rec.finished;
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    return out;
  }
};

TEST_P(EverySchedulerTest, CompletesEveryRequestAndLeaksNoBlock) {
  Fixture f(MakeRig());
  auto recs = RunLoad(7, f, 300);
  ASSERT_EQ(recs.size(), 300u);  // conservation: one record per request
  for (const RequestRecord& r : recs) {
    EXPECT_EQ(r.status, RequestStatus::kCompleted) << r.id;  // nobody starved
    EXPECT_EQ(r.generated_tokens, r.output_tokens) << r.id;
    EXPECT_GE(r.first_token, r.arrival);
    EXPECT_GE(r.finish, r.first_token);
  }
  EXPECT_EQ(f.replica->state().kv().used_blocks(), 0);
  EXPECT_EQ(f.replica->state().host_blocks_used(), 0);
  if (const PrefixCache* cache = f.replica->state().kv().cache()) {
    // No request holds a cached block at the end (nothing leaked), and the
    // shared heads were hit.
    EXPECT_EQ(cache->references(), 0);
    EXPECT_GT(f.replica->state().prefix_hit_tokens(), 0);
  }
  EXPECT_EQ(f.replica->state().num_live(), 0);
  int64_t expected = 0;
  for (const RequestRecord& r : recs) expected += r.output_tokens - 1;
  EXPECT_EQ(f.rec.gap_total, expected);
}

TEST_P(EverySchedulerTest, SameSeedSameTimeline) {
  Fixture a(MakeRig()), b(MakeRig());
  auto ra = RunLoad(11, a, 150);
  auto rb = RunLoad(11, b, 150);
  ASSERT_EQ(ra.size(), rb.size());
  for (size_t i = 0; i < ra.size(); ++i) {
    EXPECT_EQ(ra[i].first_token, rb[i].first_token);
    EXPECT_EQ(ra[i].finish, rb[i].finish);
    EXPECT_EQ(ra[i].preemptions, rb[i].preemptions);
  }
}

std::vector<SuiteCase> AllCases() {
  std::vector<SuiteCase> out;
  for (const std::string& name : Schedulers().Names()) {
    out.push_back({name, PreemptionMode::kRecompute});
    out.push_back({name, PreemptionMode::kSwap});
    if (name != "orca") out.push_back({name, PreemptionMode::kRecompute, true});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Registry, EverySchedulerTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<SuiteCase>& info) {
                           return info.param.scheduler +
                                  (info.param.mode == PreemptionMode::kSwap ? "_swap" : "_recompute") +
                                  (info.param.prefixes ? "_prefix_cache" : "");
                         });

TEST(EveryScheduler, RegistryHasTheFiveEngines) {
  EXPECT_EQ(Schedulers().Names(), (std::vector<std::string>{"vllm", "vllm_v0", "sarathi", "orca", "sglang"}));
}

// ---- Hand-computed cases -------------------------------------------------------

TEST(Sarathi, LongPromptTakesOneIterationPerChunk) {
  Rig s;
  s.scheduler = "sarathi";
  s.params["chunk_size"] = 512;
  s.limits.max_model_len = 10000;
  Fixture f(s);
  f.SubmitAt(0, 8192, 3, 0);
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 1u);
  int prefill_iterations = 0;
  for (const BatchShape& b : f.rec.shapes) {
    if (b.prefill_tokens > 0) {
      ++prefill_iterations;
      EXPECT_EQ(b.prefill_tokens, 512);
    }
  }
  EXPECT_EQ(prefill_iterations, 16);
}

TEST(Sarathi, PrefillChunkShrinksByTheDecodesInTheBudget) {
  Rig s;
  s.scheduler = "sarathi";
  s.params["chunk_size"] = 512;
  s.limits.max_model_len = 10000;
  Fixture f(s);
  for (int i = 0; i < 10; ++i) f.SubmitAt(0, 16, 400, i);
  f.SubmitAt(50 * kMillisecond, 4000, 2, 10);
  f.RunChecked();
  for (const BatchShape& b : f.rec.shapes)
    EXPECT_LE(b.prefill_tokens + b.decode_tokens, 512);
}

TEST(VllmV0, LongPrefillStallsEveryRunningDecodeForExactlyItsDuration) {
  Rig s;
  s.scheduler = "vllm_v0";
  s.limits.max_model_len = 8192;
  s.limits.max_num_batched_tokens = 8192;
  Fixture f(s);
  f.SubmitAt(0, 10, 200, 0);                 // decoding long before B arrives
  f.SubmitAt(20 * kMillisecond, 4000, 2, 1);  // B: a 4000-token prompt
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 2u);
  // Find B's prefill iteration: it ran alone (no decodes).
  size_t k = 0;
  while (k < f.rec.shapes.size() && f.rec.shapes[k].prefill_tokens != 4000) ++k;
  ASSERT_LT(k, f.rec.shapes.size());
  EXPECT_EQ(f.rec.shapes[k].decode_seqs, 0);
  const SimTime prefill = f.rec.iterations[k].second - f.rec.iterations[k].first;
  const SimTime next_decode = f.rec.iterations[k + 1].second - f.rec.iterations[k + 1].first;
  // A's gap across B's prefill is the prefill plus the decode step after it.
  bool found = false;
  for (auto& [gap, count] : f.rec.gaps) found = found || gap == prefill + next_decode;
  EXPECT_TRUE(found) << "no gap of " << prefill + next_decode;
  EXPECT_EQ(prefill, kMillisecond + 4000 * kMicrosecond + 4000);
}

TEST(VllmV0, RefusesABudgetBelowMaxModelLen) {
  SchedulerLimits limits;
  limits.max_model_len = 131072;
  limits.max_num_batched_tokens = 8192;
  std::unique_ptr<BatchScheduler> out;
  Status st = Schedulers().Find("vllm_v0")->factory(limits, {}, &out);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("max_num_batched_tokens"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("131072"), std::string::npos) << st.message();
}

TEST(Orca, AdmitsNoRequestWhoseFullLengthKvDoesNotFit) {
  Rig s;
  s.scheduler = "orca";
  s.limits.max_model_len = 1600;  // 100 blocks reserved per request
  s.kv_blocks = 150;              // room for one reservation only
  Fixture f(s);
  f.SubmitAt(0, 100, 50, 0);
  f.SubmitAt(0, 100, 50, 1);
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 2u);
  const RequestRecord& a = f.rec.finished[0].id == 0 ? f.rec.finished[0] : f.rec.finished[1];
  const RequestRecord& b = f.rec.finished[0].id == 1 ? f.rec.finished[0] : f.rec.finished[1];
  EXPECT_GE(b.first_scheduled, a.finish);  // B waited for A's reservation
  EXPECT_EQ(a.preemptions + b.preemptions, 0);
}

TEST(Orca, RequestLengthReservationAdmitsBoth) {
  Rig s;
  s.scheduler = "orca";
  s.params["reserve_request_length"] = 1;
  s.limits.max_model_len = 1600;
  s.kv_blocks = 150;
  Fixture f(s);
  f.SubmitAt(0, 100, 50, 0);
  f.SubmitAt(0, 100, 50, 1);
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 2u);
  EXPECT_LT(f.rec.finished[0].first_scheduled, f.rec.finished[1].finish);
  EXPECT_LT(f.rec.finished[1].first_scheduled, f.rec.finished[0].finish);
}

TEST(Sglang, RatioDecaysWithDecodeStepsAndAdmissionRespectsEstimate) {
  SchedulerLimits limits;
  limits.max_model_len = 4000;
  limits.max_num_batched_tokens = 4096;
  limits.max_num_seqs = 64;
  SglangScheduler::Options o;
  SglangScheduler sched(limits, o);
  EXPECT_DOUBLE_EQ(sched.new_token_ratio(), 0.7);
  // 40 blocks = 640 tokens. A running request with 600 output tokens left
  // is estimated at 0.7 x 600 = 420: a 200-token newcomer (plus its 10
  // output tokens) does not fit beside it, though its prompt alone would.
  ReplicaState state(40, 16);
  Request a;
  a.prompt_tokens = 16;
  a.output_tokens = 601;
  state.Enqueue(a, 0);
  Batch b1;
  sched.Schedule(state, 0, &b1);
  ASSERT_EQ(b1.chunks.size(), 1u);
  state.Complete(b1, 1, [](SimTime, int64_t) {}, [](const Seq&) {});
  Request c;
  c.id = 1;
  c.prompt_tokens = 200;
  c.output_tokens = 10;
  state.Enqueue(c, 1);
  Batch b2;
  sched.Schedule(state, 1, &b2);
  EXPECT_TRUE(b2.chunks.empty());  // not admitted
  EXPECT_TRUE(b2.decodes);         // a decode step instead
  EXPECT_LT(sched.new_token_ratio(), 0.7);
}

TEST(Swap, PreemptedDecoderSwapsOutAndBackAndCompletes) {
  Rig s;
  s.scheduler = "vllm";
  s.limits.max_model_len = 1000;
  s.kv_blocks = 8;  // 128 tokens
  s.mode = PreemptionMode::kSwap;
  s.host_blocks = 100;
  Fixture f(s);
  f.SubmitAt(0, 40, 60, 0);
  f.SubmitAt(0, 40, 60, 1);
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 2u);
  int64_t out = 0, in = 0;
  for (const BatchShape& b : f.rec.shapes) {
    out += b.swap_out_tokens;
    in += b.swap_in_tokens;
  }
  EXPECT_GT(out, 0);
  EXPECT_EQ(out, in);  // every token swapped out came back
  for (const RequestRecord& r : f.rec.finished) EXPECT_EQ(r.generated_tokens, 60);
}

TEST(PrefixCaching, SecondIdenticalPromptPaysOnlyTheUncachedTail) {
  Rig s;
  s.scheduler = "vllm";
  s.limits.max_model_len = 8192;
  s.prefix_caching = true;
  Fixture f(s);
  // 1600 tokens: three full 512-token ids, then 64 tokens under a fourth.
  const std::vector<uint64_t> ids = {11, 12, 13, 14};
  f.SubmitAt(0, 1600, 4, 0, ids, 512);
  f.SubmitAt(100 * kMillisecond, 1600, 4, 1, ids, 512);
  f.RunChecked();
  ASSERT_EQ(f.rec.finished.size(), 2u);
  std::vector<BatchShape> prefills;
  for (const BatchShape& b : f.rec.shapes)
    if (b.prefill_tokens > 0) prefills.push_back(b);
  ASSERT_EQ(prefills.size(), 2u);
  EXPECT_EQ(prefills[0].prefill_tokens, 1600);
  EXPECT_EQ(prefills[0].cached_tokens, 0);
  // The second computes only the 64-token tail, attending to all 1600.
  EXPECT_EQ(prefills[1].prefill_tokens, 64);
  EXPECT_EQ(prefills[1].cached_tokens, 1536);
  EXPECT_EQ(prefills[1].prefill_kv_tokens, 1600);
  EXPECT_EQ(prefills[1].prefill_attn_pairs, 64 * 1536 + 64 * 65 / 2);
  const RequestRecord& second = f.rec.finished[0].id == 1 ? f.rec.finished[0] : f.rec.finished[1];
  EXPECT_EQ(second.cached_tokens, 1536);
  EXPECT_EQ(second.first_token - second.arrival, kMillisecond + 64 * kMicrosecond + 1600);
  EXPECT_EQ(f.replica->state().prefix_hit_tokens(), 1536);
  // The cluster sees the cache: a router could score this replica.
  Request probe;
  probe.prompt_tokens = 3000;
  probe.prefix_blocks = {11, 12, 99};
  probe.prefix_block_tokens = 512;
  EXPECT_EQ(f.replica->CachedPrefixTokens(probe), 1024);
  // The three shared ids, and each request's own full blocks past them
  // (1600 + 3 generated tokens in KV: 100 full blocks, 96 of them shared),
  // which vLLM keeps cached too.
  EXPECT_EQ(f.replica->state().kv().cached_blocks(), 3 * 32 + 2 * 4);
}

TEST(PrefixCaching, AFullyCachedPromptStillComputesItsLastToken) {
  Rig s;
  s.scheduler = "vllm";
  s.limits.max_model_len = 8192;
  s.prefix_caching = true;
  Fixture f(s);
  f.SubmitAt(0, 1024, 2, 0, {7, 8}, 512);
  f.SubmitAt(100 * kMillisecond, 1024, 2, 1, {7, 8}, 512);
  f.RunChecked();
  std::vector<BatchShape> prefills;
  for (const BatchShape& b : f.rec.shapes)
    if (b.prefill_tokens > 0) prefills.push_back(b);
  ASSERT_EQ(prefills.size(), 2u);
  // Both ids are cached, but the last one is dropped so that at least one
  // token is computed: 512 hit, 512 computed.
  EXPECT_EQ(prefills[1].cached_tokens, 512);
  EXPECT_EQ(prefills[1].prefill_tokens, 512);
}

TEST(PrefixCacheEviction, LruEvictsLeastRecentlyReleasedWhateverItsPlace) {
  PrefixCache c(PrefixCache::Eviction::kLru);
  const auto a = c.Insert(PrefixCache::kRoot, 1, 4);
  const auto b = c.Insert(a, 2, 4);
  c.Release(a);  // released first: evicted first, though b hangs under it
  c.Release(b);
  EXPECT_EQ(c.evictable_blocks(), 8);
  EXPECT_EQ(c.Evict(1), 4);
  EXPECT_EQ(c.Child(PrefixCache::kRoot, 1), 0u);
  std::vector<PrefixCache::NodeId> m;
  EXPECT_EQ(c.Match({1, 2}, &m), 0u);  // b is unreachable now
  EXPECT_EQ(c.cached_blocks(), 4);
  EXPECT_EQ(c.Evict(100), 4);
  EXPECT_EQ(c.evicted_blocks(), 8);
}

TEST(PrefixCacheEviction, RadixTreeEvictsLeavesFirst) {
  PrefixCache c(PrefixCache::Eviction::kLeafLru);
  const auto a = c.Insert(PrefixCache::kRoot, 1, 4);
  const auto b = c.Insert(a, 2, 4);
  c.Release(a);
  c.Release(b);
  // a was released first but has a child: the leaf b goes first.
  EXPECT_EQ(c.evictable_blocks(), 4);
  EXPECT_EQ(c.Evict(1), 4);
  EXPECT_EQ(c.Child(a, 2), 0u);
  EXPECT_EQ(c.evictable_blocks(), 4);  // a became a leaf
  std::vector<PrefixCache::NodeId> m;
  EXPECT_EQ(c.Match({1, 2}, &m), 1u);
}

TEST(PrefixCacheEviction, ReferencedNodesAreNeverEvicted) {
  PrefixCache c(PrefixCache::Eviction::kLru);
  const auto a = c.Insert(PrefixCache::kRoot, 1, 4);
  EXPECT_EQ(c.Evict(10), 0);
  c.Release(a);
  c.Acquire(a);
  EXPECT_EQ(c.Evict(10), 0);
  c.Release(a);
  EXPECT_EQ(c.Evict(10), 4);
}

TEST(Swap, TakesKvBytesOverPcieEachWay) {
  Catalog catalog;
  ASSERT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
  const ModelSpec& m = *catalog.FindModel("Llama-3.1-8B");
  const GpuSpec& g = *catalog.FindGpu("H100-SXM");
  RooflineOptions opt;
  RooflinePerfModel perf(m, g, ShardPlan{}, model_test::BuiltinEngine("vllm"), opt);
  BatchShape shape;
  shape.swap_out_tokens = 1000;
  shape.swap_in_tokens = 500;
  const double bytes = 1500.0 * static_cast<double>(m.KvBytesPerToken());
  EXPECT_NEAR(perf.Explain(shape).swap_ns, bytes / (g.pcie_gbps_per_direction * opt.link_efficiency), 1.0);
}

}  // namespace
}  // namespace fleetsim
