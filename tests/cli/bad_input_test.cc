// The fleetsim executable on bad input, end to end: each case writes a broken
// scenario (and any broken trace or length file it names) into a scratch
// folder, runs `fleetsim validate` and/or `fleetsim run`, and checks the
// contract of tools/main.cc: exit status 2 and exactly one line,
// `fleetsim: <file>: <json path or file:line>: <what>`.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/backend.h"
#include "model/catalog.h"
#include "sim/runner/run.h"
#include "tests/cli/cli_test_util.h"

namespace fleetsim {
namespace {

using clitest::CommandResult;
using clitest::CountLines;
using clitest::RunFleetsim;
using clitest::ScratchDir;
using clitest::ShellQuote;
using nlohmann::json;

// A small valid scenario that every case breaks in one place.
json GeneratorScenario() {
  return json::parse(R"({
    "name": "cli-test",
    "seed": 3,
    "model": "Llama-3.1-8B",
    "fleet": {
      "router": "round_robin",
      "pools": [ { "name": "p", "gpu": "H100-SXM", "replicas": 1, "tp": 1 } ]
    },
    "traffic": {
      "generator": { "arrival": "poisson", "rate_per_s": 5, "prompt_tokens": 100, "output_tokens": 20 },
      "max_requests": 20
    }
  })");
}

// The same fleet fed from a trace file next to the scenario (relative path,
// so resolution against the scenario's folder is exercised too).
json TraceScenario(const std::string& format, const std::string& file) {
  json j = GeneratorScenario();
  j["traffic"] = {{"trace", {{"format", format}, {"path", file}}}, {"max_requests", 20}};
  return j;
}

json With(json j, const std::function<void(json&)>& edit) {
  edit(j);
  return j;
}

enum class Verb {
  kValidateAndRun,  // a scenario error: both verbs must report it, identically
  kRun,             // found while running (trace and length files are streamed)
};

struct BadCase {
  std::string name;
  std::string scenario;  // the scenario file's text
  // Other files to write beside it: name -> contents.
  std::vector<std::pair<std::string, std::string>> files;
  Verb verb = Verb::kValidateAndRun;
  // Substrings the message must contain besides the scenario's path. "{dir}"
  // stands for the scratch folder, for messages naming a trace file.
  std::vector<std::string> expect;
};

// gtest prints a failing parameter with this instead of its bytes.
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

BadCase Case(std::string name, const json& scenario, std::vector<std::string> expect) {
  BadCase c;
  c.name = std::move(name);
  c.scenario = scenario.dump(2);
  c.expect = std::move(expect);
  return c;
}

BadCase RunCase(std::string name, const json& scenario, std::vector<std::pair<std::string, std::string>> files,
                std::vector<std::string> expect) {
  BadCase c = Case(std::move(name), scenario, std::move(expect));
  c.files = std::move(files);
  c.verb = Verb::kRun;
  return c;
}

std::string ReadTestFile(const std::string& relative) {
  std::ifstream in(std::string(FLEETSIM_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

const char kAzureHeader[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
const char kLengthHeader[] = "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio\n";

std::vector<BadCase> BadCases() {
  const json g = GeneratorScenario();
  std::vector<BadCase> v;

  // ---- a model given as a Hugging Face config.json beside the scenario ----
  {
    const json with_config = With(g, [](json& j) { j["model"] = "cfg.json"; });
    auto config_case = [&](std::string name, const std::function<void(json&)>& edit_config,
                           std::vector<std::string> expect, const std::string& base = "llama-3.1-8b.json") {
      BadCase c = Case(std::move(name), with_config, std::move(expect));
      json config = json::parse(ReadTestFile("tests/model/data/hf/" + base));
      edit_config(config);
      c.files = {{"cfg.json", config.dump(2)}};
      return c;
    };
    v.push_back(config_case("HfConfigUnknownArchitecture",
                            [](json& c) { c["architectures"] = {"GPT2LMHeadModel"}; },
                            {"fleet.pools[0].model: {dir}/cfg.json: architectures: unknown architecture "
                             "\"GPT2LMHeadModel\"", "LlamaForCausalLM"}));
    v.push_back(config_case("HfConfigSlidingWindow", [](json&) {},
                            {"{dir}/cfg.json: sliding_window: sliding-window attention is not modelled"},
                            "mistral-7b-v0.1.json"));
    v.push_back(config_case("HfConfigUnknownQuantMethod",
                            [](json& c) { c["quantization_config"] = {{"quant_method", "bitsandbytes"}}; },
                            {"{dir}/cfg.json: quantization_config.quant_method: unknown quantisation method "
                             "\"bitsandbytes\""}));
    v.push_back(config_case("HfConfigMissingKey", [](json& c) { c.erase("hidden_size"); },
                            {"{dir}/cfg.json: hidden_size: missing required key"}));
    BadCase ds = config_case("HfConfigDeepSeekMtpLayers", [](json& c) { c["num_nextn_predict_layers"] = 99; },
                             {"fleet.pools[0].model: {dir}/cfg.json: num_nextn_predict_layers: expected at most "
                              "num_hidden_layers (61)"},
                             "deepseek-v3.json");
    json scenario = json::parse(ds.scenario);
    scenario["fleet"]["pools"][0]["gpu"] = "H200";
    scenario["fleet"]["pools"][0]["tp"] = 8;
    ds.scenario = scenario.dump(2);
    v.push_back(ds);
    v.push_back(Case("HfConfigFileMissing", With(g, [](json& j) { j["model"] = "nowhere/config.json"; }),
                     {"fleet.pools[0].model: cannot open model config \"{dir}/nowhere/config.json\""}));
  }
  v.push_back(Case("UnknownKvCacheDtype",
                   With(g, [](json& j) { j["fleet"]["pools"][0]["kv_cache_dtype"] = "int4"; }),
                   {"fleet.pools[0].kv_cache_dtype: unknown value \"int4\"", "fp8"}));

  // ---- JSON syntax and shape ----
  {
    BadCase c;
    c.name = "MalformedJson";
    c.scenario = "{\n  \"model\": \"Llama-3.1-8B\",\n  \"fleet\": {\n    \"pools\": [,]\n  }\n}\n";
    c.expect = {"invalid JSON", "line 4", "column"};
    v.push_back(c);
  }
  {
    BadCase c;
    c.name = "EmptyFile";
    c.scenario = "";
    c.expect = {"invalid JSON", "line", "column"};
    v.push_back(c);
  }
  v.push_back(Case("TopLevelNotAnObject", json::array({1, 2}), {"expected an object"}));
  v.push_back(Case("UnknownTopLevelKey", With(g, [](json& j) { j["colour"] = "red"; }),
                   {"colour: unknown key", "valid:", "traffic"}));
  v.push_back(Case("MisspeltNestedKey",
                   With(g,
                        [](json& j) {
                          auto& p = j["fleet"]["pools"][0];
                          p["gpus"] = p["gpu"];
                          p.erase("gpu");
                        }),
                   {"fleet.pools[0].gpus: unknown key", "valid:", "gpu"}));
  v.push_back(Case("ReplicasAsString", With(g, [](json& j) { j["fleet"]["pools"][0]["replicas"] = "2"; }),
                   {"fleet.pools[0].replicas: ", "expected a positive integer", "\"2\""}));
  v.push_back(Case("EmptyPools", With(g, [](json& j) { j["fleet"]["pools"] = json::array(); }),
                   {"fleet.pools: ", "non-empty array"}));
  v.push_back(Case("MissingFleet", With(g, [](json& j) { j.erase("fleet"); }), {"fleet: required"}));
  v.push_back(Case("MissingGpu", With(g, [](json& j) { j["fleet"]["pools"][0].erase("gpu"); }),
                   {"fleet.pools[0].gpu: required"}));

  // ---- names resolved against the catalogue and the registries ----
  v.push_back(Case("UnknownModel", With(g, [](json& j) { j["model"] = "Llama-9B"; }),
                   {"model: unknown model \"Llama-9B\"", "known:", "Llama-3.1-8B"}));
  v.push_back(Case("UnknownPoolModel", With(g, [](json& j) { j["fleet"]["pools"][0]["model"] = "Llama-9B"; }),
                   {"fleet.pools[0].model: unknown model \"Llama-9B\"", "known:", "Llama-3.1-8B"}));
  v.push_back(Case("UnknownGpu", With(g, [](json& j) { j["fleet"]["pools"][0]["gpu"] = "H2000"; }),
                   {"fleet.pools[0].gpu: unknown GPU \"H2000\"", "known:", "H100-SXM"}));
  v.push_back(Case("UnknownRouter", With(g, [](json& j) { j["fleet"]["router"] = "teleport"; }),
                   {"fleet.router: unknown router \"teleport\"", "known:", "round_robin"}));
  v.push_back(Case("UnknownScheduler", With(g, [](json& j) { j["fleet"]["pools"][0]["scheduler"] = "fifo9"; }),
                   {"fleet.pools[0].scheduler: unknown scheduler \"fifo9\"", "known:", "vllm"}));
  v.push_back(Case("UnknownEngine", With(g, [](json& j) { j["fleet"]["pools"][0]["engine"] = "tgi9"; }),
                   {"fleet.pools[0].engine: unknown engine \"tgi9\"", "known:", "vllm"}));
  v.push_back(Case("UnknownPricingClass", With(g, [](json& j) { j["fleet"]["pools"][0]["pricing_class"] = "free"; }),
                   {"fleet.pools[0].pricing_class: unknown pricing class \"free\"", "known:", "on_demand"}));
  v.push_back(Case("UnknownTraceFormat", TraceScenario("parquet", "t.parquet"),
                   {"traffic.trace.format: ", "\"parquet\"", "azure"}));
  v.push_back(Case("UnknownArrivalProcess", With(g, [](json& j) { j["traffic"]["generator"]["arrival"] = "weibull"; }),
                   {"traffic.generator.arrival: ", "\"weibull\"", "poisson"}));
  // A length is an integer or an object; a fraction is neither, and the
  // message should say an integer would do, not only "expected an object".
  v.push_back(Case("FractionalPromptTokens", With(g, [](json& j) { j["traffic"]["generator"]["prompt_tokens"] = 1.5; }),
                   {"traffic.generator.prompt_tokens: ", "integer", "1.5"}));
  v.push_back(Case("GeneratorModelNotServed",
                   With(g, [](json& j) { j["traffic"]["generator"]["model"] = "Llama-2-7B"; }),
                   {"traffic.generator.model: ", "no pool serves", "Llama-2-7B"}));

  // ---- values out of range ----
  v.push_back(Case("ZeroRate", With(g, [](json& j) { j["traffic"]["generator"]["rate_per_s"] = 0; }),
                   {"traffic.generator.rate_per_s: ", "a number in [1e-06, 1000000]", "got 0"}));
  v.push_back(Case("NegativeRate", With(g, [](json& j) { j["traffic"]["generator"]["rate_per_s"] = -2.5; }),
                   {"traffic.generator.rate_per_s: ", "a number in [1e-06, 1000000]", "-2.5"}));
  v.push_back(Case("ZeroReplicas", With(g, [](json& j) { j["fleet"]["pools"][0]["replicas"] = 0; }),
                   {"fleet.pools[0].replicas: ", "positive", "got 0"}));
  v.push_back(
      Case("NegativeWarmup", With(g, [](json& j) { j["warmup_s"] = -1; }), {"warmup_s: ", "non-negative", "-1"}));
  v.push_back(Case("WarmupNotBeforeDuration",
                   With(g,
                        [](json& j) {
                          j["duration_s"] = 10;
                          j["warmup_s"] = 10;
                        }),
                   {"warmup_s: ", "less than duration_s"}));
  v.push_back(Case("MemoryUtilizationAboveOne",
                   With(g, [](json& j) { j["fleet"]["pools"][0]["gpu_memory_utilization"] = 1.5; }),
                   {"fleet.pools[0].gpu_memory_utilization: ", "(0, 1]", "1.5"}));
  v.push_back(Case("PerfEfficiencyAboveOne",
                   With(g,
                        [](json& j) {
                          j["perf"] = {{"gemm_compute_efficiency", 2}};
                        }),
                   {"perf.gemm_compute_efficiency: ", "[0.001, 1]"}));
  v.push_back(Case("LengthMinAboveMax",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["prompt_tokens"] = {{"dist", "uniform"}, {"min", 50}, {"max", 10}};
                        }),
                   {"traffic.generator.prompt_tokens.min: ", "greater than max"}));
  v.push_back(Case("TraceEndBeforeStart",
                   With(TraceScenario("csv", "t.csv"),
                        [](json& j) {
                          j["traffic"]["trace"]["start_s"] = 5;
                          j["traffic"]["trace"]["end_s"] = 2;
                        }),
                   {"traffic.trace.end_s: ", "greater than start_s"}));
  v.push_back(Case("DuplicatePoolName", With(g, [](json& j) { j["fleet"]["pools"].push_back(j["fleet"]["pools"][0]); }),
                   {"fleet.pools[1].name: ", "duplicate", "\"p\""}));

  // ---- impossible configurations ----
  v.push_back(Case("TpDoesNotDivideHeads", With(g, [](json& j) { j["fleet"]["pools"][0]["tp"] = 3; }),
                   {"fleet.pools[0].tp: ", "3 does not divide", "32 attention heads", "Llama-3.1-8B"}));
  v.push_back(Case("PipelineParallelBeyondLayers", With(g, [](json& j) { j["fleet"]["pools"][0]["pp"] = 33; }),
                   {"fleet.pools[0].pp: ", "33 stages", "32 layers", "Llama-3.1-8B"}));
  v.push_back(Case("LayerSplitNotSummingToLayers",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["pp"] = 2;
                          j["fleet"]["pools"][0]["layer_split"] = {16, 15};
                        }),
                   {"fleet.pools[0].layer_split: ", "2 stage(s)", "summing to the 32 layers", "summing to 31"}));
  v.push_back(Case("LayerSplitNotAnInteger",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["pp"] = 2;
                          j["fleet"]["pools"][0]["layer_split"] = {16, "x"};
                        }),
                   {"fleet.pools[0].layer_split[1]: ", "expected a positive integer", "\"x\""}));
  v.push_back(Case("SpeculativeUnknownDraft",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["speculative"] = {
                              {"draft_model", "nope"}, {"num_speculative_tokens", 3}, {"acceptance", 0.7}};
                        }),
                   {"fleet.pools[0].speculative.draft_model: ", "nope"}));
  v.push_back(Case("SpeculativeDraftOfAnotherVocabulary",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["speculative"] = {
                              {"draft_model", "Qwen2.5-0.5B"}, {"num_speculative_tokens", 3}, {"acceptance", 0.7}};
                        }),
                   {"fleet.pools[0].speculative.draft_model: ", "Qwen2.5-0.5B", "vocabulary", "tokenizer"}));
  v.push_back(Case("SpeculativeEagleWithDraft",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["speculative"] = {{"method", "eagle"},
                                                                   {"draft_model", "Llama-3.1-8B"},
                                                                   {"num_speculative_tokens", 3},
                                                                   {"acceptance", 0.7}};
                        }),
                   {"fleet.pools[0].speculative.draft_model: ", "no draft model"}));
  v.push_back(Case("SpeculativeMtpWithoutMtpLayers",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["speculative"] = {
                              {"method", "mtp"}, {"num_speculative_tokens", 1}, {"acceptance", 0.85}};
                        }),
                   {"fleet.pools[0].speculative.method: ", "has no multi-token-prediction layers",
                    "num_nextn_predict_layers"}));
  v.push_back(Case("SpeculativeWithoutAcceptance",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["speculative"] = {{"method", "eagle"}, {"num_speculative_tokens", 3}};
                        }),
                   {"fleet.pools[0].speculative.acceptance: ", "required"}));
  v.push_back(Case("SpeculativeAcceptanceAboveOne",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["speculative"] = {
                              {"method", "eagle"}, {"num_speculative_tokens", 3}, {"acceptance", {{"mean", 1.5}}}};
                        }),
                   {"fleet.pools[0].speculative.acceptance.mean: ", "1.5"}));
  v.push_back(Case("SpeculativeWithPipelineParallelism",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["pp"] = 2;
                          j["fleet"]["pools"][0]["speculative"] = {
                              {"method", "eagle"}, {"num_speculative_tokens", 3}, {"acceptance", 0.7}};
                        }),
                   {"fleet.pools[0].speculative: ", "pipeline parallelism", "pp 2"}));
  v.push_back(Case("SpeculativeWithDataParallelAttention",
                   With(g,
                        [](json& j) {
                          j["model"] = "Mixtral-8x7B";
                          j["fleet"]["pools"][0]["ep"] = 2;
                          j["fleet"]["pools"][0]["dp_attention"] = true;
                          j["fleet"]["pools"][0]["speculative"] = {
                              {"method", "eagle"}, {"num_speculative_tokens", 3}, {"acceptance", 0.7}};
                        }),
                   {"fleet.pools[0].speculative: ", "data-parallel attention"}));
  // Mixtral on two GPUs as its expert-parallel group, with an expert balance.
  auto balanced = [&](const json& balance, const std::function<void(json&)>& more = {}) {
    return With(g, [balance, more](json& j) {
      j["model"] = "Mixtral-8x7B";
      j["fleet"]["pools"][0]["tp"] = 2;
      j["fleet"]["pools"][0]["ep"] = 2;
      j["fleet"]["pools"][0]["expert_balance"] = balance;
      if (more) more(j);
    });
  };
  v.push_back(Case("ExpertBalanceLoadsOfAnotherCount", balanced({{"loads", {1, 2, 3}}}),
                   {"fleet.pools[0].expert_balance.loads: ", "3 loads for the 8 experts of Mixtral-8x7B"}));
  v.push_back(Case("ExpertBalanceRedundantCopiesDoNotDivide", balanced({{"zipf_s", 1}, {"redundant_experts", 1}}),
                   {"fleet.pools[0].expert_balance.redundant_experts: ", "do not divide over ep 2"}));
  v.push_back(Case("ExpertBalanceWithSkew",
                   balanced({{"zipf_s", 1}}, [](json& j) { j["fleet"]["pools"][0]["expert_load_skew"] = 1.5; }),
                   {"fleet.pools[0].expert_balance: ", "excludes expert_load_skew"}));
  v.push_back(Case("ExpertBalanceLoadsAndZipf", balanced({{"zipf_s", 1}, {"loads", {1, 1}}}),
                   {"fleet.pools[0].expert_balance: ", "one of loads"}));
  v.push_back(Case("ExpertParallelOnADenseModel",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["tp"] = 2;
                          j["fleet"]["pools"][0]["ep"] = 2;
                        }),
                   {"fleet.pools[0].ep: ", "Llama-3.1-8B", "not a mixture of experts"}));
  v.push_back(Case("ExpertParallelBeyondTpWithoutDpAttention",
                   With(g,
                        [](json& j) {
                          j["model"] = "Mixtral-8x7B";
                          j["fleet"]["pools"][0]["tp"] = 2;
                          j["fleet"]["pools"][0]["ep"] = 4;
                        }),
                   {"fleet.pools[0].ep: ", "4 is not tp (2)", "dp_attention"}));
  v.push_back(Case("ExpertParallelNotDividingTheExperts",
                   With(g,
                        [](json& j) {
                          j["model"] = "Mixtral-8x7B";
                          j["fleet"]["pools"][0]["ep"] = 3;
                          j["fleet"]["pools"][0]["dp_attention"] = true;
                        }),
                   {"fleet.pools[0].ep: ", "3 does not divide the 8 experts"}));
  v.push_back(Case("ModelDoesNotFit", With(g, [](json& j) { j["model"] = "Llama-3.1-70B"; }),
                   {"fleet.pools[0]: ", "Llama-3.1-70B", "does not fit", "H100-SXM", "GiB"}));
  v.push_back(Case("BatchedTokensBelowMaxSeqs",
                   With(g,
                        [](json& j) {
                          j["fleet"]["pools"][0]["max_num_batched_tokens"] = 100;
                          j["fleet"]["pools"][0]["max_num_seqs"] = 200;
                        }),
                   {"fleet.pools[0].max_num_batched_tokens: ", "100", "less than max_num_seqs 200"}));

  // ---- traffic: exactly one source, and an end ----
  v.push_back(Case("TraceAndGenerator",
                   With(g,
                        [](json& j) {
                          j["traffic"]["trace"] = {{"format", "csv"}, {"path", "t.csv"}};
                        }),
                   {"traffic: ", "exactly one of", "trace", "generator"}));
  v.push_back(Case("NeitherTraceNorGenerator", With(g, [](json& j) { j["traffic"].erase("generator"); }),
                   {"traffic: ", "exactly one of", "trace", "generator"}));
  v.push_back(Case("GeneratorWithoutStop", With(g, [](json& j) { j["traffic"].erase("max_requests"); }),
                   {"traffic: ", "max_requests", "max_arrival_s", "duration_s"}));
  v.push_back(Case("GeneratorWithoutLengths",
                   With(g, [](json& j) { j["traffic"]["generator"].erase("output_tokens"); }),
                   {"traffic.generator: ", "lengths_csv", "output_tokens"}));

  // ---- traffic: shared prefixes and sessions ----
  v.push_back(Case("SharedPrefixNotAnObject",
                   With(g, [](json& j) { j["traffic"]["generator"]["shared_prefix"] = 4; }),
                   {"traffic.generator.shared_prefix: ", "expected an object", "4"}));
  v.push_back(Case("SharedPrefixUnknownKey",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["shared_prefix"] = {{"groups", 2}, {"tokens", 10}, {"token", 5}};
                        }),
                   {"traffic.generator.shared_prefix.token: unknown key", "valid:", "groups, tokens"}));
  v.push_back(Case("SharedPrefixZeroGroups",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["shared_prefix"] = {{"groups", 0}, {"tokens", 1000}};
                        }),
                   {"traffic.generator.shared_prefix.groups: ", "positive integer", "got 0"}));
  v.push_back(Case("SharedPrefixTooManyGroups",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["shared_prefix"] = {{"groups", 1048577}, {"tokens", 1000}};
                        }),
                   {"traffic.generator.shared_prefix.groups: ", "at most 1048576", "1048577"}));
  v.push_back(Case("SharedPrefixMissingGroups",
                   With(g, [](json& j) { j["traffic"]["generator"]["shared_prefix"] = {{"tokens", 1000}}; }),
                   {"traffic.generator.shared_prefix.groups: required"}));
  v.push_back(Case("SharedPrefixFractionalTokens",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["shared_prefix"] = {{"groups", 2}, {"tokens", 1.5}};
                        }),
                   {"traffic.generator.shared_prefix.tokens: ", "integer", "1.5"}));
  v.push_back(Case("SharedPrefixTokensAsString",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["shared_prefix"] = {{"groups", 2}, {"tokens", "1000"}};
                        }),
                   {"traffic.generator.shared_prefix.tokens: ", "integer", "\"1000\""}));
  v.push_back(Case("SharedPrefixTooManyTokens",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["shared_prefix"] = {{"groups", 2}, {"tokens", 16777217}};
                        }),
                   {"traffic.generator.shared_prefix.tokens: ", "at most 16777216", "16777217"}));
  v.push_back(Case("SharedPrefixMissingTokens",
                   With(g, [](json& j) { j["traffic"]["generator"]["shared_prefix"] = {{"groups", 2}}; }),
                   {"traffic.generator.shared_prefix.tokens: required"}));
  v.push_back(Case("SessionsNotAnObject",
                   With(g, [](json& j) { j["traffic"]["generator"]["sessions"] = json::array({3, 10}); }),
                   {"traffic.generator.sessions: ", "expected an object"}));
  v.push_back(Case("SessionsUnknownKey",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["sessions"] = {{"turns", 3}, {"think_time_s", 10}, {"think_s", 1}};
                        }),
                   {"traffic.generator.sessions.think_s: unknown key", "valid:", "think_time_s"}));
  v.push_back(Case("SessionsZeroTurns",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["sessions"] = {{"turns", 0}, {"think_time_s", 10}};
                        }),
                   {"traffic.generator.sessions.turns: ", "positive integer", "got 0"}));
  v.push_back(Case("SessionsFractionalTurns",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["sessions"] = {{"turns", 2.5}, {"think_time_s", 10}};
                        }),
                   {"traffic.generator.sessions.turns: ", "integer", "2.5"}));
  v.push_back(Case("SessionsMissingTurns",
                   With(g, [](json& j) { j["traffic"]["generator"]["sessions"] = {{"think_time_s", 10}}; }),
                   {"traffic.generator.sessions.turns: required"}));
  v.push_back(Case("SessionsZeroThinkTime",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["sessions"] = {{"turns", 3}, {"think_time_s", 0}};
                        }),
                   {"traffic.generator.sessions.think_time_s: ", "positive number", "got 0"}));
  v.push_back(Case("SessionsNegativeThinkTime",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["sessions"] = {{"turns", 3}, {"think_time_s", -2.5}};
                        }),
                   {"traffic.generator.sessions.think_time_s: ", "positive number", "-2.5"}));
  v.push_back(Case("SessionsMissingThinkTime",
                   With(g, [](json& j) { j["traffic"]["generator"]["sessions"] = {{"turns", 3}}; }),
                   {"traffic.generator.sessions.think_time_s: required"}));
  v.push_back(Case("SessionsZeroMaxContext",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["sessions"] = {
                              {"turns", 3}, {"think_time_s", 10}, {"max_context_tokens", 0}};
                        }),
                   {"traffic.generator.sessions.max_context_tokens: ", "positive integer", "got 0"}));
  v.push_back(Case("SessionsMaxContextTooLarge",
                   With(g,
                        [](json& j) {
                          j["traffic"]["generator"]["sessions"] = {
                              {"turns", 3}, {"think_time_s", 10}, {"max_context_tokens", 1073741825}};
                        }),
                   {"traffic.generator.sessions.max_context_tokens: ", "at most 1073741824", "1073741825"}));
  // Each key is in range, but the system prompt plus the longest prompt
  // would not fit a token count; known only once the lengths are (a length
  // CSV's longest row is read when the run starts).
  v.push_back(RunCase("SharedPrefixOverflowsPromptLength",
                      With(g,
                           [](json& j) {
                             auto& gen = j["traffic"]["generator"];
                             gen.erase("prompt_tokens");
                             gen.erase("output_tokens");
                             gen["lengths_csv"] = "lengths.csv";
                             gen["shared_prefix"] = {{"groups", 2}, {"tokens", 1000}};
                           }),
                      {{"lengths.csv", std::string(kLengthHeader) + "2147483000,5,2147483005,1\n"}},
                      {"traffic.generator.shared_prefix.tokens: ", "1000", "2147483000", "exceeds"}));

  // ---- numbers too large for the simulator: refused and named, never wrapped ----
  v.push_back(Case("DurationBeyondBound", With(g, [](json& j) { j["duration_s"] = 1e308; }),
                   {"duration_s: ", "positive number at most 10000000", "1e+308"}));
  v.push_back(Case("PromptTokensAboveTwoToThirty",
                   With(g, [](json& j) { j["traffic"]["generator"]["prompt_tokens"] = 2147483000; }),
                   {"traffic.generator.prompt_tokens: ", "at most 1073741824", "2147483000"}));
  v.push_back(Case("SeedBeyondInt64",
                   With(g, [](json& j) { j["seed"] = json::parse("18446744073709551615"); }),
                   {"seed: ", "non-negative integer", "18446744073709551615"}));
  v.push_back(Case("SwapSpaceBeyondBound",
                   With(g, [](json& j) { j["fleet"]["pools"][0]["swap_space_gib"] = 1e308; }),
                   {"fleet.pools[0].swap_space_gib: ", "at most 65536"}));
  v.push_back(Case("ClosedLoopWithARate",
                   With(g, [](json& j) { j["traffic"]["generator"]["concurrency"] = 4; }),
                   {"traffic.generator.arrival: ", "does not apply with \"concurrency\""}));
  v.push_back(Case("ThinkTimeWithoutClosedLoop",
                   With(g, [](json& j) { j["traffic"]["generator"]["think_time_s"] = 1; }),
                   {"traffic.generator.think_time_s: ", "applies only with \"concurrency\""}));
  v.push_back(Case("ClosedLoopUsersBeyondBound", With(g, [](json& j) {
                     auto& gen = j["traffic"]["generator"];
                     gen.erase("arrival");
                     gen.erase("rate_per_s");
                     gen["concurrency"] = 1 << 21;
                   }),
                   {"traffic.generator.concurrency: ", "at most 1048576"}));
  v.push_back(Case("LaunchOverheadBeyondBound", With(g, [](json& j) { j["perf"]["launch_overhead_us"] = 1e300; }),
                   {"perf.launch_overhead_us: ", "at most 1000000"}));
  v.push_back(Case("EfficiencyNearZero", With(g, [](json& j) { j["perf"]["link_efficiency"] = 1e-300; }),
                   {"perf.link_efficiency: ", "[0.001, 1]"}));
  v.push_back(Case("HugeArrayValueIsShownCut",
                   With(g,
                        [](json& j) {
                          json big = json::array();
                          for (int i = 0; i < 100000; ++i) big.push_back(i);
                          j["fleet"]["pools"][0]["replicas"] = big;
                        }),
                   {"fleet.pools[0].replicas: ", "got [0,1,2,"}));

  v.push_back(Case("HugeUnknownNameIsShownCut", With(g, [](json& j) { j["model"] = std::string(100000, 'x'); }),
                   {"model: unknown model \"" + std::string(61, 'x') + "...\" (known: "}));
  v.push_back(Case("HugeUnknownChoiceIsShownCut",
                   With(g, [](json& j) { j["traffic"]["generator"]["arrival"] = std::string(100000, 'w'); }),
                   {"traffic.generator.arrival: unknown value \"" + std::string(36, 'w') + "... (valid: "}));

  // ---- nesting deeper than any reader accepts (base/json_parse.h) ----
  {
    // 100,000 levels used to overflow the stack while the error message
    // printed the value.
    BadCase c;
    c.name = "ScenarioNestedTooDeep";
    c.scenario = "{\n  \"fleet\": " + std::string(100000, '[') + std::string(100000, ']') + "\n}\n";
    c.expect = {"invalid JSON at line 2, column 267: nested deeper than 256 levels"};
    v.push_back(c);
  }
  {
    BadCase c = Case("ProfileNestedTooDeep", With(g, [](json& j) { j["perf"]["profile"] = "deep.json"; }),
                     {"perf.profile: ", "deep.json: invalid JSON at line 1, column 266: nested deeper than 256 levels"});
    c.files = {{"deep.json", "{\"notes\": " + std::string(100000, '[') + std::string(100000, ']') + "}"}};
    v.push_back(c);
  }
  v.push_back(RunCase("MooncakeLineNestedTooDeep", TraceScenario("mooncake", "mc.jsonl"),
                      {{"mc.jsonl", "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n"
                                    "{\"timestamp\": 10, \"hash_ids\": " +
                                        std::string(100000, '[') + std::string(100000, ']') + "}\n"}},
                      {"{dir}/mc.jsonl:2: ", "invalid JSON at column 286: nested deeper than 256 levels"}));

  // ---- files named by the scenario, read while running ----
  v.push_back(RunCase("MissingTraceFile", TraceScenario("csv", "absent.csv"), {},
                      {"traffic", "cannot open trace", "{dir}/absent.csv"}));
  v.push_back(RunCase("MissingLengthCsv",
                      With(g,
                           [](json& j) {
                             auto& gen = j["traffic"]["generator"];
                             gen.erase("prompt_tokens");
                             gen.erase("output_tokens");
                             gen["lengths_csv"] = "absent_lengths.csv";
                           }),
                      {}, {"traffic", "cannot open length CSV", "{dir}/absent_lengths.csv"}));
  v.push_back(RunCase("CorruptAzureRow", TraceScenario("azure", "azure.csv"),
                      {{"azure.csv", std::string(kAzureHeader) + "2023-11-16 18:17:03.9799600,4808,10\n"
                                                                 "2023-11-16 18:17:04.0319600,abc,8\n"}},
                      {"{dir}/azure.csv:3: ", "ContextTokens", "\"abc\""}));
  v.push_back(RunCase("AzureRowMissingColumn", TraceScenario("azure", "azure.csv"),
                      {{"azure.csv", std::string(kAzureHeader) + "2023-11-16 18:17:03.9799600,4808,10\n"
                                                                 "2023-11-16 18:17:04.0319600,4808,10\n"
                                                                 "2023-11-16 18:17:05.0319600,4808\n"}},
                      {"{dir}/azure.csv:4: ", "3 columns"}));
  v.push_back(RunCase("AzureRowsOutOfOrder", TraceScenario("azure", "azure.csv"),
                      {{"azure.csv", std::string(kAzureHeader) + "2023-11-16 18:17:03.9799600,4808,10\n"
                                                                 "2023-11-16 18:17:02.0000000,48,8\n"}},
                      {"{dir}/azure.csv:3: ", "TIMESTAMP", "sorted"}));
  v.push_back(RunCase("AzureWrongHeader", TraceScenario("azure", "azure.csv"),
                      {{"azure.csv", "time,in,out\n2023-11-16 18:17:03.9799600,4808,10\n"}},
                      {"{dir}/azure.csv:1: ", "header"}));
  v.push_back(RunCase("CsvNegativeTokens", TraceScenario("csv", "plain.csv"),
                      {{"plain.csv", "arrival_s,prompt_tokens,output_tokens\n0.0,10,5\n0.5,-3,5\n"}},
                      {"{dir}/plain.csv:3: ", "prompt_tokens", "-3"}));
  v.push_back(RunCase("MooncakeTruncatedLine", TraceScenario("mooncake", "mc.jsonl"),
                      {{"mc.jsonl",
                        "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n"
                        "{\"timestamp\": 10, \"input_length\": 10\n"}},
                      {"{dir}/mc.jsonl:2: ", "JSON"}));
  v.push_back(RunCase("MooncakeNegativeLength", TraceScenario("mooncake", "mc.jsonl"),
                      {{"mc.jsonl",
                        "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5}\n"
                        "{\"timestamp\": 10, \"input_length\": -4, \"output_length\": 5}\n"}},
                      {"{dir}/mc.jsonl:2: ", "input_length", "-4"}));
  v.push_back(RunCase("LengthCsvBadRow",
                      With(g,
                           [](json& j) {
                             auto& gen = j["traffic"]["generator"];
                             gen.erase("prompt_tokens");
                             gen.erase("output_tokens");
                             gen["lengths_csv"] = "lengths.csv";
                           }),
                      {{"lengths.csv", std::string(kLengthHeader) + "10,5,15,2\n7,x,1,1\n"}},
                      {"{dir}/lengths.csv:3: ", "num_decode_tokens", "\"x\""}));
  v.push_back(Case("PerfProfileMissing", With(g, [](json& j) { j["perf"]["profile"] = "no-such-profile.json"; }),
                   {"perf.profile: ", "cannot open profile", "{dir}/no-such-profile.json"}));
  {
    BadCase c = Case("PerfProfileBadFit", With(g, [](json& j) { j["perf"]["profile"] = "p.json"; }),
                     {"perf.profile: ", "p.json: fits.gemm.bf16.knots[1]: knots must be in [1, 1e15] and increase"});
    c.files = {{"p.json", R"({"format": "fleetsim-profile-1", "device": "H100-SXM", "fits": {"gemm.bf16":
        {"size": "m", "scale": "n*k", "fixed_ns": 1, "knots": [4, 2], "values": [1, 1]}}})"}};
    v.push_back(c);
  }
  {
    // A calibrated CPU without its host link measured cannot be simulated.
    BadCase c = Case("ProfileDeviceWithoutHostLink",
                     With(g,
                          [](json& j) {
                            j["perf"]["profile"] = "cpu.json";
                            j["fleet"]["pools"][0]["gpu"] = "cpu-host";
                          }),
                     {"perf.profile: ", "cpu.json", "device_info has no measured host link"});
    c.files = {{"cpu.json", R"({"format": "fleetsim-profile-1", "device": "cpu-host", "device_info":
        {"backend": "cpu", "name": "x", "memory_bytes": 8589934592, "gemm_tflops": {"bf16": 0.05}, "copy_gbps": 10}})"}};
    v.push_back(c);
  }
  // ---- failures, recovery and rolling restarts (docs/reliability.md) ----
  {
    const auto failures = [&](json list) { return With(g, [&](json& j) { j["failures"] = list; }); };
    v.push_back(Case("UnknownFailureModel", failures(json::parse(R"([{"model": "meteor"}])")),
                     {"failures[0].model: unknown failure model \"meteor\"", "known:", "gpu", "engine_crash",
                      "drill"}));
    v.push_back(Case("DrillOnMissingNode", failures(json::parse(R"([{"model": "drill", "node": 5, "at_s": 10}])")),
                     {"failures[0].node: 5 is not a node of the fleet (it has 1, numbered from 0)"}));
    v.push_back(Case("DrillOnMissingZone",
                     failures(json::parse(R"([{"model": "drill", "zone": "mars", "at_s": 10}])")),
                     {"failures[0].zone: unknown zone \"mars\"", "known:", "zone0"}));
    v.push_back(Case("KeyTheModelDoesNotRead",
                     failures(json::parse(R"([{"model": "drill", "replica": 0, "at_s": 10, "mtbf_hours": 5}])")),
                     {"failures[0].mtbf_hours: not a key of failure model \"drill\"", "its keys:", "at_s"}));
    v.push_back(Case("DrillWithTwoTargets",
                     failures(json::parse(R"([{"model": "drill", "replica": 0, "node": 0, "at_s": 10}])")),
                     {"failures[0]: ", "exactly one of replica, node, rack or zone"}));
    v.push_back(Case("NodeModelWithoutMtbf", failures(json::parse(R"([{"model": "node"}])")),
                     {"failures[0].mtbf_hours: required by failure model \"node\""}));
    v.push_back(Case("RepairWithoutMttr",
                     With(failures(json::parse(R"([{"model": "gpu"}, {"model": "node", "mtbf_hours": 1000}])")),
                          [](json& j) { j["fleet"]["recovery"] = "repair"; }),
                     {"failures[0].mttr_s: required when fleet.recovery is \"repair\""}));
    v.push_back(Case("FailuresNotAnArray", With(g, [](json& j) { j["failures"] = {{"model", "gpu"}}; }),
                     {"failures: expected an array of failure models", "{\"model\":\"gpu\"}"}));
    v.push_back(Case("DrillKindExplode",
                     failures(json::parse(R"([{"model": "drill", "replica": 0, "at_s": 10, "kind": "explode"}])")),
                     {"failures[0].kind: unknown value \"explode\"", "hang", "crash"}));
    v.push_back(Case("RollingRestartOfUnknownPool",
                     With(g, [](json& j) { j["fleet"]["rolling_restarts"] = json::parse(R"([{"pool": "q", "at_s": 10}])"); }),
                     {"fleet.rolling_restarts[0].pool: unknown pool \"q\"", "known: p"}));
  }
  {
    // Autoscaling, spot and capacity (docs/autoscaling.md).
    auto scaled = [&](const char* autoscaler) {
      return With(g, [autoscaler](json& j) {
        json& p = j["fleet"]["pools"][0];
        p.erase("spares");
        p["replicas"] = 2;
        p["autoscaler"] = json::parse(autoscaler);
      });
    };
    v.push_back(Case("UnknownAutoscaler", scaled(R"({"policy": "magic", "max_replicas": 4})"),
                     {"fleet.pools[0].autoscaler.policy: unknown autoscaler \"magic\"", "hpa", "kpa", "slo_driven"}));
    v.push_back(Case("AutoscalerMinAboveMax", scaled(R"({"policy": "hpa", "min_replicas": 5, "max_replicas": 4})"),
                     {"fleet.pools[0].autoscaler.min_replicas: 5 exceeds max_replicas 4"}));
    v.push_back(Case("ReplicasOutsideAutoscalerBounds", scaled(R"({"policy": "hpa", "min_replicas": 3, "max_replicas": 4})"),
                     {"fleet.pools[0].replicas: the count at time 0 (2) must lie within the autoscaler's bounds [3, 4]"}));
    v.push_back(Case("AutoscalerOptionOfAnotherPolicy",
                     scaled(R"({"policy": "hpa", "max_replicas": 4, "options": {"stable_window_s": 60}})"),
                     {"fleet.pools[0].autoscaler.options.stable_window_s"}));
    v.push_back(Case("AutoscalerOptionUnknown",
                     scaled(R"({"policy": "hpa", "max_replicas": 4, "options": {"cooldown_s": 60}})"),
                     {"fleet.pools[0].autoscaler.options.cooldown_s: unknown key"}));
    v.push_back(Case("ScheduleHoursNotIncreasing",
                     scaled(R"({"policy": "scheduled", "max_replicas": 4,
                                "schedule": [{"hour": 8, "replicas": 2}, {"hour": 8, "replicas": 3}]})"),
                     {"fleet.pools[0].autoscaler.schedule[1].hour: hours must increase"}));
    v.push_back(Case("SloDrivenWithoutTargets",
                     With(scaled(R"({"policy": "slo_driven", "max_replicas": 4})"), [](json& j) { j.erase("slo"); }),
                     {"fleet.pools[0].autoscaler"}));
    v.push_back(Case("AutoscaledPoolWithSpares",
                     With(g, [](json& j) {
                       j["fleet"]["pools"][0]["spares"] = 1;
                       j["fleet"]["pools"][0]["autoscaler"] = json::parse(R"({"policy": "hpa", "max_replicas": 4})");
                     }),
                     {"fleet.pools[0].spares: an autoscaled pool keeps a warm_pool, not spares"}));
    v.push_back(Case("CapacityOfUnknownGpu",
                     With(g, [](json& j) {
                       j["fleet"]["gpu_capacity"] = json::parse(R"([{"gpu": "H2000", "pricing_class": "spot", "gpus": 8}])");
                     }),
                     {"fleet.gpu_capacity[0].gpu: unknown GPU \"H2000\"", "known:"}));
    v.push_back(Case("CapacityOfUnknownClass",
                     With(g, [](json& j) {
                       j["fleet"]["gpu_capacity"] = json::parse(R"([{"gpu": "H100-SXM", "pricing_class": "lease", "gpus": 8}])");
                     }),
                     {"fleet.gpu_capacity[0].pricing_class: unknown pricing class \"lease\"", "spot"}));
    v.push_back(Case("SpotFallbackUnknown",
                     With(g, [](json& j) {
                       j["fleet"]["pools"][0]["pricing_class"] = "spot";
                       j["fleet"]["pools"][0]["spot"] = json::parse(R"({"fallback": "reserved"})");
                     }),
                     {"fleet.pools[0].spot.fallback: unknown value \"reserved\"", "on_demand", "none"}));
    v.push_back(Case("WeightSourceUnknown",
                     With(g, [](json& j) { j["fleet"]["cold_start"] = json::parse(R"({"weight_source": "tape"})"); }),
                     {"fleet.cold_start.weight_source: unknown value \"tape\"", "disk", "network", "peer"}));
  }
  {
    // Routing and the front door (docs/routing.md).
    auto fleet = [&](const char* key, const char* value) {
      return With(g, [key, value](json& j) { j["fleet"][key] = json::parse(value); });
    };
    v.push_back(Case("UnknownRouterNamesTheCacheAwareOnes", With(g, [](json& j) { j["fleet"]["router"] = "psychic"; }),
                     {"fleet.router: unknown router \"psychic\"", "prefix_aware", "weighted_scorers"}));
    v.push_back(Case("RouterOptionOfAnotherRouter",
                     With(fleet("router_options", R"({"cache_threshold": 0.5})"),
                          [](json& j) { j["fleet"]["router"] = "weighted_scorers"; }),
                     {"fleet.router_options.cache_threshold: unknown option of router \"weighted_scorers\"",
                      "queue_weight"}));
    v.push_back(Case("RouterOptionOutOfRange",
                     With(fleet("router_options", R"({"cache_threshold": 3})"),
                          [](json& j) { j["fleet"]["router"] = "prefix_aware"; }),
                     {"fleet.router_options.cache_threshold: expected a number between 0 and 1, got 3"}));
    v.push_back(Case("RouterOptionsOnARouterWithout", fleet("router_options", R"({"x": 1})"),
                     {"fleet.router_options.x: router \"round_robin\" takes no options"}));
    v.push_back(Case("DuplicateTenant", fleet("admission", R"({"tenants": [{"name": "a"}, {"name": "a"}]})"),
                     {"fleet.admission.tenants[1].name: duplicate tenant \"a\""}));
    v.push_back(Case("CanaryOfUnknownPool",
                     fleet("canary", R"({"pool": "new", "baseline": "p", "steps": [{"share": 0.1, "duration_s": 60}]})"),
                     {"fleet.canary.pool: unknown pool \"new\"", "known: p"}));
    v.push_back(Case("FallbackToUnknownPool",
                     fleet("degradation", R"([{"policy": "fallback_model", "pool": "small", "trigger": {"queue_per_replica": 4}}])"),
                     {"fleet.degradation[0].pool: unknown pool \"small\""}));
    v.push_back(Case("UnknownDegradationPolicy",
                     fleet("degradation", R"([{"policy": "panic", "trigger": {"queue_per_replica": 4}}])"),
                     {"fleet.degradation[0].policy: unknown degradation policy \"panic\"", "shed", "cap_output"}));
    v.push_back(Case("CapOutputWithoutItsCap",
                     fleet("degradation", R"([{"policy": "cap_output", "trigger": {"queue_per_replica": 4}}])"),
                     {"fleet.degradation[0].max_output_tokens: required by cap_output"}));
    v.push_back(Case("MixTenantNotListed",
                     With(fleet("admission", R"({"tenants": [{"name": "acme", "rate_per_s": 5}]})"),
                          [](json& j) { j["traffic"]["mix"] = json::parse(R"([{"weight": 1, "tenant": "acne"}])"); }),
                     {"traffic.mix[0].tenant: unknown tenant \"acne\"", "known: acme"}));
    v.push_back(Case("ScrapeIntervalBelowAMillisecond", fleet("metrics_scrape_ms", "0.001"),
                     {"fleet.metrics_scrape_ms: expected 0 (live metrics) or at least 1 ms, got 0.001"}));
    v.push_back(Case("ClientWithoutRoundTripToARegion",
                     With(fleet("regions", R"([{"name": "eu"}, {"name": "us"}])"),
                          [](json& j) {
                            j["fleet"]["pools"][0]["region"] = "eu";
                            j["fleet"]["clients"] = json::parse(R"([{"name": "paris", "rtt_ms": {"eu": 10}}])");
                          }),
                     {"fleet.clients[0].rtt_ms: no round trip to region \"us\""}));
  }
  v.push_back(Case("UnknownGpuNotDescribedByAProfile",
                   With(g, [](json& j) { j["fleet"]["pools"][0]["gpu"] = "cpu-host"; }),
                   {"fleet.pools[0].gpu: unknown GPU \"cpu-host\"", "known:"}));
  return v;
}

