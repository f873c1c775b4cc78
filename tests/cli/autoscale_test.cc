// The bundled diurnal scenario (scenarios/diurnal-autoscale.json) run
// through the fleetsim executable as docs/autoscaling.md tells it, on the
// first two hours of its day (traffic.trace.end_s) so that it stays quick
// under the sanitizers: `run --compare autoscalers` (fixed peak capacity,
// then every registered autoscaler), what a scaled run reports (cost by
// pool and class, idle share, autoscaling, timeseries.csv's cost rate and
// states), and that a seed fixes the outputs to the byte.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
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

const std::string kScenario = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/diurnal-autoscale.json";
// Two hours: about 80,000 requests.
const std::string kTwoHours = " --set traffic.trace.end_s=7200";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(ReadText(path));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::string cell;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') {
        quoted = !quoted;
      } else if (c == ',' && !quoted) {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += c;
      }
    }
    cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

void ExpectConserved(const json& s) {
  const json& r = s["requests"];
  EXPECT_EQ(r["arrived"].get<int64_t>(), r["completed"].get<int64_t>() + r["rejected"].get<int64_t>() +
                                             r["failed"].get<int64_t>() + r["unfinished"].get<int64_t>());
}

TEST(DiurnalAutoscale, CompareRunsFixedCapacityAndEveryAutoscaler) {
  ScratchDir dir;
  const CommandResult r = RunFleetsim("run " + ShellQuote(kScenario) + " --compare autoscalers --out " +
                                      ShellQuote(dir.File("cmp")) + kTwoHours);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* name : {"fixed", "hpa", "kpa", "target_ongoing", "scheduled", "slo_driven"})
    EXPECT_NE(r.output.find(std::string("\n") + name), std::string::npos) << name << " missing from\n" << r.output;

  const auto rows = ReadCsv(dir.File("cmp/compare.csv"));
  ASSERT_EQ(rows.size(), 7u);
  std::map<std::string, std::map<std::string, std::string>> by;
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), rows[0].size()) << i;
    for (size_t c = 0; c < rows[0].size(); ++c) by[rows[i][0]][rows[0][c]] = rows[i][c];
  }
  std::vector<std::string> order;
  for (size_t i = 1; i < rows.size(); ++i) order.push_back(rows[i][0]);
  EXPECT_EQ(order, (std::vector<std::string>{"fixed", "hpa", "kpa", "target_ongoing", "scheduled", "slo_driven"}));
  for (const auto& [name, row] : by) {
    SCOPED_TRACE(name);
    ASSERT_FALSE(row.at("gpu_hours").empty()) << "did not run: " << row.at("note");
    const json s = json::parse(ReadText(dir.File("cmp/" + name + "/summary.json")));
    ExpectConserved(s);
    EXPECT_EQ(std::stod(row.at("total_usd")), s["cost"]["total_usd"].get<double>());
    EXPECT_EQ(s.contains("autoscaling"), name != "fixed");
    // The pool never pays for more than its peak: 12 H100s for the run.
    EXPECT_LE(std::stod(row.at("gpu_hours")), 12 * s["sim"]["simulated_s"].get<double>() / 3600 + 1e-6);
  }
  // Peak capacity, always on, costs the most; a schedule sized to each
  // hour's peak, less.
  EXPECT_GT(std::stod(by["fixed"]["total_usd"]), std::stod(by["scheduled"]["total_usd"]));
  EXPECT_EQ(by["fixed"]["replicas_max"], "");
  EXPECT_EQ(by["hpa"]["note"], "as the scenario gives it");
}

