// AIPerf profile_export.jsonl, with and without the aggregate file beside it
// (aiperf_export.cc, perf_summary.cc).
#include <gtest/gtest.h>

#include "tests/observe/test_util.h"

namespace fleetsim::observe_test {
namespace {

json Record(int64_t start_ns, double ttft_ms, double latency_ms) {
  json r = json::parse(R"({"metadata": {"session_num": 0, "turn_index": 0, "worker_id": "w",
      "record_processor_id": "p", "benchmark_phase": "profiling", "was_cancelled": false},
    "metrics": {"input_sequence_length": {"value": 100, "unit": "tokens"},
                "output_sequence_length": {"value": 3, "unit": "tokens"},
                "inter_chunk_latency": {"value": [10.0, 12.0], "unit": "ms"}},
    "error": null})");
  r["metadata"]["request_start_ns"] = start_ns;
  r["metadata"]["request_end_ns"] = start_ns + static_cast<int64_t>(latency_ms * 1e6);
  r["metrics"]["time_to_first_token"] = {{"value", ttft_ms}, {"unit", "ms"}};
  r["metrics"]["request_latency"] = {{"value", latency_ms}, {"unit", "ms"}};
  return r;
}

std::string Lines(const std::vector<json>& records) {
  std::string s;
  for (const json& r : records) s += r.dump() + "\n";
  return s;
}

TEST(ObserveAiperf, ReadsExportAndItsAggregateFile) {
  const ObservedRun run = ReadOneRun("aiperf/profile_export.jsonl");
  // Model, backend and load from profile_export_aiperf.json's input_config.
  ExpectIdentity(run, {ObservedFormat::kAiperf, "aiperf", "meta-llama/Llama-3.1-8B-Instruct", "chat",
                       LoadMode::kClosed, std::nullopt, 2});
  // Records are written as requests finish; the run is in start order.
  ExpectFiveRequests(run);
  const ObservedAggregates& a = run.file_aggregates;
  EXPECT_NEAR(*a.ttft.median_s, 0.0525, 1e-12);
  EXPECT_NEAR(*a.ttft.p90_s, 0.0585, 1e-12);
  EXPECT_NEAR(*a.tpot.median_s, 0.01175, 1e-12);  // AIPerf's inter_token_latency
  EXPECT_NEAR(*a.itl.p99_s, 0.01937, 1e-12);      // its inter_chunk_latency
  EXPECT_NEAR(*a.e2e.median_s, 0.0815, 1e-12);
  EXPECT_NEAR(*a.duration_s, 1.075, 1e-12);
  EXPECT_EQ(a.completed, 4);
  EXPECT_EQ(a.failed, 1);
  EXPECT_EQ(run.notes, std::vector<std::string>{"aggregates, load mode from profile_export_aiperf.json"});
}

TEST(ObserveAiperf, WithoutTheAggregateFileTheModeIsUnknown) {
  ReadObservedOptions options;
  options.read_companion = false;
  std::vector<ObservedRun> runs = ReadExample("aiperf/profile_export.jsonl", options);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].mode, LoadMode::kUnknown);
  EXPECT_TRUE(runs[0].file_aggregates.empty());
  ExpectFiveRequests(runs[0]);

  // A companion looked for and not found is said.
  std::vector<ObservedRun> alone;
  ASSERT_TRUE(ReadObservedText("/nonexistent/dir/profile_export.jsonl", Lines({Record(5, 1, 2)}), {}, &alone).ok());
  EXPECT_EQ(alone[0].notes, std::vector<std::string>{
                                "no profile_export_aiperf.json beside it: load mode and the tool's aggregates unknown"});
}

TEST(ObserveAiperf, SkipsWarmupAndCountsCancelledAsFailed) {
  json warm = Record(1000, 5, 20);
  warm["metadata"]["benchmark_phase"] = "warmup";
  json cancelled = Record(3000, 5, 20);
  cancelled["metadata"]["was_cancelled"] = true;
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("p.jsonl", Lines({Record(2000, 5, 20), warm, cancelled}), &runs), "");
  ASSERT_EQ(runs[0].requests.size(), 2u);
  EXPECT_TRUE(runs[0].requests[0].ok);
  EXPECT_FALSE(runs[0].requests[1].ok);
  EXPECT_DOUBLE_EQ(runs[0].requests[1].start_s, 1000e-9);
  EXPECT_EQ(runs[0].notes.front(), "1 warm-up records skipped");
}