void ReplaceAll(std::string* s, const std::string& from, const std::string& to) {
  for (size_t p = s->find(from); p != std::string::npos; p = s->find(from, p + to.size()))
    s->replace(p, from.size(), to);
}

// The one-line error contract, shared by all cases.
void ExpectOneLineError(const CommandResult& r, const std::string& scenario_path,
                        const std::vector<std::string>& expect) {
  EXPECT_EQ(r.exit_code, 2) << "output:\n" << r.output;
  EXPECT_EQ(CountLines(r.output), 1) << "output:\n" << r.output;
  EXPECT_EQ(r.output.rfind("fleetsim: ", 0), 0u) << "output:\n" << r.output;
  EXPECT_NE(r.output.find(scenario_path), std::string::npos)
      << "message does not name the scenario file " << scenario_path << ":\n"
      << r.output;
  for (const std::string& e : expect)
    EXPECT_NE(r.output.find(e), std::string::npos) << "missing \"" << e << "\" in:\n" << r.output;
}

class CliBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(CliBadInput, ExitsTwoWithOneLineNamingFileAndPath) {
  const BadCase& c = GetParam();
  ScratchDir dir;
  const std::string scenario = dir.Write("scenario.json", c.scenario);
  for (const auto& [name, text] : c.files) dir.Write(name, text);
  std::vector<std::string> expect = c.expect;
  for (std::string& e : expect) ReplaceAll(&e, "{dir}", dir.path().string());