TEST(DiurnalAutoscale, ScaledRunReportsCostByPoolAndTheCostRateOverTime) {
  ScratchDir dir;
  const CommandResult r = RunFleetsim("run " + ShellQuote(kScenario) + " --quiet --out " + ShellQuote(dir.File("a")) +
                                      kTwoHours + " --set fleet.pools[0].autoscaler.warm_pool=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json s = json::parse(ReadText(dir.File("a/summary.json")));
  ExpectConserved(s);
  const json& a = s["autoscaling"];
  for (const char* k : {"scale_ups", "scale_downs", "refused", "fallbacks", "spot_reclaims", "replicas_min",
                        "replicas_max", "replica_seconds"})
    EXPECT_TRUE(a.contains(k)) << k;
  EXPECT_GE(a["replicas_min"].get<int>(), 2);
  EXPECT_LE(a["replicas_max"].get<int>(), 12);
  const json& c = s["cost"];
  ASSERT_EQ(c["by_pool"].size(), 1u);
  EXPECT_EQ(c["by_pool"][0]["pool"], "h100");
  EXPECT_EQ(c["by_pool"][0]["pricing_class"], "on_demand");
  EXPECT_NEAR(c["by_pool"][0]["usd"].get<double>(), c["total_usd"].get<double>(), 1e-5);
  EXPECT_NEAR(c["idle_share"].get<double>(),
              1 - c["busy_gpu_hours"].get<double>() / c["gpu_hours"].get<double>(), 1e-5);
  // A scaled fleet's rate is its mean over the window.
  EXPECT_NEAR(c["usd_per_hour"].get<double>(),
              c["total_usd"].get<double>() / (s["throughput"]["window_s"].get<double>() / 3600), 1e-4);

  // timeseries.csv: each replica's state and cost rate; the fleet's rate at
  // a sample is the sum, and the warm worker is there (warm, at full price).
  const auto rows = ReadCsv(dir.File("a/timeseries.csv"));
  ASSERT_GT(rows.size(), 2u);
  ASSERT_EQ(rows[0].back(), "usd_per_hour");
  const double price = s["fleet"]["pools"][0]["usd_per_gpu_hour"].get<double>();
  std::set<std::string> states;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::string& state = rows[i][rows[i].size() - 2];
    states.insert(state);
    const double rate = std::stod(rows[i].back());
    if (state == "stopped") {
      EXPECT_EQ(rate, 0.0) << i;
    } else {
      EXPECT_NEAR(rate, price, 1e-4) << state;
    }
  }
  EXPECT_TRUE(states.count("ready"));
  EXPECT_TRUE(states.count("warm"));
  EXPECT_TRUE(states.count("stopped"));

  // The run report shows the scaling and the cost rate over time.
  const CommandResult rep = RunFleetsim("report " + ShellQuote(dir.File("a")));
  ASSERT_EQ(rep.exit_code, 0) << rep.output;
  const std::string md = ReadText(dir.File("a/report.md"));
  for (const char* heading : {"## Autoscaling", "Ready replicas over time", "Fleet cost rate over time"})
    EXPECT_NE(md.find(heading), std::string::npos) << heading;
}

TEST(DiurnalAutoscale, SameSeedSameOutputsToTheByte) {
  ScratchDir dir;
  for (const char* out : {"x", "y"}) {
    const CommandResult r = RunFleetsim("run " + ShellQuote(kScenario) + " --quiet --out " + ShellQuote(dir.File(out)) +
                                        kTwoHours + " --set fleet.pools[0].autoscaler.policy=kpa");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  for (const char* f : {"summary.json", "requests.csv", "timeseries.csv"})
    EXPECT_EQ(ReadText(dir.File(std::string("x/") + f)), ReadText(dir.File(std::string("y/") + f))) << f;
}

TEST(DiurnalAutoscale, CompareAutoscalersNeedsAnAutoscaledPool) {
  ScratchDir dir;
  const std::string quickstart = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/quickstart.json";
  const CommandResult r =
      RunFleetsim("run " + ShellQuote(quickstart) + " --compare autoscalers --out " + ShellQuote(dir.File("q")));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(clitest::CountLines(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("fleet.pools: --compare autoscalers needs a pool with an \"autoscaler\""), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace fleetsim
