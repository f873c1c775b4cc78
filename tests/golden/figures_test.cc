// The figures a run reports, checked against what they must be: windows that
// end at the last completion, simultaneous arrivals sharing an iteration,
// sustained overload told from a burst, undefined figures as null, cost
// arithmetic, bounded outputs (time series, traces, percentiles) and
// truncation. Expected values come from the requests the run wrote or from
// arithmetic in the test, never from the summary itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "base/sha256.h"
#include "tests/golden/golden_util.h"

namespace fleetsim {
namespace {

// A plain CSV trace in a scratch folder, one row per (arrival_s, prompt, output).
ScenarioSpec CsvTrace(const fs::path& dir, const std::vector<std::tuple<double, int, int>>& rows) {
  std::ofstream f(dir / "trace.csv", std::ios::binary);
  f << "arrival_s,prompt_tokens,output_tokens\n";
  char line[96];
  for (const auto& [t, p, o] : rows) {
    std::snprintf(line, sizeof line, "%.9f,%d,%d\n", t, p, o);
    f << line;
  }
  f.close();
  ScenarioSpec spec = FixedLengths(1, 1, 1, 1);
  spec.traffic = TrafficSpec();
  spec.traffic.kind = TrafficSpec::Kind::kTrace;
  spec.traffic.format = TraceFormat::kCsv;
  spec.traffic.path = (dir / "trace.csv").string();
  return spec;
}

SimTime MaxFinish(const std::string& requests_csv) {
  SimTime end = 0;
  for (const auto& r : CsvRows(requests_csv)) end = std::max(end, ParseSeconds(r[4]));
  return end;
}

TEST(Figures, ThroughputWindowEndsAtTheLastCompletionToTheNanosecond) {
  // Two short requests 0.1 s apart: the run is over well before 1 s.
  Outcome o = RunSpec(FixedLengths(10, 2, 100, 20), 1, "window");
  ASSERT_EQ(o.summary.completed, 2);
  const SimTime end = MaxFinish(o.requests_csv);
  ASSERT_LT(end, kSecond);
  EXPECT_EQ(SecondsToTime(o.summary.window_s), end);
  EXPECT_EQ(SecondsToTime(o.summary.simulated_s), end);
  ASSERT_TRUE(o.summary.requests_per_s);
  EXPECT_NEAR(*o.summary.requests_per_s, 2.0 / TimeToSeconds(end), 1e-5);
  // The drain runs from the last arrival (0.1 s) to the last completion.
  ASSERT_TRUE(o.summary.drain_s);
  EXPECT_NEAR(*o.summary.drain_s, TimeToSeconds(end) - 0.1, 1e-9);
}

TEST(Figures, SimultaneousArrivalsAtAnIdleReplicaShareOnePrefill) {
  const fs::path dir = TempDir("simultaneous_trace");
  std::vector<std::tuple<double, int, int>> rows(8, {0.0, 200, 4});
  ScenarioSpec spec = CsvTrace(dir, rows);
  std::unique_ptr<ScenarioRun> run;
  ASSERT_TRUE(ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &run).ok());
  MetricsOptions mo;
  mo.requests_csv = (dir / "requests.csv").string();
  mo.trace_json = (dir / "trace.json").string();
  RunReport report;
  ASSERT_TRUE(run->Run(mo, 1, nullptr, &report).ok());
  const auto reqs = CsvRows(ReadFile(dir / "requests.csv"));
  ASSERT_EQ(reqs.size(), 8u);
  // 8 x 200 prompt tokens fit the 8192-token budget: one prefill iteration
  // gives every request its first token at the same instant.
  // (Equal prompts pass the API server in equal time.)
  std::set<std::string> first_scheduled, first_tokens;
  for (const auto& r : reqs) {
    first_scheduled.insert(r[2]);
    first_tokens.insert(r[3]);
  }
  EXPECT_EQ(first_scheduled.size(), 1u);
  EXPECT_EQ(first_tokens.size(), 1u);
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir / "trace.json"));
  int prefills = 0;
  for (const auto& e : j.at("traceEvents"))
    if (e.at("ph") == "X" && e.at("args").at("prefill_tokens").get<int>() > 0) {
      ++prefills;
      EXPECT_EQ(e.at("args").at("prefill_seqs").get<int>(), 8);
    }
  EXPECT_EQ(prefills, 1);
  fs::remove_all(dir);
}