  const std::string out = dir.File("out");
  const CommandResult run = RunFleetsim("run --quiet --out " + ShellQuote(out) + " " + ShellQuote(scenario));
  {
    SCOPED_TRACE("fleetsim run --quiet");
    ExpectOneLineError(run, scenario, expect);
  }
  if (c.verb == Verb::kValidateAndRun) {
    SCOPED_TRACE("fleetsim validate");
    const CommandResult val = RunFleetsim("validate " + ShellQuote(scenario));
    ExpectOneLineError(val, scenario, expect);
    EXPECT_EQ(val.output, run.output) << "validate and run report the same scenario error differently";
  }
  // A failed run must not leave a summary that looks like a result.
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out" / "summary.json"));
}

INSTANTIATE_TEST_SUITE_P(Cases, CliBadInput, ::testing::ValuesIn(BadCases()),
                         [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

// ---- the scenario file itself cannot be read ----

TEST(CliScenarioFile, MissingFileIsOneLineNamingThePath) {
  ScratchDir dir;
  const std::string path = dir.File("no_such_scenario.json");
  for (const char* verb : {"validate ", "run --quiet --out out "}) {
    SCOPED_TRACE(verb);
    const CommandResult r = RunFleetsim(std::string(verb) + ShellQuote(path));
    ExpectOneLineError(r, path, {"cannot open scenario", "No such file"});
  }
}

// A folder given where a scenario file belongs is an unreadable scenario:
// the message should say so, not report a JSON syntax error in an empty file.
TEST(CliScenarioFile, DirectoryIsReportedAsUnreadable) {
  ScratchDir dir;
  const std::string path = dir.path().string();
  const CommandResult r = RunFleetsim("validate " + ShellQuote(path));
  ExpectOneLineError(r, path, {"cannot", "scenario"});
  EXPECT_EQ(r.output.find("invalid JSON"), std::string::npos) << r.output;
}

TEST(CliScenarioFile, UnreadableFileIsOneLineNamingThePath) {
  if (geteuid() == 0) GTEST_SKIP() << "root reads files whatever their permissions";
  ScratchDir dir;
  const std::string path = dir.Write("locked.json", GeneratorScenario().dump());
  std::filesystem::permissions(path, std::filesystem::perms::none);
  const CommandResult r = RunFleetsim("validate " + ShellQuote(path));
  ExpectOneLineError(r, path, {"cannot open scenario", "ermission denied"});
}

// ---- inputs that are not regular files ----
//
// A directory, a FIFO or a device named as the scenario, the trace, the
// length CSV or the profile is refused by `validate` and `run` alike, at
// once: opening a FIFO for reading would block until a writer came, and
// /dev/zero never ends. Each command runs under `timeout`, so a regression
// fails the test instead of hanging it.

struct SpecialFile {
  const char* kind;  // as the message says it
  std::string path;
};

// A directory, a FIFO and two devices; the first two inside `dir`.
std::vector<SpecialFile> SpecialFiles(const ScratchDir& dir) {
  const std::string fifo = dir.File("fifo");
  EXPECT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::filesystem::create_directory(dir.File("folder"));
  return {{"a directory", dir.File("folder")},
          {"a FIFO", fifo},
          {"a character device", "/dev/null"},
          {"a character device", "/dev/zero"}};
}

CommandResult RunBounded(const std::string& args) {
  return clitest::RunCommand("timeout 20 " + ShellQuote(clitest::FleetsimBinary()) + " " + args);
}

void ExpectRefusedQuickly(const std::string& scenario, const std::vector<std::string>& expect) {
  ScratchDir out;
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult val = RunBounded("validate " + ShellQuote(scenario));
  const CommandResult run = RunBounded("run --quiet --out " + ShellQuote(out.File("o")) + " " + ShellQuote(scenario));
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  {
    SCOPED_TRACE("validate");
    ExpectOneLineError(val, scenario, expect);
  }
  {
    SCOPED_TRACE("run");
    ExpectOneLineError(run, scenario, expect);
  }
  EXPECT_EQ(val.output, run.output) << "validate and run open the input differently";
  EXPECT_LT(wall_s, 15.0) << "refusing a special file must not wait";
}

TEST(CliSpecialFiles, ScenarioThatIsNotARegularFileIsRefused) {
  ScratchDir dir;
  for (const SpecialFile& f : SpecialFiles(dir)) {
    SCOPED_TRACE(f.path);
    ExpectRefusedQuickly(f.path, {"cannot open scenario \"" + f.path + "\": not a regular file (" + f.kind + ")"});
  }
}

TEST(CliSpecialFiles, TraceThatIsNotARegularFileIsRefused) {
  ScratchDir dir;
  for (const SpecialFile& f : SpecialFiles(dir)) {
    for (const char* format : {"azure", "burstgpt", "servegen"}) {
      // A servegen path may be a folder (of client files): an empty one is
      // refused for having none.
      const bool folder_ok = std::string(format) == "servegen" && std::string(f.kind) == "a directory";
      SCOPED_TRACE(f.path + " as " + format);
      const std::string scenario = dir.Write("s.json", TraceScenario(format, f.path).dump());
      if (folder_ok) {
        ExpectRefusedQuickly(scenario, {"traffic.trace.path: ", "no chunk-N-trace.csv files"});
      } else {
        ExpectRefusedQuickly(scenario, {"traffic.trace.path: cannot open trace \"" + f.path +
                                            "\": not a regular file (" + f.kind + ")"});
      }
    }
  }
}

TEST(CliSpecialFiles, LengthCsvThatIsNotARegularFileIsRefused) {
  ScratchDir dir;
  for (const SpecialFile& f : SpecialFiles(dir)) {
    SCOPED_TRACE(f.path);
    json j = GeneratorScenario();
    auto& gen = j["traffic"]["generator"];
    gen.erase("prompt_tokens");
    gen.erase("output_tokens");
    gen["lengths_csv"] = f.path;
    const std::string scenario = dir.Write("s.json", j.dump());
    ExpectRefusedQuickly(scenario, {"traffic.generator.lengths_csv: cannot open length CSV \"" + f.path +
                                        "\": not a regular file (" + f.kind + ")"});
  }
}

TEST(CliSpecialFiles, ProfileThatIsNotARegularFileIsRefused) {
  ScratchDir dir;
  for (const SpecialFile& f : SpecialFiles(dir)) {
    SCOPED_TRACE(f.path);
    const std::string scenario =
        dir.Write("s.json", With(GeneratorScenario(), [&](json& j) { j["perf"]["profile"] = f.path; }).dump());
    ExpectRefusedQuickly(scenario, {"perf.profile: cannot open profile \"" + f.path + "\": not a regular file (" +
                                        f.kind + ")"});
  }
}

// ---- the bundled BurstGPT, Splitwise and ServeGen slices run end to end ----

TEST(CliTraceFormats, BundledSlicesValidateAndRun) {
  const std::string traces = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/";
  const std::pair<const char*, std::string> cases[] = {
      {"burstgpt", traces + "burstgpt_1_head.csv"},
      {"splitwise", traces + "splitwise_conv_head.csv"},
      {"servegen", traces + "servegen_deepseek_r1"},
  };
  for (const auto& [format, path] : cases) {
    SCOPED_TRACE(format);
    ScratchDir dir;
    const std::string scenario = dir.Write("s.json", TraceScenario(format, path).dump());
    const CommandResult val = RunBounded("validate " + ShellQuote(scenario));
    EXPECT_EQ(val.exit_code, 0) << val.output;
    const CommandResult run =
        RunBounded("run --quiet --out " + ShellQuote(dir.File("out")) + " " + ShellQuote(scenario));
    EXPECT_EQ(run.exit_code, 0) << run.output;
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / "summary.json"));
  }
}

