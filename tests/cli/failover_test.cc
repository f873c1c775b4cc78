// The bundled N+1 scenario (scenarios/failover-n-plus-1.json) run through
// the fleetsim executable, as docs/reliability.md tells it: node 0 hangs at
// 300 s, health checks remove it at 390 s, and six replicas plus a spare
// hold the SLO through the failure while six alone do not. Also what the
// outputs show of a failure (timeseries.csv's state column, the trace's
// lifecycle events) and that a seed fixes the summary to the byte.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_test_util.h"

namespace fleetsim {
namespace {

using clitest::CommandResult;
using clitest::RunFleetsim;
using clitest::ScratchDir;
using clitest::ShellQuote;
using nlohmann::json;

const std::string kScenario = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/failover-n-plus-1.json";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs the scenario with `args` (overrides, --trace) into `dir`/`out`.
json RunScenario(const ScratchDir& dir, const std::string& out, const std::string& args = "") {
  const CommandResult r =
      RunFleetsim("run " + ShellQuote(kScenario) + " --out " + ShellQuote(dir.File(out)) + " --quiet " + args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json::parse(ReadText(dir.File(out + "/summary.json")));
}

// What both fleets share: one node failure, noticed 90 s after it (Ray
// Serve's 10 s / 30 s / 3 from a replica ready since 0).
void ExpectOneNodeFailureNoticedIn90s(const json& s) {
  ASSERT_TRUE(s.contains("failures")) << s.dump(2);
  EXPECT_EQ(s["failures"]["events"], 1);
  EXPECT_EQ(s["failures"]["replica_failures"], 1);
  EXPECT_EQ(s["failures"]["by_cause"]["drill"], 1);
  EXPECT_EQ(s["failures"]["detected"], 1);
  EXPECT_EQ(s["failures"]["detection_delay_s_mean"].get<double>(), 90.0);
  // The replacement is back after provisioning (600 s) and a cold start.
  EXPECT_GT(s["failures"]["replica_downtime_s"].get<double>(), 90.0 + 600.0);
}

TEST(FailoverNPlus1, SixAndASpareHoldTheSlo) {
  ScratchDir dir;
  const json s = RunScenario(dir, "out");
  ExpectOneNodeFailureNoticedIn90s(s);
  EXPECT_GE(s["slo"]["attainment"].get<double>(), 0.95) << s["slo"].dump();
  EXPECT_EQ(s["availability"]["capacity"].get<double>(), 1.0);
  EXPECT_GT(s["failures"]["requests_retried"].get<int64_t>(), 0);

  // timeseries.csv: replica 0 ready, then "failed" from the hang (300 s)
  // until the health checks notice it (390 s), then provisioning.
  std::istringstream csv(ReadText(dir.File("out/timeseries.csv")));
  std::string line;
  ASSERT_TRUE(std::getline(csv, line));
  EXPECT_NE(line.find(",state,usd_per_hour"), std::string::npos) << line;
  int failed_rows = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream row(line);
    for (std::string cell; std::getline(row, cell, ',');) f.push_back(cell);
    ASSERT_EQ(f.size(), 9u) << line;
    const double t = std::stod(f[0]);
    const std::string& state = f[7];
    if (f[1] != "0") {
      EXPECT_EQ(state, "ready") << line;
      continue;
    }
    if (t < 300) {
      EXPECT_EQ(state, "ready") << line;
    }
    if (t > 300 && t < 390) {
      EXPECT_EQ(state, "failed") << line;
      ++failed_rows;
    }
    if (t > 390 && t < 990) {
      EXPECT_EQ(state, "provisioning") << line;
    }
    if (state == "failed") {
      EXPECT_TRUE(t >= 300 && t <= 390) << line;
    }
  }
  EXPECT_EQ(failed_rows, 89);  // 301 .. 389 s
}

TEST(FailoverNPlus1, SixAloneMissTheSlo) {
  ScratchDir dir;
  const json s = RunScenario(dir, "out", "--set " + ShellQuote("fleet.pools[0].spares=0"));
  ExpectOneNodeFailureNoticedIn90s(s);
  EXPECT_LT(s["slo"]["attainment"].get<double>(), 0.95) << s["slo"].dump();
  const double capacity = s["availability"]["capacity"].get<double>();
  EXPECT_LT(capacity, 1.0);
  EXPECT_GT(capacity, 0.0);
  // The failure windows are where it is lost.
  EXPECT_LT(s["slo"]["attainment_in_failure_windows"].get<double>(),
            s["slo"]["attainment_outside_failure_windows"].get<double>());
}

TEST(FailoverNPlus1, TraceMarksTheFailureOnTheReplicasTrack) {
  // A trickle of traffic keeps the trace small; the drill is the same.
  ScratchDir dir;
  RunScenario(dir, "out",
      "--trace --set " + ShellQuote("traffic.generator.rate_per_s=0.1") + " --set " +
          ShellQuote("traffic.max_arrival_s=400"));
  const json trace = json::parse(ReadText(dir.File("out/trace.json")));
  const json& events = trace.is_object() ? trace["traceEvents"] : trace;
  ASSERT_TRUE(events.is_array());
  std::vector<std::pair<std::string, double>> lifecycle;
  for (const json& e : events)
    if (e.value("cat", "") == "lifecycle") {
      EXPECT_EQ(e["tid"], 0) << e.dump();  // only node 0's replica changed
      lifecycle.emplace_back(e["name"].get<std::string>(), e["ts"].get<double>());
    }
  const std::vector<std::pair<std::string, double>> want = {
      {"failure", 300e6}, {"failed", 390e6}, {"provisioning", 390e6}};
  EXPECT_EQ(lifecycle, want);
}

TEST(FailoverNPlus1, SameSeedSameSummaryToTheByte) {
  // Cut after the failure is noticed and its requests retried.
  ScratchDir dir;
  const std::string cut = "--set " + ShellQuote("traffic.max_arrival_s=400");
  const json a = RunScenario(dir, "a", cut);
  RunScenario(dir, "b", cut);
  EXPECT_GT(a["failures"]["retries"].get<int64_t>(), 0);
  const std::string sa = ReadText(dir.File("a/summary.json")), sb = ReadText(dir.File("b/summary.json"));
  EXPECT_FALSE(sa.empty());
  EXPECT_EQ(sa, sb);
}

}  // namespace
}  // namespace fleetsim
