// `fleetsim plan` and `fleetsim report` end to end, as child processes: the
// outputs of docs/plan.md, bad plans (exit 2, one line naming the file, no
// output folder), byte-identical outputs for any -j, and re-rendering.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tests/cli/cli_test_util.h"

namespace fleetsim {
namespace {

using clitest::CommandResult;
using clitest::CountLines;
using clitest::RunFleetsim;
using clitest::ScratchDir;
using clitest::ShellQuote;
using nlohmann::json;
namespace fs = std::filesystem;

const std::string kSmallPlan = FLEETSIM_SOURCE_DIR "/tests/plan/data/small_plan.json";

std::string ReadFile(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Every regular file under `dir`, by path relative to it, with its bytes.
std::map<std::string, std::string> ReadTree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).string()] = ReadFile(e.path());
  return files;
}

CommandResult Plan(const std::string& plan, const std::string& out, int jobs) {
  return RunFleetsim("plan " + ShellQuote(plan) + " --out " + ShellQuote(out) + " -j " + std::to_string(jobs) +
                     " --quiet");
}

// A plan like small_plan.json, self-contained (generated lengths), for
// editing into bad plans.
json TinyPlan() {
  return json::parse(R"({
    "format": "fleetsim-plan", "version": 1, "name": "cli-tiny",
    "scenario": {
      "name": "cli-tiny-base", "seed": 7, "model": "Llama-3.1-8B",
      "fleet": { "router": "least_outstanding",
                 "pools": [{ "name": "pool", "gpu": "H100-SXM", "replicas": 1, "tp": 1 }] },
      "traffic": { "generator": { "arrival": "poisson", "rate_per_s": 20, "prompt_tokens": 200, "output_tokens": 50 },
                   "max_requests": 200 },
      "slo": { "ttft_ms": 1000, "tpot_ms": 50 }
    },
    "dimensions": [
      { "key": "fleet.pools[0].gpu", "values": ["H100-SXM", "L40S"] },
      { "key": "fleet.pools[0].replicas", "search": "bisect", "min": 1, "max": 4 }
    ],
    "targets": { "ttft_ms": { "p99": 1000 }, "tpot_ms": { "p99": 50 } },
    "load": { "rate_scales": [0.5, 1, 2], "max_rate_scale": 3 },
    "replications": 2, "seed": 5, "shortlist": 2
  })");
}

class PlanCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(fs::exists(clitest::FleetsimBinary())) << clitest::FleetsimBinary();
  }
};

