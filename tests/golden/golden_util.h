// Shared rig of the end-to-end scenario tests: the catalogue and policies,
// scratch folders, running a spec, and reading requests.csv exactly.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/catalog.h"
#include "sim/runner/run.h"
#include "sim/scenario/parse.h"

namespace fleetsim {

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

namespace fs = std::filesystem;


struct World {
  World() {
    Status s = Catalog::LoadBuiltin(&catalog);
    if (!s.ok()) ADD_FAILURE() << s.message();
    RegisterBuiltins(&policies);
  }
  Catalog catalog;
  Policies policies;
};

inline const World& TheWorld() {
  static const World* w = new World();
  return *w;
}

inline fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("fleetsim_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

struct Outcome {
  Summary summary;
  std::string summary_json;
  std::string requests_csv;
  std::string timeseries_csv;  // with RunSpecWith(..., timeseries = true)
  RunReport report;
};

// Runs `spec` with `options`; `metrics` names no files (they go into a
// scratch folder). Expects success.
inline Outcome RunSpecWith(const ScenarioSpec& spec, const RunOptions& options, MetricsOptions mo,
                           const std::string& tag, bool timeseries = false) {
  Outcome o;
  std::unique_ptr<ScenarioRun> run;
  Status s = ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &run);
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return o;
  fs::path dir = TempDir(tag);
  mo.requests_csv = (dir / "requests.csv").string();
  if (timeseries) mo.timeseries_csv = (dir / "timeseries.csv").string();
  s = run->Run(mo, options, nullptr, &o.report);
  EXPECT_TRUE(s.ok()) << s.message();
  o.summary = o.report.summary;
  o.summary_json = SummaryToJson(o.summary);
  o.requests_csv = ReadFile(dir / "requests.csv");
  if (timeseries) o.timeseries_csv = ReadFile(dir / "timeseries.csv");
  fs::remove_all(dir);
  return o;
}

inline Outcome RunSpec(const ScenarioSpec& spec, uint64_t seed, const std::string& tag) {
  RunOptions ro;
  ro.seed = seed;
  return RunSpecWith(spec, ro, MetricsOptions(), tag);
}

// One pool of `replicas` Llama-3.1-8B on H100 under a generator of fixed
// lengths.
inline ScenarioSpec FixedLengths(double rate_per_s, int64_t requests, int prompt, int output, int replicas = 1) {
  ScenarioSpec spec;
  spec.file = "figures.json";
  spec.seed = 1;
  spec.model = "Llama-3.1-8B";
  PoolSpec pool;
  pool.path = "fleet.pools[0]";
  pool.name = "p";
  pool.model = spec.model;
  pool.gpu = "H100-SXM";
  pool.replicas = replicas;
  spec.pools.push_back(pool);
  spec.traffic.kind = TrafficSpec::Kind::kGenerator;
  spec.traffic.arrival = ArrivalProcess::kConstant;
  spec.traffic.rate_per_s = rate_per_s;
  spec.traffic.prompt.kind = LengthSpec::Kind::kFixed;
  spec.traffic.prompt.value = prompt;
  spec.traffic.output.kind = LengthSpec::Kind::kFixed;
  spec.traffic.output.value = output;
  spec.traffic.max_requests = requests;
  return spec;
}

// An engine profile file: the bundled vLLM profile without the API server
// in front (server terms 0), for tests of the engine alone (queueing laws,
// capacity): a server delay is a delay, not service. Written once per test
// process; the pool's `engine` names it.
inline std::string EngineWithoutServer() {
  struct File {
    std::string path;
    ~File() {
      std::error_code ec;
      fs::remove(path, ec);
    }
  };
  static const File file{[] {
    const fs::path file = fs::temp_directory_path() /
                          ("fleetsim_engine_noserver_" + std::to_string(::getpid()) + ".json");
    const std::string src = ReadFile(fs::path(FLEETSIM_SOURCE_DIR) / "model/engines/vllm.json");
    std::string text = src;
    for (const char* term : {"server_request_us", "server_prompt_token_us", "server_output_token_us"}) {
      // Each server term holds one generic entry: set its value to 0.
      const size_t at = text.find(std::string("\"") + term + "\"");
      const size_t value = text.find("\"value\": ", at);
      const size_t end = text.find(',', value);
      text.replace(value, end - value, "\"value\": 0");
    }
    std::ofstream(file, std::ios::binary) << text;
    return file.string();
  }()};
  return file.path;
}

inline ScenarioSpec LoadBundled(const std::string& name) {
  ScenarioSpec spec;
  Status s = LoadScenarioFile(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/" + name + ".json", &spec);
  EXPECT_TRUE(s.ok()) << s.message();
  return spec;
}

inline void ExpectConservation(const Summary& s) {
  EXPECT_EQ(s.arrived, s.completed + s.rejected + s.failed + s.unfinished);
}

// Rows of requests.csv as id -> fields.
inline std::vector<std::vector<std::string>> CsvRows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream ls(line);
    while (std::getline(ls, cell, ',')) f.push_back(cell);
    if (!line.empty() && line.back() == ',') f.push_back("");
    rows.push_back(f);
  }
  return rows;
}

// "12.000000345" -> 12000000345 ns, exactly.
// Lines in `text` (a final line without its newline counts).
inline int64_t CountLinesOf(const std::string& text) {
  int64_t n = 0;
  for (char c : text) n += c == '\n';
  return n + (!text.empty() && text.back() != '\n');
}

inline SimTime ParseSeconds(const std::string& s) {
  size_t dot = s.find('.');
  EXPECT_NE(dot, std::string::npos) << s;
  EXPECT_EQ(s.size() - dot - 1, 9u) << s;
  return std::stoll(s.substr(0, dot)) * kSecond + std::stoll(s.substr(dot + 1));
}


}  // namespace fleetsim
