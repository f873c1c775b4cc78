// `fleetsim run` and `validate` as a user drives them: what a run says it
// was (hashes checked against sha256sum), --set overrides, outputs that are
// atomic (a failed, interrupted or concurrent run leaves the folder as it
// was), per-scheduler traces, and what validate prints.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/cli/cli_test_util.h"

namespace fleetsim {
namespace {

using clitest::CommandResult;
using clitest::RunCommand;
using clitest::RunFleetsim;
using clitest::ScratchDir;
using clitest::ShellQuote;
using nlohmann::json;
namespace fs = std::filesystem;

const char* kScenario = R"({
  "name": "outputs-test",
  "seed": 3,
  "model": "Llama-3.1-8B",
  "fleet": { "pools": [ { "name": "p", "gpu": "H100-SXM", "replicas": 1, "tp": 1 } ] },
  "traffic": {
    "generator": { "arrival": "poisson", "rate_per_s": 5, "prompt_tokens": 100, "output_tokens": 20 },
    "max_requests": 40
  }
})";

json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::string Sha256Sum(const std::string& path) {
  CommandResult r = RunCommand("sha256sum " + ShellQuote(path));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output.substr(0, 64);
}

// Nothing but `keep` may remain in the scratch folder: no temporary folder,
// no lock file.
void ExpectOnly(const ScratchDir& dir, const std::set<std::string>& keep) {
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_TRUE(keep.count(e.path().filename().string())) << "left behind: " << e.path();
}

