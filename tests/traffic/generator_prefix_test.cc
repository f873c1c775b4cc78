// GeneratorSource with shared system prompts (SharedPrefixSpec) and
// multi-turn sessions (SessionSpec): the prefix block ids, the session
// structure, the merge of turns with session starts, and the memory bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sim/traffic/generator_source.h"
#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::DataPath;
using testing_traffic::Drain;

constexpr int32_t kBlock = GeneratorSource::kPrefixBlockTokens;
constexpr uint64_t kGroupBase = GeneratorSource::kGroupIdBase;
constexpr uint64_t kGroupStride = GeneratorSource::kGroupIdStride;
constexpr uint64_t kFreshBase = GeneratorSource::kFreshIdBase;

TrafficSpec Poisson(double rate, int64_t n) {
  TrafficSpec s;
  s.kind = TrafficSpec::Kind::kGenerator;
  s.arrival = ArrivalProcess::kPoisson;
  s.rate_per_s = rate;
  s.prompt.kind = LengthSpec::Kind::kUniform;
  s.prompt.min = 10;
  s.prompt.max = 2000;
  s.output.kind = LengthSpec::Kind::kLogNormal;
  s.output.median = 100;
  s.output.sigma = 1;
  s.output.max = 4000;
  s.max_requests = n;
  return s;
}

TrafficSpec WithSharedPrefix(TrafficSpec s, int32_t groups, int32_t tokens) {
  SharedPrefixSpec p;
  p.groups = groups;
  p.tokens = tokens;
  s.shared_prefix = p;
  return s;
}

TrafficSpec WithSessions(TrafficSpec s, int32_t turns, double think_s, int32_t max_context = 1 << 30) {
  SessionSpec p;
  p.turns = turns;
  p.think_time_s = think_s;
  p.max_context_tokens = max_context;
  s.sessions = p;
  return s;
}

std::unique_ptr<RequestSource> Open(const TrafficSpec& spec, uint64_t seed) {
  std::unique_ptr<RequestSource> src;
  Status s = GeneratorSource::Make(spec, Rng(seed), &src);
  EXPECT_TRUE(s.ok()) << s.message();
  return src;
}

std::vector<Request> Generate(const TrafficSpec& spec, uint64_t seed) {
  std::unique_ptr<RequestSource> src = Open(spec, seed);
  if (!src) return {};
  std::vector<Request> rows = Drain(*src);
  EXPECT_TRUE(src->status().ok());
  return rows;
}

std::string MakeError(const TrafficSpec& spec) {
  std::unique_ptr<RequestSource> src;
  return GeneratorSource::Make(spec, Rng(1), &src).message();
}

size_t CeilBlocks(int64_t tokens) { return static_cast<size_t>((tokens + kBlock - 1) / kBlock); }

size_t CommonPrefix(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

bool SameStream(const std::vector<Request>& a, const std::vector<Request>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].arrival != b[i].arrival || a[i].prompt_tokens != b[i].prompt_tokens ||
        a[i].output_tokens != b[i].output_tokens || a[i].session_id != b[i].session_id ||
        a[i].prefix_blocks != b[i].prefix_blocks || a[i].prefix_block_tokens != b[i].prefix_block_tokens)
      return false;
  }
  return true;
}

// The turns of each session, in output order.
std::map<int64_t, std::vector<const Request*>> BySession(const std::vector<Request>& rows) {
  std::map<int64_t, std::vector<const Request*>> out;
  for (const Request& r : rows) out[r.session_id].push_back(&r);
  return out;
}

// Chained ids: an id must always sit at the same position after the same
// predecessor, or two different prefixes would look shared to a cache.
void ExpectChainsConsistent(const std::vector<Request>& rows) {
  std::unordered_map<uint64_t, std::pair<size_t, uint64_t>> seen;  // id -> (position, previous id)
  for (const Request& r : rows) {
    for (size_t i = 0; i < r.prefix_blocks.size(); ++i) {
      const uint64_t prev = i == 0 ? 0 : r.prefix_blocks[i - 1];
      auto [it, fresh] = seen.emplace(r.prefix_blocks[i], std::make_pair(i, prev));
      if (!fresh && it->second != std::make_pair(i, prev)) {
        ADD_FAILURE() << "request " << r.id << " reuses id " << r.prefix_blocks[i] << " at position " << i
                      << " after " << prev << "; first seen at " << it->second.first << " after "
                      << it->second.second;
        return;
      }
    }
  }
}