TEST(ObserveAiperf, ConvertsEachUnit) {
  json r = Record(0, 0, 0);
  r["metrics"]["time_to_first_token"] = {{"value", 50000}, {"unit", "us"}};
  r["metrics"]["request_latency"] = {{"value", 0.25}, {"unit", "sec"}};
  r["metrics"]["inter_chunk_latency"] = {{"value", {10000000, 20000000}}, {"unit", "ns"}};
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("p.jsonl", Lines({r}), &runs), "");
  EXPECT_DOUBLE_EQ(*runs[0].requests[0].ttft_s, 0.05);
  EXPECT_DOUBLE_EQ(*runs[0].requests[0].e2e_s, 0.25);
  EXPECT_EQ(runs[0].requests[0].itl_s, (std::vector<double>{0.01, 0.02}));
}

TEST(ObserveAiperf, BadRecordsNameTheLineAndPath) {
  const std::vector<EditCase> cases = {
      {[](json& r) { r["metadata"].erase("request_start_ns"); }, "p.jsonl:2: metadata.request_start_ns: missing"},
      {[](json& r) { r["metadata"]["request_start_ns"] = -5; },
       "p.jsonl:2: metadata.request_start_ns: expected an integer in [0, 9223372036854775807], got -5"},
      {[](json& r) { r["metadata"]["request_end_ns"] = 1; }, "p.jsonl:2: metadata.request_end_ns: earlier than request_start_ns"},
      {[](json& r) { r["metrics"]["request_latency"]["unit"] = "min"; },
       "p.jsonl:2: metrics.request_latency.unit: unknown time unit \"min\" (known: ns, us, ms, sec, s)"},
      {[](json& r) { r["metrics"]["time_to_first_token"]["value"] = -1.5; },
       "p.jsonl:2: metrics.time_to_first_token.value: expected a time >= 0, got -1.5"},
      {[](json& r) { r["metrics"]["time_to_first_token"]["value"] = 50; },
       "p.jsonl:2: metrics.time_to_first_token: longer than request_latency"},
      {[](json& r) { r["metrics"].erase("input_sequence_length"); }, "p.jsonl:2: metrics.input_sequence_length: missing"},
      {[](json& r) { r["metrics"]["inter_chunk_latency"]["value"] = 3; },
       "p.jsonl:2: metrics.inter_chunk_latency.value: expected an array, got 3"},
      {[](json& r) { r["metrics"]["output_sequence_length"] = 4; },
       "p.jsonl:2: metrics.output_sequence_length: expected an object, got 4"},
      {[](json& r) { r["metrics"] = nullptr; }, "p.jsonl:2: metrics: missing"},
      {[](json& r) { r["metadata"]["was_cancelled"] = "no"; },
       "p.jsonl:2: metadata.was_cancelled: expected true or false, got \"no\""},
      {[](json& r) { r = json::array(); }, "p.jsonl:2: expected an object, got []"},
  };
  ExpectEditErrors("p.jsonl", cases, [](const JsonEdit& edit) {
    json bad = Record(2000, 5, 20);
    edit(bad);
    return Lines({Record(1000, 5, 20), bad});
  });
  EXPECT_EQ(ErrorOf("p.jsonl", Lines({Record(1000, 5, 20)}) + "{\"metadata\": \n"),
            "p.jsonl:2: invalid JSON at column 14: syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(ErrorOf("p.jsonl", ""), "p.jsonl: empty file");
}

TEST(ObserveAiperf, RefusesItsAggregateFileWithTheOneToPass) {
  std::vector<ObservedRun> runs;
  const Status s = ReadObservedFile(DataPath("aiperf/profile_export_aiperf.json"), {}, &runs);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("this is AIPerf's aggregate file (profile_export_aiperf.json); pass the per-request "
                             "profile_export.jsonl beside it"),
            std::string::npos)
      << s.message();
}

}  // namespace
}  // namespace fleetsim::observe_test
