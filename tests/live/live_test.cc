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

// A scenario run live in process on the CPU backend, with what its
// requests' ends said.
struct LiveOutcome {
  RunReport report;
  std::map<uint64_t, int> ends;  // request id -> times it ended
  bool lengths_ok = true;        // completed with the length asked for
  bool order_ok = true;          // arrival <= first token <= finish
  int64_t completed = 0, failed = 0;
  std::vector<live::ReplicaLiveStats> stats;
};

void RunLive(const json& scenario, uint64_t seed, LiveOutcome* out) {
  ScratchDir dir;
  const std::string path = dir.Write("s.json", scenario.dump());
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
  RunOptions ro;
  ro.seed = seed;
  ro.execution = &mode;
  ro.on_request = [out](const RequestRecord& r) {
    ++out->ends[r.id];
    if (r.status == RequestStatus::kFailed) ++out->failed;
    if (r.status != RequestStatus::kCompleted) return;
    ++out->completed;
    if (r.generated_tokens != r.output_tokens) out->lengths_ok = false;
    if (!(r.arrival <= r.first_token && r.first_token <= r.finish)) out->order_ok = false;
  };
  s = run->Run(MetricsOptions{}, ro, nullptr, &out->report);
  ASSERT_TRUE(s.ok()) << s.message();
  out->stats = mode.Stats();
}

// All `n` requests arrived and completed, each ended exactly once, with the
// length it asked for, its times in order.
void ExpectAllCompletedOnce(const LiveOutcome& o, int64_t n) {
  EXPECT_EQ(o.report.summary.arrived, n);
  EXPECT_EQ(o.report.summary.completed, n);
  EXPECT_EQ(static_cast<int64_t>(o.ends.size()), n);
  for (const auto& [id, times] : o.ends) EXPECT_EQ(times, 1) << "request " << id;
  EXPECT_TRUE(o.lengths_ok);
  EXPECT_TRUE(o.order_ok);
}

TEST(Live, EveryRequestEndsOnceWithTheLengthItAskedFor) {
  LiveOutcome o;
  ASSERT_NO_FATAL_FAILURE(RunLive(SmallScenario(), 3, &o));
  ExpectAllCompletedOnce(o, 40);
  const Summary& sum = o.report.summary;
  EXPECT_EQ(sum.completed + sum.rejected + sum.failed + sum.unfinished, sum.arrived);
  ASSERT_EQ(o.stats.size(), 1u);
  EXPECT_GT(o.stats[0].worker.steps, 0);
  EXPECT_GT(o.stats[0].worker.busy_s, 0);
  // Live time is wall time: the run lasted at least its arrivals' span.
  EXPECT_GT(sum.simulated_s, 1.0);
}

// A tensor-parallel replica: two ranks, each a CPU backend with half the
// heads and MLP columns, meeting in ring all-reduces. Every request ends
// once with its length (both builds: the sanitizer sees the ranks' threads
// and the ring), the rank times its collectives, and the worker shuts down.
TEST(Live, TensorParallelReplicaConservesEveryRequest) {
  json j = SmallScenario();
  j["fleet"]["pools"][0]["tp"] = 2;
  j["traffic"]["max_requests"] = 20;
  LiveOutcome o;
  ASSERT_NO_FATAL_FAILURE(RunLive(j, 3, &o));
  ExpectAllCompletedOnce(o, 20);
  ASSERT_EQ(o.stats.size(), 1u);
  EXPECT_EQ(o.stats[0].tp, 2);
  EXPECT_GT(o.stats[0].worker.steps, 0);
  EXPECT_GT(o.stats[0].worker.measured.collective, 0);
}

