// vLLM `bench serve --save-result [--save-detailed]` files (vllm_result.cc).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/observe/test_util.h"

namespace fleetsim::observe_test {
namespace {

// A detailed result of two requests, the second failed, as vLLM writes it.
json TwoRequests() {
  return json::parse(R"({"backend": "openai-chat", "model_id": "m", "request_rate": 2.0, "burstiness": 1.0,
    "max_concurrency": null, "duration": 1.0, "completed": 1, "failed": 1,
    "input_lens": [10, 20], "output_lens": [3, 0], "ttfts": [0.1, 0.0], "itls": [[0.02, 0.03], []],
    "latencies": [0.15, 0.0], "start_times": [100.5, 101.0], "errors": ["", "Bad Request"],
    "median_ttft_ms": 100.0, "p99_ttft_ms": 100.0})");
}

std::string Dump(const json& j) { return j.dump(); }

TEST(ObserveVllm, ReadsDetailedResult) {
  const ObservedRun run = ReadOneRun("vllm_detailed.json");
  ExpectIdentity(run, {ObservedFormat::kVllm, "vllm bench serve", "meta-llama/Llama-3.1-8B-Instruct", "vllm",
                       LoadMode::kOpen, 4.0, std::nullopt});
  ExpectFiveRequests(run);
  const ObservedAggregates& a = run.file_aggregates;
  EXPECT_NEAR(*a.ttft.median_s, 0.0525, 1e-12);
  EXPECT_NEAR(*a.ttft.p99_s, 0.05985, 1e-12);
  EXPECT_FALSE(a.ttft.p90_s);  // vLLM saves p99 only unless --metric-percentiles asks
  EXPECT_NEAR(*a.tpot.mean_s, (0.011 + 0.0125 + 0.010 + 0.020) / 4, 1e-12);
  EXPECT_TRUE(a.e2e.empty());  // e2el is not a default percentile metric
  EXPECT_EQ(a.completed, 4);
  EXPECT_EQ(a.failed, 1);
  EXPECT_NEAR(*a.duration_s, 1.075, 1e-12);
}

TEST(ObserveVllm, RefusesResultSavedWithoutSaveDetailed) {
  std::vector<ObservedRun> runs;
  const Status s = ReadObservedFile(DataPath("vllm_summary.json"), {}, &runs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("vllm_summary.json: no per-request timing (saved without --save-detailed); "
                             "rerun vllm bench serve with --save-result --save-detailed, or read its aggregates "
                             "alone with --allow-aggregates"),
            std::string::npos)
      << s.message();
}

TEST(ObserveVllm, ReadsAggregatesAloneWhenAllowed) {
  ReadObservedOptions options;
  options.allow_aggregates = true;
  std::vector<ObservedRun> runs = ReadExample("vllm_summary.json", options);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].per_request_timing);
  EXPECT_TRUE(runs[0].requests.empty());
  EXPECT_EQ(runs[0].mode, LoadMode::kClosed);  // request_rate "inf" with max_concurrency 8
  EXPECT_EQ(runs[0].max_concurrency, 8);
  EXPECT_NEAR(*runs[0].file_aggregates.itl.median_s, 0.011, 1e-12);
}

TEST(ObserveVllm, ReadsMinimalDetailedResult) {
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("r.json", Dump(TwoRequests()), &runs), "");
  ASSERT_EQ(runs[0].requests.size(), 2u);
  const ObservedRequest& ok = runs[0].requests[0];
  EXPECT_EQ(ok.start_s, 0);
  EXPECT_EQ(ok.input_tokens, 10);
  EXPECT_EQ(ok.output_tokens, 3);
  EXPECT_DOUBLE_EQ(*ok.e2e_s, 0.15);
  EXPECT_EQ(ok.itl_s, (std::vector<double>{0.02, 0.03}));
  const ObservedRequest& failed = runs[0].requests[1];
  EXPECT_FALSE(failed.ok);
  EXPECT_DOUBLE_EQ(failed.start_s, 0.5);
  EXPECT_EQ(failed.input_tokens, 20);
  EXPECT_FALSE(failed.ttft_s);
}

TEST(ObserveVllm, WithoutLatenciesTakesTtftPlusGaps) {
  json j = TwoRequests();
  j.erase("latencies");
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("r.json", Dump(j), &runs), "");
  EXPECT_DOUBLE_EQ(*runs[0].requests[0].e2e_s, 0.1 + 0.02 + 0.03);
}

TEST(ObserveVllm, WithoutErrorsCountsZeroOutputAsFailed) {
  json j = TwoRequests();
  j.erase("errors");
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("r.json", Dump(j), &runs), "");
  EXPECT_TRUE(runs[0].requests[0].ok);
  EXPECT_FALSE(runs[0].requests[1].ok);
}

TEST(ObserveVllm, RefusesOlderFileWithoutStartTimes) {
  json j = TwoRequests();
  j.erase("start_times");
  EXPECT_EQ(ErrorOf("r.json", Dump(j)),
            "r.json: per-request ttfts but no start_times (written by a vLLM that did not save them); rerun a "
            "current vllm bench serve with --save-result --save-detailed, or read its aggregates alone with "
            "--allow-aggregates");
}