// ---- shared system prompts ----

TEST(GeneratorSharedPrefix, PromptIsSystemPromptPlusDrawnPromptAndArrivalsDoNotMove) {
  const TrafficSpec plain = Poisson(20, 2000);
  const std::vector<Request> a = Generate(plain, 41);
  const std::vector<Request> b = Generate(WithSharedPrefix(plain, 7, 1300), 41);
  ASSERT_EQ(a.size(), 2000u);
  ASSERT_EQ(b.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_TRUE(a[i].prefix_blocks.empty());
    EXPECT_EQ(a[i].prefix_block_tokens, 0);
    EXPECT_EQ(b[i].id, i);
    EXPECT_EQ(b[i].arrival, a[i].arrival);
    EXPECT_EQ(b[i].output_tokens, a[i].output_tokens);
    EXPECT_EQ(b[i].prompt_tokens, a[i].prompt_tokens + 1300);
    EXPECT_EQ(b[i].session_id, -1);
    EXPECT_EQ(b[i].prefix_block_tokens, 512);
    EXPECT_EQ(b[i].prefix_blocks.size(), CeilBlocks(b[i].prompt_tokens));
  }
}

TEST(GeneratorSharedPrefix, SameGroupSharesExactlyTheFullSystemPromptBlocks) {
  for (int32_t tokens : {100, 511, 512, 1300, 2048, 5000}) {
    SCOPED_TRACE(tokens);
    const size_t shared = static_cast<size_t>(tokens / 512);
    const std::vector<Request> rows = Generate(WithSharedPrefix(Poisson(50, 3000), 3, tokens), 5);
    ASSERT_EQ(rows.size(), 3000u);
    std::vector<int> group(rows.size(), -1);
    std::vector<int> per_group(3, 0);
    for (size_t i = 0; i < rows.size(); ++i) {
      const std::vector<uint64_t>& ids = rows[i].prefix_blocks;
      ASSERT_EQ(ids.size(), CeilBlocks(rows[i].prompt_tokens));
      for (size_t k = 0; k < ids.size(); ++k) {
        if (k < shared) {
          // The group's i-th block, as documented.
          ASSERT_GE(ids[k], kGroupBase);
          ASSERT_LT(ids[k], kFreshBase);
          const uint64_t g = (ids[k] - kGroupBase) / kGroupStride;
          ASSERT_LT(g, 3u);
          EXPECT_EQ(ids[k], kGroupBase + g * kGroupStride + k);
          if (k == 0) group[i] = static_cast<int>(g);
        } else {
          EXPECT_GE(ids[k], kFreshBase) << "block " << k << " is not a full system-prompt block";
        }
      }
      if (shared > 0) ++per_group[group[i]];
    }
    if (shared > 0) {
      // Groups are drawn uniformly.
      for (int g = 0; g < 3; ++g) EXPECT_NEAR(per_group[g] / 3000.0, 1.0 / 3, 0.04) << "group " << g;
    }
    for (size_t i = 0; i + 1 < rows.size(); ++i) {
      for (size_t j = i + 1; j < std::min(rows.size(), i + 8); ++j) {
        const size_t common = CommonPrefix(rows[i].prefix_blocks, rows[j].prefix_blocks);
        EXPECT_EQ(common, shared > 0 && group[i] == group[j] ? shared : 0u) << i << " vs " << j;
      }
    }
  }
}

TEST(GeneratorSharedPrefix, BlockIdsNeverCollideOver100kRequests) {
  const std::vector<Request> rows = Generate(WithSharedPrefix(Poisson(1000, 100000), 50, 1300), 8);
  ASSERT_EQ(rows.size(), 100000u);
  std::unordered_set<uint64_t> fresh;
  size_t fresh_count = 0;
  for (const Request& r : rows) {
    for (uint64_t id : r.prefix_blocks) {
      if (id < kFreshBase) continue;
      ++fresh_count;
      EXPECT_TRUE(fresh.insert(id).second) << "fresh id " << id << " appears twice (request " << r.id << ")";
    }
  }
  EXPECT_GT(fresh_count, 100000u);
  ExpectChainsConsistent(rows);
}