// The bundled drill (scenarios/live-cpu-drill.json) in process: replica 0
// hangs at 3 s, health checks remove it, requests without a token are
// retried on replica 1. Every request ends exactly once, the failure is
// noticed, and the run ends (its hung worker is reset, not waited for).
// The pool's device is swapped for a catalogue one (live mode runs the
// kernels; only the simulation would need cpu-host's calibration), and the
// load cut (shorter outputs, 40 requests at 10 a second), which the sanitizer build's
// slower kernels still keep up with.
TEST(Live, FailureDrillConservesEveryRequest) {
  std::ifstream f(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/live-cpu-drill.json");
  json j = json::parse(f);
  j["fleet"]["pools"][0]["gpu"] = "H100-SXM";
  j["traffic"]["generator"]["output_tokens"]["value"] = 40;
  j["traffic"]["max_requests"] = 40;
  j["traffic"]["generator"]["rate_per_s"] = 10;  // replica 0's arrivals 0.2 s apart: one at 2.0 s
  j["failures"][0]["at_s"] = 2.05;
  LiveOutcome o;
  ASSERT_NO_FATAL_FAILURE(RunLive(j, 5, &o));
  const Summary& sum = o.report.summary;
  EXPECT_EQ(sum.arrived, 40);
  EXPECT_EQ(sum.completed + sum.rejected + sum.failed + sum.unfinished, sum.arrived);
  EXPECT_EQ(sum.unfinished, 0);
  EXPECT_EQ(sum.completed, o.completed);
  EXPECT_EQ(sum.failed, o.failed);
  EXPECT_EQ(o.ends.size(), 40u);
  for (const auto& [id, n] : o.ends) EXPECT_EQ(n, 1) << "request " << id;
  EXPECT_TRUE(o.lengths_ok);
  EXPECT_TRUE(o.order_ok);
  ASSERT_TRUE(sum.reliability.has_value());
  EXPECT_EQ(sum.reliability->replica_failures, 1);
  EXPECT_EQ(sum.reliability->detected, 1);
  // Replica 1 went on working after replica 0 hung.
  ASSERT_EQ(o.stats.size(), 2u);
  EXPECT_GT(o.stats[1].worker.steps, 0);
}

#ifndef FLEETSIM_LIVE_NO_TIMING
// The same drill through the CLI, against its simulation: the failed and
// retried counts within 2 of the simulated drill's (release build: how many
// requests the replica holds when it hangs is timing; the drill's constant
// arrivals, round robin and short requests keep that count away from its
// edges). The simulation compared is the one with the kernels at the speed
// they ran (diff.json's kernels_as_run), where the run measured it: a
// machine that runs the kernels twice as slowly as its calibration keeps
// each request twice as long, and the replica holds more when it hangs (CI
// once saw live fail 4 where the prediction failed 1, with 160 tokens a
// request).
TEST(Live, FailureDrillCountsMatchTheSimulation) {
  ScratchDir dir;
  const std::string scenario = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/live-cpu-drill.json";
  clitest::CommandResult r =
      RunFleetsim("live " + ShellQuote(scenario) + " --quiet --out " + ShellQuote(dir.File("out")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(dir.File("out/diff.json"));
  const json d = json::parse(in);
  const json& live = d["requests"]["live"];
  const json& sim = d.contains("kernels_as_run") ? d["kernels_as_run"]["requests"] : d["requests"]["sim"];
  for (const json* side : {&live, &sim, &d["requests"]["sim"]}) {
    EXPECT_EQ((*side)["arrived"].get<int64_t>(), 60);
    EXPECT_EQ((*side)["completed"].get<int64_t>() + (*side)["rejected"].get<int64_t>() +
                  (*side)["failed"].get<int64_t>() + (*side)["unfinished"].get<int64_t>(),
              (*side)["arrived"].get<int64_t>());
  }
  EXPECT_LE(std::abs(live["failed"].get<int64_t>() - sim["failed"].get<int64_t>()), 2) << d["requests"].dump() << " compared with " << sim.dump();
  EXPECT_LE(std::abs(live["retried"].get<int64_t>() - sim["retried"].get<int64_t>()), 2) << d["requests"].dump() << " compared with " << sim.dump();
  // Something was retried: the drill hit requests in flight.
  EXPECT_GT(live["retried"].get<int64_t>() + live["failed"].get<int64_t>(), 0) << d["requests"].dump();
  std::ifstream ls(dir.File("out/summary.json"));
  const json live_summary = json::parse(ls);
  EXPECT_EQ(live_summary["failures"]["detected"], 1);
  std::printf("drill: failed live %lld sim %lld, retried live %lld sim %lld\n",
              static_cast<long long>(live["failed"].get<int64_t>()), static_cast<long long>(sim["failed"].get<int64_t>()),
              static_cast<long long>(live["retried"].get<int64_t>()),
              static_cast<long long>(sim["retried"].get<int64_t>()));
}
#endif

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
  j["fleet"]["pools"][0]["pp"] = 2;
  const std::string pp = dir.Write("pp.json", j.dump());
  r = RunFleetsim("live " + ShellQuote(pp) + " --no-diff --out " + ShellQuote(dir.File("o")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("fleet.pools[0]: live mode: pp, ep and dp must be 1"), std::string::npos) << r.output;
  r = RunFleetsim("live " + ShellQuote(pp) + " --backend tpu");
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
// kernels' own speed drifts between the calibration and the run a minute
// later (by 1.5x in one run of 2026-12-07: predicted P50s -35% and -52%,
// priced at the speed the kernels ran 0% and +7%), so the test holds the
// as-run P50s to 10% and the predicted ones to 10% plus what the drift
// explains.
TEST(Live, BundledSmokeDiffIsClose) {
  ScratchDir dir;
  const std::string scenario = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/live-cpu-tiny.json";
  // Priced at the speed the kernels ran, the simulation's P50 TTFT and TPOT
  // are within 10% of the live run's (docs/live.md: 8 of 9 runs here).
  // Within one run the machine's speed also varies in ways one average
  // cannot follow (a TPOT P50 of -15.8% once), so a miss is run once more:
  // a model that is wrong misses twice.
  auto as_run_within = [](const json& diff) {
    for (const char* m : {"ttft", "tpot"}) {
      const json& rel = diff["kernels_as_run"]["metrics"][m]["p50"]["rel"];
      if (!rel.is_number() || std::abs(rel.get<double>()) > 0.10) return false;
    }
    return true;
  };
  clitest::CommandResult r;
  for (int attempt = 1;; ++attempt) {
    fs::remove_all(dir.File("out"));
    r = RunFleetsim("live " + ShellQuote(scenario) + " --out " + ShellQuote(dir.File("out")));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(dir.File("out/diff.json"));
    const json d = json::parse(in);
    ASSERT_TRUE(d["kernels_as_run"].is_object()) << d.dump();
    const bool close = as_run_within(d);
    std::printf("attempt %d: kernels as run, P50 TTFT %+.1f%%, TPOT %+.1f%%\n", attempt,
                100 * d["kernels_as_run"]["metrics"]["ttft"]["p50"]["rel"].get<double>(),
                100 * d["kernels_as_run"]["metrics"]["tpot"]["p50"]["rel"].get<double>());
    if (close) break;
    ASSERT_LT(attempt, 2) << "as-run P50s beyond 10% in two runs\n" << d["kernels_as_run"].dump();
  }
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
  std::printf("diff within targets: %s\n", d["within_targets"].get<bool>() ? "yes" : "no");
  // Simulated again with the kernels at the speed they ran (the ratio
  // live.json records): the calibration's drift is gone, what is left is
  // the rest of the model's error (scheduling, batching, queueing, the
  // executor's terms), held to 10%.
  const json& as_run = d["kernels_as_run"];
  ASSERT_TRUE(as_run.is_object()) << d.dump();
  const double scale = as_run["kernel_time_scale"].get<double>();
  EXPECT_GT(scale, 0.3);
  EXPECT_LT(scale, 3.0);
  for (const char* m : {"ttft", "tpot"}) {
    const json& p50 = as_run["metrics"][m]["p50"];
    ASSERT_TRUE(p50["rel"].is_number()) << m;
    EXPECT_LE(std::abs(p50["rel"].get<double>()), 0.10) << m << "\n" << as_run.dump();
  }
  // The prediction (the profile calibrated a few seconds before the run)
  // misses by that much plus what the kernels' drift between calibration
  // and run explains. A drift of d = |1/scale - 1| moves the P50s by up to
  // about twice d, since slower steps also batch more: measured here, runs
  // at 0.90-1.13x missed by up to 1.7x their drift beyond the as-run error,
  // and a CI run at 0.746x (d = 0.34) missed TPOT P50 by +66.6% where the
  // as-run simulation missed by +5.2%. A fixed bound failed that run for
  // the machine's sake; this one still fails a model that is wrong when
  // the machine held still (attention priced 6-7x too fast: -45%).
  const double drift = std::abs(1.0 / scale - 1.0);
  for (const char* m : {"ttft", "tpot"}) {
    const json& p50 = d["metrics"][m]["p50"];
    ASSERT_TRUE(p50["rel"].is_number()) << m;
    EXPECT_LE(std::abs(p50["rel"].get<double>()), 0.10 + 2.5 * drift)
        << m << " (kernels ran at " << scale << "x the profile)\n" << r.output;
    EXPECT_EQ(p50["target"].get<double>(), 0.05);
  }
  std::printf("kernels ran at %.3fx the profile; priced so, within targets: %s\n", scale,
              as_run["within_targets"].get<bool>() ? "yes" : "no");
  EXPECT_TRUE(fs::exists(dir.File("out/sim_kernels_as_run/summary.json")));
  EXPECT_NE(md_text.find("## With the kernels at the speed they ran"), std::string::npos) << md_text;
  json live_json;
  {
    std::ifstream lj(dir.File("out/live.json"));
    live_json = json::parse(lj);
  }
  EXPECT_DOUBLE_EQ(live_json["kernel_time_scale"].get<double>(), scale);
  // The drift is the machine's, the same for every kind of op; a kind the
  // profile prices wrong stands out from it (attention substituted by the
  // roofline ran 6-7x slower than priced while the GEMMs matched).
  const json& per_step = live_json["replicas"][0]["per_step_ms"];
  for (const char* kind : {"gemm", "attention_prefill", "attention_decode", "elementwise"}) {
    const double measured = per_step[kind]["measured"].get<double>();
    const double predicted = per_step[kind]["predicted"].get<double>();
    ASSERT_GT(predicted, 0) << kind;
    EXPECT_NEAR(std::log(measured / predicted / scale), 0.0, std::log(2.0))
        << kind << ": measured " << measured << " ms per step, priced " << predicted << ", kernels overall at "
        << scale << "x";
  }
  // The live run's outputs are observations fleetsim fit replays.
  EXPECT_TRUE(fs::exists(dir.File("out/observed.csv")));
  r = RunFleetsim("fit " + ShellQuote(dir.File("out")) + " --quiet --out " + ShellQuote(dir.File("fit/engine.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream fitted(dir.File("fit/engine.json"));
  const json e = json::parse(fitted);
  EXPECT_EQ(e["format"], "fleetsim-engine-profile");
  EXPECT_EQ(e["name"], "fleetsim_live");
  // null (ops not timed one by one: cuda) replays as priced.
  json untimed = live_json;
  untimed["kernel_time_scale"] = nullptr;
  std::ofstream(dir.File("out/live.json"), std::ios::trunc) << untimed.dump();
  r = RunFleetsim("fit " + ShellQuote(dir.File("out")) + " --out " + ShellQuote(dir.File("fit/untimed.json")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("no kernel_time_scale"), std::string::npos) << r.output;
  // A live.json without its kernels' speed, or with a nonsense one, is
  // refused naming the key.
  for (const json& bad : {json(), json(-1.0), json("fast")}) {
    json broken = live_json;
    if (bad.is_null()) broken.erase("kernel_time_scale"); else broken["kernel_time_scale"] = bad;
    std::ofstream(dir.File("out/live.json"), std::ios::trunc) << broken.dump();
    r = RunFleetsim("fit " + ShellQuote(dir.File("out")) + " --quiet --out " + ShellQuote(dir.File("fit/bad.json")));
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("live.json: kernel_time_scale: expected"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir.File("fit/bad.json")));
}
#endif

}  // namespace
}  // namespace fleetsim
