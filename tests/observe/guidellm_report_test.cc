// GuideLLM benchmarks.json, 0.3 and 0.4+ schemas (guidellm_report.cc).
#include <gtest/gtest.h>

#include "tests/observe/test_util.h"

namespace fleetsim::observe_test {
namespace {

// A 0.3 report of one concurrent benchmark with two successful requests and
// every request listed.
json V03Report() {
  return json::parse(R"({"benchmarks": [{"type_": "generative_benchmark",
    "args": {"strategy": {"type_": "concurrent", "streams": 2}},
    "worker": {"backend_type": "openai_http", "backend_model": "m"},
    "metrics": {"time_to_first_token_ms": {"successful": {"mean": 20.0, "median": 20.0,
                                                          "percentiles": {"p90": 29.0, "p99": 29.9}}}},
    "request_totals": {"successful": 2, "errored": 0, "incomplete": 0, "total": 2},
    "request_samples": null,
    "requests": {"successful": [
        {"prompt_tokens": 10, "output_tokens": 4, "start_time": 1749157168.5, "end_time": 1749157168.6,
         "first_token_time": 1749157168.51, "last_token_time": 1749157168.6, "request_latency": 0.1,
         "time_to_first_token_ms": 10.0},
        {"prompt_tokens": 20, "output_tokens": 2, "start_time": 1749157168.25, "end_time": 1749157168.5,
         "first_token_time": 1749157168.28, "last_token_time": 1749157168.5, "request_latency": 0.25,
         "time_to_first_token_ms": 30.0}],
      "errored": [], "incomplete": [], "total": null},
    "duration": 1.5}]})");
}

json& FirstSuccessful(json& doc) { return doc["benchmarks"][0]["requests"]["successful"][0]; }

TEST(ObserveGuidellm, ReadsEveryBenchmarkOfASweep) {
  std::vector<ObservedRun> runs = ReadExample("guidellm/benchmarks.json");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run_label, "benchmarks[0]");
  const std::string model = "meta-llama/Llama-3.1-8B-Instruct";
  // Synchronous: one request at a time.
  ExpectIdentity(runs[0], {ObservedFormat::kGuidellm, "guidellm", model, "openai_http", LoadMode::kClosed,
                           std::nullopt, 1});
  ExpectIdentity(runs[1], {ObservedFormat::kGuidellm, "guidellm", model, "openai_http", LoadMode::kOpen, 4.0,
                           std::nullopt});
  for (const ObservedRun& run : runs) {
    SCOPED_TRACE(run.run_label);
    EXPECT_EQ(run.tool_version, "0.6.0");
    Compare c;
    c.itl = false;         // GuideLLM keeps no per-chunk times
    c.tolerance_s = 1e-6;  // epoch seconds as doubles
    ExpectFiveRequests(run, c);
    const ObservedAggregates& a = run.file_aggregates;
    EXPECT_NEAR(*a.ttft.median_s, 0.0525, 1e-12);
    EXPECT_NEAR(*a.ttft.p90_s, 0.0585, 1e-12);
    EXPECT_NEAR(*a.tpot.median_s, 0.01175, 1e-12);  // GuideLLM's inter_token_latency_ms
    EXPECT_NEAR(*a.e2e.p99_s, 0.08494, 1e-12);
    EXPECT_NEAR(*a.request_throughput_per_s, 4 / 1.075, 1e-12);
    EXPECT_NEAR(*a.duration_s, 1.075, 1e-12);
    EXPECT_EQ(a.completed, 4);
    EXPECT_EQ(a.failed, 1);
  }
}

TEST(ObserveGuidellm, ReadsTheOlderSchema) {
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("b.json", V03Report().dump(), &runs), "");
  const ObservedRun& run = runs[0];
  EXPECT_EQ(run.model, "m");
  EXPECT_EQ(run.mode, LoadMode::kClosed);
  EXPECT_EQ(run.max_concurrency, 2);
  ASSERT_EQ(run.requests.size(), 2u);  // sorted by start
  EXPECT_EQ(run.requests[0].input_tokens, 20);
  EXPECT_EQ(run.requests[0].start_s, 0);
  EXPECT_NEAR(run.requests[1].start_s, 0.25, 1e-6);
  EXPECT_DOUBLE_EQ(*run.requests[1].e2e_s, 0.1);
  EXPECT_DOUBLE_EQ(*run.requests[1].ttft_s, 0.01);
  EXPECT_NEAR(*run.file_aggregates.ttft.p99_s, 0.0299, 1e-12);
}