TEST(GeneratorSharedPrefix, WorksWithALengthCsv) {
  TrafficSpec spec = WithSharedPrefix(Poisson(100, 500), 2, 1024);
  spec.lengths_csv = DataPath("lengths.csv");
  TrafficSpec plain = spec;
  plain.shared_prefix.reset();
  const std::vector<Request> a = Generate(plain, 2);
  const std::vector<Request> b = Generate(spec, 2);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].prompt_tokens, a[i].prompt_tokens + 1024);
    EXPECT_EQ(b[i].output_tokens, a[i].output_tokens);
    EXPECT_EQ(b[i].prefix_blocks.size(), CeilBlocks(b[i].prompt_tokens));
  }
}

TEST(GeneratorSharedPrefix, ReusedRequestIsFullyOverwritten) {
  std::unique_ptr<RequestSource> src = Open(WithSharedPrefix(Poisson(5, 1), 1, 600), 1);
  Request r;
  r.prefix_blocks = {1, 2, 3, 4, 5, 6, 7, 8};
  r.session_id = 9;
  r.prefix_block_tokens = 16;
  ASSERT_TRUE(src->Next(&r));
  EXPECT_EQ(r.session_id, -1);
  EXPECT_EQ(r.prefix_block_tokens, 512);
  ASSERT_EQ(r.prefix_blocks.size(), CeilBlocks(r.prompt_tokens));
  EXPECT_EQ(r.prefix_blocks[0], kGroupBase);
}

// ---- sessions ----

TEST(GeneratorSessions, SameSeedGivesSameStream) {
  const TrafficSpec spec = WithSharedPrefix(WithSessions(Poisson(20, 3000), 4, 2.0, 16384), 5, 900);
  const std::vector<Request> a = Generate(spec, 1234);
  ASSERT_EQ(a.size(), 3000u);
  EXPECT_TRUE(SameStream(a, Generate(spec, 1234)));
  EXPECT_FALSE(SameStream(a, Generate(spec, 1235)));
}

TEST(GeneratorSessions, TurnResendsTheConversationPlusANewPrompt) {
  // A fixed new prompt makes the growth exact.
  TrafficSpec spec = WithSessions(Poisson(10, 4000), 6, 1.5);
  spec.prompt.kind = LengthSpec::Kind::kFixed;
  spec.prompt.value = 300;
  const std::vector<Request> rows = Generate(spec, 3);
  ASSERT_EQ(rows.size(), 4000u);
  int follow_ups = 0;
  for (const auto& [session, turns] : BySession(rows)) {
    SCOPED_TRACE(session);
    ASSERT_GE(session, 0);
    EXPECT_EQ(turns[0]->prompt_tokens, 300);
    EXPECT_LE(turns.size(), 6u);
    for (size_t k = 0; k < turns.size(); ++k) {
      const Request& cur = *turns[k];
      EXPECT_EQ(cur.prefix_block_tokens, 512);
      ASSERT_EQ(cur.prefix_blocks.size(), CeilBlocks(cur.prompt_tokens));
      if (k == 0) continue;
      const Request& prev = *turns[k - 1];
      ++follow_ups;
      EXPECT_EQ(cur.prompt_tokens, prev.prompt_tokens + prev.output_tokens + 300);
      // Leading ids: exactly the previous turn's full blocks, then new ones.
      const size_t full = static_cast<size_t>(prev.prompt_tokens / 512);
      EXPECT_EQ(CommonPrefix(cur.prefix_blocks, prev.prefix_blocks), full);
      for (size_t i = full; i < cur.prefix_blocks.size(); ++i)
        EXPECT_GT(cur.prefix_blocks[i], prev.prefix_blocks.back()) << "block " << i << " is not fresh";
    }
  }
  EXPECT_GT(follow_ups, 2000);
}

TEST(GeneratorSessions, NewPromptOfAFollowUpIsDrawnFromTheDistribution) {
  const std::vector<Request> rows = Generate(WithSessions(Poisson(10, 3000), 3, 1.0), 4);
  std::set<int32_t> added;
  for (const auto& [session, turns] : BySession(rows)) {
    for (size_t k = 1; k < turns.size(); ++k) {
      const int32_t extra = turns[k]->prompt_tokens - turns[k - 1]->prompt_tokens - turns[k - 1]->output_tokens;
      EXPECT_GE(extra, 10);
      EXPECT_LE(extra, 2000);
      added.insert(extra);
    }
  }
  EXPECT_GT(added.size(), 500u);  // drawn, not a constant
}

