#include "sim/traffic/servegen_trace.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "sim/traffic/servegen_dataset.h"
#include "tests/traffic/test_util.h"

namespace fleetsim {
namespace {

using testing_traffic::Drain;
using testing_traffic::StreamOf;

std::string Bundled(const std::string& name) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/" + name;
}

ServeGenOptions FixedLengths(int32_t prompt, int32_t output) {
  ServeGenOptions o;
  o.prompt.value = prompt;
  o.output.value = output;
  return o;
}

std::vector<Request> ReadText(const std::string& text, Status* end, uint64_t seed = 7,
                              std::unique_ptr<ServeGenDataset> dataset = nullptr) {
  std::unique_ptr<RequestSource> src;
  Status s = ServeGenTraceSource::FromStream("chunk-0-trace.csv", StreamOf(text), std::move(dataset),
                                             FixedLengths(100, 10), Rng(seed), &src);
  if (!s.ok()) {
    *end = s;
    return {};
  }
  std::vector<Request> rows = Drain(*src);
  *end = src->status();
  return rows;
}

TrafficSpec ServeGenSpec(const std::string& path) {
  TrafficSpec s;
  s.kind = TrafficSpec::Kind::kTrace;
  s.format = TraceFormat::kServeGen;
  s.path = path;
  return s;
}

// The reference: arrivals a client file asks for, window by window
// (round(rate * 600) for the published rates, which are counts / 600).
int64_t ExpectedArrivals(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string f[6];
    for (std::string& x : f) std::getline(ss, x, ',');
    if (!f[3].empty()) n += std::llround(std::stod(f[1]) * 600);
  }
  return n;
}

TEST(ServeGenTraceSource, WindowGetsCeilRateTimesLengthArrivalsInsideIt) {
  Status s;
  // 0.1/s over 600 s: 60 arrivals in [0, 600); the empty window after it and
  // the rate-0 window give none; 0.25/s over the last window (600 s, as
  // long as the one before) gives 150 in [1800, 2400).
  std::vector<Request> rows = ReadText(
      "0,0.1,1.2,Gamma,0.5,2\n"
      "600,0,0,,0,0\n"
      "1200,0,1,Weibull,1,1\n"
      "1800,0.25,2,Weibull,0.4,3\n",
      &s);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rows.size(), 210u);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].id, i);
    if (i > 0) EXPECT_GE(rows[i].arrival, rows[i - 1].arrival);
    EXPECT_EQ(rows[i].prompt_tokens, 100);
    EXPECT_EQ(rows[i].output_tokens, 10);
  }
  // Times count from the first arrival, which lies in the first window.
  EXPECT_EQ(rows[0].arrival, 0);
  EXPECT_LT(rows[59].arrival, 600 * kSecond);
  EXPECT_GT(rows[60].arrival, 1200 * kSecond);  // window 3 starts 1800 s, first arrival >= 0 s
  EXPECT_LT(rows[209].arrival - rows[60].arrival, 600 * kSecond);
}

TEST(ServeGenTraceSource, SameSeedSameStreamOtherSeedOther) {
  const std::string text = "0,0.2,3,Weibull,0.3,1\n600,0.3,2,Gamma,0.2,5\n";
  Status s1, s2, s3;
  std::vector<Request> a = ReadText(text, &s1, 11), b = ReadText(text, &s2, 11), c = ReadText(text, &s3, 12);
  ASSERT_TRUE(s1.ok() && s2.ok() && s3.ok());
  ASSERT_EQ(a.size(), 300u);
  ASSERT_EQ(c.size(), a.size());
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival, b[i].arrival);
    differs = differs || a[i].arrival != c[i].arrival;
  }
  EXPECT_TRUE(differs);
}

TEST(ServeGenTraceSource, BurstyShapeClustersArrivals) {
  // Gamma shape 0.05 (cv about 4.5) against shape 20 (cv about 0.22): the
  // squared cv of the gaps should come out far apart.
  auto gap_cv2 = [](const std::vector<Request>& r) {
    double sum = 0, sq = 0;
    const size_t n = r.size() - 1;
    for (size_t i = 1; i < r.size(); ++i) {
      const double g = static_cast<double>(r[i].arrival - r[i - 1].arrival);
      sum += g;
      sq += g * g;
    }
    const double mean = sum / n;
    return (sq / n - mean * mean) / (mean * mean);
  };
  Status s;
  std::vector<Request> bursty = ReadText("0,2,4.5,Gamma,0.05,1\n", &s);
  ASSERT_TRUE(s.ok());
  std::vector<Request> smooth = ReadText("0,2,0.22,Gamma,20,1\n", &s);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(bursty.size(), 1200u);
  EXPECT_GT(gap_cv2(bursty), 5.0);
  EXPECT_LT(gap_cv2(smooth), 0.2);
}