// A single-sequence replica (max_num_seqs 1) serves one request at a time,
// so with fixed lengths its capacity is exactly 1 / S, S the time one
// request takes alone.
struct SingleSeq {
  static constexpr int kPrompt = 256, kOutput = 32;
  ScenarioSpec Spec() const {
    ScenarioSpec s = FixedLengths(1, 1, kPrompt, kOutput);
    s.pools[0].max_num_seqs = 1;
    s.pools[0].engine = EngineWithoutServer();  // capacity is the engine's
    return s;
  }
  SimTime service = 0;
  SingleSeq() {
    Outcome o = RunSpec(Spec(), 1, "single_service");
    const auto rows = CsvRows(o.requests_csv);
    EXPECT_EQ(rows.size(), 1u);
    service = ParseSeconds(rows[0][4]) - ParseSeconds(rows[0][1]);
  }
};

TEST(Figures, SustainedOverloadAtOnePointTwoTimesCapacityIsFlagged) {
  SingleSeq q;
  ASSERT_GT(q.service, 0);
  ScenarioSpec spec = q.Spec();
  const double capacity = 1.0 / TimeToSeconds(q.service);
  spec.traffic.rate_per_s = 1.2 * capacity;
  spec.traffic.arrival = ArrivalProcess::kPoisson;
  spec.traffic.max_requests = std::numeric_limits<int64_t>::max();
  spec.traffic.max_arrival_s = 600;
  Outcome o = RunSpec(spec, 5, "overload12");
  EXPECT_TRUE(o.summary.overloaded) << o.summary_json;
  ASSERT_TRUE(o.summary.overload.completion_ratio);
  EXPECT_LT(*o.summary.overload.completion_ratio, 0.95);
}

// Overload that began during warm-up: the backlog then finishes after
// warm-up, but completions of requests that arrived before it do not count
// as keeping pace with the arrivals after it.
TEST(Figures, OverloadThatBeganDuringWarmUpIsFlagged) {
  SingleSeq q;
  ScenarioSpec spec = q.Spec();
  const double capacity = 1.0 / TimeToSeconds(q.service);
  spec.traffic.rate_per_s = 1.5 * capacity;
  spec.traffic.arrival = ArrivalProcess::kPoisson;
  spec.traffic.max_requests = std::numeric_limits<int64_t>::max();
  spec.traffic.max_arrival_s = 300;
  spec.warmup_s = 60;
  Outcome o = RunSpec(spec, 5, "overload_warmup");
  EXPECT_TRUE(o.summary.overloaded) << o.summary_json;
  ASSERT_TRUE(o.summary.overload.completion_ratio);
  EXPECT_LT(*o.summary.overload.completion_ratio, 0.95);
}

TEST(Figures, BurstThatDrainsUnderLightLoadIsNotOverload) {
  SingleSeq q;
  const double s = TimeToSeconds(q.service);
  const fs::path dir = TempDir("burst_trace");
  // 30 s at three times capacity, then 570 s at 0.3 times capacity.
  std::vector<std::tuple<double, int, int>> rows;
  for (double t = 0; t < 30; t += s / 3) rows.emplace_back(t, SingleSeq::kPrompt, SingleSeq::kOutput);
  for (double t = 30; t < 600; t += s / 0.3) rows.emplace_back(t, SingleSeq::kPrompt, SingleSeq::kOutput);
  ScenarioSpec spec = CsvTrace(dir, rows);
  spec.pools[0].max_num_seqs = 1;
  Outcome o = RunSpec(spec, 5, "burst");
  fs::remove_all(dir);
  EXPECT_EQ(o.summary.completed, static_cast<int64_t>(rows.size()));
  EXPECT_TRUE(o.summary.overload.judged);
  EXPECT_FALSE(o.summary.overloaded) << o.summary_json;
}

TEST(Figures, RejectedRequestsAreNotMistakenForOverload) {
  // Light load, but most prompts exceed the pool's context and are turned
  // away at once: they never were work the fleet fell behind on.
  ScenarioSpec spec = LoadBundled("quickstart");
  spec.pools[0].max_model_len = 512;
  Outcome o = RunSpec(spec, 3, "rejected_not_overload");
  EXPECT_GT(o.summary.rejected, o.summary.arrived / 2);
  EXPECT_TRUE(o.summary.overload.judged);
  EXPECT_FALSE(o.summary.overloaded) << o.summary_json;
}

