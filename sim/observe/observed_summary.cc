#include "sim/observe/observed_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <utility>

#include "base/percentile.h"

namespace fleetsim {
namespace {

LatencyStats Describe(std::vector<double> v) {
  if (v.empty()) return {};
  const SampleSummary s = Summarize(&v);
  return {s.mean, s.p50, s.p90, s.p99};
}

std::string Printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string Printf(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

// "%9.2f" of a time in ms, or a dash.
std::string Ms(const std::optional<double>& s) { return s ? Printf("%9.2f", *s * 1e3) : std::string("        -"); }

std::string Load(const ObservedRun& run) {
  std::string s = LoadModeName(run.mode);
  if (run.mode == LoadMode::kOpen && run.request_rate_per_s) {
    s += std::isinf(*run.request_rate_per_s) ? ", all sent at once" : Printf(" at %g req/s", *run.request_rate_per_s);
  }
  if (run.max_concurrency) {
    s += Printf(run.mode == LoadMode::kClosed ? ", concurrency %d" : ", at most %d in flight", *run.max_concurrency);
  }
  return s;
}

}  // namespace

ObservedStats ComputeObservedStats(const ObservedRun& run) {
  ObservedStats st;
  st.requests = static_cast<int64_t>(run.requests.size());
  if (run.requests.empty()) return st;
  std::vector<double> ttft, tpot, itl, e2e;
  std::vector<std::pair<double, int>> edges;  // (time, +1 send / -1 last token)
  double first = run.requests.front().start_s, last_send = first, last_end = first;
  double input_sum = 0, output_sum = 0;
  for (const ObservedRequest& r : run.requests) {
    first = std::min(first, r.start_s);
    last_send = std::max(last_send, r.start_s);
    if (!r.ok) {
      ++st.failed;
      continue;
    }
    ++st.ok;
    input_sum += r.input_tokens;
    output_sum += r.output_tokens;
    st.max_input_tokens = std::max(st.max_input_tokens, r.input_tokens);
    st.max_output_tokens = std::max(st.max_output_tokens, r.output_tokens);
    if (r.ttft_s) ttft.push_back(*r.ttft_s);
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    if (r.e2e_s) {
      e2e.push_back(*r.e2e_s);
      last_end = std::max(last_end, r.start_s + *r.e2e_s);
      edges.emplace_back(r.start_s, +1);
      edges.emplace_back(r.start_s + *r.e2e_s, -1);
      if (r.ttft_s && r.output_tokens >= 2) tpot.push_back((*r.e2e_s - *r.ttft_s) / (r.output_tokens - 1));
    }
  }
  st.span_s = last_send - first;
  if (st.requests > 1 && st.span_s > 0) st.sent_rate_per_s = static_cast<double>(st.requests - 1) / st.span_s;
  // Half-open [send, last token): a completion at the instant of a send
  // frees its slot first.
  std::sort(edges.begin(), edges.end());
  int64_t in_flight = 0;
  for (const auto& e : edges) st.max_in_flight = std::max(st.max_in_flight, in_flight += e.second);
  st.ttft = Describe(std::move(ttft));
  st.tpot = Describe(std::move(tpot));
  st.itl = Describe(std::move(itl));
  st.e2e = Describe(std::move(e2e));
  if (st.ok > 0) {
    st.mean_input_tokens = input_sum / static_cast<double>(st.ok);
    st.mean_output_tokens = output_sum / static_cast<double>(st.ok);
    if (last_end > first) {
      st.window_s = last_end - first;
      st.request_throughput_per_s = static_cast<double>(st.ok) / *st.window_s;
      st.output_throughput_tokens_per_s = output_sum / *st.window_s;
    }
  }
  return st;
}

std::string FormatObservedRun(const ObservedRun& run) {
  const ObservedStats st = ComputeObservedStats(run);
  const ObservedAggregates& f = run.file_aggregates;
  std::string s;
  s += "source    " + run.source_file + (run.run_label.empty() ? "" : " (" + run.run_label + ")") + "\n";
  s += "tool      " + run.tool + (run.tool_version.empty() ? "" : " " + run.tool_version);
  if (!run.backend.empty()) s += ", backend " + run.backend;
  s += ", model " + (run.model.empty() ? std::string("not recorded") : run.model) + "\n";
  s += "load      " + Load(run) + "\n";
  if (!run.per_request_timing) {
    s += "requests  no per-request timing: the file's aggregates only";
    if (f.completed) s += Printf(" (it counts %lld completed", static_cast<long long>(*f.completed));
    if (f.completed && f.failed) s += Printf(", %lld failed", static_cast<long long>(*f.failed));
    if (f.completed) s += ")";
    s += "\n";
  } else {
    s += Printf("requests  %lld (%lld ok, %lld failed), sent over %.3f s", static_cast<long long>(st.requests),
                static_cast<long long>(st.ok), static_cast<long long>(st.failed), st.span_s);
    if (st.sent_rate_per_s) s += Printf(" at %.3g req/s", *st.sent_rate_per_s);
    s += Printf(", at most %lld in flight\n", static_cast<long long>(st.max_in_flight));
    if (st.mean_input_tokens) {
      s += "tokens    input ";
      s += run.input_tokens_recorded ? Printf("mean %.1f, max %d", *st.mean_input_tokens, st.max_input_tokens)
                                     : std::string("not recorded");
      s += Printf("; output mean %.1f, max %d%s\n", *st.mean_output_tokens, st.max_output_tokens,
                  run.output_tokens_exact ? "" : " (counted in chunks)");
    }
  }
  s += "latency (ms)   from the requests       as the file states\n";
  s += "         median      p90      p99    median      p90      p99\n";
  const std::pair<const char*, std::pair<const LatencyStats*, const LatencyStats*>> rows[] = {
      {"TTFT", {&st.ttft, &f.ttft}}, {"TPOT", {&st.tpot, &f.tpot}}, {"ITL", {&st.itl, &f.itl}}, {"E2E", {&st.e2e, &f.e2e}}};
  for (const auto& [name, pair] : rows) {
    const LatencyStats& a = *pair.first;
    const LatencyStats& b = *pair.second;
    s += Printf("  %-4s", name) + Ms(a.median_s) + Ms(a.p90_s) + Ms(a.p99_s) + " " + Ms(b.median_s) + Ms(b.p90_s) +
         Ms(b.p99_s) + "\n";
  }
  if (st.request_throughput_per_s || f.request_throughput_per_s) {
    s += "throughput";
    if (st.request_throughput_per_s) {
      s += Printf("  %.3g req/s, %.4g output tok/s over %.3f s", *st.request_throughput_per_s,
                  *st.output_throughput_tokens_per_s, *st.window_s);
    }
    if (f.request_throughput_per_s) {
      s += Printf("%s file: %.3g req/s", st.request_throughput_per_s ? ";" : " ", *f.request_throughput_per_s);
      if (f.output_throughput_tokens_per_s) s += Printf(", %.4g output tok/s", *f.output_throughput_tokens_per_s);
      if (f.duration_s) s += Printf(" over %.3f s", *f.duration_s);
    }
    s += "\n";
  }
  if (!run.notes.empty()) {
    s += "notes\n";
    for (const std::string& n : run.notes) s += "  " + n + "\n";
  }
  return s;
}

std::string FormatObservedRunTable(const std::vector<ObservedRun>& runs) {
  std::string s = Printf("%zu runs in %s (--run N shows one):\n", runs.size(),
                         runs.empty() ? "" : runs.front().source_file.c_str());
  s += "    N  run              load                                  ok  failed  TTFT p50  TPOT p50 (ms)\n";
  for (size_t i = 0; i < runs.size(); ++i) {
    const ObservedRun& run = runs[i];
    const ObservedStats st = ComputeObservedStats(run);
    const LatencyStats& ttft = run.per_request_timing ? st.ttft : run.file_aggregates.ttft;
    const LatencyStats& tpot = run.per_request_timing ? st.tpot : run.file_aggregates.tpot;
    s += Printf("  %3zu  %-16s %-36s", i, run.run_label.c_str(), Load(run).c_str());
    s += run.per_request_timing
             ? Printf(" %4lld  %6lld", static_cast<long long>(st.ok), static_cast<long long>(st.failed))
             : std::string("   aggregates ");
    s += ' ';
    s += Ms(ttft.median_s);
    s += ' ';
    s += Ms(tpot.median_s);
    s += '\n';
  }
  return s;
}

}  // namespace fleetsim