TEST(CliTraceFormats, ServeGenClientWithoutLengthsIsRefusedByValidate) {
  ScratchDir dir;
  const std::string trace = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/traces/servegen_m_large/chunk-63-trace.csv";
  const std::string scenario = dir.Write("s.json", TraceScenario("servegen", trace).dump());
  ExpectRefusedQuickly(scenario, {"traffic.trace: no lengths for ServeGen client", "chunk-63-dataset.json",
                                  "lengths_csv"});
  // With lengths in the scenario it runs.
  const std::string ok = dir.Write("ok.json", With(TraceScenario("servegen", trace), [](json& j) {
                                                j["traffic"]["trace"]["prompt_tokens"] = 200;
                                                j["traffic"]["trace"]["output_tokens"] = 20;
                                              }).dump());
  const CommandResult run = RunBounded("run --quiet --out " + ShellQuote(dir.File("out")) + " " + ShellQuote(ok));
  EXPECT_EQ(run.exit_code, 0) << run.output;
}

TEST(CliTraceFormats, LengthKeysOnlyForServeGen) {
  ScratchDir dir;
  const std::string scenario = dir.Write("s.json", With(TraceScenario("azure", "t.csv"), [](json& j) {
                                                      j["traffic"]["trace"]["prompt_tokens"] = 200;
                                                    }).dump());
  const CommandResult r = RunBounded("validate " + ShellQuote(scenario));
  ExpectOneLineError(r, scenario, {"traffic.trace.prompt_tokens: only for format \"servegen\""});
}