TEST(GeneratorSessions, StartsFollowTheArrivalProcess) {
  const TrafficSpec plain = Poisson(25, 5000);
  const std::vector<Request> starts_ref = Generate(plain, 11);
  const std::vector<Request> rows = Generate(WithSessions(plain, 4, 3.0), 11);
  ASSERT_EQ(rows.size(), 5000u);
  int64_t next_session = 0;
  size_t n_starts = 0;
  for (const Request& r : rows) {
    ASSERT_LE(r.session_id, next_session) << "session ids are handed out in start order";
    if (r.session_id == next_session) {
      EXPECT_EQ(r.arrival, starts_ref[n_starts].arrival) << "session " << r.session_id;
      ++next_session;
      ++n_starts;
    }
  }
  EXPECT_GT(n_starts, 1000u);
  EXPECT_LT(n_starts, 2500u);  // most sessions sent more than one turn
}

TEST(GeneratorSessions, TurnsMergeWithStartsInArrivalOrder) {
  const std::vector<Request> rows = Generate(WithSessions(Poisson(30, 20000), 5, 2.0), 21);
  ASSERT_EQ(rows.size(), 20000u);
  // Reference: the same requests sorted by (arrival, session id, turn).
  std::vector<std::tuple<SimTime, int64_t, size_t>> keys;
  std::map<int64_t, size_t> turn_of;
  for (const Request& r : rows) keys.emplace_back(r.arrival, r.session_id, turn_of[r.session_id]++);
  std::vector<std::tuple<SimTime, int64_t, size_t>> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_TRUE(keys == sorted) << "not merged in (arrival, session) order";
  size_t interleaved = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, i);
    if (i > 0) {
      EXPECT_GE(rows[i].arrival, rows[i - 1].arrival);
      interleaved += rows[i].session_id != rows[i - 1].session_id && rows[i].session_id < rows[i - 1].session_id;
    }
  }
  EXPECT_GT(interleaved, 1000u) << "turns of older sessions should interleave with new starts";
}

TEST(GeneratorSessions, ThinkTimesHaveTheRequestedMean) {
  const double mean_s = 3.0;
  const std::vector<Request> rows = Generate(WithSessions(Poisson(40, 40000), 2, mean_s), 17);
  double sum = 0;
  int n = 0, above_mean = 0;
  for (const auto& [session, turns] : BySession(rows)) {
    if (turns.size() < 2) continue;
    const double gap = TimeToSeconds(turns[1]->arrival - turns[0]->arrival);
    sum += gap;
    above_mean += gap > mean_s;
    ++n;
  }
  ASSERT_GT(n, 15000);
  EXPECT_NEAR(sum / n, mean_s, 0.03 * mean_s);
  // Exponential: P(gap > mean) = 1/e.
  EXPECT_NEAR(static_cast<double>(above_mean) / n, std::exp(-1.0), 0.02);
}

TEST(GeneratorSessions, EndsEarlyAtMaxContextTokens) {
  // prompt + output of turns 1..5: 1200, 2400 (prompt 1000 + 200 + 1000),
  // 3600, 4800, 6000.
  auto turns_per_session = [](int32_t max_context) {
    TrafficSpec spec = WithSessions(Poisson(5, 2000), 5, 0.5, max_context);
    spec.prompt.kind = LengthSpec::Kind::kFixed;
    spec.prompt.value = 1000;
    spec.output.kind = LengthSpec::Kind::kFixed;
    spec.output.value = 200;
    std::set<size_t> counts;
    const std::vector<Request> rows = Generate(spec, 6);
    // The sessions open when max_requests stops the stream may be cut
    // short; sessions last ~2 s, ~10 starts, so skip the last 30.
    const int64_t last_complete = rows.back().session_id - 30;
    EXPECT_GT(last_complete, 300);
    for (const auto& [session, turns] : BySession(rows))
      if (session <= last_complete) counts.insert(turns.size());
    return counts;
  };
  EXPECT_EQ(turns_per_session(2400), std::set<size_t>({2}));
  EXPECT_EQ(turns_per_session(2399), std::set<size_t>({1}));
  EXPECT_EQ(turns_per_session(3600), std::set<size_t>({3}));
  EXPECT_EQ(turns_per_session(4799), std::set<size_t>({3}));
  EXPECT_EQ(turns_per_session(1 << 20), std::set<size_t>({5}));
  // Turn 1 is sent even when it alone is over the cap.
  EXPECT_EQ(turns_per_session(100), std::set<size_t>({1}));
}