TEST(ObserveGuidellm, RefusesSampledRequestsWithTheOptionToDrop) {
  std::vector<ObservedRun> runs;
  const Status s =
      ReadObservedFile(DataPath("guidellm/benchmarks_v03_sampled.json"), {}, &runs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("benchmarks_v03_sampled.json: benchmarks[0].requests.successful lists 2 of 46 "
                             "requests (GuideLLM kept a sample); rerun guidellm keeping every request: without "
                             "--output-sampling (0.3), --sample-requests (0.4 to 0.6) or --metrics sample_size "
                             "(0.7), or read its aggregates alone with --allow-aggregates"),
            std::string::npos)
      << s.message();

  ReadObservedOptions options;
  options.allow_aggregates = true;
  runs = ReadExample("guidellm/benchmarks_v03_sampled.json", options);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].per_request_timing);
  EXPECT_TRUE(runs[0].requests.empty());
  EXPECT_EQ(runs[0].file_aggregates.completed, 46);
  EXPECT_NEAR(*runs[0].file_aggregates.ttft.median_s, 0.0525, 1e-12);
}

TEST(ObserveGuidellm, SkipsFailedRequestsThatNeverStarted) {
  json doc = V03Report();
  doc["benchmarks"][0]["request_totals"]["incomplete"] = 1;
  doc["benchmarks"][0]["requests"]["incomplete"] = json::array({{{"prompt_tokens", 5}}});
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("b.json", doc.dump(), &runs), "");
  EXPECT_EQ(runs[0].requests.size(), 2u);
  EXPECT_EQ(runs[0].notes.back(), "1 errored or incomplete requests never started: skipped");
}

TEST(ObserveGuidellm, UnknownStrategyLeavesTheModeUnknown) {
  json doc = V03Report();
  doc["benchmarks"][0]["args"]["strategy"] = {{"type_", "replay"}};
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("b.json", doc.dump(), &runs), "");
  EXPECT_EQ(runs[0].mode, LoadMode::kUnknown);
  EXPECT_EQ(runs[0].notes.front(), "strategy \"replay\": load mode unknown");
}

TEST(ObserveGuidellm, BadInputNamesTheJsonPath) {
  const std::vector<EditCase> cases = {
      {[](json& d) { FirstSuccessful(d).erase("prompt_tokens"); },
       "b.json: benchmarks[0].requests.successful[0].prompt_tokens: missing"},
      {[](json& d) { FirstSuccessful(d)["request_latency"] = -0.1; },
       "b.json: benchmarks[0].requests.successful[0].request_latency: expected a time >= 0, got -0.1"},
      {[](json& d) { FirstSuccessful(d)["time_to_first_token_ms"] = 500.0; },
       "b.json: benchmarks[0].requests.successful[0].time_to_first_token_ms: longer than request_latency"},
      {[](json& d) { FirstSuccessful(d).erase("start_time"); },
       "b.json: benchmarks[0].requests.successful[0].request_start_time: missing"},
      {[](json& d) {
         FirstSuccessful(d).erase("request_latency");
         FirstSuccessful(d)["end_time"] = 1.0;
       },
       "b.json: benchmarks[0].requests.successful[0].end_time: earlier than the request's start"},
      {[](json& d) { d["benchmarks"][0]["requests"]["successful"] = 3; },
       "b.json: benchmarks[0].requests.successful: expected an array, got 3"},
      {[](json& d) { d["benchmarks"][0]["args"]["strategy"] = {{"type_", "constant"}}; },
       "b.json: benchmarks[0].args.strategy.rate: missing"},
      {[](json& d) { d["benchmarks"][0]["request_totals"]["successful"] = -2; },
       "b.json: benchmarks[0].request_totals.successful: expected an integer in [0, 9223372036854775807], got -2"},
      {[](json& d) { d["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["median"] = "x"; },
       "b.json: benchmarks[0].metrics.time_to_first_token_ms.successful.median: expected a time >= 0, got \"x\""},
      {[](json& d) { d["benchmarks"] = json::array(); }, "b.json: benchmarks: empty"},
  };
  ExpectEditErrors("b.json", cases, Edited(V03Report));
}

}  // namespace
}  // namespace fleetsim::observe_test