// ---- command-line usage ----

TEST(CliUsage, RunWithoutScenarioIsUsageError) {
  const CommandResult r = RunFleetsim("run");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("scenario"), std::string::npos) << r.output;
}

TEST(CliUsage, NoSubcommandIsUsageError) {
  const CommandResult r = RunFleetsim("");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("subcommand"), std::string::npos) << r.output;
}

TEST(CliUsage, NonNumericSeedIsUsageError) {
  ScratchDir dir;
  const std::string scenario = dir.Write("s.json", GeneratorScenario().dump());
  const CommandResult r =
      RunFleetsim("run --quiet --out " + ShellQuote(dir.File("out")) + " --seed abc " + ShellQuote(scenario));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--seed"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
}

// CLI11 converts with strtoull in base 0: a negative seed wrapped to 2^64-1
// and an overflowing one saturated. Every form that is not a decimal
// integer in range is refused, on one line, before anything runs.
TEST(CliUsage, SeedIsParsedStrictly) {
  ScratchDir dir;
  const std::string scenario = dir.Write("s.json", GeneratorScenario().dump());
  const std::string run = "run --quiet --out " + ShellQuote(dir.File("out"));
  for (const char* seed : {"-1", "1e23", "1.5", "abc", "18446744073709551616", "18446744073709551615",
                           "9223372036854775808", "0x10", "+5", "' 7'", "''"}) {
    for (const std::string& form : {std::string(" --seed ") + seed, std::string(" --seed=") + seed}) {
      SCOPED_TRACE(form);
      const CommandResult r = RunFleetsim(run + form + " " + ShellQuote(scenario));
      EXPECT_EQ(r.exit_code, 2) << r.output;
      EXPECT_EQ(CountLines(r.output), 1) << r.output;
      EXPECT_EQ(r.output.rfind("fleetsim: ", 0), 0u) << r.output;
      EXPECT_NE(r.output.find("--seed"), std::string::npos) << r.output;
    }
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
  // The largest accepted seed runs.
  const CommandResult ok = RunFleetsim(run + " --seed 9223372036854775807 " + ShellQuote(scenario));
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

// Every numeric option of calibrate: out of range, negative, fractional,
// exponent, overflowing or not a number is exit 2 with one line naming it.
TEST(CliUsage, CalibrateNumbersAreParsedStrictly) {
  ScratchDir dir;
  const std::string cal = "calibrate --backend cpu --model tiny --out " + ShellQuote(dir.File("p.json"));
  const std::string gemm = "calibrate gemm --backend cpu --shapes 4x4x4";
  const std::pair<std::string, std::string> cases[] = {
      {cal + " --reps -1", "--reps: expected an integer in [1, 100000], got \"-1\""},
      {cal + " --reps 1e3", "--reps: expected an integer in [1, 100000], got \"1e3\""},
      {cal + " --reps 4294967297", "--reps: expected an integer in [1, 100000]"},
      {cal + " --warmup -1", "--warmup: expected an integer in [0, 100000], got \"-1\""},
      {cal + " --warmup 2.5", "--warmup: expected an integer in [0, 100000]"},
      {cal + " --cuda-device -1", "--cuda-device: expected an integer in [0, 1023], got \"-1\""},
      {cal + " --cuda-device 18446744073709551616", "--cuda-device: expected an integer in [0, 1023]"},
      {cal + " --cpu-ranks 1", "--cpu-ranks: expected an integer in [2, 1024], got \"1\""},
      {cal + " --cpu-ranks abc", "--cpu-ranks: expected an integer in [2, 1024]"},
      {cal + " --tp -2", "--tp: expected an integer in [1, 1024], got \"-2\""},
      {cal + " --tp 1,x", "--tp: expected an integer in [1, 1024], got \"x\""},
      {cal + " --tp 4294967297", "--tp: expected an integer in [1, 1024]"},
      {gemm + " --reps -1", "--reps: expected an integer in [1, 100000], got \"-1\""},
      {gemm + " --warmup 1.5", "--warmup: expected an integer in [0, 100000], got \"1.5\""},
      {gemm + " --cuda-device abc", "--cuda-device: expected an integer in [0, 1023], got \"abc\""},
      {"calibrate gemm --backend cpu --shapes -4x4x4", "\"-4x4x4\" is not MxNxK"},
      {"calibrate gemm --backend cpu --shapes 4x4x4x", "\"4x4x4x\" is not MxNxK"},
      {"calibrate gemm --backend cpu --shapes 4x1e3x4", "\"4x1e3x4\" is not MxNxK"},
      {"calibrate gemm --backend cpu --shapes 18446744073709551617x1x1", "is not MxNxK"},
      {"calibrate gemm --backend cpu --shapes 1048577x1x1", "each dimension at most 1048576"},
      {"calibrate gemm --backend cpu --shapes 65536x1x65536", "each operand at most 2147483648 elements"},
  };
  for (const auto& [args, expect] : cases) {
    SCOPED_TRACE(args);
    const CommandResult r = RunFleetsim(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "p.json"));
}

// ---- fleetsim calibrate ----

TEST(CliCalibrate, BadArgumentsExitTwoWithOneLine) {
  ScratchDir dir;
  const std::string out = ShellQuote(dir.File("p.json"));
  const std::pair<std::string, std::string> cases[] = {
      {"calibrate --backend cpu --model Llama-9B --out " + out, "unknown model \"Llama-9B\" (valid: "},
      {"calibrate --backend cpu --model tiny --tp 3 --out " + out, "--tp 3: "},
      {"calibrate --backend cpu --model tiny --tp 1,1 --out " + out, "--tp: 1 is listed twice"},
      {"calibrate --backend cpu --model tiny --reps 0 --out " + out, "--reps: expected an integer in [1, 100000], got \"0\""},
      {"calibrate --backend cpu --model tiny --grid medium --out " + out, "unknown grid \"medium\""},
      {"calibrate --backend cpu --model tiny", "--model and --out are required"},
      {"calibrate gemm --backend cpu --shapes 4x4", "\"4x4\" is not MxNxK"},
      {"calibrate gemm --backend cpu --shapes 4x4x4 --dtype fp8", "--dtype: unknown \"fp8\""},
  };
  for (const auto& [args, expect] : cases) {
    SCOPED_TRACE(args);
    const CommandResult r = RunFleetsim(args);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "p.json"));
}

// import-vidur: the GPU is named or told by Vidur's device tag in the path;
// never assumed.
TEST(CliImportVidur, DeviceIsNamedOrToldByTheVidurTag) {
  ScratchDir dir;
  const std::string data = std::string(FLEETSIM_SOURCE_DIR) + "/tests/calibrate/data/";
  std::ifstream in(data + "compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv", std::ios::binary);
  const std::string csv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string untagged = dir.Write("mlp.csv", csv);
  const std::string out = dir.File("p.json");
  auto device_of = [&](const std::string& args) {
    const CommandResult r = RunFleetsim("calibrate import-vidur " + args + " --out " + ShellQuote(out));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream f(out);
    return json::parse(f).at("device").get<std::string>();
  };
  EXPECT_EQ(device_of("--compute " + ShellQuote(data + "compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv")), "H100-SXM");
  std::filesystem::create_directories(dir.path() / "a100");
  const std::string a100 = dir.Write("a100/mlp.csv", csv);
  EXPECT_EQ(device_of("--compute " + ShellQuote(a100)), "A100-80G");
  EXPECT_EQ(device_of("--compute " + ShellQuote(untagged) + " --device H200"), "H200");

  std::filesystem::create_directories(dir.path() / "a40");
  const std::string a40 = dir.Write("a40/mlp.csv", csv);
  std::string no_gated = csv;
  no_gated.replace(no_gated.find("use_gated_mlp"), 13, "gated");
  const std::string bad_columns = dir.Write("compute_h100_x_mlp.csv", no_gated);
  const std::string attention = dir.Write("attention.csv", "n_embd,n_q_head\n4096,32\n");
  const std::string h100 = ShellQuote(data + "compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv");
  const std::pair<std::string, std::string> cases[] = {
      {"--compute " + ShellQuote(untagged) + " --device H100",
       "--device: unknown GPU \"H100\" (known: A100-40G, A100-80G, "},
      {"--compute " + ShellQuote(untagged),
       "--compute " + untagged +
           ": no Vidur device tag (h100, a100, a40) in the file's path to tell the GPU from; "
           "pass the GPU with --device NAME (known: A100-40G"},
      {"--compute " + ShellQuote(a40),
       "--compute " + a40 + ": Vidur's \"a40\" profiles were measured on an A40, which the hardware catalogue lacks"},
      {"--compute " + ShellQuote(bad_columns), bad_columns + ":1: missing column \"use_gated_mlp\""},
      {"--compute " + h100 + " --attention " + ShellQuote(attention), attention + ":1: missing column \"n_kv_head\""},
  };
  std::filesystem::remove(out);
  for (const auto& [args, expect] : cases) {
    SCOPED_TRACE(args);
    const CommandResult r = RunFleetsim("calibrate import-vidur " + args + " --out " + ShellQuote(out));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

// Outputs are checked before the first kernel runs: a calibration takes
// minutes, and must not end in "cannot write". The grid asked for here (an
// 8B model, full grid, 1000 runs per shape) would take far longer than the
// bound, so a quick exit means nothing was measured.
TEST(CliCalibrate, UnwritableOutputFailsBeforeMeasuring) {
  ScratchDir dir;
  const std::string file = dir.Write("file.txt", "a regular file, not a folder\n");
  const std::string under_file = file + "/out.json";
  const std::string slow = "calibrate --backend cpu --model Llama-3.1-8B --grid full --reps 1000 --no-links ";
  const std::pair<std::string, std::string> cases[] = {
      {slow + "--out " + ShellQuote(under_file), "--out \"" + under_file + "\": cannot create output folder"},
      {slow + "--out " + ShellQuote(dir.path().string()), "is a folder"},
      {slow + "--out " + ShellQuote(dir.File("ok.json")) + " --report " + ShellQuote(file + "/report"),
       "report folder: cannot create output folder \"" + file + "/report\""},
      {"calibrate gemm --backend cpu --shapes 4096x4096x4096 --reps 1000 --json " + ShellQuote(under_file),
       "--json \"" + under_file + "\""},
  };
  for (const auto& [args, expect] : cases) {
    SCOPED_TRACE(args);
    const auto start = std::chrono::steady_clock::now();
    const CommandResult r = RunFleetsim(args);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("shape="), std::string::npos) << r.output;
    EXPECT_LT(seconds, 10.0) << "took " << seconds << " s: did it measure first?";
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "ok.json"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "ok-report"));
  // The writability probes leave nothing behind.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);  // file.txt
}

TEST(CliCalibrate, CudaWithoutAGpuSaysSo) {
  std::string why;
  if (kernels::CudaDeviceAvailable(&why)) GTEST_SKIP() << "a GPU is present";
  ScratchDir dir;
  const CommandResult r = RunFleetsim("calibrate --backend cuda --model tiny --out " + ShellQuote(dir.File("p.json")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("backend \"cuda\" is not available"), std::string::npos) << r.output;
}

TEST(CliCalibrate, GemmTimesShapesAndWritesJson) {
  ScratchDir dir;
  const CommandResult r = RunFleetsim("calibrate gemm --backend cpu --shapes 8x16x32,4x4x4 --dtype fp32 --reps 2 --json " +
                                      ShellQuote(dir.File("g.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("shape=8x16x32 "), std::string::npos) << r.output;
  std::ifstream in(dir.File("g.json"));
  const json j = json::parse(in);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["m"], 8);
  EXPECT_EQ(j["results"][0]["k"], 32);
  EXPECT_GT(j["results"][0]["median_ns"].get<double>(), 0);
}

// ---- good input still works ----

TEST(CliGoodInput, ValidatesQuickstart) {
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/quickstart.json";
  const CommandResult r = RunFleetsim("validate " + ShellQuote(path));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(path + ": ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Llama-3.1-8B"), std::string::npos) << r.output;
}

// A model given as a config.json beside the scenario validates and runs; its
// unknown keys reach the summary's warnings, and kv_cache_dtype is taken.
TEST(CliGoodInput, HfConfigModelValidatesAndRuns) {
  ScratchDir dir;
  json config = json::parse(ReadTestFile("tests/model/data/hf/llama-3.1-8b.json"));
  config["some_future_key"] = 1;
  dir.Write("cfg.json", config.dump(2));
  json scenario = GeneratorScenario();
  scenario["model"] = "cfg.json";
  scenario["fleet"]["pools"][0]["kv_cache_dtype"] = "fp8";
  const std::string path = dir.Write("scenario.json", scenario.dump(2));
  const CommandResult val = RunFleetsim("validate " + ShellQuote(path));
  EXPECT_EQ(val.exit_code, 0) << val.output;
  EXPECT_NE(val.output.find(path + ": ok"), std::string::npos) << val.output;
  const std::string out = dir.File("out");
  const CommandResult run = RunFleetsim("run --quiet --out " + ShellQuote(out) + " " + ShellQuote(path));
  ASSERT_EQ(run.exit_code, 0) << run.output;
  std::ifstream in(out + "/summary.json");
  const json s = json::parse(in);
  EXPECT_EQ(s.at("requests").at("completed"), 20) << s.dump();
  EXPECT_NE(s.at("warnings").dump().find("some_future_key"), std::string::npos) << s.at("warnings").dump();
}

TEST(CliGoodInput, ListNamesEveryModelGpuEngineAndPolicy) {
  const CommandResult r = RunFleetsim("list");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Catalog catalog;
  ASSERT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
  Policies policies;
  RegisterBuiltins(&policies);
  std::vector<std::string> names = catalog.ModelNames();
  for (const auto& n : catalog.GpuNames()) names.push_back(n);
  for (const auto& n : catalog.EngineNames()) names.push_back(n);
  for (const auto& n : policies.routers.Names()) names.push_back(n);
  for (const auto& n : policies.schedulers.Names()) names.push_back(n);
  ASSERT_FALSE(catalog.ModelNames().empty());
  ASSERT_FALSE(catalog.GpuNames().empty());
  // The names the briefs and bundled scenarios rely on, whatever the catalogue holds.
  for (const char* n : {"Llama-3.1-8B", "Llama-3.1-70B", "H100-SXM", "round_robin", "least_outstanding", "vllm"})
    names.push_back(n);
  for (const std::string& n : names) {
    // Each entry is printed as "  <name> <details>" on its own line.
    EXPECT_NE(r.output.find("\n  " + n + " "), std::string::npos) << "fleetsim list does not show " << n;
  }
  for (const char* section : {"models:", "gpus:", "engines:", "schedulers:", "routers:"})
    EXPECT_NE(r.output.find(section), std::string::npos) << section;
}

TEST(CliGoodInput, RunsAndWritesOutputsQuietly) {
  ScratchDir dir;
  const std::string scenario = dir.Write("s.json", GeneratorScenario().dump());
  const CommandResult r = RunFleetsim("run --quiet --out " + ShellQuote(dir.File("out")) + " " + ShellQuote(scenario));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Nothing but warnings (the bundled engine profile's estimated terms).
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) EXPECT_EQ(line.rfind("warning: ", 0), 0u) << line;
  for (const char* f : {"summary.json", "requests.csv", "timeseries.csv", "run.json"})
    EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / f)) << f;
}

// The parser accepts duration_s as a generator's only stop condition (its
// message asks for "max_requests, max_arrival_s or the scenario's
// duration_s"), so such a scenario must run, not fail after validating.
TEST(CliGoodInput, GeneratorStoppedOnlyByDurationRuns) {
  ScratchDir dir;
  json j = GeneratorScenario();
  j["traffic"].erase("max_requests");
  j["duration_s"] = 5;
  const std::string scenario = dir.Write("s.json", j.dump(2));
  const CommandResult val = RunFleetsim("validate " + ShellQuote(scenario));
  EXPECT_EQ(val.exit_code, 0) << val.output;
  const CommandResult r = RunFleetsim("run --quiet --out " + ShellQuote(dir.File("out")) + " " + ShellQuote(scenario));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "out" / "summary.json"));
}

}  // namespace
}  // namespace fleetsim