TEST(GeneratorSessions, LimitsCountTurns) {
  const TrafficSpec spec = WithSessions(Poisson(10, 37), 4, 0.5);
  EXPECT_EQ(Generate(spec, 2).size(), 37u);
  TrafficSpec by_time = spec;
  by_time.max_requests = std::numeric_limits<int64_t>::max();
  by_time.max_arrival_s = 20;
  const std::vector<Request> rows = Generate(by_time, 2);
  ASSERT_GT(rows.size(), 250u);  // ~200 sessions of up to 4 turns
  for (const Request& r : rows) EXPECT_LT(r.arrival, 20 * kSecond);
  EXPECT_GT(rows.back().arrival, 19 * kSecond);
}

TEST(GeneratorSessions, SingleTurnSessionsAreThePlainArrivals) {
  const TrafficSpec plain = Poisson(20, 1000);
  const std::vector<Request> a = Generate(plain, 9);
  const std::vector<Request> b = Generate(WithSessions(plain, 1, 1.0), 9);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i].arrival, a[i].arrival);
    EXPECT_EQ(b[i].prompt_tokens, a[i].prompt_tokens);
    EXPECT_EQ(b[i].output_tokens, a[i].output_tokens);
    EXPECT_EQ(b[i].session_id, static_cast<int64_t>(i));
  }
}

TEST(GeneratorSessions, SharedPrefixMovesNeitherArrivalsNorSessions) {
  const TrafficSpec sessions = WithSessions(Poisson(20, 5000), 4, 2.0);
  const std::vector<Request> a = Generate(sessions, 31);
  const std::vector<Request> b = Generate(WithSharedPrefix(sessions, 6, 1500), 31);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(b[i].arrival, a[i].arrival);
    EXPECT_EQ(b[i].session_id, a[i].session_id);
    EXPECT_EQ(b[i].output_tokens, a[i].output_tokens);
    EXPECT_EQ(b[i].prompt_tokens, a[i].prompt_tokens + 1500);
  }
}

TEST(GeneratorSessions, EveryTurnStartsWithTheSessionsSystemPrompt) {
  const std::vector<Request> rows = Generate(WithSharedPrefix(WithSessions(Poisson(20, 5000), 4, 2.0), 6, 1500), 31);
  std::set<uint64_t> groups_seen;
  for (const auto& [session, turns] : BySession(rows)) {
    SCOPED_TRACE(session);
    const uint64_t first = turns[0]->prefix_blocks[0];
    ASSERT_GE(first, kGroupBase);
    ASSERT_LT(first, kGroupBase + 6 * kGroupStride);
    groups_seen.insert(first);
    for (const Request* t : turns) {
      ASSERT_GE(t->prefix_blocks.size(), 2u);
      EXPECT_EQ(t->prefix_blocks[0], first);
      EXPECT_EQ(t->prefix_blocks[1], first + 1);
      // 1500 tokens: two full blocks; the third is the request's own.
      EXPECT_GE(t->prefix_blocks.size() > 2 ? t->prefix_blocks[2] : kFreshBase, kFreshBase);
    }
  }
  EXPECT_EQ(groups_seen.size(), 6u);
}

TEST(GeneratorSessions, BlockIdsNeverCollideOver100kRequests) {
  const std::vector<Request> rows =
      Generate(WithSharedPrefix(WithSessions(Poisson(200, 100000), 4, 1.0, 20000), 40, 700), 12);
  ASSERT_EQ(rows.size(), 100000u);
  // A fresh id belongs to one session (its later turns repeat it).
  std::unordered_map<uint64_t, int64_t> owner;
  for (const Request& r : rows) {
    for (uint64_t id : r.prefix_blocks) {
      if (id < kFreshBase) continue;
      auto [it, inserted] = owner.emplace(id, r.session_id);
      if (!inserted && it->second != r.session_id) {
        ADD_FAILURE() << "id " << id << " in sessions " << it->second << " and " << r.session_id;
        return;
      }
    }
  }
  ExpectChainsConsistent(rows);
}