TEST(ServeGenTraceSource, ReadsBundledFolderWithDatasets) {
  const std::string dir = Bundled("servegen_deepseek_r1");
  std::vector<std::string> files;
  ASSERT_TRUE(ServeGenTraceSource::ListClients(dir, &files).ok());
  ASSERT_EQ(files.size(), 2u);
  EXPECT_NE(files[0].find("chunk-57-trace.csv"), std::string::npos);

  std::unique_ptr<RequestSource> src;
  Status s = MakeRequestSource(ServeGenSpec(dir), Rng(5), &src);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<Request> rows = Drain(*src);
  ASSERT_TRUE(src->status().ok()) << src->status().message();
  const int64_t expected = ExpectedArrivals(files[0]) + ExpectedArrivals(files[1]);
  EXPECT_EQ(static_cast<int64_t>(rows.size()), expected);
  int64_t long_outputs = 0;
  for (const Request& r : rows) {
    EXPECT_GE(r.prompt_tokens, 1);
    EXPECT_GE(r.output_tokens, 1);
    long_outputs += r.output_tokens > 1000;
  }
  // Lengths come from the datasets, not the fixed fallback: reasoning
  // outputs sometimes run past a thousand tokens.
  EXPECT_GT(long_outputs, 0);
}

TEST(ServeGenTraceSource, AddingAClientLeavesTheOthersDrawsAlone) {
  const std::string dir = Bundled("servegen_deepseek_r1");
  auto lengths = [](const std::string& path) {
    std::unique_ptr<RequestSource> src;
    EXPECT_TRUE(MakeRequestSource(ServeGenSpec(path), Rng(5), &src).ok());
    std::vector<std::pair<int32_t, int32_t>> v;
    for (const Request& r : Drain(*src)) v.emplace_back(r.prompt_tokens, r.output_tokens);
    std::sort(v.begin(), v.end());
    return v;
  };
  std::vector<std::pair<int32_t, int32_t>> both = lengths(dir), a = lengths(dir + "/chunk-57-trace.csv"),
                                           b = lengths(dir + "/chunk-58-trace.csv");
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  EXPECT_EQ(both, a);
}

TEST(ServeGenTraceSource, ScenarioLengthsReplaceMissingDataset) {
  const std::string file = Bundled("servegen_m_large/chunk-63-trace.csv");
  std::unique_ptr<RequestSource> src;
  Status s = MakeRequestSource(ServeGenSpec(file), Rng(5), &src);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("chunk-63-dataset.json\" does not exist"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("lengths_csv"), std::string::npos) << s.message();

  TrafficSpec spec = ServeGenSpec(file);
  spec.trace_lengths = true;
  spec.prompt.value = 300;
  spec.output.kind = LengthSpec::Kind::kUniform;
  spec.output.min = 5;
  spec.output.max = 9;
  spec.end_s = 3600;  // the first hour of a 14-day client
  ASSERT_TRUE(MakeRequestSource(spec, Rng(5), &src).ok());
  std::vector<Request> rows = Drain(*src);
  ASSERT_TRUE(src->status().ok()) << src->status().message();
  ASSERT_FALSE(rows.empty());
  for (const Request& r : rows) {
    EXPECT_EQ(r.prompt_tokens, 300);
    EXPECT_GE(r.output_tokens, 5);
    EXPECT_LE(r.output_tokens, 9);
    EXPECT_LT(r.arrival, 3600 * kSecond);
  }
}

TEST(ServeGenTraceSource, BadRowsNameFileAndLine) {
  struct Case {
    const char* text;
    const char* expect;
  };
  for (const Case& c : {
           Case{"0,1,1,Gamma,1\n", "chunk-0-trace.csv:1: expected 6 columns"},
           Case{"0,1,1,Poisson,1,1\n", "chunk-0-trace.csv:1: arrival_dist: expected Gamma, Weibull or nothing"},
           Case{"0,-1,1,Gamma,1,1\n", "chunk-0-trace.csv:1: rate: expected requests per second >= 0"},
           Case{"0,1,1,Weibull,0,1\n", "chunk-0-trace.csv:1: p1: expected a shape > 0"},
           Case{"0,1,1,Weibull,1,inf\n", "chunk-0-trace.csv:1: p2: expected a scale > 0"},
           Case{"0,1,x,Gamma,1,1\n", "chunk-0-trace.csv:1: cv: expected a number >= 0"},
           Case{"0,1,1,Gamma,1,1\n0,1,1,Gamma,1,1\n", "chunk-0-trace.csv:2: window_start_s: 0 does not come after"},
           Case{"0,1e9,1,Gamma,1,1\n", "chunk-0-trace.csv:1: rate: 1e+09 per s over a 600 s window is more than"},
       }) {
    Status s;
    ReadText(c.text, &s);
    EXPECT_EQ(s.message().rfind(c.expect, 0), 0u) << s.message();
  }
}

