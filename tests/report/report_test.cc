// Report rendering over the fixtures in tests/report/data: a plan's folder
// (plan.json in fleetsim-plan-result v1 with a chosen/ run) and a run's folder
// (a 50-request quickstart run with a 1 s warm-up, plus an itl.csv).
#include "tools/report/report.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace fleetsim {
namespace {

namespace fs = std::filesystem;

const std::string kData = std::string(FLEETSIM_SOURCE_DIR) + "/tests/report/data";

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

// A fresh copy of fixture `name` in a folder of this test's own.
std::string CopyFixture(const std::string& name) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const fs::path dir = fs::path(::testing::TempDir()) / ("report_test_" + std::string(info->name()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(kData + "/" + name, dir, fs::copy_options::recursive);
  return dir.string();
}

struct PlotInfo {
  long points = -1;
  std::string body;
};

// Every <svg class="plot" ...>...</svg> of `html`.
std::vector<PlotInfo> Plots(const std::string& html) {
  std::vector<PlotInfo> out;
  for (size_t at = html.find("<svg class=\"plot\""); at != std::string::npos;
       at = html.find("<svg class=\"plot\"", at + 1)) {
    PlotInfo p;
    const size_t end = html.find("</svg>", at);
    p.body = html.substr(at, end == std::string::npos ? std::string::npos : end - at);
    const size_t dp = p.body.find("data-points=\"");
    if (dp != std::string::npos) p.points = std::strtol(p.body.c_str() + dp + 13, nullptr, 10);
    out.push_back(p);
  }
  return out;
}

void ExpectPlotsHaveData(const std::string& html) {
  for (const PlotInfo& p : Plots(html)) {
    EXPECT_GT(p.points, 0) << p.body.substr(0, 300);
    EXPECT_TRUE(p.body.find("class=\"pt\"") != std::string::npos || p.body.find("class=\"line\"") != std::string::npos)
        << p.body.substr(0, 300);
    EXPECT_NE(p.body.find("<title>"), std::string::npos);
    EXPECT_NE(p.body.find("class=\"legend\""), std::string::npos);
  }
}

// No script, no external resource: the only URL is the SVG namespace.
void ExpectSelfContained(const std::string& html) {
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  std::string rest = html;
  for (size_t at = rest.find("http://www.w3.org/2000/svg"); at != std::string::npos;
       at = rest.find("http://www.w3.org/2000/svg", at)) {
    rest.erase(at, 26);
  }
  EXPECT_EQ(rest.find("http:"), std::string::npos);
}

TEST(PlanReport, RendersEverySection) {
  ReportFiles f;
  const Status s = RenderReport(kData + "/plan", &f);
  ASSERT_TRUE(s.ok()) << s.message();
  for (const char* section : {"Recommendations", "Latency vs load", "Cost vs load", "Pareto frontier",
                              "Chosen configuration over time", "All families", "Dropped families", "Assumptions"}) {
    EXPECT_NE(f.html.find(section), std::string::npos) << section;
    EXPECT_NE(f.md.find(section), std::string::npos) << section;
  }
  // Latency vs load for both latency targets, cost vs load, cost per token,
  // the frontier, the chosen run's queue depth and KV use.
  EXPECT_EQ(Plots(f.html).size(), 7u);
  ExpectPlotsHaveData(f.html);
  ExpectSelfContained(f.html);
  EXPECT_NE(f.html.find("stroke-dasharray"), std::string::npos);  // targets drawn dashed
  EXPECT_NE(f.html.find("class=\"err\""), std::string::npos);     // error bars
  // The recommendation's interval, verdict and replications, and its launch line.
  EXPECT_NE(f.md.find("; meets; 3/3 reps met"), std::string::npos);
  // Each recommendation's replications, one row each, and the bound judged.
  for (const std::string* out : {&f.md, &f.html}) {
    EXPECT_NE(out->find("Per-replication attainment"), std::string::npos);
    EXPECT_NE(out->find("Rank 1: "), std::string::npos);
    EXPECT_NE(out->find("Replications met"), std::string::npos);
    EXPECT_NE(out->find("upper "), std::string::npos);
  }
  // The fixture's first recommendation at ×1: three replications' TTFT p99.
  EXPECT_NE(f.md.find("| 1 | 252; met |"), std::string::npos);
  EXPECT_NE(f.md.find("| 3 | 273; met |"), std::string::npos);
  EXPECT_NE(f.md.find("| Replications met | 3/3 |"), std::string::npos);
  EXPECT_NE(f.md.find("`vllm serve meta-llama/Llama-3.1-8B-Instruct"), std::string::npos);
  EXPECT_NE(f.md.find(" ± "), std::string::npos);
  // The dropped family and its reason; the replayed-traffic caveat.
  EXPECT_NE(f.md.find("A100-40G tp1 vllm/8192 | does not fit"), std::string::npos);
  EXPECT_NE(f.md.find("only the service's randomness"), std::string::npos);
  EXPECT_NE(f.md.find("Plot in report.html: TTFT p99 <= 2000 ms: latency vs load"), std::string::npos);
  EXPECT_EQ(f.md.find("<svg"), std::string::npos);
}

TEST(RunReport, RendersMeasuredRequestsOnly) {
  ReportFiles f;
  const Status s = RenderReport(kData + "/run", &f);
  ASSERT_TRUE(s.ok()) << s.message();
  // TTFT, TPOT, E2E and ITL CDFs; queue+running, KV use, arrivals.
  EXPECT_EQ(Plots(f.html).size(), 7u);
  ExpectPlotsHaveData(f.html);
  ExpectSelfContained(f.html);
  // The fixture has a 1 s warm-up: 38 of its 50 requests are measured, as summary.json says.
  EXPECT_NE(f.html.find("CDFs over the 38 measured requests of requests.csv (50 rows)"), std::string::npos);
  const std::vector<PlotInfo> plots = Plots(f.html);
  EXPECT_EQ(plots[0].points, 38);  // TTFT: every measured request completed
  EXPECT_NE(plots[0].body.find("TTFT SLO 200 ms"), std::string::npos);
  EXPECT_NE(f.md.find("| SLO attainment (measured requests within the SLO) | 89.5% |"), std::string::npos);
  EXPECT_NE(f.md.find("| TTFT | 38 |"), std::string::npos);
}

TEST(RunReport, ToleratesMissingItlCsv) {
  const std::string dir = CopyFixture("run");
  fs::remove(dir + "/itl.csv");
  ReportFiles f;
  const Status s = RenderReport(dir, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Plots(f.html).size(), 6u);
  EXPECT_NE(f.html.find("No itl.csv"), std::string::npos);
}

TEST(PlanReport, ToleratesMissingChosenRun) {
  const std::string dir = CopyFixture("plan");
  fs::remove_all(dir + "/chosen");
  ReportFiles f;
  const Status s = RenderReport(dir, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Plots(f.html).size(), 5u);
  EXPECT_NE(f.html.find("No time series: cannot open"), std::string::npos);
}

TEST(Report, IsDeterministic) {
  for (const char* dir : {"/plan", "/run"}) {
    ReportFiles a, b;
    ASSERT_TRUE(RenderReport(kData + dir, &a).ok());
    ASSERT_TRUE(RenderReport(kData + dir, &b).ok());
    EXPECT_EQ(a.html, b.html) << dir;
    EXPECT_EQ(a.md, b.md) << dir;
  }
}

TEST(PlanReport, EscapesTextInHtml) {
  ReportFiles f;
  ASSERT_TRUE(RenderReport(kData + "/plan", &f).ok());
  // The plan's name and a family label hold <, >, & and ".
  EXPECT_NE(f.html.find("quickstart &lt;capacity&gt; &amp; &quot;cost&quot;"), std::string::npos);
  EXPECT_NE(f.html.find("sglang/&lt;8192&gt; &amp; &quot;fast&quot;"), std::string::npos);
  EXPECT_EQ(f.html.find("<capacity>"), std::string::npos);
  EXPECT_EQ(f.html.find("<8192>"), std::string::npos);
  EXPECT_NE(f.md.find("quickstart <capacity> & \"cost\""), std::string::npos);
}

// Rewrites the plan fixture's plan.json with `edit` applied and renders it.
Status RenderEditedPlan(const std::function<void(nlohmann::json&)>& edit, std::string* dir) {
  *dir = CopyFixture("plan");
  nlohmann::json j = nlohmann::json::parse(ReadText(*dir + "/plan.json"));
  edit(j);
  WriteText(*dir + "/plan.json", j.dump());
  ReportFiles f;
  return RenderReport(*dir, &f);
}

TEST(PlanReport, ErrorsNameTheFileAndKey) {
  std::string dir;
  Status s = RenderEditedPlan([](nlohmann::json& j) { j["points"][3]["metrics"] = 5; }, &dir);
  EXPECT_EQ(s.message(), dir + "/plan.json: points[3].metrics: expected an object");
  s = RenderEditedPlan([](nlohmann::json& j) { j.erase("families"); }, &dir);
  EXPECT_EQ(s.message(), dir + "/plan.json: families: missing");
  s = RenderEditedPlan([](nlohmann::json& j) { j["families"][1]["label"] = nullptr; }, &dir);
  EXPECT_EQ(s.message(), dir + "/plan.json: families[1].label: expected a string");
  s = RenderEditedPlan([](nlohmann::json& j) { j["points"][0]["metrics"]["ttft_p99_ms"]["mean"] = "fast"; }, &dir);
  EXPECT_EQ(s.message(), dir + "/plan.json: points[0].metrics.ttft_p99_ms.mean: expected a number or null");
  s = RenderEditedPlan([](nlohmann::json& j) { j["format"] = "fleetsim-plan"; }, &dir);
  EXPECT_EQ(s.message(), dir + "/plan.json: format: expected \"fleetsim-plan-result\", got \"fleetsim-plan\"");
  s = RenderEditedPlan([](nlohmann::json& j) { j = nlohmann::json::array(); }, &dir);
  EXPECT_EQ(s.message(), dir + "/plan.json: expected a JSON object");
  // A figure that does not exist is null, and renders as n/a.
  s = RenderEditedPlan([](nlohmann::json& j) { j["points"][0]["metrics"]["ttft_p99_ms"]["half_width"] = nullptr; },
                       &dir);
  EXPECT_TRUE(s.ok()) << s.message();
}

TEST(Report, SyntaxErrorsAndWrongFoldersAreReported) {
  const std::string plan = CopyFixture("plan");
  WriteText(plan + "/plan.json", "{\"format\": ");
  ReportFiles f;
  Status s = RenderReport(plan, &f);
  EXPECT_EQ(s.message().rfind(plan + "/plan.json: invalid JSON", 0), 0u) << s.message();

  const std::string run = CopyFixture("run");
  WriteText(run + "/summary.json", "{\"run\": {\"scenario\": 3}}");
  s = RenderReport(run, &f);
  EXPECT_EQ(s.message(), run + "/summary.json: requests: missing");
  WriteText(run + "/summary.json", ReadText(kData + "/run/summary.json"));
  WriteText(run + "/requests.csv", "id,arrival_s\n1,0.5\n");
  s = RenderReport(run, &f);
  EXPECT_EQ(s.message(), run + "/requests.csv: no column \"first_token_s\" in its header line");

  const std::string empty = fs::path(run).parent_path().string() + "/report_test_empty";
  fs::create_directories(empty);
  s = RenderReport(empty, &f);
  EXPECT_NE(s.message().find("neither plan.json"), std::string::npos) << s.message();
  s = RenderReport(empty + "/nope", &f);
  EXPECT_NE(s.message().find("not a folder"), std::string::npos) << s.message();
}

// Every value of plan.json and summary.json replaced by a value of the wrong
// type gives an error or a page, never a crash or an exception.
void ExpectNoCrashOnWrongTypes(const std::string& fixture, const std::string& file) {
  const std::string dir = CopyFixture(fixture);
  const nlohmann::json original = nlohmann::json::parse(ReadText(dir + "/" + file));
  const nlohmann::json flat = original.flatten();
  std::vector<std::string> paths;
  for (auto it = flat.begin(); it != flat.end(); ++it) {
    // Every leaf of the first point, of one family and one config, and all the rest outside the long lists.
    const std::string& k = it.key();
    const bool listed = k.rfind("/points/", 0) == 0 || k.rfind("/configs/", 0) == 0 || k.rfind("/families/", 0) == 0;
    const bool first = k.rfind("/points/0/", 0) == 0 || k.rfind("/configs/0/", 0) == 0 || k.rfind("/families/0/", 0) == 0;
    if ((listed && !first) || k.find("/values/") != std::string::npos) continue;
    for (std::string p = k; !p.empty(); p = p.substr(0, p.rfind('/'))) paths.push_back(p);
  }
  std::sort(paths.begin(), paths.end());
  paths.erase(std::unique(paths.begin(), paths.end()), paths.end());
  int errors = 0;
  for (const std::string& p : paths) {
    for (const nlohmann::json& bad : {nlohmann::json(), nlohmann::json("x"), nlohmann::json::array({1})}) {
      nlohmann::json j = original;
      j[nlohmann::json::json_pointer(p)] = bad;
      WriteText(dir + "/" + file, j.dump());
      ReportFiles f;
      const Status s = RenderReport(dir, &f);
      if (!s.ok()) {
        ++errors;
        EXPECT_EQ(s.message().rfind(dir + "/" + file + ": ", 0), 0u) << s.message();
      }
    }
  }
  EXPECT_GT(errors, 0);
}

TEST(PlanReport, SurvivesWrongTypesAnywhere) { ExpectNoCrashOnWrongTypes("plan", "plan.json"); }

TEST(RunReport, SurvivesWrongTypesAnywhere) { ExpectNoCrashOnWrongTypes("run", "summary.json"); }

TEST(RunReport, ReadsQuotedCsvFields) {
  const std::string dir = CopyFixture("run");
  std::string req = ReadText(dir + "/requests.csv");
  // A reason with a comma, quoted, in a completed request's row.
  const size_t at = req.find(",completed,,");
  ASSERT_NE(at, std::string::npos);
  req.replace(at, 12, ",\"completed\",\"slow, then fast\",");
  WriteText(dir + "/requests.csv", req);
  ReportFiles f;
  const Status s = RenderReport(dir, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(Plots(f.html)[0].points, 38);
}

TEST(RunReport, StaysSmallForLargeRuns) {
  const std::string dir = CopyFixture("run");
  std::string req =
      "id,arrival_s,first_scheduled_s,first_token_s,finish_s,prompt_tokens,output_tokens,"
      "generated_tokens,replica,preemptions,status,reason,cached_tokens\n";
  char line[256];
  for (int i = 0; i < 200000; ++i) {
    const double a = i * 0.005;
    const double ttft = 0.05 + (i % 997) * 1e-4, tpot = 0.01 + (i % 389) * 1e-5;
    const int gen = 1 + i % 300;
    std::snprintf(line, sizeof line, "%d,%.9f,%.9f,%.9f,%.9f,100,%d,%d,%d,0,%s,,0\n", i, a, a + 0.001, a + ttft,
                  a + ttft + tpot * (gen - 1), gen, gen, i % 8, i % 1000 == 0 ? "rejected" : "completed");
    req += line;
  }
  WriteText(dir + "/requests.csv", req);
  std::string ts = "t_s,replica,arrivals,queue_depth,running,kv_util,busy_frac\n";
  for (int t = 1; t <= 20000; ++t) {
    for (int r = 0; r < 8; ++r) {
      std::snprintf(line, sizeof line, "%d.000000000,%d,%d,%d,%d,%.4f,1.0000\n", t, r, t % 7, t % 13, 20 + r,
                    (t % 100) / 100.0);
      ts += line;
    }
  }
  WriteText(dir + "/timeseries.csv", ts);
  nlohmann::json summary = nlohmann::json::parse(ReadText(dir + "/summary.json"));
  summary["requests"]["arrived"] = summary["requests"]["measured"] = 200000;
  WriteText(dir + "/summary.json", summary.dump());
  ReportFiles f;
  const Status s = RenderReport(dir, &f);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_LT(f.html.size(), 1000000u);
  const std::vector<PlotInfo> plots = Plots(f.html);
  ASSERT_EQ(plots.size(), 7u);
  EXPECT_EQ(plots[0].points, 500);  // the TTFT CDF, thinned
  for (const PlotInfo& p : plots) EXPECT_LE(p.points, 2000);
  ExpectPlotsHaveData(f.html);
}

}  // namespace
}  // namespace fleetsim