// Memory follows the open sessions: after every request, the heap holds
// exactly the sessions that have sent a turn and will send another. The
// sessions' turn counts come from a first pass that runs a little longer,
// so the sessions still open at the end of the checked prefix are complete.
TEST(GeneratorSessions, HeapHoldsOnlyOpenSessionsOverAMillionRequests) {
  const int64_t n = 1000000;
  const TrafficSpec spec = WithSessions(Poisson(100, n + 20000), 4, 2.0, 16384);
  std::vector<int32_t> total_turns;
  {
    std::unique_ptr<RequestSource> src = Open(spec, 99);
    Request r;
    while (src->Next(&r)) {
      if (static_cast<size_t>(r.session_id) >= total_turns.size()) total_turns.resize(r.session_id + 1, 0);
      ++total_turns[r.session_id];
    }
  }
  std::unique_ptr<RequestSource> src = Open(spec, 99);
  const GeneratorSource* gen = dynamic_cast<const GeneratorSource*>(src.get());
  ASSERT_NE(gen, nullptr);
  std::vector<int32_t> sent(total_turns.size(), 0);
  int64_t open = 0;
  size_t peak = 0;
  Request r;
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(src->Next(&r));
    const int32_t k = ++sent[r.session_id];
    if (k == 1) ++open;
    if (k == total_turns[r.session_id]) --open;
    ASSERT_EQ(gen->pending_turns(), static_cast<size_t>(open)) << "after request " << i;
    peak = std::max(peak, gen->pending_turns());
  }
  // ~100 starts/s, each open for a few think times of 2 s: hundreds, not
  // hundreds of thousands.
  EXPECT_GT(peak, 100u);
  EXPECT_LT(peak, 3000u);
}

TEST(GeneratorSessions, ReusedRequestIsFullyOverwritten) {
  std::unique_ptr<RequestSource> src = Open(WithSessions(Poisson(5, 1), 3, 1.0), 1);
  Request r;
  r.prefix_blocks = std::vector<uint64_t>(40, 7);
  r.session_id = 9;
  r.priority = 2;
  r.model = "stale";
  ASSERT_TRUE(src->Next(&r));
  EXPECT_EQ(r.session_id, 0);
  EXPECT_EQ(r.priority, 0);
  EXPECT_EQ(r.model, "");
  EXPECT_EQ(r.prefix_blocks.size(), CeilBlocks(r.prompt_tokens));
  EXPECT_EQ(r.prefix_blocks[0], kFreshBase);
}

// ---- validation ----

TEST(GeneratorPrefixAndSessions, RejectsBadSpecsNamingTheScenarioPath) {
  const TrafficSpec base = Poisson(5, 5);
  EXPECT_EQ(MakeError(WithSharedPrefix(base, 0, 100)),
            "traffic.generator.shared_prefix.groups: expected an integer in [1, 1048576], got 0");
  EXPECT_EQ(MakeError(WithSharedPrefix(base, 2, 0)),
            "traffic.generator.shared_prefix.tokens: expected an integer in [1, 16777216], got 0");
  EXPECT_EQ(MakeError(WithSharedPrefix(base, 2, (1 << 24) + 1)),
            "traffic.generator.shared_prefix.tokens: expected an integer in [1, 16777216], got 16777217");
  TrafficSpec huge = WithSharedPrefix(base, 2, 1000);
  huge.prompt.max = std::numeric_limits<int32_t>::max() - 1000;
  EXPECT_EQ(MakeError(huge), "");  // fits exactly
  huge.prompt.max += 1;
  EXPECT_EQ(MakeError(huge),
            "traffic.generator.shared_prefix.tokens: 1000 plus the longest prompt (2147482648) exceeds "
            "2147483647 tokens");
  EXPECT_EQ(MakeError(WithSessions(base, 0, 1.0)),
            "traffic.generator.sessions.turns: expected an integer in [1, 1048576], got 0");
  EXPECT_EQ(MakeError(WithSessions(base, 2, 0.0)),
            "traffic.generator.sessions.think_time_s: expected a positive number, got 0");
  EXPECT_EQ(MakeError(WithSessions(base, 2, std::nan(""))).rfind("traffic.generator.sessions.think_time_s: ", 0),
            0u);
  EXPECT_EQ(MakeError(WithSessions(base, 2, std::numeric_limits<double>::infinity()))
                .rfind("traffic.generator.sessions.think_time_s: ", 0),
            0u);
  EXPECT_EQ(MakeError(WithSessions(base, 2, 1.0, 0)),
            "traffic.generator.sessions.max_context_tokens: expected an integer in [1, 1073741824], got 0");
}

}  // namespace
}  // namespace fleetsim
