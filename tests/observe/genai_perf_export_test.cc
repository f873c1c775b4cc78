// GenAI-Perf (perf_analyzer) profile_export.json (genai_perf_export.cc).
#include <gtest/gtest.h>

#include "tests/observe/test_util.h"

namespace fleetsim::observe_test {
namespace {

std::string Event(const json& body) { return "data: " + body.dump() + "\n\n"; }
json Delta(const std::string& text) {
  return {{"object", "chat.completion.chunk"}, {"choices", {{{"index", 0}, {"delta", {{"content", text}}}}}}};
}

// One OpenAI chat request sent at 1000 ns: the role chunk, two tokens at
// 5000 and 7000 ns, [DONE].
json ChatExport() {
  json role = {{"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}}}}}}};
  json req = {{"timestamp", 1000},
              {"request_inputs", {{"payload", R"({"messages":[{"role":"user","content":"hi"}],"model":"m","stream":true})"}}},
              {"response_timestamps", {4000, 5000, 7000, 7500}},
              {"response_outputs",
               {{{"response", Event(role)}}, {{"response", Event(Delta("a"))}}, {{"response", Event(Delta("b"))}},
                {{"response", "data: [DONE]\n\n"}}}}};
  return {{"experiments", {{{"experiment", {{"mode", "concurrency"}, {"value", 4}}}, {"requests", {req}},
                            {"window_boundaries", {1000, 8000}}}}},
          {"version", "2.0.0"},
          {"service_kind", "openai"},
          {"endpoint", "v1/chat/completions"}};
}

json& FirstRequest(json& doc) { return doc["experiments"][0]["requests"][0]; }

TEST(ObserveGenaiPerf, ReadsExportAndItsAggregateFile) {
  const ObservedRun run = ReadOneRun("genai_perf/profile_export.json");
  // The model from the request payload.
  ExpectIdentity(run, {ObservedFormat::kGenaiPerf, "genai-perf", "meta-llama/Llama-3.1-8B-Instruct",
                       "openai v1/chat/completions", LoadMode::kOpen, 4.0, std::nullopt});
  EXPECT_EQ(run.tool_version, "perf_analyzer 0.0.0");
  // No usage in the responses: prompt lengths unknown, outputs counted in
  // chunks (one token each here, so exact).
  EXPECT_FALSE(run.input_tokens_recorded);
  EXPECT_FALSE(run.output_tokens_exact);
  Compare c;
  c.input_tokens = false;
  ExpectFiveRequests(run, c);
  EXPECT_EQ(run.requests[0].input_tokens, 0);
  const ObservedAggregates& a = run.file_aggregates;  // profile_export_genai_perf.json
  EXPECT_NEAR(*a.ttft.median_s, 0.0525, 1e-12);
  EXPECT_NEAR(*a.tpot.p90_s, 0.01775, 1e-12);
  EXPECT_NEAR(*a.request_throughput_per_s, 4 / 1.075, 1e-12);
  EXPECT_EQ(run.notes.back(), "aggregates from profile_export_genai_perf.json");
}

TEST(ObserveGenaiPerf, TimesFromTheFirstAndLastResponseWithText) {
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("p.json", ChatExport().dump(), &runs), "");
  const ObservedRun& run = runs[0];
  EXPECT_EQ(run.mode, LoadMode::kClosed);
  EXPECT_EQ(run.max_concurrency, 4);
  EXPECT_EQ(run.model, "m");
  const ObservedRequest& r = run.requests[0];
  EXPECT_DOUBLE_EQ(*r.ttft_s, 4000e-9);
  EXPECT_DOUBLE_EQ(*r.e2e_s, 6000e-9);
  ASSERT_EQ(r.itl_s.size(), 1u);
  EXPECT_NEAR(r.itl_s[0], 2000e-9, 1e-18);
  EXPECT_EQ(r.output_tokens, 2);
}

TEST(ObserveGenaiPerf, TakesLengthsFromUsage) {
  json doc = ChatExport();
  json usage = {{"choices", json::array()}, {"usage", {{"prompt_tokens", 17}, {"completion_tokens", 5}}}};
  // Two events that arrived together in one response, the usage last.
  FirstRequest(doc)["response_outputs"][2]["response"] = Event(Delta("b")) + Event(usage);
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("p.json", doc.dump(), &runs), "");
  EXPECT_TRUE(runs[0].input_tokens_recorded);
  EXPECT_TRUE(runs[0].output_tokens_exact);
  EXPECT_EQ(runs[0].requests[0].input_tokens, 17);
  EXPECT_EQ(runs[0].requests[0].output_tokens, 5);
}

TEST(ObserveGenaiPerf, ErrorEventsAndEmptyResponsesFail) {
  json doc = ChatExport();
  FirstRequest(doc)["response_outputs"][1]["response"] = Event({{"error", {{"message", "overloaded"}}}});
  json empty = FirstRequest(doc);
  empty["response_timestamps"] = json::array();
  empty["response_outputs"] = json::array();
  doc["experiments"][0]["requests"].push_back(empty);
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("p.json", doc.dump(), &runs), "");
  ASSERT_EQ(runs[0].requests.size(), 2u);
  EXPECT_FALSE(runs[0].requests[0].ok);
  EXPECT_FALSE(runs[0].requests[1].ok);
}

TEST(ObserveGenaiPerf, SplitEventsCarryNoText) {
  json doc = ChatExport();
  FirstRequest(doc)["response_outputs"][2]["response"] = "data: {\"choices\": [{\"delta\": {\"cont";
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("p.json", doc.dump(), &runs), "");
  EXPECT_EQ(runs[0].requests[0].output_tokens, 1);
  EXPECT_EQ(runs[0].notes.back(), "1 response fragments that were not JSON, taken as no text");
}