TEST_F(PlanCliTest, WritesEveryOutput) {
  ScratchDir tmp;
  const std::string out = tmp.File("out");
  const CommandResult r = RunFleetsim("plan " + ShellQuote(kSmallPlan) + " --out " + ShellQuote(out) + " -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("recommend"), std::string::npos) << r.output;
  for (const char* f : {"report.html", "report.md", "plan.json", "curves.csv", "frontier.csv", "chosen/summary.json",
                        "chosen/requests.csv", "chosen/timeseries.csv", "chosen/itl.csv", "chosen/report.html"}) {
    const fs::path p = fs::path(out) / f;
    ASSERT_TRUE(fs::is_regular_file(p)) << f;
    EXPECT_GT(fs::file_size(p), 0u) << f;
  }
  // Nothing else is left beside the output folder (no temporary folder, no lock).
  std::vector<std::string> beside;
  for (const auto& e : fs::directory_iterator(tmp.path())) beside.push_back(e.path().filename().string());
  EXPECT_EQ(beside, std::vector<std::string>{"out"});

  const json plan = json::parse(ReadFile(fs::path(out) / "plan.json"));
  EXPECT_EQ(plan["format"], "fleetsim-plan-result");
  EXPECT_EQ(plan["version"], 1);
  EXPECT_EQ(plan["plan"]["name"], "small-plan");
  EXPECT_EQ(plan["plan"]["replications"], 3);
  EXPECT_EQ(plan["families"].size(), 4u);
  ASSERT_TRUE(plan["chosen"].is_object());
  const std::string chosen = plan["chosen"]["config"];
  ASSERT_FALSE(plan["recommendations"].empty());
  EXPECT_EQ(plan["recommendations"][0]["config"], chosen);
  EXPECT_EQ(plan["counts"]["points"], plan["points"].size());

  // curves.csv: the documented header, one row per point and metric.
  const std::string curves = ReadFile(fs::path(out) / "curves.csv");
  EXPECT_EQ(curves.rfind("config,family,replicas,rate_scale,rate_per_s,metric,mean,half_width,lo,hi\n", 0), 0u);
  const size_t metrics = plan["points"][0]["metrics"].size();
  EXPECT_EQ(static_cast<size_t>(CountLines(curves)), 1 + plan["points"].size() * metrics);
  const std::string frontier = ReadFile(fs::path(out) / "frontier.csv");
  EXPECT_EQ(frontier.rfind("config,family,label,replicas,gpus,usd_per_hour,ttft_p99_mean,ttft_p99_half_width,"
                           "ttft_p99_hi,tpot_p99_mean,tpot_p99_half_width,tpot_p99_hi,meets_all\n",
                           0),
            0u)
      << frontier.substr(0, 200);
  EXPECT_EQ(static_cast<size_t>(CountLines(frontier)), 1 + plan["frontier"].size());

  // chosen/ is replication 0 of the chosen configuration at the stated load.
  const json summary = json::parse(ReadFile(fs::path(out) / "chosen/summary.json"));
  const json* point = nullptr;
  for (const json& p : plan["points"])
    if (p["config"] == chosen && p["rate_scale"] == 1) point = &p;
  ASSERT_NE(point, nullptr);
  EXPECT_TRUE((*point)["meets_all"].get<bool>());
  EXPECT_EQ(summary["latency_ms"]["ttft"]["p99"], (*point)["metrics"]["ttft_p99_ms"]["values"][0]);
  EXPECT_EQ(summary["latency_ms"]["tpot"]["p99"], (*point)["metrics"]["tpot_p99_ms"]["values"][0]);

  const std::string html = ReadFile(fs::path(out) / "report.html");
  EXPECT_NE(html.find(chosen), std::string::npos);
  const std::string md = ReadFile(fs::path(out) / "report.md");
  EXPECT_NE(md.find(chosen), std::string::npos);
}

TEST_F(PlanCliTest, SameBytesForAnyJobs) {
  ScratchDir tmp;
  const CommandResult a = Plan(kSmallPlan, tmp.File("j1"), 1);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(a.output, "");  // --quiet
  const CommandResult b = Plan(kSmallPlan, tmp.File("j2"), 2);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const auto t1 = ReadTree(tmp.File("j1"));
  const auto t2 = ReadTree(tmp.File("j2"));
  EXPECT_GE(t1.size(), 10u);
  ASSERT_EQ(t1.size(), t2.size());
  for (const auto& [name, bytes] : t1) {
    auto it = t2.find(name);
    ASSERT_NE(it, t2.end()) << name << " missing with -j 2";
    EXPECT_TRUE(bytes == it->second) << name << " differs between -j 1 and -j 2";
  }
}

TEST_F(PlanCliTest, ReportRerendersTheSameBytes) {
  ScratchDir tmp;
  const std::string out = tmp.File("out");
  const CommandResult r = Plan(kSmallPlan, out, 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto before = ReadTree(out);
  for (const std::string& dir : std::vector<std::string>{out, out + "/chosen"}) {
    SCOPED_TRACE(dir);
    fs::remove(dir + "/report.html");
    fs::remove(dir + "/report.md");
    const CommandResult rr = RunFleetsim("report " + ShellQuote(dir));
    ASSERT_EQ(rr.exit_code, 0) << rr.output;
  }
  const auto after = ReadTree(out);
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [name, bytes] : before) EXPECT_TRUE(after.at(name) == bytes) << name << " differs after report";
}

TEST_F(PlanCliTest, ReportWithoutOutputsFails) {
  ScratchDir tmp;
  fs::create_directories(tmp.File("empty"));
  tmp.Write("empty/notes.txt", "nothing here\n");
  CommandResult r = RunFleetsim("report " + ShellQuote(tmp.File("empty")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(tmp.File("empty")), std::string::npos) << r.output;
  EXPECT_EQ(CountLines(r.output), 1) << r.output;
  EXPECT_FALSE(fs::exists(tmp.File("empty/report.html")));
  r = RunFleetsim("report " + ShellQuote(tmp.File("no-such-folder")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

struct BadCliPlan {
  std::string name;
  std::string text;
  std::vector<std::string> expect;
};

TEST_F(PlanCliTest, BadPlanExitsTwoWithoutOutputs) {
  json unknown = TinyPlan();
  unknown["replicas"] = 3;
  json twobisect = TinyPlan();
  twobisect["dimensions"].push_back({{"key", "fleet.pools[0].tp"}, {"search", "bisect"}, {"min", 1}, {"max", 2}});
  json gpu = TinyPlan();
  gpu["dimensions"][0]["values"] = {"H100-SXM", "H999"};
  json scenario = TinyPlan();
  scenario["scenario"] = "missing-scenario.json";
  json noslo = TinyPlan();
  noslo["scenario"].erase("slo");
  noslo["targets"]["attainment"] = 0.9;
  const std::vector<BadCliPlan> cases = {
      {"unknown_key", unknown.dump(2), {"replicas", "unknown key"}},
      {"two_bisect", twobisect.dump(2), {"dimensions[2]", "bisected"}},
      {"unknown_gpu", gpu.dump(2), {"family 1", "H999"}},
      {"missing_scenario", scenario.dump(2), {"missing-scenario.json"}},
      {"attainment_without_slo", noslo.dump(2), {"targets.attainment"}},
      {"not_json", "{ \"format\": ", {}},
  };
  for (const BadCliPlan& c : cases) {
    SCOPED_TRACE(c.name);
    ScratchDir tmp;
    const std::string plan = tmp.Write("bad-plan.json", c.text);
    const CommandResult r = Plan(plan, tmp.File("out"), 2);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << r.output;
    EXPECT_EQ(r.output.rfind("fleetsim: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(plan), std::string::npos) << r.output;
    for (const std::string& e : c.expect) EXPECT_NE(r.output.find(e), std::string::npos) << e << " in " << r.output;
    EXPECT_FALSE(fs::exists(tmp.File("out")));
    // Nothing left beside the plan either (no temporary folder, no lock).
    std::vector<std::string> beside;
    for (const auto& e : fs::directory_iterator(tmp.path())) beside.push_back(e.path().filename().string());
    EXPECT_EQ(beside, std::vector<std::string>{"bad-plan.json"});
  }
}

TEST_F(PlanCliTest, MissingPlanFileExitsTwo) {
  ScratchDir tmp;
  const CommandResult r = Plan(tmp.File("nope.json"), tmp.File("out"), 1);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nope.json"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(tmp.File("out")));
}

TEST_F(PlanCliTest, FailedPlanLeavesAnEarlierOutputAlone) {
  ScratchDir tmp;
  const std::string out = tmp.File("out");
  ASSERT_EQ(Plan(kSmallPlan, out, 2).exit_code, 0);
  const auto before = ReadTree(out);
  json gpu = TinyPlan();
  gpu["dimensions"][0]["values"] = {"H999"};
  const std::string bad = tmp.Write("bad.json", gpu.dump());
  EXPECT_EQ(Plan(bad, out, 2).exit_code, 2);
  EXPECT_TRUE(ReadTree(out) == before);
}

TEST_F(PlanCliTest, PlanWithoutPassingConfigurationStillReports) {
  // Every family misses: exit 0, plan.json with "chosen": null and no chosen/.
  json j = TinyPlan();
  j["targets"] = {{"ttft_ms", {{"p50", 0.001}}}};
  ScratchDir tmp;
  const std::string plan = tmp.Write("miss.json", j.dump());
  const CommandResult r = Plan(plan, tmp.File("out"), 2);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json out = json::parse(ReadFile(tmp.File("out/plan.json")));
  EXPECT_TRUE(out["chosen"].is_null());
  EXPECT_TRUE(out["recommendations"].empty());
  for (const json& f : out["families"]) EXPECT_EQ(f["status"], "misses");
  EXPECT_FALSE(fs::exists(tmp.File("out/chosen")));
  EXPECT_TRUE(fs::is_regular_file(tmp.File("out/report.html")));
  EXPECT_TRUE(fs::is_regular_file(tmp.File("out/report.md")));
}

}  // namespace
}  // namespace fleetsim