TEST(RunOutputs, SummarySaysWhatTheRunWas) {
  ScratchDir dir;
  const std::string s = dir.Write("s.json", kScenario);
  CommandResult r = RunFleetsim("run " + ShellQuote(s) + " --out " + ShellQuote(dir.File("out")) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = ReadJson(dir.File("out/summary.json"));
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["run"]["scenario"], "outputs-test");
  EXPECT_EQ(j["run"]["scenario_sha256"], Sha256Sum(s));
  EXPECT_EQ(j["run"]["seed"], 3);
  EXPECT_FALSE(j["run"]["fleetsim_version"].get<std::string>().empty());
  EXPECT_EQ(j["run"]["inputs_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(j["fleet"]["replicas"], 1);
  EXPECT_EQ(j["fleet"]["gpus"], 1);
  EXPECT_EQ(j["fleet"]["pools"][0]["gpu"], "H100-SXM");
  EXPECT_TRUE(j["cost"].contains("usd_per_hour"));
  EXPECT_TRUE(j["cost"].contains("usd_per_million_total_tokens"));
  EXPECT_FALSE(j.contains("wall_s"));  // wall-clock figures stay in run.json
  json run = ReadJson(dir.File("out/run.json"));
  EXPECT_TRUE(run.contains("wall_s"));
  EXPECT_EQ(run["timeseries"]["intervals"][0]["interval_s"], 1.0);

  // Another seed: another identity, same scenario hash.
  r = RunFleetsim("run " + ShellQuote(s) + " --seed 4 --out " + ShellQuote(dir.File("out4")) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json k = ReadJson(dir.File("out4/summary.json"));
  EXPECT_EQ(k["run"]["seed"], 4);
  EXPECT_EQ(k["run"]["scenario_sha256"], j["run"]["scenario_sha256"]);
}

TEST(RunOutputs, SetOverridesAnyKeyAndIsRecorded) {
  ScratchDir dir;
  const std::string s = dir.Write("s.json", kScenario);
  CommandResult r = RunFleetsim("run " + ShellQuote(s) + " --set fleet.pools[0].replicas=3 --set " +
                                ShellQuote("traffic.generator.rate_per_s=12.5") + " --set seed=9 --out " +
                                ShellQuote(dir.File("out")) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  json j = ReadJson(dir.File("out/summary.json"));
  EXPECT_EQ(j["fleet"]["replicas"], 3);
  EXPECT_EQ(j["run"]["seed"], 9);
  ASSERT_EQ(j["run"]["overrides"].size(), 3u);
  EXPECT_EQ(j["run"]["overrides"][1], "traffic.generator.rate_per_s=12.5");

  // Checked exactly like the file.
  for (const auto& [set, expect] : std::vector<std::pair<std::string, std::string>>{
           {"fleet.pools[0].replicas=0", "fleet.pools[0].replicas: expected a positive integer"},
           {"fleet.pools[3].replicas=2", "fleet.pools: has 1 elements, no [3]"},
           {"fleet.pools[0].gpus=2", "fleet.pools[0].gpus: unknown key"},
           {"fleet.pools[0].gpu=H2000", "unknown GPU \"H2000\""},
           {"noequals", "expected KEY=VALUE"}}) {
    SCOPED_TRACE(set);
    r = RunFleetsim("validate " + ShellQuote(s) + " --set " + ShellQuote(set));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(expect), std::string::npos) << r.output;
  }
}

TEST(RunOutputs, FailedRunLeavesTheOutputFolderUntouched) {
  ScratchDir dir;
  // A trace whose 30th row is corrupt: the run fails part-way.
  std::string trace = "arrival_s,prompt_tokens,output_tokens\n";
  for (int i = 0; i < 29; ++i) trace += std::to_string(i) + ".5,100,10\n";
  trace += "30.5,abc,10\n";
  dir.Write("t.csv", trace);
  json j = json::parse(kScenario);
  j["traffic"] = {{"trace", {{"format", "csv"}, {"path", "t.csv"}}}};
  const std::string s = dir.Write("s.json", j.dump());
  fs::create_directories(dir.File("out"));
  dir.Write("out/summary.json", "previous run\n");
  dir.Write("out/.fleetsim-output", "");  // an earlier run's outputs, which a run may replace
  CommandResult r = RunFleetsim("run " + ShellQuote(s) + " --out " + ShellQuote(dir.File("out")) + " --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  std::ifstream in(dir.File("out/summary.json"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "previous run\n");
  EXPECT_FALSE(fs::exists(dir.File("out/requests.csv")));
  ExpectOnly(dir, {"t.csv", "s.json", "out"});
}

TEST(RunOutputs, InterruptedRunLeavesTheOutputFolderUntouched) {
  ScratchDir dir;
  json j = json::parse(kScenario);
  j["traffic"]["max_requests"] = 50000000;  // far longer than the test waits
  j["traffic"]["generator"]["rate_per_s"] = 1000;
  j["fleet"]["pools"][0]["replicas"] = 64;
  const std::string s = dir.Write("s.json", j.dump());
  fs::create_directories(dir.File("out"));
  dir.Write("out/summary.json", "previous run\n");
  dir.Write("out/.fleetsim-output", "");  // an earlier run's outputs, which a run may replace
  for (const char* sig : {"INT", "TERM"}) {
    SCOPED_TRACE(sig);
    CommandResult r = RunCommand("timeout --preserve-status -s " + std::string(sig) + " 1 " + clitest::FleetsimBinary() + " run " +
                                 ShellQuote(s) + " --out " + ShellQuote(dir.File("out")) + " --quiet");
    EXPECT_EQ(r.exit_code, std::string(sig) == "INT" ? 130 : 143) << r.output;
    EXPECT_NE(r.output.find("interrupted"), std::string::npos) << r.output;
    std::ifstream in(dir.File("out/summary.json"));
    std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_EQ(text, "previous run\n");
    ExpectOnly(dir, {"s.json", "out"});
  }
}

TEST(RunOutputs, SecondRunIntoABusyFolderIsRefused) {
  ScratchDir dir;
  const std::string s = dir.Write("s.json", kScenario);
  // A lock held by a live process (this test).
  dir.Write(".out.lock", std::to_string(::getpid()) + "\n");
  CommandResult r = RunFleetsim("run " + ShellQuote(s) + " --out " + ShellQuote(dir.File("out")) + " --quiet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is in use by another fleetsim command"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(dir.File("out")), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir.File("out")));
  // A lock whose owner is gone is taken over.
  dir.Write(".out.lock", "999999999\n");
  r = RunFleetsim("run " + ShellQuote(s) + " --out " + ShellQuote(dir.File("out")) + " --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir.File("out/summary.json")));
  ExpectOnly(dir, {"s.json", "out"});
}

// The output folder is replaced as a whole, so it must be a folder of its
// own: "/", "." and ".." are refused before anything runs, and so is a
// folder holding files fleetsim did not write. An earlier run's folder is
// replaced, nothing of it kept.
TEST(RunOutputs, OutputFolderMustBeAFolderOfItsOwn) {
  ScratchDir dir;
  const std::string s = dir.Write("s.json", kScenario);
  for (const std::string& out : std::vector<std::string>{"/", ".", ".."}) {
    SCOPED_TRACE(out);
    CommandResult r = RunCommand("cd " + ShellQuote(dir.path().string()) + " && " +
                                 ShellQuote(clitest::FleetsimBinary()) + " run " + ShellQuote(s) + " --out " +
                                 ShellQuote(out) + " --quiet");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("name a folder of its own"), std::string::npos) << r.output;
  }
  ExpectOnly(dir, {"s.json"});

  // The user's own folder, named directly or as "DIR/.", is not replaced.
  fs::create_directories(dir.File("mine"));
  dir.Write("mine/notes.txt", "keep me\n");
  for (const std::string& out : {dir.File("mine"), dir.File("mine") + "/.", dir.File("mine") + "/"}) {
    SCOPED_TRACE(out);
    CommandResult r = RunFleetsim("run " + ShellQuote(s) + " --out " + ShellQuote(out) + " --quiet");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("holds files that fleetsim did not write"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(out), std::string::npos) << r.output;
    EXPECT_TRUE(fs::exists(dir.File("mine/notes.txt")));
    EXPECT_FALSE(fs::exists(dir.File("mine/summary.json")));
  }
  ExpectOnly(dir, {"s.json", "mine"});

  // An empty folder is used; a second run replaces the first one's outputs.
  fs::create_directories(dir.File("out"));
  CommandResult r = RunFleetsim("run " + ShellQuote(s) + " --out " + ShellQuote(dir.File("out")) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir.File("out/.fleetsim-output")));
  dir.Write("out/stale.txt", "from before\n");
  r = RunFleetsim("run " + ShellQuote(s) + " --out " + ShellQuote(dir.File("out") + "/.") + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir.File("out/summary.json")));
  EXPECT_FALSE(fs::exists(dir.File("out/stale.txt")));
  ExpectOnly(dir, {"s.json", "mine", "out"});
}

// validate reads the trace through before it says "ok"; a rate_scale that
// would push rows past the range of simulated time is refused, not dropped.
TEST(RunOutputs, ValidateSaysOkOnlyForATraceThatReadsThrough) {
  ScratchDir dir;
  dir.Write("bad.csv", "arrival_s,prompt_tokens,output_tokens\n0,100,5\n1,abc,5\n");
  dir.Write("far.csv", "arrival_s,prompt_tokens,output_tokens\n0,100,5\n10000,100,5\n");
  json j = json::parse(kScenario);
  j["traffic"] = {{"trace", {{"format", "csv"}, {"path", "bad.csv"}}}};
  CommandResult r = RunFleetsim("validate " + ShellQuote(dir.Write("bad.json", j.dump())));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find(": ok"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bad.csv:3"), std::string::npos) << r.output;

  j["traffic"] = {{"trace", {{"format", "csv"}, {"path", "far.csv"}, {"rate_scale", 1e-6}}}};
  const std::string far = dir.Write("far.json", j.dump());
  for (const std::string cmd : {"validate ", "run "}) {
    SCOPED_TRACE(cmd);
    r = RunFleetsim(cmd + ShellQuote(far) + (cmd == "run " ? " --quiet --out " + ShellQuote(dir.File("o")) : ""));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("beyond 292 years"), std::string::npos) << r.output;
  }
}

TEST(RunOutputs, CompareWithTraceWritesATracePerScheduler) {
  ScratchDir dir;
  const std::string s = dir.Write("s.json", kScenario);
  CommandResult r = RunFleetsim("run " + ShellQuote(s) + " --compare schedulers --trace --out " +
                                ShellQuote(dir.File("cmp")) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int traced = 0;
  for (const auto& e : fs::directory_iterator(dir.File("cmp"))) {
    if (!e.is_directory()) continue;
    EXPECT_TRUE(fs::exists(e.path() / "trace.json")) << e.path();
    ++traced;
  }
  EXPECT_GE(traced, 4);
}

// A pool names a bundled engine profile or a user's file; a scheduler brings
// its own engine's profile when the pool names none, also under --compare.
TEST(RunOutputs, EngineProfilesFromTheCatalogueOrAFile) {
  ScratchDir dir;
  std::ifstream in(std::string(FLEETSIM_SOURCE_DIR) + "/model/engines/vllm.json");
  json profile = json::parse(in);
  profile["name"] = "mine";
  profile["terms"]["step_cpu_us"] = json::array(
      {{{"value", 1234}, {"gpu", "H100-SXM"}, {"source", "my runs"}, {"date", "2026-11"}, {"engine_version", "0.11"}},
       {{"value", 1000}, {"source", "generic"}, {"date", "2026-11"}, {"estimate", true}}});
  fs::create_directories(dir.File("engines"));
  dir.Write("engines/mine.json", profile.dump());
  json j = json::parse(kScenario);
  j["fleet"]["pools"][0]["engine"] = "engines/mine.json";  // relative to the scenario
  const std::string s = dir.Write("s.json", j.dump());
  CommandResult r = RunFleetsim("run " + ShellQuote(s) + " --out " + ShellQuote(dir.File("o")) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json summary = ReadJson(dir.File("o/summary.json"));
  EXPECT_EQ(summary["fleet"]["pools"][0]["engine"], "mine");
  EXPECT_EQ(summary["perf_sources"]["cpu_overhead"], "engine:mine:estimate");  // seq_cpu_us is an estimate
  // The warning lists the estimated terms; step_cpu_us was measured.
  EXPECT_NE(r.output.find("seq_cpu_us"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("step_cpu_us"), std::string::npos) << r.output;

  // Errors name the pool, the file and the JSON path.
  profile["terms"]["seq_cpu_us"][0]["value"] = "fast";
  dir.Write("engines/mine.json", profile.dump());
  r = RunFleetsim("validate " + ShellQuote(s));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("fleet.pools[0].engine: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("mine.json: terms.seq_cpu_us[0].value: expected a non-negative number"),
            std::string::npos)
      << r.output;
  j["fleet"]["pools"][0]["engine"] = "trtllm";
  r = RunFleetsim("validate " + ShellQuote(dir.Write("s2.json", j.dump())));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("fleet.pools[0].engine: unknown engine \"trtllm\""), std::string::npos) << r.output;

  // --compare schedulers: SGLang runs with SGLang's profile.
  r = RunFleetsim("run " + ShellQuote(dir.Write("s3.json", kScenario)) + " --compare schedulers --out " +
                  ShellQuote(dir.File("cmp")) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(ReadJson(dir.File("cmp/sglang/summary.json"))["fleet"]["pools"][0]["engine"], "sglang");
  EXPECT_EQ(ReadJson(dir.File("cmp/vllm/summary.json"))["fleet"]["pools"][0]["engine"], "vllm");
  EXPECT_EQ(ReadJson(dir.File("cmp/vllm_v0/summary.json"))["fleet"]["pools"][0]["engine"], "vllm_v0");
  // vLLM V1 and SGLang overlap scheduling with the GPU's step; V0 does not.
  EXPECT_EQ(ReadJson(dir.File("cmp/vllm/summary.json"))["fleet"]["pools"][0]["async_scheduling"], true);
  EXPECT_EQ(ReadJson(dir.File("cmp/sglang/summary.json"))["fleet"]["pools"][0]["async_scheduling"], true);
  EXPECT_EQ(ReadJson(dir.File("cmp/vllm_v0/summary.json"))["fleet"]["pools"][0]["async_scheduling"], false);
}

// A pool may say whether its engine schedules asynchronously (vLLM's
// --async-scheduling, on by default since late 2025): off, a step pays its
// CPU time after the GPU's, and decoding is slower.
TEST(RunOutputs, APoolSaysWhetherItsEngineSchedulesAsynchronously) {
  ScratchDir dir;
  json j = json::parse(kScenario);
  const std::string on = dir.Write("on.json", j.dump());
  j["fleet"]["pools"][0]["async_scheduling"] = false;
  const std::string off = dir.Write("off.json", j.dump());
  ASSERT_EQ(RunFleetsim("run " + ShellQuote(on) + " --out " + ShellQuote(dir.File("on")) + " --quiet").exit_code, 0);
  ASSERT_EQ(RunFleetsim("run " + ShellQuote(off) + " --out " + ShellQuote(dir.File("off")) + " --quiet").exit_code, 0);
  const json a = ReadJson(dir.File("on/summary.json")), b = ReadJson(dir.File("off/summary.json"));
  EXPECT_EQ(a["fleet"]["pools"][0]["async_scheduling"], true);
  EXPECT_EQ(b["fleet"]["pools"][0]["async_scheduling"], false);
  EXPECT_LT(a["latency_ms"]["tpot"]["p50"].get<double>(), b["latency_ms"]["tpot"]["p50"].get<double>());
  j["fleet"]["pools"][0]["async_scheduling"] = "yes";
  const CommandResult r = RunFleetsim("validate " + ShellQuote(dir.Write("bad.json", j.dump())));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("fleet.pools[0].async_scheduling"), std::string::npos) << r.output;
}

TEST(RunOutputs, ValidatePrintsTheBudgetTheSchedulerApplies) {
  ScratchDir dir;
  json j = json::parse(kScenario);
  j["fleet"]["pools"][0]["scheduler"] = "sarathi";
  j["fleet"]["pools"][0]["scheduler_options"] = {{"chunk_size", 768}};
  const std::string s = dir.Write("s.json", j.dump());
  CommandResult r = RunFleetsim("validate " + ShellQuote(s));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("budget 768 tokens per iteration (scheduler_options.chunk_size)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("generator: 5 requests per second, 40 requests"), std::string::npos) << r.output;
  // vLLM V0 without chunked prefill: a step holds a whole prompt, so its
  // default budget is max(max_model_len, 2048) (Llama-3.1-8B: 131072), and
  // 256 sequences even on an H100.
  j["fleet"]["pools"][0]["scheduler"] = "vllm_v0";
  j["fleet"]["pools"][0].erase("scheduler_options");
  r = RunFleetsim("validate " + ShellQuote(dir.Write("v0.json", j.dump())));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("budget 131072 tokens per iteration"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("256"), std::string::npos) << r.output;
}

TEST(RunOutputs, HelpAndReadmeAgreeOnTheDefaultOutputFolder) {
  CommandResult r = RunFleetsim("run --help");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string phrase = "out/<scenario file name without .json>";
  EXPECT_NE(r.output.find(phrase), std::string::npos) << r.output;
  std::ifstream in(std::string(FLEETSIM_SOURCE_DIR) + "/README.md");
  std::string readme((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(readme.find(phrase), std::string::npos);
}


// DeepSeek-V3 speculating with its own multi-token-prediction module: the
// summary names the method, and one token guessed at 85% acceptance
// shortens the TPOT of a TP8 H200 replica (about 1.85 tokens a step).
TEST(RunOutputs, DeepSeekSpeculatesWithItsMtpModule) {
  ScratchDir dir;
  json j = {{"name", "mtp"},
            {"seed", 1},
            {"model", "DeepSeek-V3"},
            {"duration_s", 60},
            {"fleet", {{"pools", {{{"name", "tp8"}, {"gpu", "H200"}, {"tp", 8}, {"engine", "sglang"}}}}}},
            {"traffic", {{"generator", {{"concurrency", 8}, {"prompt_tokens", 1024}, {"output_tokens", 256}}}}}};
  CommandResult plain = RunFleetsim("run " + ShellQuote(dir.Write("plain.json", j.dump())) + " --out " +
                                    ShellQuote(dir.File("plain")) + " --quiet");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  j["fleet"]["pools"][0]["speculative"] = {{"method", "mtp"}, {"num_speculative_tokens", 1}, {"acceptance", 0.85}};
  CommandResult mtp = RunFleetsim("run " + ShellQuote(dir.Write("mtp.json", j.dump())) + " --out " +
                                  ShellQuote(dir.File("mtp")) + " --quiet");
  ASSERT_EQ(mtp.exit_code, 0) << mtp.output;
  const json a = ReadJson(dir.File("plain/summary.json")), b = ReadJson(dir.File("mtp/summary.json"));
  EXPECT_EQ(b["fleet"]["pools"][0]["speculative"], "mtp");
  const double tpot_plain = a["latency_ms"]["tpot"]["mean"], tpot_mtp = b["latency_ms"]["tpot"]["mean"];
  EXPECT_LT(tpot_mtp, 0.85 * tpot_plain);
  EXPECT_GT(tpot_mtp, tpot_plain / 1.85);
}


// The bundled DeepSeek-V3 scenario end to end through run and report: the
// report's fleet table gives the decode pool's expert and data-parallel
// degrees, without which its 32 GPUs at tp 1 would not add up.
TEST(RunOutputs, DeepSeekRunReportShowsExpertParallelism) {
  ScratchDir dir;
  const std::string scenario = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/deepseek-v3-h200-disagg.json";
  CommandResult r = RunFleetsim("run " + ShellQuote(scenario) + " --out " + ShellQuote(dir.File("ds")) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = RunFleetsim("report " + ShellQuote(dir.File("ds")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir.File("ds/report.md"));
  const std::string md((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(md.find("| Pool | Model | GPU | Replicas | TP | PP | EP | DP (attention) | GPUs |"), std::string::npos) << md;
  EXPECT_NE(md.find("| decode-ep32 | DeepSeek-V3 | H200 | 1 | 1 | 1 | 32 | 32 | 32 |"), std::string::npos) << md;
}

}  // namespace
}  // namespace fleetsim