TEST(Figures, NothingMeasuredGivesNullFiguresWithAReason) {
  // Warm-up longer than the run: every request arrives before it.
  ScenarioSpec spec = FixedLengths(10, 5, 100, 10);
  spec.warmup_s = 100;
  Outcome o = RunSpec(spec, 1, "null_warmup");
  EXPECT_EQ(o.summary.measured, 0);
  EXPECT_FALSE(o.summary.ttft.p50);
  EXPECT_FALSE(o.summary.requests_per_s);
  const nlohmann::json j = nlohmann::json::parse(o.summary_json);
  EXPECT_TRUE(j["latency_ms"]["ttft"]["p50"].is_null());
  EXPECT_TRUE(j["latency_ms"]["e2e"]["mean"].is_null());
  EXPECT_TRUE(j["throughput"]["requests_per_s"].is_null());
  bool said = false;
  for (const std::string& w : o.summary.warnings) said = said || w.find("warm-up") != std::string::npos;
  EXPECT_TRUE(said) << o.summary_json;

  // Everything rejected: prompts beyond the pool's context.
  ScenarioSpec rejected = FixedLengths(10, 5, 3000, 10);
  rejected.pools[0].max_model_len = 1024;
  Outcome r = RunSpec(rejected, 1, "null_rejected");
  EXPECT_EQ(r.summary.rejected, 5);
  EXPECT_FALSE(r.summary.tpot.mean);
  EXPECT_FALSE(r.summary.usd_per_million_output_tokens);
  const nlohmann::json k = nlohmann::json::parse(r.summary_json);
  EXPECT_TRUE(k["latency_ms"]["tpot"]["p99"].is_null());
  EXPECT_TRUE(k["cost"]["usd_per_million_output_tokens"].is_null());
}

TEST(Figures, CostFollowsPriceGpusAndTokens) {
  ScenarioSpec spec = FixedLengths(5, 40, 500, 50, /*replicas=*/3);
  spec.pools[0].tp = 2;
  spec.pools[0].usd_per_gpu_hour = 2.5;
  Outcome o = RunSpec(spec, 1, "cost");
  // 3 replicas x 2 GPUs x $2.5.
  ASSERT_TRUE(o.summary.usd_per_hour);
  EXPECT_DOUBLE_EQ(*o.summary.usd_per_hour, 15.0);
  const double hours = TimeToSeconds(MaxFinish(o.requests_csv)) / 3600.0;
  EXPECT_NEAR(*o.summary.total_usd, 15.0 * hours, 1e-6);
  EXPECT_NEAR(o.summary.gpu_hours, 6 * hours, 1e-6);
  EXPECT_NEAR(*o.summary.usd_per_million_output_tokens, 15.0 * hours / (40 * 50) * 1e6, 1e-5);
  EXPECT_NEAR(*o.summary.usd_per_million_total_tokens, 15.0 * hours / (40 * 550) * 1e6, 1e-5);
  EXPECT_EQ(o.summary.fleet_replicas, 3);
  EXPECT_EQ(o.summary.fleet_gpus, 6);
}

TEST(Figures, PercentilesFromHistogramsStayWithinHalfAPercentOfExact) {
  ScenarioSpec spec = LoadBundled("quickstart");
  Outcome exact = RunSpec(spec, 3, "pct_exact");
  MetricsOptions mo;
  mo.exact_latency_limit = 100;  // everything past 100 requests into histograms
  RunOptions ro;
  ro.seed = 3;
  Outcome hist = RunSpecWith(spec, ro, mo, "pct_hist");
  EXPECT_TRUE(exact.summary.exact_percentiles);
  EXPECT_FALSE(hist.summary.exact_percentiles);
  auto near = [](const Distribution& a, const Distribution& b, const char* what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(a.count, b.count);
    // Nearest rank vs interpolation between neighbours, plus bucket width.
    for (auto [x, y] : {std::pair{a.p50, b.p50}, {a.p90, b.p90}, {a.p99, b.p99}, {a.max, b.max}})
      EXPECT_NEAR(*y, *x, 0.005 * *x + 0.5);
    EXPECT_NEAR(*b.mean, *a.mean, 1e-3 * *a.mean);
  };
  near(exact.summary.ttft, hist.summary.ttft, "ttft");
  near(exact.summary.tpot, hist.summary.tpot, "tpot");
  near(exact.summary.e2e, hist.summary.e2e, "e2e");
}

