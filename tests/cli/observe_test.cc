// `fleetsim observe` end to end: a summary of each client's example file
// (tests/observe/data), and bad input answered with exit 2 and one line.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_test_util.h"

namespace fleetsim::clitest {
namespace {

std::string Example(const std::string& name) {
  return ShellQuote(std::string(FLEETSIM_SOURCE_DIR) + "/tests/observe/data/" + name);
}

TEST(CliObserve, SummarisesEachClientsFile) {
  for (const char* name : {"vllm_detailed.json", "aiperf/profile_export.jsonl", "genai_perf/profile_export.json",
                           "requests.csv"}) {
    CommandResult r = RunFleetsim("observe " + Example(name));
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
    EXPECT_NE(r.output.find("requests  5 (4 ok, 1 failed)"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("  TTFT    52.50    58.50    59.85"), std::string::npos) << r.output;
    EXPECT_LE(CountLines(r.output), 24) << r.output;  // one screen
  }
}

TEST(CliObserve, SeveralRunsAreATableUntilOneIsPicked) {
  CommandResult table = RunFleetsim("observe " + Example("guidellm/benchmarks.json"));
  EXPECT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(table.output.find("2 runs in "), std::string::npos) << table.output;
  CommandResult one = RunFleetsim("observe " + Example("guidellm/benchmarks.json") + " --run 1");
  EXPECT_EQ(one.exit_code, 0) << one.output;
  EXPECT_NE(one.output.find("(benchmarks[1])"), std::string::npos) << one.output;
  EXPECT_NE(one.output.find("load      open loop at 4 req/s"), std::string::npos) << one.output;
}

TEST(CliObserve, AggregatesOnlyWhenAllowed) {
  CommandResult refused = RunFleetsim("observe " + Example("vllm_summary.json"));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_EQ(CountLines(refused.output), 1) << refused.output;
  EXPECT_NE(refused.output.find("rerun vllm bench serve with --save-result --save-detailed"), std::string::npos)
      << refused.output;
  CommandResult allowed = RunFleetsim("observe " + Example("vllm_summary.json") + " --allow-aggregates");
  EXPECT_EQ(allowed.exit_code, 0) << allowed.output;
  EXPECT_NE(allowed.output.find("no per-request timing: the file's aggregates only"), std::string::npos)
      << allowed.output;
}

TEST(CliObserve, BadInputExitsTwoWithOneLine) {
  ScratchDir dir;
  const std::string broken = dir.Write("broken.json", "{\"input_lens\": [1, 2,]}");
  const std::string negative = dir.Write(
      "neg.csv", "start_s,input_tokens,output_tokens,ttft_s,e2e_s\n0,10,2,0.1,0.2\n1,10,2,-0.1,0.2\n");
  const std::pair<std::string, std::string> cases[] = {
      {"observe " + ShellQuote(broken), "broken.json: invalid JSON at line 1, column 22"},
      {"observe " + ShellQuote(negative), "neg.csv:3: ttft_s: expected seconds >= 0 or nothing, got \"-0.1\""},
      {"observe " + Example("requests.csv") + " --format vllm", "requests.csv: invalid JSON at line 1, column 1"},
      {"observe " + Example("requests.csv") + " --format tgi",
       "unknown format \"tgi\" (known: vllm, aiperf, genaiperf, guidellm, csv)"},
      {"observe " + ShellQuote(dir.File("absent.json")), "cannot open benchmark file"},
      {"observe " + ShellQuote(dir.path().string()), "not a regular file (a directory)"},
      {"observe " + Example("requests.csv") + " --run 1", "--run 1: out of range; the file holds 1 run (0 to 0)"},
      {"observe " + Example("aiperf/profile_export_aiperf.json"), "this is AIPerf's aggregate file"},
      {"observe", "file is required"},
  };
  for (const auto& [args, expected] : cases) {
    CommandResult r = RunFleetsim(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_EQ(CountLines(r.output), 1) << args << "\n" << r.output;
    EXPECT_EQ(r.output.rfind("fleetsim: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(expected), std::string::npos) << args << "\n" << r.output;
  }
}

}  // namespace
}  // namespace fleetsim::clitest