TEST(ObserveVllm, BadInputNamesTheJsonPath) {
  const std::vector<EditCase> cases = {
      {[](json& j) { j["ttfts"] = {0.1}; },
       "r.json: ttfts: has 1 entries but input_lens has 2 (the per-request arrays are parallel)"},
      {[](json& j) { j["ttfts"][0] = -0.5; }, "r.json: ttfts[0]: expected a time >= 0, got -0.5"},
      {[](json& j) { j["start_times"][1] = "soon"; }, "r.json: start_times[1]: expected a time >= 0, got \"soon\""},
      {[](json& j) { j["itls"][0] = 0.02; }, "r.json: itls[0]: expected an array, got 0.02"},
      {[](json& j) { j["itls"][0][1] = -1; }, "r.json: itls[0][1]: expected a time >= 0, got -1"},
      {[](json& j) { j["input_lens"][0] = 2.5; }, "r.json: input_lens[0]: expected an integer in [1, 2147483647], got 2.5"},
      {[](json& j) { j["output_lens"][0] = 0; },
       "r.json: output_lens[0]: expected a positive integer for a successful request, got 0"},
      {[](json& j) { j["latencies"][0] = 0.05; }, "r.json: latencies[0]: shorter than ttfts[0] (0.05 < 0.1)"},
      {[](json& j) { j["errors"][1] = 7; },
       "r.json: errors[1]: expected a string (empty when the request succeeded), got 7"},
      {[](json& j) { j.erase("itls"); }, "r.json: itls: missing"},
      {[](json& j) { j["request_rate"] = "fast"; }, "r.json: request_rate: expected a number or \"inf\", got \"fast\""},
      {[](json& j) { j["max_concurrency"] = 0; },
       "r.json: max_concurrency: expected an integer in [1, 2147483647], got 0"},
      {[](json& j) { j["median_ttft_ms"] = -3; }, "r.json: median_ttft_ms: expected a time >= 0, got -3"},
  };
  ExpectEditErrors("r.json", cases, Edited(TwoRequests));
}

TEST(ObserveVllm, MalformedJsonSaysWhere) {
  EXPECT_EQ(ErrorOf("r.json", "{\"input_lens\": [1,\n 2,]}"),
            "r.json: invalid JSON at line 2, column 4: syntax error while parsing value - unexpected ']'; expected "
            "'[', '{', or a literal");
}

TEST(ObserveVllm, LoadModes) {
  struct Case {
    json rate, concurrency;
    LoadMode mode;
    std::optional<double> rate_per_s;
  };
  const Case cases[] = {
      {"inf", nullptr, LoadMode::kOpen, INFINITY},  // every request sent at once
      {"inf", 16, LoadMode::kClosed, std::nullopt},
      {8.0, 16, LoadMode::kOpen, 8.0},  // a rate capped by max_concurrency
  };
  for (const Case& c : cases) {
    json j = TwoRequests();
    j["request_rate"] = c.rate;
    j["max_concurrency"] = c.concurrency;
    std::vector<ObservedRun> runs;
    ASSERT_EQ(ReadText("r.json", Dump(j), &runs), "");
    EXPECT_EQ(runs[0].mode, c.mode) << c.rate;
    EXPECT_EQ(runs[0].request_rate_per_s, c.rate_per_s) << c.rate;
  }
  json ramp = TwoRequests();
  ramp["request_rate"] = "inf";
  ramp["ramp_up_strategy"] = "linear";
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("r.json", Dump(ramp), &runs), "");
  EXPECT_EQ(runs[0].mode, LoadMode::kOpen);
  EXPECT_FALSE(runs[0].request_rate_per_s);
  EXPECT_EQ(runs[0].notes.front(), "request rate ramped (\"linear\"), not constant");
}

TEST(ObserveVllm, AppendedResultsAreOneRunPerLine) {
  json second = TwoRequests();
  second["request_rate"] = 4.0;
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("r.json", Dump(TwoRequests()) + "\n" + Dump(second), &runs), "");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].run_label, "line 1");
  EXPECT_EQ(runs[1].run_label, "line 2");
  EXPECT_EQ(runs[1].request_rate_per_s, 4.0);
  second["ttfts"][0] = -1;
  EXPECT_EQ(ErrorOf("r.json", Dump(TwoRequests()) + "\n" + Dump(second)),
            "r.json:2: ttfts[0]: expected a time >= 0, got -1");
  EXPECT_EQ(ErrorOf("r.json", Dump(TwoRequests()) + "\n{\"input_lens\": ["),
            "r.json:2: invalid JSON at column 17: syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
}

TEST(ObserveVllm, PythonNonFiniteNumbersReadAsAbsent) {
  // json.dump writes float('nan') as NaN: not JSON, but what Python wrote.
  std::string text = Dump(TwoRequests());
  text.replace(text.find("\"median_ttft_ms\":100.0"), 22, "\"median_ttft_ms\":NaN");
  text.insert(1, "\"std_ttft_ms\":Infinity,\"note\":\"NaN stays NaN in a string\",");
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("r.json", text, &runs), "");
  EXPECT_FALSE(runs[0].file_aggregates.ttft.median_s);
  EXPECT_DOUBLE_EQ(*runs[0].file_aggregates.ttft.p99_s, 0.1);
}

}  // namespace
}  // namespace fleetsim::observe_test
