// Helpers shared by the observe tests: the example files' folder, reading a
// file or a text, and the five requests every example file describes
// (tests/observe/data/make_examples.py).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/observe/read_observed.h"

namespace fleetsim::observe_test {

using nlohmann::json;

inline std::string DataPath(const std::string& name) {
  std::string path = FLEETSIM_SOURCE_DIR;
  path += "/tests/observe/data/";
  path += name;
  return path;
}

// Reads `name` under the data folder; fails the test on an error.
inline std::vector<ObservedRun> ReadExample(const std::string& name, ReadObservedOptions options = {}) {
  std::vector<ObservedRun> runs;
  const Status s = ReadObservedFile(DataPath(name), options, &runs);
  EXPECT_TRUE(s.ok()) << s.message();
  return runs;
}

// Reads `text` as a file called `name`; returns the error message, or "" on
// success with the runs in *runs.
inline std::string ReadText(const std::string& name, const std::string& text, std::vector<ObservedRun>* runs,
                            ReadObservedOptions options = {}) {
  options.read_companion = false;
  const Status s = ReadObservedText(name, text, options, runs);
  return s.ok() ? "" : s.message();
}

inline std::string ErrorOf(const std::string& name, const std::string& text, ReadObservedOptions options = {}) {
  std::vector<ObservedRun> runs;
  std::string msg = ReadText(name, text, &runs, options);
  EXPECT_FALSE(msg.empty()) << "expected an error reading " << name;
  EXPECT_TRUE(runs.empty());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  return msg;
}

// The one run in example `name`.
inline ObservedRun ReadOneRun(const std::string& name, ReadObservedOptions options = {}) {
  std::vector<ObservedRun> runs = ReadExample(name, options);
  EXPECT_EQ(runs.size(), 1u) << name;
  return runs.empty() ? ObservedRun() : runs.front();
}

// What a run says about where it came from and how load was generated.
struct Identity {
  ObservedFormat format;
  std::string tool, model, backend;
  LoadMode mode;
  std::optional<double> request_rate_per_s;
  std::optional<int32_t> max_concurrency;
};

inline void ExpectIdentity(const ObservedRun& run, const Identity& id) {
  EXPECT_EQ(run.format, id.format);
  EXPECT_EQ(run.tool, id.tool);
  EXPECT_EQ(run.model, id.model);
  EXPECT_EQ(run.backend, id.backend);
  EXPECT_EQ(run.mode, id.mode);
  EXPECT_EQ(run.request_rate_per_s, id.request_rate_per_s);
  EXPECT_EQ(run.max_concurrency, id.max_concurrency);
}

// Bad-input tables: each case edits a valid document, and reading the
// result must fail with exactly the message given.
using JsonEdit = std::function<void(json&)>;
using EditCase = std::pair<JsonEdit, std::string>;

inline void ExpectEditErrors(const std::string& name, const std::vector<EditCase>& cases,
                             const std::function<std::string(const JsonEdit&)>& text_with) {
  for (const auto& [edit, expected] : cases) EXPECT_EQ(ErrorOf(name, text_with(edit)), expected);
}

// The text of the document `make` returns, edited.
inline std::function<std::string(const JsonEdit&)> Edited(json (*make)()) {
  return [make](const JsonEdit& edit) {
    json doc = make();
    edit(doc);
    return doc.dump();
  };
}

struct Expected {
  double start_s;
  int32_t input_tokens, output_tokens;
  std::optional<double> ttft_s, e2e_s;
  std::vector<double> itl_s;
};

// The examples' requests, in start order; the fourth failed.
inline const std::vector<Expected>& FiveRequests() {
  static const std::vector<Expected> k = {
      {0.000, 128, 4, 0.050, 0.083, {0.010, 0.011, 0.012}},
      {0.250, 256, 3, 0.060, 0.085, {0.012, 0.013}},
      {0.500, 64, 5, 0.040, 0.080, {0.009, 0.010, 0.011, 0.010}},
      {0.750, 512, 0, std::nullopt, std::nullopt, {}},
      {1.000, 200, 2, 0.055, 0.075, {0.020}},
  };
  return k;
}

struct Compare {
  double tolerance_s = 1e-9;  // ns-rounded clocks need ~1e-9; ms decimals more
  bool itl = true;            // the file keeps chunk gaps
  bool input_tokens = true;   // the file keeps prompt lengths
  int32_t failed_input_tokens = 512;
};

inline void ExpectFiveRequests(const ObservedRun& run, const Compare& c = {}) {
  ASSERT_EQ(run.requests.size(), 5u);
  EXPECT_TRUE(run.per_request_timing);
  for (size_t i = 0; i < 5; ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const Expected& e = FiveRequests()[i];
    const ObservedRequest& r = run.requests[i];
    EXPECT_EQ(r.ok, e.e2e_s.has_value());
    EXPECT_NEAR(r.start_s, e.start_s, c.tolerance_s);
    if (c.input_tokens) {
      EXPECT_EQ(r.input_tokens, r.ok ? e.input_tokens : c.failed_input_tokens);
    }
    EXPECT_EQ(r.output_tokens, e.output_tokens);
    ASSERT_EQ(r.ttft_s.has_value(), e.ttft_s.has_value());
    ASSERT_EQ(r.e2e_s.has_value(), e.e2e_s.has_value());
    if (e.ttft_s) {
      EXPECT_NEAR(*r.ttft_s, *e.ttft_s, c.tolerance_s);
      EXPECT_NEAR(*r.e2e_s, *e.e2e_s, c.tolerance_s);
    }
    if (!c.itl) {
      EXPECT_TRUE(r.itl_s.empty());
      continue;
    }
    ASSERT_EQ(r.itl_s.size(), e.itl_s.size());
    for (size_t k = 0; k < e.itl_s.size(); ++k) EXPECT_NEAR(r.itl_s[k], e.itl_s[k], c.tolerance_s);
  }
}

}  // namespace fleetsim::observe_test
