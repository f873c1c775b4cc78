// Choosing the reader: format names, detection from the extension and the
// top-level keys, and the explicit override (read_observed.cc).
#include <gtest/gtest.h>

#include "tests/observe/test_util.h"

namespace fleetsim::observe_test {
namespace {

TEST(ObserveFormat, DetectsEachExample) {
  const std::pair<const char*, ObservedFormat> cases[] = {
      {"vllm_detailed.json", ObservedFormat::kVllm},
      {"vllm_summary.json", ObservedFormat::kVllm},
      {"aiperf/profile_export.jsonl", ObservedFormat::kAiperf},
      {"genai_perf/profile_export.json", ObservedFormat::kGenaiPerf},
      {"guidellm/benchmarks.json", ObservedFormat::kGuidellm},
      {"guidellm/benchmarks_v03_sampled.json", ObservedFormat::kGuidellm},
      {"requests.csv", ObservedFormat::kCsv},
  };
  for (const auto& [name, format] : cases) {
    ObservedFormat f;
    const Status s = DetectObservedFormat(DataPath(name), &f);
    ASSERT_TRUE(s.ok()) << name << ": " << s.message();
    EXPECT_EQ(f, format) << name;
  }
}

TEST(ObserveFormat, RefusesAggregateFilesNamingTheExportToPass) {
  ObservedFormat f;
  Status s = DetectObservedFormat(DataPath("genai_perf/profile_export_genai_perf.json"), &f);
  EXPECT_NE(s.message().find("this is GenAI-Perf's aggregate file (*_genai_perf.json); pass the per-request "
                             "profile_export.json beside it"),
            std::string::npos)
      << s.message();
}

TEST(ObserveFormat, NamesAndOverride) {
  for (ObservedFormat f : {ObservedFormat::kVllm, ObservedFormat::kAiperf, ObservedFormat::kGenaiPerf,
                           ObservedFormat::kGuidellm, ObservedFormat::kCsv}) {
    ObservedFormat back;
    ASSERT_TRUE(ParseObservedFormat(ObservedFormatName(f), &back).ok());
    EXPECT_EQ(back, f);
  }
  ObservedFormat f;
  EXPECT_EQ(ParseObservedFormat("genai-perf", &f).message(),
            "unknown format \"genai-perf\" (known: vllm, aiperf, genaiperf, guidellm, csv)");

  // A CSV without the .csv extension is found by its header, and read as
  // any format when told.
  std::vector<ObservedRun> runs;
  const std::string csv = "start_s,input_tokens,output_tokens,ttft_s,e2e_s\n0,1,1,0.1,0.2\n";
  EXPECT_EQ(ReadText("requests.txt", csv, &runs), "");
  ReadObservedOptions as_vllm;
  as_vllm.format = "vllm";
  EXPECT_EQ(ErrorOf("requests.csv", csv, as_vllm).rfind("requests.csv: invalid JSON at line 1, column 1", 0), 0u);
  ReadObservedOptions as_csv;
  as_csv.format = "csv";
  EXPECT_EQ(ErrorOf("r.json", "{}", as_csv).rfind("r.json:1: expected the header", 0), 0u);
}

TEST(ObserveFormat, CannotTellSaysWhatItSawAndWhatToPass) {
  EXPECT_EQ(ErrorOf("x.json", R"({"alpha": 1, "beta": [2]})"),
            "x.json: cannot tell which benchmark client wrote this (top-level keys: \"alpha\", \"beta\"); pass the "
            "format (vllm, aiperf, genaiperf, guidellm, csv)");
  EXPECT_EQ(ErrorOf("x.json", "[1, 2]"), "x.json: expected a JSON object at the top, got [1,2]");
  EXPECT_EQ(ErrorOf("x.dat", "hello"),
            "x.dat: cannot tell the format: neither JSON nor a .csv file; pass the format (vllm, aiperf, "
            "genaiperf, guidellm, csv)");
  EXPECT_EQ(ErrorOf("x.json", "  \n"), "x.json: empty file");
  // Deep nesting is refused before anything recurses into it.
  EXPECT_EQ(ErrorOf("x.json", std::string(300, '[') + std::string(300, ']')),
            "x.json: invalid JSON at line 1, column 257: nested deeper than 256 levels");
}

TEST(ObserveFormat, MissingFileSaysSo) {
  std::vector<ObservedRun> runs;
  const Status s = ReadObservedFile("/nonexistent/run.json", {}, &runs);
  EXPECT_EQ(s.message(), "cannot open benchmark file \"/nonexistent/run.json\": No such file or directory");
}

}  // namespace
}  // namespace fleetsim::observe_test