TEST(ObserveGenaiPerf, ReadsTritonCApiTokenIds) {
  json doc = {{"service_kind", "triton_c_api"},
              {"endpoint", ""},
              {"experiments",
               {{{"experiment", {{"mode", "request_rate"}, {"value", 2.5}}},
                 {"requests",
                  {{{"timestamp", 10},
                    {"request_inputs", {{"input_ids", {1, 2, 3, 4}}}},
                    {"response_timestamps", {20, 30}},
                    {"response_outputs", {{{"output_ids", 7}}, {{"output_ids", {8, 9}}}}}}}}}}}};
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("p.json", doc.dump(), &runs), "");
  EXPECT_EQ(runs[0].request_rate_per_s, 2.5);
  EXPECT_EQ(runs[0].requests[0].input_tokens, 4);
  EXPECT_EQ(runs[0].requests[0].output_tokens, 3);
  EXPECT_TRUE(runs[0].output_tokens_exact);
}

TEST(ObserveGenaiPerf, SeveralExperimentsAreSeveralRuns) {
  json doc = ChatExport();
  doc["experiments"].push_back(doc["experiments"][0]);
  doc["experiments"][1]["experiment"]["value"] = 8;
  std::vector<ObservedRun> runs;
  ASSERT_EQ(ReadText("p.json", doc.dump(), &runs), "");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].run_label, "experiments[1]");
  EXPECT_EQ(runs[1].max_concurrency, 8);
}

TEST(ObserveGenaiPerf, BadInputNamesTheJsonPath) {
  const std::vector<EditCase> cases = {
      {[](json& d) { FirstRequest(d)["response_outputs"].erase(0); },
       "p.json: experiments[0].requests[0].response_outputs: has 3 entries but response_timestamps has 4 (one "
       "output per response)"},
      {[](json& d) { FirstRequest(d)["response_timestamps"][2] = 4500; },
       "p.json: experiments[0].requests[0].response_timestamps[2]: earlier than the response before it"},
      {[](json& d) { FirstRequest(d)["response_timestamps"][0] = 500; },
       "p.json: experiments[0].requests[0].response_timestamps[0]: earlier than the request's timestamp"},
      {[](json& d) { FirstRequest(d)["timestamp"] = -1; },
       "p.json: experiments[0].requests[0].timestamp: expected an integer in [0, 9223372036854775807], got -1"},
      {[](json& d) { FirstRequest(d)["response_outputs"][1]["response"] = 3; },
       "p.json: experiments[0].requests[0].response_outputs[1].response: expected a string, got 3"},
      {[](json& d) { d["experiments"][0]["experiment"]["mode"] = "sweep"; },
       "p.json: experiments[0].experiment.mode: unknown mode \"sweep\" (known: concurrency, request_rate)"},
      {[](json& d) { d["experiments"][0]["experiment"]["value"] = 0; },
       "p.json: experiments[0].experiment.value: expected an integer in [1, 2147483647], got 0"},
      {[](json& d) { d["service_kind"] = "tfserving"; },
       "p.json: service_kind: not read: \"tfserving\" (known: openai, triton, dynamic_grpc, triton_c_api)"},
      {[](json& d) { d["experiments"] = json::array(); }, "p.json: experiments: empty"},
      {[](json& d) { d["experiments"][0].erase("requests"); }, "p.json: experiments[0].requests: missing"},
  };
  ExpectEditErrors("p.json", cases, Edited(ChatExport));
}

}  // namespace
}  // namespace fleetsim::observe_test
