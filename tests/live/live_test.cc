// Live mode on the CPU backend: a scenario's plan run for real through the
// same cluster code as the simulation. Conservation (every request ends in
// exactly one state, with its output length as asked), clean shutdown on
// SIGINT with the output folder untouched, refusals of what cannot run
// live, and (release build) the diff against the simulation within its
// targets on the bundled steady-load scenario.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/catalog.h"
#include "sim/live/live_mode.h"
#include "sim/runner/run.h"
#include "sim/scenario/parse.h"
#include "tests/cli/cli_test_util.h"

namespace fleetsim {
namespace {

using clitest::RunCommand;
using clitest::RunFleetsim;
using clitest::ScratchDir;
using clitest::ShellQuote;
using nlohmann::json;
namespace fs = std::filesystem;

// A small steady load on the tiny model: one replica, 40 requests over
// about 4 s. The pool's GPU is a catalogue one (its roofline is not used:
// live mode runs the kernels).
json SmallScenario() {
  return json::parse(R"({
    "name": "live-small", "seed": 3, "model": "tiny",
    "fleet": { "pools": [ { "name": "cpu", "gpu": "H100-SXM", "replicas": 1, "engine": "fleetsim_live",
                            "max_num_seqs": 16, "max_num_batched_tokens": 256 } ] },
    "traffic": { "generator": { "arrival": "poisson", "rate_per_s": 10,
                                "prompt_tokens": { "dist": "uniform", "min": 8, "max": 160 },
                                "output_tokens": { "dist": "uniform", "min": 2, "max": 24 } },
                 "max_requests": 40 }
  })");
}

TEST(Live, EveryRequestEndsOnceWithTheLengthItAskedFor) {
  ScratchDir dir;
  const std::string path = dir.Write("s.json", SmallScenario().dump());
  ScenarioSpec spec;
  ASSERT_TRUE(LoadScenarioFile(path, &spec).ok());
  Catalog catalog;
  ASSERT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
  Policies policies;
  RegisterBuiltins(&policies);
  std::unique_ptr<ScenarioRun> run;
  Status s = ScenarioRun::Build(spec, catalog, policies, &run);
  ASSERT_TRUE(s.ok()) << s.message();
  live::LiveMode mode(live::LiveOptions{});
  s = mode.Prepare(*run);
  ASSERT_TRUE(s.ok()) << s.message();
  std::map<uint64_t, int> ends;
  bool lengths_ok = true;
  RunOptions ro;
  ro.seed = 3;
  ro.execution = &mode;
  ro.on_request = [&](const RequestRecord& r) {
    ++ends[r.id];
    if (r.status == RequestStatus::kCompleted && r.generated_tokens != r.output_tokens) lengths_ok = false;
    if (r.status == RequestStatus::kCompleted && !(r.arrival <= r.first_token && r.first_token <= r.finish))
      lengths_ok = false;
  };
  RunReport report;
  s = run->Run(MetricsOptions{}, ro, nullptr, &report);
  ASSERT_TRUE(s.ok()) << s.message();
  const Summary& sum = report.summary;
  EXPECT_EQ(sum.arrived, 40);
  EXPECT_EQ(sum.completed + sum.rejected + sum.failed + sum.unfinished, sum.arrived);
  EXPECT_EQ(sum.completed, 40);
  EXPECT_EQ(ends.size(), 40u);
  for (const auto& [id, n] : ends) EXPECT_EQ(n, 1) << "request " << id;
  EXPECT_TRUE(lengths_ok);
  const std::vector<live::ReplicaLiveStats> st = mode.Stats();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_GT(st[0].worker.steps, 0);
  EXPECT_GT(st[0].worker.busy_s, 0);
  // Live time is wall time: the run lasted at least its arrivals' span.
  EXPECT_GT(report.summary.simulated_s, 1.0);
}

TEST(Live, WhatCannotRunLiveIsRefusedNamingThePool) {
  ScratchDir dir;
  json j = SmallScenario();
  j["model"] = "Mixtral-8x7B";
  j["fleet"]["pools"][0]["gpu"] = "H200";  // where it fits at tp 1
  const std::string moe = dir.Write("moe.json", j.dump());
  clitest::CommandResult r = RunFleetsim("live " + ShellQuote(moe) + " --no-diff --out " + ShellQuote(dir.File("o")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("fleet.pools[0]: live mode: model Mixtral-8x7B: mixture-of-experts"), std::string::npos)
      << r.output;
  j = SmallScenario();
  j["fleet"]["pools"][0]["tp"] = 2;
  const std::string tp = dir.Write("tp.json", j.dump());
  r = RunFleetsim("live " + ShellQuote(tp) + " --no-diff --out " + ShellQuote(dir.File("o")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("fleet.pools[0]: live mode: tp, pp, ep and dp must be 1"), std::string::npos) << r.output;
  r = RunFleetsim("live " + ShellQuote(tp) + " --backend tpu");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // fit takes a folder only when it is a live run's.
  fs::create_directories(dir.File("not-live"));
  r = RunFleetsim("fit " + ShellQuote(dir.File("not-live")) + " --out " + ShellQuote(dir.File("f.json")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("a folder given to fit must be a fleetsim live output folder"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir.File("o")));
}

TEST(Live, SigintStopsCleanlyAndLeavesTheOutputFolderAsItWas) {
  ScratchDir dir;
  json j = SmallScenario();
  j["traffic"]["max_requests"] = 100000;  // far longer than the test waits
  const std::string s = dir.Write("s.json", j.dump());
  fs::create_directories(dir.File("out"));
  dir.Write("out/summary.json", "previous run\n");
  dir.Write("out/.fleetsim-output", "");
  clitest::CommandResult r = RunCommand("timeout --preserve-status -s INT 3 " + clitest::FleetsimBinary() + " live " +
                                        ShellQuote(s) + " --no-diff --quiet --out " + ShellQuote(dir.File("out")));
  EXPECT_EQ(r.exit_code, 130) << r.output;
  EXPECT_NE(r.output.find("interrupted"), std::string::npos) << r.output;
  std::ifstream in(dir.File("out/summary.json"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, "previous run\n");
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 2);  // s.json and out: no temporary folder left
}

#ifndef FLEETSIM_LIVE_NO_TIMING
// The bundled smoke scenario end to end: calibrate this machine, run live,
// simulate, diff, fit. diff.json says whether the targets (P50 TTFT and
// TPOT within 5%, P99 within 10%) were met; on a shared 2-core machine the
// kernels' own speed drifts by up to 30% between the calibration and the
// run a minute later (docs/live.md: P50 errors from -19% to +34% over runs
// of the same model), so the test holds the P50s to 50%, which catches a
// gross error of the model (attention priced 6-7x too fast, as before it
// was priced as measured) and not the machine's drift.
TEST(Live, BundledSmokeDiffIsClose) {
  ScratchDir dir;
  const std::string scenario = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/live-cpu-tiny.json";
  clitest::CommandResult r = RunFleetsim("live " + ShellQuote(scenario) + " --out " + ShellQuote(dir.File("out")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"summary.json", "requests.csv", "live.json", "diff.json", "diff.md", "profile.json",
                        "sim/summary.json", "diff_ttft.svg", "diff_tpot.svg"})
    EXPECT_TRUE(fs::exists(dir.File(std::string("out/") + f))) << f;
  std::ifstream md(dir.File("out/diff.md"));
  const std::string md_text((std::istreambuf_iterator<char>(md)), {});
  EXPECT_NE(md_text.find("| ttft | p50 |"), std::string::npos) << md_text;
  EXPECT_NE(md_text.find("![TTFT, simulated and live](diff_ttft.svg)"), std::string::npos) << md_text;
  std::ifstream in(dir.File("out/diff.json"));
  const json d = json::parse(in);
  EXPECT_EQ(d["requests"]["live"]["completed"], d["requests"]["live"]["arrived"]);
  EXPECT_EQ(d["requests"]["sim"]["completed"], d["requests"]["sim"]["arrived"]);
  ASSERT_TRUE(d["within_targets"].is_boolean());
  for (const char* m : {"ttft", "tpot"}) {
    const json& p50 = d["metrics"][m]["p50"];
    ASSERT_TRUE(p50["rel"].is_number()) << m;
    EXPECT_LE(std::abs(p50["rel"].get<double>()), 0.50) << m << "\n" << r.output;
    EXPECT_EQ(p50["target"].get<double>(), 0.05);
  }
  std::printf("diff within targets: %s\n", d["within_targets"].get<bool>() ? "yes" : "no");
  // The live run's outputs are observations fleetsim fit replays.
  EXPECT_TRUE(fs::exists(dir.File("out/observed.csv")));
  r = RunFleetsim("fit " + ShellQuote(dir.File("out")) + " --quiet --out " + ShellQuote(dir.File("fit/engine.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream fitted(dir.File("fit/engine.json"));
  const json e = json::parse(fitted);
  EXPECT_EQ(e["format"], "fleetsim-engine-profile");
  EXPECT_EQ(e["name"], "fleetsim_live");
}
#endif

}  // namespace
}  // namespace fleetsim
