#include "sim/traffic/generator_source.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::DataPath;
using testing_traffic::Drain;

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
  s.max_requests = n;
  return s;
}

std::vector<Request> Generate(const TrafficSpec& spec, uint64_t seed) {
  std::unique_ptr<RequestSource> src;
  Status s = GeneratorSource::Make(spec, Rng(seed), &src);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  std::vector<Request> rows = Drain(*src);
  EXPECT_TRUE(src->status().ok());
  return rows;
}

bool SameRequests(const std::vector<Request>& a, const std::vector<Request>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].id != b[i].id || a[i].arrival != b[i].arrival ||
        a[i].prompt_tokens != b[i].prompt_tokens || a[i].output_tokens != b[i].output_tokens ||
        a[i].model != b[i].model) {
      return false;
    }
  }
  return true;
}

TEST(GeneratorSource, SameSeedGivesSameStream) {
  const TrafficSpec spec = Poisson(20, 500);
  std::vector<Request> a = Generate(spec, 1234);
  ASSERT_EQ(a.size(), 500u);
  EXPECT_TRUE(SameRequests(a, Generate(spec, 1234)));
  EXPECT_FALSE(SameRequests(a, Generate(spec, 1235)));
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].id, i);
    if (i > 0) {
      EXPECT_GE(a[i].arrival, a[i - 1].arrival);
    }
  }
}

TEST(GeneratorSource, LengthDistributionDoesNotShiftArrivals) {
  TrafficSpec spec = Poisson(20, 300);
  std::vector<Request> a = Generate(spec, 77);
  spec.prompt.kind = LengthSpec::Kind::kFixed;
  spec.prompt.value = 42;
  spec.output.kind = LengthSpec::Kind::kUniform;
  spec.output.min = 1;
  spec.output.max = 5;
  std::vector<Request> b = Generate(spec, 77);
  spec.lengths_csv = DataPath("lengths.csv");
  std::vector<Request> c = Generate(spec, 77);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_EQ(a.size(), c.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival) << i;
    EXPECT_EQ(a[i].arrival, c[i].arrival) << i;
    EXPECT_EQ(b[i].prompt_tokens, 42);
  }
}

TEST(GeneratorSource, StopsBeforeMaxArrival) {
  TrafficSpec spec = Poisson(1, 0);
  spec.arrival = ArrivalProcess::kConstant;
  spec.rate_per_s = 10;
  spec.max_requests = std::numeric_limits<int64_t>::max();
  spec.max_arrival_s = 2.0;
  std::vector<Request> rows = Generate(spec, 1);
  ASSERT_EQ(rows.size(), 20u);  // 0, 0.1, ..., 1.9 s; 2.0 s is not before the limit
  EXPECT_EQ(rows[19].arrival, 1'900'000'000);
}

TEST(GeneratorSource, StopsAtMaxRequests) {
  EXPECT_EQ(Generate(Poisson(5, 7), 3).size(), 7u);
  EXPECT_EQ(Generate(Poisson(5, 0), 3).size(), 0u);
}

TEST(GeneratorSource, LengthCsvGivesJointRowsOfTheFile) {
  TrafficSpec spec = Poisson(100, 2000);
  spec.lengths_csv = DataPath("lengths.csv");
  const std::set<std::pair<int32_t, int32_t>> file_rows = {
      {11, 22}, {300, 900}, {1000, 10}, {5, 7}};
  std::set<std::pair<int32_t, int32_t>> seen;
  for (const Request& r : Generate(spec, 9)) {
    std::pair<int32_t, int32_t> p(r.prompt_tokens, r.output_tokens);
    ASSERT_TRUE(file_rows.count(p)) << p.first << "," << p.second;
    seen.insert(p);
  }
  EXPECT_EQ(seen, file_rows);
}

TEST(GeneratorSource, StampsModelName) {
  TrafficSpec spec = Poisson(5, 3);
  spec.model = "llama-3.1-8b";
  for (const Request& r : Generate(spec, 3)) EXPECT_EQ(r.model, "llama-3.1-8b");
}

TEST(GeneratorSource, RequiresAStoppingRule) {
  TrafficSpec spec = Poisson(5, std::numeric_limits<int64_t>::max());
  std::unique_ptr<RequestSource> src;
  EXPECT_EQ(GeneratorSource::Make(spec, Rng(1), &src).message(),
            "traffic: a generator needs max_requests or max_arrival_s, or it never ends");
}

TEST(GeneratorSource, RejectsBadSpecsNamingTheField) {
  std::unique_ptr<RequestSource> src;
  TrafficSpec spec = Poisson(0, 5);
  EXPECT_EQ(GeneratorSource::Make(spec, Rng(1), &src).message(),
            "traffic.rate_per_s: expected a positive number, got 0");
  spec = Poisson(5, 5);
  spec.output.median = 0;
  EXPECT_EQ(GeneratorSource::Make(spec, Rng(1), &src).message(),
            "traffic.output.median: expected a positive number, got 0");
  spec = Poisson(5, 5);
  spec.lengths_csv = "nowhere.csv";
  EXPECT_EQ(GeneratorSource::Make(spec, Rng(1), &src).message(),
            "cannot open length CSV \"nowhere.csv\": No such file or directory");
}

TEST(GeneratorSource, ReusedRequestIsFullyOverwritten) {
  TrafficSpec spec = Poisson(5, 1);
  std::unique_ptr<RequestSource> src;
  ASSERT_TRUE(GeneratorSource::Make(spec, Rng(1), &src).ok());
  Request r;
  r.model = "stale";
  r.prefix_blocks = {1, 2, 3};
  r.session_id = 9;
  r.priority = 4;
  ASSERT_TRUE(src->Next(&r));
  EXPECT_EQ(r.model, "");
  EXPECT_TRUE(r.prefix_blocks.empty());
  EXPECT_EQ(r.session_id, -1);
  EXPECT_EQ(r.priority, 0);
}

}  // namespace
}  // namespace fleetsim