TEST(Figures, TimeSeriesStaysWithinItsRowBudget) {
  ScenarioSpec spec = LoadBundled("quickstart");  // ~2 replicas x 120 s
  RunOptions ro;
  ro.seed = 3;
  ro.timeseries_max_rows = 60;
  Outcome o = RunSpecWith(spec, ro, MetricsOptions(), "ts_budget", /*timeseries=*/true);
  const int64_t rows = CountLinesOf(o.timeseries_csv) - 1;  // header
  EXPECT_LE(rows, 60);
  EXPECT_EQ(rows, o.report.timeseries_rows);
  // The span is known before the run: the interval is coarse from the start.
  EXPECT_GT(o.report.timeseries_intervals.front().second, 1.0);
  // The last row is the run's end.
  const std::string last = o.timeseries_csv.substr(o.timeseries_csv.rfind('\n', o.timeseries_csv.size() - 2) + 1);
  EXPECT_EQ(ParseSeconds(last.substr(0, last.find(','))), MaxFinish(o.requests_csv));

  // A trace's span is not known before the run: the interval doubles as the
  // rows run out.
  const fs::path dir = TempDir("ts_budget_trace");
  std::vector<std::tuple<double, int, int>> reqs;
  for (int i = 0; i < 300; ++i) reqs.emplace_back(i * 1.0, 100, 10);
  ScenarioSpec traced = CsvTrace(dir, reqs);
  RunOptions small;
  small.timeseries_max_rows = 40;
  Outcome t = RunSpecWith(traced, small, MetricsOptions(), "ts_budget2", true);
  fs::remove_all(dir);
  EXPECT_LE(CountLinesOf(t.timeseries_csv) - 1, 40);
  EXPECT_GT(t.report.timeseries_intervals.size(), 2u);
  EXPECT_EQ(t.summary.completed, 300);
}

// Many replicas eat the row budget fast; the samples must still reach the
// run's end, the interval coarsening as needed (doubling alone covered the
// same time per step and stopped sampling a third of the way through).
TEST(Figures, TimeSeriesOfALargeFleetReachesTheEndOfTheRun) {
  const fs::path dir = TempDir("ts_large_fleet");
  std::vector<std::tuple<double, int, int>> reqs;
  for (int i = 0; i < 2000; ++i) reqs.emplace_back(i * 10.0, 100, 100);
  ScenarioSpec spec = CsvTrace(dir, reqs);
  spec.pools[0].replicas = 200;
  RunOptions ro;
  ro.timeseries_max_rows = 20000;  // 100 samples of 200 replicas
  Outcome o = RunSpecWith(spec, ro, MetricsOptions(), "ts_large_fleet_run", /*timeseries=*/true);
  fs::remove_all(dir);
  EXPECT_EQ(o.summary.completed, 2000);
  EXPECT_LE(o.report.timeseries_rows, 20000);
  EXPECT_FALSE(o.report.timeseries_stopped_s);
  // Sample times: no gap longer than the last interval, up to the end.
  std::set<double> times;
  for (const auto& r : CsvRows(o.timeseries_csv)) times.insert(std::stod(r[0]));
  const double last_interval = o.report.timeseries_intervals.back().second;
  double prev = 0;
  for (double t : times) {
    EXPECT_LE(t - prev, last_interval + 1e-9) << "no samples between " << prev << " and " << t;
    prev = t;
  }
  EXPECT_NEAR(prev, TimeToSeconds(MaxFinish(o.requests_csv)), 1e-9);
}

// duration_s just after the last completion: the run ended on its own, so
// the window is exact and the drain is known (a pending sampling tick is no
// work left).
TEST(Figures, DurationJustPastTheLastCompletionKeepsTheExactWindow) {
  Outcome full = RunSpec(FixedLengths(10, 20, 100, 20), 1, "duration_full");
  const SimTime end = MaxFinish(full.requests_csv);
  ScenarioSpec spec = FixedLengths(10, 20, 100, 20);
  spec.duration_s = TimeToSeconds(end) + 0.4;
  Outcome o = RunSpec(spec, 1, "duration_past");
  EXPECT_EQ(o.summary.completed, 20);
  EXPECT_EQ(SecondsToTime(o.summary.window_s), end);
  ASSERT_TRUE(o.summary.drain_s);
  for (const std::string& w : o.summary.warnings)
    EXPECT_EQ(w.find("duration_s"), std::string::npos) << o.summary_json;
}