TEST(ServeGenTraceSource, UsesTheDatasetEntryAtOrBeforeEachWindow) {
  std::unique_ptr<ServeGenDataset> d;
  ASSERT_TRUE(ServeGenDataset::FromText("d.json",
                                        R"({"600": {"input_tokens": "{7: 1.0}", "output_tokens": "{0: 0.5, 3: 0.5}"},
                                            "1800": {"input_tokens": "{}", "output_tokens": "{}"},
                                            "1200": {"input_tokens": "{9: 2}", "output_tokens": "{4: 1}", "reason_ratio": "{0.5: 1.0}"}})",
                                        &d)
                  .ok());
  Status s;
  std::vector<Request> rows = ReadText("600,0.01,1,Gamma,1,1\n1200,0.01,1,Gamma,1,1\n1800,0.01,1,Gamma,1,1\n", &s, 3,
                                       std::move(d));
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(rows.size(), 18u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(rows[i].prompt_tokens, 7);
    EXPECT_TRUE(rows[i].output_tokens == 1 || rows[i].output_tokens == 3) << rows[i].output_tokens;  // 0 -> 1
  }
  // The empty 1800 entry is dropped, so the last window uses 1200's.
  for (size_t i = 6; i < 18; ++i) {
    EXPECT_EQ(rows[i].prompt_tokens, 9);
    EXPECT_EQ(rows[i].output_tokens, 4);
  }

  ASSERT_TRUE(ServeGenDataset::FromText("d.json", R"({"600": {"input_tokens": "{7: 1}", "output_tokens": "{3: 1}"}})", &d)
                  .ok());
  ReadText("0,0.01,1,Gamma,1,1\n", &s, 3, std::move(d));
  EXPECT_EQ(s.message().rfind("chunk-0-trace.csv:1: no length distribution in d.json at or before this window's start (0 s)", 0),
            0u)
      << s.message();
}

TEST(ServeGenDataset, RefusesMalformedDistributions) {
  struct Case {
    const char* json;
    const char* expect;
  };
  for (const Case& c : {
           Case{"[1]", "d.json: expected a JSON object of windows"},
           Case{"{\"0\": {\"input_tokens\": \"{1: 1}\"}}", "d.json: window \"0\": missing \"output_tokens\""},
           Case{"{\"x\": {}}", "d.json: window \"x\": expected a window start"},
           Case{"{\"0\": {\"input_tokens\": \"{1.5: 1}\", \"output_tokens\": \"{1: 1}\"}}",
                "d.json: window \"0\".input_tokens: expected a token count (integer >= 0) as key"},
           Case{"{\"0\": {\"input_tokens\": \"{1: -1}\", \"output_tokens\": \"{1: 1}\"}}",
                "d.json: window \"0\".input_tokens: expected a probability >= 0"},
           Case{"{\"0\": {\"input_tokens\": \"{1: 0}\", \"output_tokens\": \"{1: 1}\"}}",
                "d.json: window \"0\".input_tokens: probabilities sum to 0"},
           Case{"{\"0\": {\"input_tokens\": 5, \"output_tokens\": \"{1: 1}\"}}", "d.json: window \"0\".input_tokens: expected a string holding a dict"},
           Case{"{\"0\": {\"input_tokens\": \"{}\", \"output_tokens\": \"{}\"}}", "d.json: no usable entries"},
           Case{"{\"0\": ", "d.json: invalid JSON"},
       }) {
    std::unique_ptr<ServeGenDataset> d;
    Status s = ServeGenDataset::FromText("d.json", c.json, &d);
    EXPECT_EQ(s.message().rfind(c.expect, 0), 0u) << c.json << " -> " << s.message();
  }
}

TEST(ServeGenTraceSource, ListClientsRefusesAnEmptyFolder) {
  std::vector<std::string> files;
  Status s = ServeGenTraceSource::ListClients(std::string(FLEETSIM_SOURCE_DIR) + "/tests/traffic", &files);
  EXPECT_NE(s.message().find("no chunk-N-trace.csv files"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fleetsim