TEST(Figures, AbsurdSpanWarnsAndFinishesWithFewRows) {
  const fs::path dir = TempDir("absurd_trace");
  // Three requests, weeks apart.
  ScenarioSpec spec = CsvTrace(dir, {{0, 100, 10}, {20 * 86400.0, 100, 10}, {40 * 86400.0, 100, 10}});
  Outcome o = RunSpecWith(spec, RunOptions(), MetricsOptions(), "absurd", true);
  fs::remove_all(dir);
  EXPECT_EQ(o.summary.completed, 3);
  bool warned = false;
  for (const std::string& w : o.summary.warnings) warned = warned || w.find("days") != std::string::npos;
  EXPECT_TRUE(warned) << o.summary_json;
  EXPECT_LT(CountLinesOf(o.timeseries_csv), 20);  // idle weeks write no rows
}

TEST(Figures, TraceOfALargeRunKeepsTheRequestedSample) {
  ScenarioSpec spec = LoadBundled("quickstart");
  spec.traffic.max_requests = 300;
  const fs::path dir = TempDir("trace_sample");
  std::unique_ptr<ScenarioRun> run;
  ASSERT_TRUE(ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &run).ok());
  MetricsOptions mo;
  mo.requests_csv = (dir / "requests.csv").string();
  mo.trace_json = (dir / "trace.json").string();
  mo.trace_requests = 50;
  RunReport report;
  ASSERT_TRUE(run->Run(mo, 3, nullptr, &report).ok());
  EXPECT_TRUE(report.trace_sampled);
  SimTime arrival_50 = -1;
  for (const auto& r : CsvRows(ReadFile(dir / "requests.csv")))
    if (r[0] == "50") arrival_50 = ParseSeconds(r[1]);
  ASSERT_GE(arrival_50, 0);
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir / "trace.json"));
  fs::remove_all(dir);
  std::set<int64_t> ids;
  for (const auto& e : j.at("traceEvents")) {
    if (e.at("ph") == "b") ids.insert(e.at("id").get<int64_t>());
    if (e.at("ph") == "X") {
      EXPECT_LT(e.at("ts").get<double>() * 1e3, static_cast<double>(arrival_50) + 1);
    }
  }
  EXPECT_EQ(ids.size(), 50u);
  EXPECT_EQ(*ids.rbegin(), 49);
}

// Closed-loop clients: never more than `users` requests in flight, the
// first `users` sent at 0, and every later one exactly a think time after
// some earlier request's last token reached its client.
TEST(Figures, ClosedLoopClientsSendWhenTheirResponseArrives) {
  ScenarioSpec spec = FixedLengths(1, 30, 300, 40);
  spec.traffic.closed_loop = ClosedLoopSpec{3, 0.5, false};
  spec.traffic.rate_per_s = 0;
  Outcome o = RunSpec(spec, 1, "closed_loop");
  ASSERT_EQ(o.summary.completed, 30);
  std::vector<SimTime> arrivals, finishes;
  for (const auto& r : CsvRows(o.requests_csv)) {
    arrivals.push_back(ParseSeconds(r[1]));
    finishes.push_back(ParseSeconds(r[4]));
  }
  std::multiset<SimTime> sends_due;  // finish + think of every request
  for (SimTime f : finishes) sends_due.insert(f + SecondsToTime(0.5));
  int at_zero = 0;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    if (arrivals[i] == 0) {
      ++at_zero;
      continue;
    }
    auto it = sends_due.find(arrivals[i]);
    ASSERT_NE(it, sends_due.end()) << "request " << i << " arrived at " << arrivals[i] << " ns, after no response";
    sends_due.erase(it);
    int in_flight = 0;
    for (size_t j = 0; j < arrivals.size(); ++j) in_flight += arrivals[j] <= arrivals[i] && finishes[j] > arrivals[i];
    EXPECT_LE(in_flight, 3);
  }
  EXPECT_EQ(at_zero, 3);
  // Exponential think times: still at most 3 in flight, same count, and the
  // run is reproducible.
  spec.traffic.closed_loop->exponential = true;
  Outcome a = RunSpec(spec, 7, "closed_loop_exp"), b = RunSpec(spec, 7, "closed_loop_exp2");
  EXPECT_EQ(a.summary.completed, 30);
  EXPECT_EQ(a.requests_csv, b.requests_csv);
  EXPECT_NE(a.requests_csv, o.requests_csv);
}

// Closed loop with duration_s as the only limit: it runs and is cut there
// (clients still thinking count as work left); and clients whose requests
// are all refused at once move the clock (1 ms apart) instead of spinning
// in one instant.
TEST(Figures, ClosedLoopStopsAtDurationAndRefusalsMoveTheClock) {
  ScenarioSpec spec = FixedLengths(1, 1, 300, 40);
  spec.traffic.max_requests = std::numeric_limits<int64_t>::max();
  spec.traffic.closed_loop = ClosedLoopSpec{4, 2.0, false};
  spec.duration_s = 20;
  Outcome o = RunSpec(spec, 1, "closed_duration");
  EXPECT_GT(o.summary.completed, 10);
  EXPECT_NEAR(o.summary.window_s, 20.0, 1e-9);
  spec.pools[0].max_model_len = 100;  // every prompt of 300 tokens is refused
  spec.traffic.closed_loop = ClosedLoopSpec{2, 0.0, false};
  spec.duration_s = 1;
  o = RunSpec(spec, 1, "closed_refused");
  EXPECT_EQ(o.summary.completed, 0);
  EXPECT_GE(o.summary.rejected, 1900);  // 2 clients, one try per ms for 1 s
  EXPECT_LE(o.summary.rejected, 2002);
}

// kv_cache_dtype fp8 (vLLM's --kv-cache-dtype): one byte per element where
// the model's bf16 takes two, so the same memory holds twice the KV blocks
// (to the block: the budget is the same bytes).
TEST(Figures, Fp8KvCacheHoldsTwiceTheBlocks) {
  ScenarioSpec spec = FixedLengths(1, 1, 100, 10);
  std::unique_ptr<ScenarioRun> bf16, fp8;
  ASSERT_TRUE(ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &bf16).ok());
  spec.pools[0].kv_cache_dtype = "fp8";
  ASSERT_TRUE(ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &fp8).ok());
  const int64_t a = bf16->pools()[0].memory.kv_blocks, b = fp8->pools()[0].memory.kv_blocks;
  EXPECT_GT(a, 1000);
  EXPECT_NEAR(static_cast<double>(b), 2.0 * static_cast<double>(a), 1.0);
}

TEST(Figures, OverLongRequestsAreTruncatedWhenThePoolSaysSo) {
  ScenarioSpec spec = FixedLengths(10, 6, 1000, 100);
  spec.pools[0].max_model_len = 512;
  spec.pools[0].over_max_model_len = "truncate";
  Outcome o = RunSpec(spec, 1, "truncate");
  EXPECT_EQ(o.summary.completed, 6);
  EXPECT_EQ(o.summary.truncated, 6);
  std::map<std::string, int64_t> reasons(o.summary.reasons.begin(), o.summary.reasons.end());
  EXPECT_EQ(reasons["truncated_to_max_model_len"], 6);
  for (const auto& r : CsvRows(o.requests_csv)) {
    EXPECT_EQ(r[5], "412");  // 512 - 100 output tokens
    EXPECT_EQ(r[7], "100");
    EXPECT_EQ(r[11], "truncated_to_max_model_len");
  }
  spec.pools[0].over_max_model_len = "reject";
  Outcome rej = RunSpec(spec, 1, "reject");
  EXPECT_EQ(rej.summary.rejected, 6);
}

TEST(Sha256, MatchesFips180Vectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 h;  // a million 'a', fed in uneven pieces
  const std::string chunk(997, 'a');
  int64_t left = 1000000;
  while (left > 0) {
    const int64_t n = std::min<int64_t>(left, static_cast<int64_t>(chunk.size()));
    h.Update(chunk.data(), static_cast<size_t>(n));
    left -= n;
  }
  EXPECT_EQ(h.HexDigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

}  // namespace
}  // namespace fleetsim
