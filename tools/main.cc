// fleetsim: the command-line front end.
//
//   fleetsim run SCENARIO.json [--out DIR] [--seed N] [--set KEY=VALUE]... [--trace] [--trace-requests N]
//                [--timeseries-interval S] [--quiet]
//   fleetsim validate SCENARIO.json
//   fleetsim list
//   fleetsim calibrate --backend cpu|cuda --model NAME [--tp 1,2,4] --out PROFILE.json [--report DIR]
//                      [--grid quick|full] [--reps N] [--warmup N] [--no-flush] [--no-links] [--device NAME]
//   fleetsim calibrate gemm --backend cpu|cuda --shapes MxNxK[,...] [--dtype bf16] [--reps N] [--json FILE]
//   fleetsim calibrate import-vidur --compute FILE [--attention FILE] --network FILE[,FILE] --out PROFILE.json
//                                   [--model NAME] [--device NAME]
//   fleetsim fit OBSERVED... [--scenario S.json] [--split NAME] --out ENGINE.json [--report DIR] [--format F] [--name N]
//   fleetsim observe FILE [--format vllm|aiperf|genaiperf|guidellm|csv] [--allow-aggregates] [--run N]
//
// Exit codes: 0 success; 2 bad input (scenario, trace, names, impossible
// configuration) with a one-line message naming the file and JSON path or
// line; 1 anything else.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <limits>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "calibrate/calibrate.h"
#include "calibrate/mpi_transport.h"
#include "calibrate/vidur_import.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "sim/metrics/text_out.h"
#include "base/file.h"
#include "sim/fit/engine_fit.h"
#include "sim/fit/fit_report.h"
#include "sim/fit/measurement_set.h"
#include "sim/fit/replay_observed.h"
#include "sim/observe/observed_summary.h"
#include "sim/observe/read_observed.h"
#include "sim/plan/plan_spec.h"
#include "sim/plan/planner.h"
#include "sim/runner/run.h"
#include "sim/scenario/parse.h"
#include "sim/traffic/scan_traffic.h"
#include "sim/live/live_mode.h"
#include "tools/live_diff.h"
#include "tools/output_dir.h"
#include <nlohmann/json.hpp>

#include "tools/report/csv.h"
#include "tools/report/report.h"

namespace fleetsim {
namespace {

constexpr int kExitInput = 2;

// Set by SIGINT/SIGTERM: a run stops at its next slice and leaves its output
// folder as it was. The one process-wide variable: a signal handler can
// reach nothing else.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void OnStopSignal(int sig) { g_stop_signal = sig; }

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// 128 + signal, as a shell reports a process killed by it.
int InterruptedExit(const std::string& dir) {
  std::fprintf(stderr, "fleetsim: interrupted by signal %d; \"%s\" left as it was\n",
               static_cast<int>(g_stop_signal), dir.c_str());
  return 128 + static_cast<int>(g_stop_signal);
}

// ---- strict numbers on the command line ----
//
// CLI11 2.1 converts integers with strtoull/strtoll in base 0: "-1" given to
// an unsigned option wraps to 18446744073709551615, a value past the type's
// range saturates unnoticed, " 7" is accepted and "010" is octal. Every
// numeric option therefore passes IntegerIn first: decimal digits only (no
// sign, space, base prefix, fraction or exponent), within [lo, hi]. The
// accepted text is rewritten in canonical form, so CLI11's own conversion
// then reads exactly that value.

// `text` as a decimal integer of digits only; false when it is anything
// else or does not fit a uint64_t.
bool ParseDecimal(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  for (char c : text)
    if (c < '0' || c > '9') return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string Quoted(const std::string& s) {
  return "\"" + (s.size() > 40 ? s.substr(0, 37) + "..." : s) + "\"";
}

CLI::Validator IntegerIn(uint64_t lo, uint64_t hi) {
  const std::string range = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        uint64_t v = 0;
        if (!ParseDecimal(s, &v) || v < lo || v > hi) return "expected " + range + ", got " + Quoted(s);
        s = std::to_string(v);
        return "";
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

// A finite decimal number in [lo, hi]: CLI::Range lets "nan" and "inf"
// through.
CLI::Validator NumberIn(double lo, double hi) {
  char range[96];
  std::snprintf(range, sizeof range, "a number in [%g, %g]", lo, hi);
  const std::string expected = range;
  return CLI::Validator(
      [lo, hi, expected](std::string& s) -> std::string {
        double v = 0;
        const char* end = s.data() + s.size();
        auto [ptr, ec] = std::from_chars(s.data(), end, v);
        if (s.empty() || ec != std::errc() || ptr != end || !std::isfinite(v) || v < lo || v > hi)
          return "expected " + expected + ", got " + Quoted(s);
        return "";
      },
      "NUMBER in " + std::string(range + 12));
}

// Bounds of the numeric options. A seed is any non-negative int64, as in a
// scenario's "seed"; repetition counts stay where a calibration finishes in
// hours, not years; tp as a scenario's pool tp.
constexpr uint64_t kMaxSeed = static_cast<uint64_t>(INT64_MAX);
constexpr uint64_t kMaxReps = 100000;
constexpr uint64_t kMaxCudaDevice = 1023;
constexpr uint64_t kMaxCpuRanks = 1024;
constexpr uint64_t kMaxTp = 1024;
// A GEMM dimension; and the largest operand, in elements (2^31: 4 GiB in
// bf16), so that --shapes cannot ask for an allocation that cannot succeed.
constexpr uint64_t kMaxGemmDim = 1 << 20;
constexpr uint64_t kMaxGemmOperandElements = uint64_t{1} << 31;

int Fail(const Status& s) {
  std::fprintf(stderr, "fleetsim: %s\n", s.message().c_str());
  return kExitInput;
}

Status LoadAndBuild(const std::string& path, const std::vector<std::string>& overrides, const Catalog& catalog,
                    const Policies& policies, std::unique_ptr<ScenarioRun>* run) {
  ScenarioSpec spec;
  FLEETSIM_RETURN_IF_ERROR(LoadScenarioFile(path, &spec, overrides));
  return ScenarioRun::Build(spec, catalog, policies, run);
}

// Creates `dir` (and its parents).
Status MakeOutputDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Invalid("cannot create output folder \"" + dir + "\": " + ec.message());
  return Status::Ok();
}

// For commands that measure first and write last (calibrate): fails, naming
// the folder, unless `dir` exists or can be created (parents included) and a
// file can be created in it. The probe file is removed at once.
Status CheckWritableFolder(const std::string& dir) {
  FLEETSIM_RETURN_IF_ERROR(MakeOutputDir(dir));
  const std::string probe =
      (std::filesystem::path(dir) / (".fleetsim-write-check-" + std::to_string(getpid()))).string();
  const int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return Status::Invalid("cannot write in output folder \"" + dir + "\": " + std::strerror(errno));
  close(fd);
  std::remove(probe.c_str());
  return Status::Ok();
}

// The same for an output file given by `option`: not a folder, its folder
// writable (created if need be), and the file itself writable if it exists.
Status CheckOutputFile(const std::string& option, const std::string& path) {
  const std::string where = option + " \"" + path + "\": ";
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status::Invalid(where + "is a folder; give the file to write");
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  FLEETSIM_RETURN_IF_ERROR(CheckWritableFolder(parent.empty() ? "." : parent.string()).WithPrefix(where));
  if (std::filesystem::exists(path, ec) && access(path.c_str(), W_OK) != 0)
    return Status::Invalid(where + "cannot write it: " + std::strerror(errno));
  return Status::Ok();
}

// Writes `text` to `path` atomically: into a temporary file beside it, then
// renamed over it, so a failed or interrupted command never leaves a
// half-written file (or a broken previous one).
Status WriteFile(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  std::ofstream f(tmp, std::ios::binary);
  f << text;
  f.close();
  if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::Invalid("cannot write \"" + path + "\": " + why);
  }
  return Status::Ok();
}

// The default output folder: out/ and the scenario file's name without .json.
std::string DefaultOutDir(const std::string& scenario_path) {
  return "out/" + std::filesystem::path(scenario_path).stem().string();
}

// Output options a user sets on the command line.
struct OutputChoices {
  bool trace = false;
  int64_t trace_requests = 100000;  // the sample a trace keeps on larger runs
  double timeseries_interval_s = 0;  // 0: automatic
};

// Runs `run` with its outputs in `dir` (a folder being written, not yet in
// place). Fills `report`.
// The files every run folder holds (fleetsim run, a plan's chosen/).
MetricsOptions RunFolderFiles(const std::string& dir) {
  MetricsOptions mo;
  mo.requests_csv = dir + "/requests.csv";
  mo.timeseries_csv = dir + "/timeseries.csv";
  mo.itl_csv = dir + "/itl.csv";
  return mo;
}

Status RunInto(ScenarioRun& run, const std::string& dir, uint64_t seed, const OutputChoices& choices,
               const std::function<void(const Progress&)>& progress, RunReport* report,
               ExecutionMode* execution = nullptr, const TrafficSpec* traffic = nullptr) {
  MetricsOptions mo = RunFolderFiles(dir);
  if (choices.trace) {
    mo.trace_json = dir + "/trace.json";
    mo.trace_requests = choices.trace_requests;
  }
  RunOptions ro;
  ro.seed = seed;
  ro.timeseries_interval = choices.timeseries_interval_s > 0 ? SecondsToTime(choices.timeseries_interval_s) : 0;
  ro.stop = &g_stop_signal;
  ro.execution = execution;
  ro.traffic = traffic;
  FLEETSIM_RETURN_IF_ERROR(run.Run(mo, ro, progress, report));
  FLEETSIM_RETURN_IF_ERROR(WriteFile(dir + "/summary.json", SummaryToJson(report->summary)));
  JsonWriter w;
  w.BeginObject();
  w.Key("wall_s").Double(report->wall_s);
  w.Key("events").Int(static_cast<int64_t>(report->events));
  w.Key("events_per_s").Double(report->wall_s > 0 ? static_cast<double>(report->events) / report->wall_s : 0);
  w.Key("requests_per_wall_s")
      .Double(report->wall_s > 0 ? static_cast<double>(report->summary.arrived) / report->wall_s : 0);
  w.Key("peak_rss_mb").Double(static_cast<double>(report->peak_rss_kb) / 1024.0);
  w.Key("latency_percentiles")
      .String(report->summary.exact_percentiles
                  ? "exact (interpolated between order statistics)"
                  : "log histogram, relative error at most 0.4% (more than 1,000,000 measured requests)");
  w.Key("timeseries").BeginObject();
  w.Key("rows").Int(report->timeseries_rows);
  w.Key("intervals").BeginArray();
  for (const auto& [from, interval] : report->timeseries_intervals)
    w.BeginObject().Key("from_s").Double(from).Key("interval_s").Double(interval).EndObject();
  w.EndArray();
  if (report->timeseries_stopped_s) w.Key("stopped_at_s").Double(*report->timeseries_stopped_s);
  w.EndObject();
  if (choices.trace) {
    w.Key("trace").BeginObject();
    w.Key("sampled").Bool(report->trace_sampled);
    if (report->trace_sampled) {
      w.Key("requests").Int(choices.trace_requests);
      w.Key("sample").String("requests with id below " + std::to_string(choices.trace_requests) +
                             ", and iterations starting before the next request arrived");
    }
    w.EndObject();
  }
  w.EndObject();
  return WriteFile(dir + "/run.json", w.Finish());
}

// The traffic's own figures, so a user can scale a trace to a target rate
// without arithmetic, as lines of text. A trace is read through once
// (streamed), so a corrupt row anywhere in it is reported here.
Status TrafficFigures(const ScenarioSpec& spec, uint64_t seed, std::string* out) {
  const TrafficSpec& t = spec.traffic;
  char buf[512];
  if (t.kind == TrafficSpec::Kind::kGenerator) {
    if (t.closed_loop) {
      std::snprintf(buf, sizeof buf, "  traffic   closed loop: %lld clients, think time %.6g s (%s)",
                    static_cast<long long>(t.closed_loop->users), t.closed_loop->think_time_s,
                    t.closed_loop->exponential ? "exponential" : "fixed");
    } else {
      std::snprintf(buf, sizeof buf, "  traffic   generator: %.6g %s per second", t.rate_per_s,
                    t.sessions ? "sessions" : "requests");
    }
    *out = buf;
    if (t.max_requests < std::numeric_limits<int64_t>::max()) {
      std::snprintf(buf, sizeof buf, ", %lld requests", static_cast<long long>(t.max_requests));
      *out += buf;
    }
    if (std::isfinite(t.max_arrival_s)) {
      std::snprintf(buf, sizeof buf, ", arrivals until %.6g s", t.max_arrival_s);
      *out += buf;
    }
    *out += "\n";
    return Status::Ok();
  }
  TrafficStats st;
  FLEETSIM_RETURN_IF_ERROR(ScanTraffic(t, Rng::ForStream(seed, 0, "traffic"), &st).WithPrefix(spec.file + ": "));
  *out = "  trace     " + t.path;
  std::snprintf(buf, sizeof buf, ": %lld requests over %.1f s, %.4g requests per second on average",
                static_cast<long long>(st.trace_requests), st.trace_span_s, st.trace_mean_rate_per_s);
  *out += buf;
  if (st.skipped_rows > 0) {
    std::snprintf(buf, sizeof buf, " (%lld rows skipped)", static_cast<long long>(st.skipped_rows));
    *out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "\n  simulated %lld requests over %.1f s: %.4g per second in trace time, %.4g per second after "
                "rate_scale %.6g\n",
                static_cast<long long>(st.requests), st.span_s, st.trace_rate_per_s, st.rate_per_s, t.rate_scale);
  *out += buf;
  return Status::Ok();
}

int CmdRun(const std::string& path, const std::vector<std::string>& overrides, std::string out_dir,
           std::optional<uint64_t> seed, const OutputChoices& choices, bool quiet, const Catalog& catalog,
           const Policies& policies) {
  std::unique_ptr<ScenarioRun> run;
  Status s = LoadAndBuild(path, overrides, catalog, policies, &run);
  if (!s.ok()) return Fail(s);
  if (out_dir.empty()) out_dir = DefaultOutDir(path);
  std::unique_ptr<OutputDir> out;
  s = OutputDir::Begin(out_dir, &out);
  if (!s.ok()) return Fail(s);
  if (!quiet) {
    std::string traffic;
    s = TrafficFigures(run->spec(), seed.value_or(run->spec().seed), &traffic);
    if (!s.ok()) return Fail(s);
    std::fputs(traffic.c_str(), stdout);
  }

  const bool show_progress = !quiet && isatty(STDERR_FILENO);
  bool printed_progress = false;
  auto progress = [&](const Progress& p) {
    if (!show_progress || p.wall_s < 1.0) return;
    std::fprintf(stderr, "\r  simulated %.0f s  arrived %lld  finished %lld  wall %.1f s   ", TimeToSeconds(p.now),
                 static_cast<long long>(p.arrived), static_cast<long long>(p.finished), p.wall_s);
    printed_progress = true;
  };
  RunReport report;
  s = RunInto(*run, out->path(), seed.value_or(run->spec().seed), choices, progress, &report);
  if (printed_progress) std::fprintf(stderr, "\n");
  if (g_stop_signal) return InterruptedExit(out_dir);
  if (!s.ok()) return Fail(s);  // `out` goes away: DIR stays as it was
  s = out->Commit();
  if (!s.ok()) return Fail(s);

  if (!quiet) {
    const std::string& name = run->spec().name.empty() ? path : run->spec().name;
    std::printf("fleetsim run %s  (seed %llu)\n", name.c_str(),
                static_cast<unsigned long long>(seed.value_or(run->spec().seed)));
    std::fputs(FormatSummaryTable(report.summary).c_str(), stdout);
    std::printf("wall        %.2f s  %.0f events/s  peak RSS %.0f MB\n", report.wall_s,
                report.wall_s > 0 ? static_cast<double>(report.events) / report.wall_s : 0.0,
                static_cast<double>(report.peak_rss_kb) / 1024.0);
    std::printf("outputs     %s/{summary.json,requests.csv,timeseries.csv,itl.csv,run.json%s}\n", out_dir.c_str(),
                choices.trace ? ",trace.json" : "");
    if (report.trace_sampled)
      std::printf("trace       a sample: the first %lld requests and the iterations before the next arrived "
                  "(--trace-requests sets it)\n",
                  static_cast<long long>(choices.trace_requests));
  } else {
    for (const std::string& m : report.summary.warnings) std::fprintf(stderr, "warning: %s\n", m.c_str());
  }
  return 0;
}

// `run --compare schedulers`: the scenario once per registered scheduler,
// every pool switched to it, side by side.
// A CSV field in quotes, its quotes doubled (RFC 4180).
std::string CsvQuoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// A compare table's figure: undefined ones (nothing measured) print as "-"
// and stay empty in the CSV.
std::string Cell(const std::optional<double>& v, const char* fmt) {
  if (!v) return "-";
  char b[64];
  std::snprintf(b, sizeof b, fmt, *v);
  return b;
}
std::string CsvCell(const std::optional<double>& v) {
  if (!v) return "";
  char b[64];
  std::snprintf(b, sizeof b, "%.6f", *v);
  return b;
}

// One variant of a `--compare` run. When it could not be built (`built`),
// a "cannot run" row goes into the table (name in `width` columns) and the
// CSV (`blank` commas, then the message), and it returns false.
// Otherwise it runs into OUT/<name>: true, with *exit_code set (>= 0) when
// the command must end (an error or an interrupt).
bool RunCompareVariant(const Status& built, ScenarioRun* run, const std::string& name, int width, int blank,
                       const OutputDir& out, const std::string& out_dir, uint64_t seed, const OutputChoices& choices,
                       std::string* table, std::string* csv, RunReport* report, int* exit_code) {
  if (!built.ok()) {
    char line[512];
    std::snprintf(line, sizeof line, "%-*s  cannot run: %s\n", width, name.c_str(), built.message().c_str());
    *table += line;
    *csv += name + std::string(blank, ',') + CsvQuoted(built.message()) + "\n";
    return false;
  }
  const std::string dir = out.path() + "/" + name;
  Status s = MakeOutputDir(dir);
  if (s.ok()) s = RunInto(*run, dir, seed, choices, nullptr, report);
  if (g_stop_signal) {
    *exit_code = InterruptedExit(out_dir);
  } else if (!s.ok()) {
    *exit_code = Fail(s);
  }
  return true;
}

// What every `--compare` command opens with: the scenario as written must
// be valid (*check), and the output folder is begun (*out; written under a
// temporary name until FinishCompare commits it). Returns -1 when all is
// set, else the exit code.
int BeginCompare(const std::string& path, const std::vector<std::string>& overrides, std::string* out_dir,
                 const Catalog& catalog, const Policies& policies, std::unique_ptr<ScenarioRun>* check,
                 std::unique_ptr<OutputDir>* out) {
  Status s = LoadAndBuild(path, overrides, catalog, policies, check);
  if (!s.ok()) return Fail(s);
  if (out_dir->empty()) *out_dir = DefaultOutDir(path);
  s = OutputDir::Begin(*out_dir, out);
  if (!s.ok()) return Fail(s);
  return -1;
}

// What it closes with: compare.csv written, the folder committed, and
// (unless quiet) the title, the table and where the outputs are printed.
int FinishCompare(OutputDir& out, const std::string& csv, bool quiet, const std::string& title,
                  const std::string& table, const std::string& outputs) {
  Status s = WriteFile(out.path() + "/compare.csv", csv);
  if (!s.ok()) return Fail(s);
  s = out.Commit();
  if (!s.ok()) return Fail(s);
  if (!quiet) {
    std::fputs((title + "\n").c_str(), stdout);
    std::fputs(table.c_str(), stdout);
    std::fputs(("outputs     " + outputs + "\n").c_str(), stdout);
  }
  return 0;
}

int CmdCompareSchedulers(const std::string& path, const std::vector<std::string>& overrides, std::string out_dir,
                         std::optional<uint64_t> seed, const OutputChoices& choices, bool quiet,
                         const Catalog& catalog, const Policies& policies) {
  std::unique_ptr<ScenarioRun> check;
  std::unique_ptr<OutputDir> out;
  if (const int e = BeginCompare(path, overrides, &out_dir, catalog, policies, &check, &out); e >= 0) return e;
  const ScenarioSpec base = check->spec();
  Status s;
  std::string table =
      "scheduler      TTFT p50   TTFT p99   TPOT p50   TPOT p99    ITL p99     req/s  out tok/s  preempt  note\n";
  std::string csv =
      "scheduler,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,tpot_p99_ms,itl_p99_ms,requests_per_s,output_tokens_per_s,"
      "preemptions,completed,unfinished,note\n";
  for (const std::string& name : policies.schedulers.Names()) {
    ScenarioSpec spec = base;
    std::string note;
    for (PoolSpec& p : spec.pools) {
      p.scheduler = name;
      // A scheduler brings its engine's overheads (SGLang's with sglang);
      // a user's own profile file stays.
      if (!EngineIsFile(p.engine)) p.engine.clear();
      if (!p.scheduler_options.empty()) {
        p.scheduler_options.clear();
        note = "scheduler_options dropped";
      }
    }
    std::unique_ptr<ScenarioRun> run;
    s = ScenarioRun::Build(spec, catalog, policies, &run);
    if (!s.ok() && name == "vllm_v0") {
      // V0 runs whole prompts: give it a budget of max_model_len, as a V0
      // deployment had to.
      for (PoolSpec& p : spec.pools) {
        const ModelSpec* m = catalog.FindModel(p.model);
        const int64_t len = p.max_model_len.value_or(m ? m->max_model_len : 0);
        if (p.max_num_batched_tokens.value_or(0) < len) p.max_num_batched_tokens = len;
      }
      note = "max_num_batched_tokens raised to max_model_len";
      s = ScenarioRun::Build(spec, catalog, policies, &run);
    }
    RunReport report;
    int exit_code = -1;
    if (!RunCompareVariant(s, run.get(), name, 12, 11, *out, out_dir, seed.value_or(spec.seed), choices, &table, &csv,
                           &report, &exit_code))
      continue;
    if (exit_code >= 0) return exit_code;
    char line[512];
    const Summary& r = report.summary;
    if (r.overloaded) note += std::string(note.empty() ? "" : "; ") + "overloaded";
    table += name + std::string(name.size() < 12 ? 12 - name.size() : 0, ' ');
    std::snprintf(line, sizeof line, " %9s  %9s  %9s  %9s  %9s  %8s  %9s  %7lld  %s\n",
                  Cell(r.ttft.p50, "%.1f").c_str(), Cell(r.ttft.p99, "%.1f").c_str(), Cell(r.tpot.p50, "%.2f").c_str(),
                  Cell(r.tpot.p99, "%.2f").c_str(), Cell(r.itl.p99, "%.2f").c_str(),
                  Cell(r.requests_per_s, "%.3f").c_str(), Cell(r.output_tokens_per_s, "%.1f").c_str(),
                  static_cast<long long>(r.preemptions), note.c_str());
    table += line;
    csv += name + "," + CsvCell(r.ttft.p50) + "," + CsvCell(r.ttft.p99) + "," + CsvCell(r.tpot.p50) + "," +
           CsvCell(r.tpot.p99) + "," + CsvCell(r.itl.p99) + "," + CsvCell(r.requests_per_s) + "," +
           CsvCell(r.output_tokens_per_s) + "," + std::to_string(r.preemptions) + "," +
           std::to_string(r.completed) + "," + std::to_string(r.unfinished) + "," + CsvQuoted(note) + "\n";
  }
  return FinishCompare(*out, csv, quiet, "fleetsim run " + path + " --compare schedulers  (latencies in ms)", table,
                       out_dir + "/compare.csv and " + out_dir + "/<scheduler>/" +
                           (choices.trace ? " (each with trace.json)" : ""));
}

// `run --compare routers`: the scenario once per registered router, side
// by side. The scenario's own router keeps its router_options; the others
// run with their defaults.
int CmdCompareRouters(const std::string& path, const std::vector<std::string>& overrides, std::string out_dir,
                      std::optional<uint64_t> seed, const OutputChoices& choices, bool quiet, const Catalog& catalog,
                      const Policies& policies) {
  std::unique_ptr<ScenarioRun> check;
  std::unique_ptr<OutputDir> out;
  if (const int e = BeginCompare(path, overrides, &out_dir, catalog, policies, &check, &out); e >= 0) return e;
  const ScenarioSpec base = check->spec();
  const uint64_t run_seed = seed.value_or(base.seed);
  Status s;
  std::string table =
      "router              TTFT p50   TTFT p99   TPOT p99   prefix hit  imbalance  attainment  note\n";
  std::string csv =
      "router,ttft_p50_ms,ttft_p99_ms,tpot_p50_ms,tpot_p99_ms,prefix_hit_rate,load_imbalance,busy_fraction_max,"
      "busy_fraction_mean,attainment,completed,rejected,unfinished,note\n";
  for (const std::string& name : policies.routers.Names()) {
    ScenarioSpec spec = base;
    std::string note;
    if (name == base.router) {
      note = "as the scenario gives it";
    } else {
      spec.router = name;
      if (!spec.router_options.empty()) note = "router_options dropped";
      spec.router_options.clear();
    }
    std::unique_ptr<ScenarioRun> run;
    s = ScenarioRun::Build(spec, catalog, policies, &run);
    RunReport report;
    int exit_code = -1;
    if (!RunCompareVariant(s, run.get(), name, 18, 13, *out, out_dir, run_seed, choices, &table, &csv, &report,
                           &exit_code))
      continue;
    if (exit_code >= 0) return exit_code;
    const Summary& r = report.summary;
    if (r.overloaded) note += std::string(note.empty() ? "" : "; ") + "overloaded";
    const std::optional<double> hit =
        r.prefix_caching ? std::optional<double>(r.prefix_hit_rate * 100) : std::nullopt;
    char line[512];
    std::snprintf(line, sizeof line, "%-18s %9s  %9s  %9s  %10s  %9s  %10s  %s\n", name.c_str(),
                  Cell(r.ttft.p50, "%.1f").c_str(), Cell(r.ttft.p99, "%.1f").c_str(), Cell(r.tpot.p99, "%.2f").c_str(),
                  Cell(hit, "%.1f%%").c_str(), Cell(r.load_imbalance, "%.3f").c_str(),
                  Cell(r.attainment ? std::optional<double>(*r.attainment * 100) : std::nullopt, "%.2f%%").c_str(),
                  note.c_str());
    table += line;
    csv += name + "," + CsvCell(r.ttft.p50) + "," + CsvCell(r.ttft.p99) + "," + CsvCell(r.tpot.p50) + "," +
           CsvCell(r.tpot.p99) + "," +
           CsvCell(r.prefix_caching ? std::optional<double>(r.prefix_hit_rate) : std::nullopt) + "," +
           CsvCell(r.load_imbalance) + "," + CsvCell(r.busy_fraction_max) + "," + CsvCell(r.busy_fraction_mean) +
           "," + CsvCell(r.attainment) + "," + std::to_string(r.completed) + "," + std::to_string(r.rejected) + "," +
           std::to_string(r.unfinished) + "," + CsvQuoted(note) + "\n";
  }
  return FinishCompare(*out, csv, quiet,
                       "fleetsim run " + path + " --compare routers  (seed " + std::to_string(run_seed) +
                           "; latencies in ms; imbalance: max/mean busy fraction)",
                       table, out_dir + "/compare.csv and " + out_dir + "/<router>/");
}

// `run --compare autoscalers`: the scenario against fixed peak capacity
// (every autoscaled pool at its max_replicas) and once per registered
// autoscaler. A policy other than the scenario's own runs with its
// defaults and the scenario's bounds and warm pool; `scheduled` gets the
// daily schedule planned from the traffic (ScenarioRun::DailySchedule).
int CmdCompareAutoscalers(const std::string& path, const std::vector<std::string>& overrides, std::string out_dir,
                          std::optional<uint64_t> seed, const OutputChoices& choices, bool quiet,
                          const Catalog& catalog, const Policies& policies) {
  std::unique_ptr<ScenarioRun> check;
  std::unique_ptr<OutputDir> out;  // removed again, untouched, on an early return
  if (const int e = BeginCompare(path, overrides, &out_dir, catalog, policies, &check, &out); e >= 0) return e;
  const ScenarioSpec base = check->spec();
  bool scaled = false;
  for (const PoolSpec& p : base.pools) scaled = scaled || p.autoscaler.has_value();
  if (!scaled)
    return Fail(Status::Invalid(path + ": fleet.pools: --compare autoscalers needs a pool with an \"autoscaler\""));
  const uint64_t run_seed = seed.value_or(base.seed);
  Status s;
  std::string table =
      "autoscaler      GPU-hours      cost $   $/hour  attainment  TTFT p99 ms  ups  downs  replicas  note\n";
  std::string csv =
      "autoscaler,gpu_hours,total_usd,usd_per_hour,attainment,ttft_p99_ms,tpot_p99_ms,scale_ups,scale_downs,"
      "replicas_min,replicas_max,replica_seconds,completed,failed,unfinished,note\n";
  std::vector<std::string> variants = {"fixed"};
  for (const std::string& name : policies.autoscalers.Names()) variants.push_back(name);
  for (const std::string& name : variants) {
    ScenarioSpec spec = base;
    std::string note;
    for (size_t pi = 0; pi < spec.pools.size(); ++pi) {
      PoolSpec& p = spec.pools[pi];
      if (!p.autoscaler) continue;
      if (name == "fixed") {
        p.replicas = p.autoscaler->max_replicas;
        p.autoscaler.reset();
        note = "peak capacity: max_replicas, always on";
        continue;
      }
      if (name == p.autoscaler->policy) {
        note = "as the scenario gives it";
        continue;
      }
      AutoscalerSpec a;
      a.path = p.autoscaler->path;
      a.policy = name;
      a.min_replicas = p.autoscaler->min_replicas;
      a.max_replicas = p.autoscaler->max_replicas;
      a.initial_replicas = p.autoscaler->initial_replicas;
      a.warm_pool = p.autoscaler->warm_pool;
      if (name == "scheduled") {
        s = check->DailySchedule(pi, run_seed, &a.schedule);
        if (!s.ok()) return Fail(s);
        note = "schedule planned from the traffic's hourly peaks";
      } else {
        note = "the policy's defaults";
      }
      p.autoscaler = a;
    }
    std::unique_ptr<ScenarioRun> run;
    s = ScenarioRun::Build(spec, catalog, policies, &run);
    RunReport report;
    int exit_code = -1;
    if (!RunCompareVariant(s, run.get(), name, 14, 15, *out, out_dir, run_seed, choices, &table, &csv, &report,
                           &exit_code))
      continue;
    if (exit_code >= 0) return exit_code;
    char line[512];
    const Summary& r = report.summary;
    const std::optional<RunFacts::Autoscaling>& a = r.autoscaling;
    const std::string replicas =
        a && a->replicas_max > 0 ? std::to_string(a->replicas_min) + "-" + std::to_string(a->replicas_max)
                                 : std::to_string(r.fleet_replicas);
    std::snprintf(line, sizeof line, "%-14s %10.2f  %10s  %7s  %10s  %11s  %4s  %5s  %8s  %s\n", name.c_str(),
                  r.gpu_hours, Cell(r.total_usd, "%.2f").c_str(), Cell(r.usd_per_hour, "%.2f").c_str(),
                  Cell(r.attainment ? std::optional<double>(*r.attainment * 100) : std::nullopt, "%.2f%%").c_str(),
                  Cell(r.ttft.p99, "%.1f").c_str(), a ? std::to_string(a->scale_ups).c_str() : "-",
                  a ? std::to_string(a->scale_downs).c_str() : "-", replicas.c_str(), note.c_str());
    table += line;
    csv += name + "," + CsvCell(r.gpu_hours) + "," + CsvCell(r.total_usd) + "," + CsvCell(r.usd_per_hour) + "," +
           CsvCell(r.attainment) + "," + CsvCell(r.ttft.p99) + "," + CsvCell(r.tpot.p99) + "," +
           (a ? std::to_string(a->scale_ups) : "") + "," + (a ? std::to_string(a->scale_downs) : "") + "," +
           (a ? std::to_string(a->replicas_min) : "") + "," + (a ? std::to_string(a->replicas_max) : "") + "," +
           (a ? CsvCell(a->replica_seconds) : "") + "," + std::to_string(r.completed) + "," + std::to_string(r.failed) +
           "," + std::to_string(r.unfinished) + "," + CsvQuoted(note) + "\n";
  }
  return FinishCompare(*out, csv, quiet,
                       "fleetsim run " + path + " --compare autoscalers  (seed " + std::to_string(run_seed) + ")",
                       table, out_dir + "/compare.csv and " + out_dir + "/<autoscaler>/");
}

int CmdValidate(const std::string& path, const std::vector<std::string>& overrides, const Catalog& catalog,
                const Policies& policies) {
  std::unique_ptr<ScenarioRun> run;
  Status s = LoadAndBuild(path, overrides, catalog, policies, &run);
  if (!s.ok()) return Fail(s);
  // Read the traffic through before saying "ok": a corrupt trace row is
  // not ok.
  std::string traffic;
  s = TrafficFigures(run->spec(), run->spec().seed, &traffic);
  if (!s.ok()) return Fail(s);
  std::printf("%s: ok\n", path.c_str());
  for (const PoolPlan& p : run->pools()) {
    std::printf("  pool %-12s %d x %s on %d x %s: KV cache %lld blocks of %d tokens, budget %lld tokens per "
                "iteration (%s), max %lld seqs%s\n",
                p.spec->name.c_str(), p.spec->replicas, p.model->name.c_str(), p.shard.gpus(), p.gpu->name.c_str(),
                static_cast<long long>(p.memory.kv_blocks), p.spec->block_size, static_cast<long long>(p.step.tokens),
                p.step.tokens_from, static_cast<long long>(p.step.seqs), p.usd_per_gpu_hour ? "" : ", no price");
    const size_t estimated = p.engine.TermsAt("estimate").size();
    std::printf("       engine %s: step CPU %.0f us + %.1f us per sequence, server %.0f us per request%s\n",
                p.engine_name.c_str(), p.engine.cpu_overhead_fixed_us, p.engine.cpu_overhead_per_seq_us,
                p.engine.server_request_us,
                estimated ? (", " + std::to_string(estimated) + " of " + std::to_string(p.engine.sources.size()) +
                             " terms estimated for " + p.gpu->name)
                                .c_str()
                          : "");
  }
  {
    // Placement and failures (docs/reliability.md).
    const FleetPlacement& fp = run->placement();
    const ScenarioSpec& sp = run->spec();
    std::printf("  nodes     %d of %d GPUs in %d racks, zones:", fp.nodes(), fp.gpus_per_node, fp.racks);
    for (const std::string& z : fp.zones) std::printf(" %s", z.c_str());
    std::printf("\n");
    for (const PoolPlan& p : run->pools())
      if (p.spec->spares > 0)
        std::printf("  pool %-12s N+%d: %d replicas required, %d deployed\n", p.spec->name.c_str(), p.spec->spares,
                    p.spec->replicas, p.spec->total_replicas());
    const ReliabilitySpec& r = sp.reliability;
    for (const FailureSpec& f : r.failures)
      std::printf("  failures  %s (%s), recovery %s\n", f.model.c_str(), f.path.c_str(), RecoveryName(r.recovery));
    // Scaling and pricing (docs/autoscaling.md).
    std::vector<double> capacity_rps(run->pools().size(), 0);
    bool scaled = false;
    for (const PoolPlan& p : run->pools()) scaled = scaled || p.spec->autoscaler.has_value();
    if (scaled) {
      TrafficStats st;
      s = ScanTraffic(sp.traffic, Rng::ForStream(sp.seed, 0, "traffic"), &st);
      if (!s.ok()) return Fail(s.WithPrefix(sp.file + ": "));
      for (size_t pi = 0; pi < run->pools().size(); ++pi)
        capacity_rps[pi] = run->capacity(pi).MaxRequestsPerS(st.mean_prompt_tokens, st.mean_output_tokens,
                                                             sp.ttft_slo_ms, sp.tpot_slo_ms);
    }
    for (size_t pi = 0; pi < run->pools().size(); ++pi) {
      const PoolPlan& p = run->pools()[pi];
      const std::optional<AutoscalerSpec>& as = p.spec->autoscaler;
      if (as)
        std::printf("  pool %-12s %s: %d to %d replicas (%d at 0 s), warm pool %d; one replica carries %.3g req/s at "
                    "the traffic's lengths and the SLO\n",
                    p.spec->name.c_str(), as->policy.c_str(), as->min_replicas, as->max_replicas,
                    as->initial_replicas, as->warm_pool, capacity_rps[pi]);
      if (p.spec->pricing_class == "spot")
        std::printf("  pool %-12s spot: %.3g reclaims per replica-hour, %.0f s notice, fallback %s\n",
                    p.spec->name.c_str(), p.spot_reclaims_per_hour, p.spot_notice_s,
                    p.spec->spot_fallback_on_demand ? "on_demand" : "none");
    }
    for (const GpuCapacitySpec& c : sp.gpu_capacity)
      std::printf("  capacity  at most %lld %s GPUs %s\n", static_cast<long long>(c.gpus), c.gpu.c_str(),
                  c.pricing_class.c_str());
    // The front door (docs/routing.md).
    std::printf("  router    %s%s\n", sp.router.c_str(),
                sp.router_options.empty() ? "" : (" (" + std::to_string(sp.router_options.size()) + " options)").c_str());
    const AdmissionSpec& ad = sp.admission;
    for (const PriorityClassSpec& c : ad.classes)
      std::printf("  class     %-12s priority %d, weight %g, queue timeout %s\n", c.name.c_str(), c.priority, c.weight,
                  c.queue_timeout_s ? (std::to_string(*c.queue_timeout_s) + " s").c_str() : "none");
    if (!ad.classes.empty() || ad.max_queue_per_replica > 0 || ad.max_queue > 0)
      std::printf("  admission queue order %s, at most %lld waiting per replica, %lld per model across the fleet "
                  "(0: no limit)\n",
                  ad.queue_order.c_str(), static_cast<long long>(ad.max_queue_per_replica),
                  static_cast<long long>(ad.max_queue));
    for (const TenantSpec& t : ad.tenants)
      std::printf("  tenant    %-12s %s\n", t.name.c_str(),
                  t.rate_per_s ? (std::to_string(*t.rate_per_s) + " req/s").c_str() : "no rate limit");
    for (const DegradationSpec& d : sp.degradation) {
      std::string when;
      auto add = [&when](const std::string& w) { when += (when.empty() ? "" : " or ") + w; };
      char num[64];
      if (d.queue_per_replica > 0) {
        std::snprintf(num, sizeof num, "%g", d.queue_per_replica);
        add(std::string("queue per replica >= ") + num);
      }
      if (d.predicted_ttft_ms > 0) {
        std::snprintf(num, sizeof num, "%g", d.predicted_ttft_ms);
        add(std::string("predicted TTFT >= ") + num + " ms");
      }
      if (d.saturated) add("every replica saturated");
      std::printf("  degrade   %s of class %s when %s\n", d.policy.c_str(),
                  d.class_name.empty() ? "(lowest)" : d.class_name.c_str(), when.c_str());
    }
    if (!sp.regions.empty()) {
      std::printf("  regions  ");
      for (const std::string& r : sp.regions) std::printf(" %s", r.c_str());
      std::printf("; balancer %s, %zu client locations\n", sp.global_balancer.policy.c_str(), sp.clients.size());
    }
    if (sp.canary) {
      std::printf("  canary    %s against %s from %g s:", sp.canary->pool.c_str(), sp.canary->baseline.c_str(),
                  sp.canary->start_s);
      for (const CanarySpec::Step& st : sp.canary->steps) std::printf(" %g%% for %g s", st.share * 100, st.duration_s);
      std::printf("\n");
    }
  }
  std::fputs(traffic.c_str(), stdout);
  return 0;
}

int CmdList(const Catalog& catalog, const Policies& policies) {
  std::printf("models:\n");
  for (const std::string& n : catalog.ModelNames()) {
    const ModelSpec* m = catalog.FindModel(n);
    std::printf("  %-16s %6.1fB params, %3d layers, hidden %5d, %3d/%-3d heads, ctx %6d, KV %lld B/token%s\n",
                n.c_str(), static_cast<double>(m->ParamCount()) * 1e-9, m->layers, m->hidden, m->heads,
                m->kv_heads, m->max_model_len, static_cast<long long>(m->KvBytesPerToken()),
                m->is_moe() ? " (MoE)" : "");
  }
  std::printf("gpus:\n");
  for (const std::string& n : catalog.GpuNames()) {
    const GpuSpec* g = catalog.FindGpu(n);
    std::printf("  %-10s %7lld MiB, %6.0f BF16 TFLOP/s, %5.0f GB/s HBM, %s %s\n", n.c_str(),
                static_cast<long long>(g->memory_mib), g->bf16_tflops, g->mem_bandwidth_gbps,
                g->scale_up.kind.c_str(), g->scale_up.topology.c_str());
  }
  std::printf("engines:\n");
  for (const std::string& n : catalog.EngineNames()) {
    const EngineProfile* e = catalog.FindEngine(n);
    int measured = 0, values = 0;
    for (const auto& [term, entries] : e->terms)
      for (const EngineTermEntry& v : entries) {
        ++values;
        measured += v.estimate ? 0 : 1;
      }
    std::printf("  %-10s %s (%d measured values of %d)\n", n.c_str(), e->description.c_str(), measured, values);
  }
  std::printf("schedulers:\n");
  for (const auto& e : policies.schedulers.entries())
    std::printf("  %-18s %s\n", e.name.c_str(), e.description.c_str());
  std::printf("routers:\n");
  for (const auto& e : policies.routers.entries())
    std::printf("  %-18s %s\n", e.name.c_str(), e.description.c_str());
  std::printf("global balancers:\n");
  for (const auto& e : policies.balancers.entries())
    std::printf("  %-18s %s\n", e.name.c_str(), e.description.c_str());
  std::printf("degradation policies:\n");
  for (const auto& e : policies.degradations.entries())
    std::printf("  %-18s %s\n", e.name.c_str(), e.description.c_str());
  std::printf("failure models:\n");
  for (const auto& e : policies.failure_models.entries())
    std::printf("  %-18s %s\n", e.name.c_str(), e.description.c_str());
  std::printf("autoscalers:\n");
  for (const auto& e : policies.autoscalers.entries())
    std::printf("  %-18s %s\n", e.name.c_str(), e.description.c_str());
  std::printf("perf sources:\n  %-18s %s\n  %-18s %s\n", "roofline",
              "datasheet ceilings x measured efficiencies (model/roofline.h)", "profile",
              "measured per-operator times from a profile JSON (perf.profile; model/profile_perf_model.h)");
  return 0;
}

// Converts Vidur's published CSVs into a fleetsim profile JSON. The device
// is named (--device) or told by the compute file's Vidur device tag.
int CmdImportVidur(const std::string& compute, const std::string& attention, const std::vector<std::string>& network,
                   const std::string& out, const std::string& model, const std::string& device,
                   const Catalog& catalog) {
  ImportOptions options;
  options.model = model;
  options.catalog = &catalog;
  options.attention_csv = attention;
  if (!device.empty()) {
    if (catalog.FindGpu(device) == nullptr)
      return Fail(
          Status::Invalid("--device: unknown GPU \"" + device + "\" (known: " + JoinNames(catalog.GpuNames()) + ")"));
    options.device = device;
  } else {
    const Status s = VidurDeviceFromPath(compute, catalog, &options.device);
    if (!s.ok()) return Fail(s.WithPrefix("--compute "));
  }
  Profile profile;
  Status s = ImportVidur(compute, network, options, &profile);
  if (!s.ok()) return Fail(s);
  std::string text;
  s = WriteProfileJson(profile, &text);
  if (!s.ok()) return Fail(s);
  s = WriteFile(out, text);
  if (!s.ok()) return Fail(s);
  return 0;
}

// A progress bar on stderr when it is a terminal, redrawn in place.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled) {}
  ~ProgressBar() { Finish(); }
  void Update(int done, int total, const std::string& what) {
    if (!enabled_) return;
    constexpr int kWidth = 30;
    const int filled = total > 0 ? std::min(kWidth, done * kWidth / total) : 0;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::fprintf(stderr, "\r  [%s] %d/%d  %-48.48s", bar.c_str(), std::min(done, total), total, what.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  void Finish() {
    if (drawn_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
};

int CmdCalibrate(calibrate::CalibrateOptions options, const std::vector<int>& tps, const std::string& grid,
                 const std::string& out, std::string report_dir, bool quiet, const Catalog& catalog) {
  // The degrees are checked with the rest of the options (MakeGrid).
  options.tp = tps;
  Status s = calibrate::ParseGridSize(grid, &options.grid);
  if (!s.ok()) return Fail(s);
  if (report_dir.empty()) {
    const std::filesystem::path p(out);
    report_dir = (p.parent_path() / (p.stem().string() + "-report")).string();
  }
  s = calibrate::CheckCalibrateOptions(options, catalog);
  if (!s.ok()) return Fail(s);
  // Minutes of measuring must not end in "cannot write": check both outputs
  // before the first kernel runs.
  // Under mpirun (one rank per node): every rank measures the links between
  // the ranks first; rank 0 then calibrates its node and writes the profile
  // with them, the others end. A rank that fails ends them all.
  std::unique_ptr<calibrate::RankTransport> ranks;
  if (LaunchedByMpi()) {
    std::string error;
    ranks = calibrate::MakeMpiTransport(&error);
    if (!ranks) return Fail(Status::Invalid("fleetsim calibrate under mpirun: " + error));
    if (ranks->size() < 2) {
      calibrate::FinishMpiTransport();
      ranks.reset();
    }
  }
  const bool root = !ranks || ranks->rank() == 0;
  if (root) {
    s = CheckOutputFile("--out", out);
    if (s.ok()) s = CheckWritableFolder(report_dir).WithPrefix("report folder: ");
    if (!s.ok()) {
      if (ranks) {
        std::fprintf(stderr, "fleetsim: %s\n", s.message().c_str());
        calibrate::AbortMpiTransport(2);
      }
      return Fail(s);
    }
  }
  if (ranks) {
    kernels::BackendOptions bo;
    bo.cuda_device = options.cuda_device;
    std::unique_ptr<kernels::Backend> device;
    calibrate::RankLinks links;
    s = kernels::MakeBackend(options.backend, bo, &device);
    if (s.ok()) s = calibrate::MeasureRankLinks(*device, *ranks, calibrate::RankLinkOptions{}, &links);
    if (!s.ok()) {
      std::fprintf(stderr, "fleetsim: calibration failed on rank %d: %s\n", ranks->rank(), s.message().c_str());
      calibrate::AbortMpiTransport(1);
    }
    if (!root) {
      calibrate::FinishMpiTransport();
      return 0;
    }
    if (!quiet)
      std::printf("links between %d ranks (%s): ring all-reduce of %.0f MiB measured %.3f ms, predicted %.3f ms\n",
                  links.ranks, links.transport.c_str(), links.ring.bytes / 1048576.0, links.ring.measured_ns * 1e-6,
                  links.ring.predicted_ns * 1e-6);
    options.rank_links = std::move(links);
  }
  struct FinishMpi {
    bool on;
    ~FinishMpi() {
      if (on) calibrate::FinishMpiTransport();
    }
  } finish_mpi{ranks != nullptr};
  ProgressBar bar(!quiet && isatty(STDERR_FILENO));
  calibrate::CalibrationResult result;
  s = calibrate::Calibrate(options, catalog,
                           [&](int done, int total, const std::string& what) { bar.Update(done, total, what); },
                           &result);
  bar.Finish();
  if (!s.ok()) {
    // The input was checked above: this is the machine failing (a kernel
    // error, out of memory), not bad input.
    std::fprintf(stderr, "fleetsim: calibration failed: %s\n", s.message().c_str());
    return 1;
  }
  for (const std::string& w : result.warnings) std::fprintf(stderr, "fleetsim: warning: %s\n", w.c_str());
  std::string text;
  s = WriteProfileJson(result.profile, &text);
  const std::filesystem::path out_parent = std::filesystem::path(out).parent_path();
  if (s.ok() && !out_parent.empty()) s = MakeOutputDir(out_parent.string());
  if (s.ok()) s = WriteFile(out, text);
  if (s.ok()) s = MakeOutputDir(report_dir);
  if (s.ok()) s = WriteFile(report_dir + "/report.md", result.report_markdown);
  for (const auto& [name, svg] : result.svgs) {
    if (s.ok()) s = WriteFile(report_dir + "/" + name, svg);
  }
  if (!s.ok()) return Fail(s);
  if (!quiet) {
    const Profile& p = result.profile;
    std::printf("calibrated %s on %s (%s) in %.1f s: %zu operators fitted\n", p.model->c_str(), p.device.c_str(),
                p.device_info->name.c_str(), p.calibration->wall_seconds, p.fits.size());
    for (const auto& [key, f] : p.fits) {
      std::printf("  %-24s %4d shapes  held-out error median %5.1f%%  p90 %5.1f%%  (%s)\n", key.c_str(), f.samples,
                  100 * f.cv_median_rel_error, 100 * f.cv_p90_rel_error, f.cv_method.c_str());
    }
    std::printf("  %-24s %4d held-out predictions: median error %.1f%%, p90 %.1f%%\n", "all operators",
                result.held_out_count, 100 * result.held_out_median, 100 * result.held_out_p90);
    for (const auto& [kind, a] : p.attention) {
      std::printf("  %-24s %.1f%% of roofline: %s\n", kind.c_str(), 100 * a.achieved_fraction,
                  a.use_measured ? "measured times used" : "roofline with published efficiency used");
    }
    std::printf("profile: %s\nreport:  %s/report.md\n", out.c_str(), report_dir.c_str());
  }
  return 0;
}

// "4096x4096x4096" -> a GEMM shape: three decimal integers in [1, 2^20],
// no operand above kMaxGemmOperandElements.
Status ParseGemmShape(const std::string& text, kernels::DType dtype, calibrate::GemmShape* out) {
  uint64_t d[3] = {0, 0, 0};
  std::string_view rest = text;
  bool good = true;
  for (int i = 0; i < 3 && good; ++i) {
    const size_t x = i < 2 ? rest.find('x') : rest.size();
    good = x != std::string_view::npos && ParseDecimal(rest.substr(0, x), &d[i]) && d[i] >= 1;
    if (good) rest = i < 2 ? rest.substr(x + 1) : std::string_view();
  }
  if (!good)
    return Status::Invalid("--shapes: " + Quoted(text) + " is not MxNxK with positive integers (e.g. 4096x4096x4096)");
  const uint64_t m = d[0], n = d[1], k = d[2];
  if (m > kMaxGemmDim || n > kMaxGemmDim || k > kMaxGemmDim || m * k > kMaxGemmOperandElements ||
      k * n > kMaxGemmOperandElements || m * n > kMaxGemmOperandElements)
    return Status::Invalid("--shapes: " + Quoted(text) + ": each dimension at most " + std::to_string(kMaxGemmDim) +
                           " and each operand at most " + std::to_string(kMaxGemmOperandElements) + " elements");
  *out = {static_cast<int64_t>(m), static_cast<int64_t>(n), static_cast<int64_t>(k), dtype};
  return Status::Ok();
}

int CmdCalibrateGemm(const std::string& backend, int device, const std::vector<std::string>& shape_texts,
                     const std::string& dtype_name, const calibrate::TimingOptions& timing,
                     const std::string& json_out) {
  kernels::DType dtype;
  if (dtype_name == "bf16") {
    dtype = kernels::DType::kBf16;
  } else if (dtype_name == "fp16") {
    dtype = kernels::DType::kFp16;
  } else if (dtype_name == "fp32") {
    dtype = kernels::DType::kFp32;
  } else {
    return Fail(Status::Invalid("--dtype: unknown \"" + dtype_name + "\" (valid: bf16, fp16, fp32)"));
  }
  std::vector<calibrate::GemmShape> shapes;
  for (const std::string& t : shape_texts) {
    calibrate::GemmShape g;
    const Status s = ParseGemmShape(t, dtype, &g);
    if (!s.ok()) return Fail(s);
    shapes.push_back(g);
  }
  if (shapes.empty()) return Fail(Status::Invalid("--shapes: give at least one MxNxK"));
  if (!json_out.empty()) {
    const Status c = CheckOutputFile("--json", json_out);
    if (!c.ok()) return Fail(c);
  }
  std::vector<calibrate::GemmBenchResult> results;
  std::string device_name;
  const Status s = calibrate::BenchGemms(backend, device, shapes, timing, &results, &device_name);
  if (!s.ok()) return Fail(s);
  JsonWriter w;
  w.BeginObject().Key("device").String(device_name).Key("backend").String(backend).Key("dtype").String(dtype_name);
  w.Key("results").BeginArray();
  for (const auto& r : results) {
    std::printf("shape=%lldx%lldx%lld median_us=%.2f spread=%.3f tflops=%.2f\n", static_cast<long long>(r.shape.m),
                static_cast<long long>(r.shape.n), static_cast<long long>(r.shape.k), r.timing.median_ns / 1e3,
                r.timing.spread, r.tflops);
    w.BeginObject().Key("m").Int(r.shape.m).Key("n").Int(r.shape.n).Key("k").Int(r.shape.k);
    w.Key("median_ns").Double(r.timing.median_ns).Key("spread").Double(r.timing.spread);
    w.Key("tflops").Double(r.tflops).EndObject();
  }
  w.EndArray().EndObject();
  const std::string json = w.Finish();
  if (!json_out.empty()) {
    const Status w = WriteFile(json_out, json);
    if (!w.ok()) return Fail(w);
  }
  return 0;
}

// fleetsim fit: engine terms from observed runs (sim/fit/engine_fit.h). The
// output profile is the pool's engine profile with the fitted terms added as
// entries measured for the pool's GPU, model and tp, each naming its source.
// `v` to `digits` significant figures (0 stays 0).
double RoundSignificant(double v, int digits) {
  if (v == 0 || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, digits - static_cast<int>(std::ceil(std::log10(std::fabs(v)))));
  return std::round(v * scale) / scale;
}

// fleetsim live --time-scale: arrivals come `x` times as fast (their gaps
// divided by x): a trace's rate_scale, a generator's rate, think times.
void ApplyTimeScale(double x, TrafficSpec* t) {
  if (x == 1) return;
  if (t->kind == TrafficSpec::Kind::kGenerator && !t->closed_loop) {
    t->rate_per_s *= x;
    if (t->sessions) t->sessions->think_time_s /= x;
  } else if (t->closed_loop) {
    t->closed_loop->think_time_s /= x;
  } else {
    t->rate_scale *= x;
  }
}

// A live run's requests as a benchmark client records them
// (observed.csv, the "csv" format of fleetsim observe): every request that
// arrived, with TTFT and E2E for those that completed.
Status WriteObservedCsv(const std::string& requests_csv, const std::string& path) {
  std::string out = "start_s,input_tokens,output_tokens,ttft_s,e2e_s\n";
  FLEETSIM_RETURN_IF_ERROR(report::ReadCsv(
      requests_csv, {"arrival_s", "first_token_s", "finish_s", "prompt_tokens", "output_tokens", "status"},
      [&](const report::CsvRow& row) -> Status {
        double v[5];
        for (size_t i = 0; i < 5; ++i)
          if (!report::ParseNumber(row.cells[i], &v[i]) && !(i < 3 && row.cells[5] != "completed"))
            return report::BadCell(requests_csv, row, "arrival_s", row.cells[i]);
        char line[160];
        if (row.cells[5] == "completed") {
          std::snprintf(line, sizeof line, "%.9f,%lld,%lld,%.9f,%.9f\n", v[0], static_cast<long long>(v[3]),
                        static_cast<long long>(v[4]), v[1] - v[0], v[2] - v[0]);
        } else {
          std::snprintf(line, sizeof line, "%.9f,%lld,%lld,,\n", v[0], static_cast<long long>(v[3]),
                        static_cast<long long>(v[4]));
        }
        out += line;
        return Status::Ok();
      }));
  return WriteFile(path, out);
}

// A `fleetsim live` output folder as a run to fit: observed.csv's requests
// (arrivals, lengths, TTFT, E2E) on the scenario live.json names, loaded
// with the same overrides, time scale and profile. Live has no server in
// front: the server terms do not apply.
Status ReplayFromLiveFolder(const std::string& dir, ReplayRun* out, std::optional<double>* kernel_scale) {
  const std::string live_json = (std::filesystem::path(dir) / "live.json").string();
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(live_json, "live run", &text)
                               .WithPrefix(dir + ": a folder given to fit must be a fleetsim live output folder: "));
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  auto bad = [&](const std::string& key, const std::string& what) {
    return Status::Invalid(live_json + ": " + key + ": " + what);
  };
  if (j.is_discarded() || !j.is_object()) return Status::Invalid(live_json + ": not a JSON object");
  if (j.value("format", "") != "fleetsim-live") return bad("format", "expected \"fleetsim-live\"");
  for (const char* k : {"scenario", "profile"})
    if (!j.contains(k) || !j[k].is_string()) return bad(k, "expected a string");
  if (!j.contains("time_scale") || !j["time_scale"].is_number() || !(j["time_scale"].get<double>() > 0))
    return bad("time_scale", "expected a positive number");
  if (!j.contains("overrides") || !j["overrides"].is_array()) return bad("overrides", "expected an array of strings");
  std::vector<std::string> overrides;
  for (size_t i = 0; i < j["overrides"].size(); ++i) {
    if (!j["overrides"][i].is_string()) return bad("overrides[" + std::to_string(i) + "]", "expected a string");
    overrides.push_back(j["overrides"][i].get<std::string>());
  }
  auto spec = std::make_shared<ScenarioSpec>();
  FLEETSIM_RETURN_IF_ERROR(
      LoadScenarioFile(j["scenario"].get<std::string>(), spec.get(), overrides).WithPrefix(live_json + ": scenario: "));
  ApplyTimeScale(j["time_scale"].get<double>(), &spec->traffic);
  const std::filesystem::path profile(j["profile"].get<std::string>());
  if (!profile.empty()) spec->perf_profile = (profile.is_absolute() ? profile : std::filesystem::path(dir) / profile).string();
  if (j.contains("seed") && j["seed"].is_number_unsigned()) spec->seed = j["seed"].get<uint64_t>();
  // The kernels as they ran (live.json's kernel_time_scale: measured over
  // predicted time of the priced kinds), so that the fit's terms hold what
  // the executor adds, not how far the machine drifted from its
  // calibration. A run timed as whole steps only (cuda: null) is replayed
  // at the profile's figures.
  if (!j.contains("kernel_time_scale"))
    return bad("kernel_time_scale", "expected: missing (a live folder written before it was recorded: run fleetsim "
                                    "live again)");
  if (!j["kernel_time_scale"].is_null() && !j["kernel_time_scale"].is_number())
    return bad("kernel_time_scale", "expected a positive number or null");
  if (j["kernel_time_scale"].is_number()) {
    const double k = j["kernel_time_scale"].get<double>();
    if (!(k > 0) || !std::isfinite(k)) return bad("kernel_time_scale", "expected a positive number");
    spec->roofline.kernel_time_scale = k;
    if (kernel_scale) *kernel_scale = k;
  }
  if (spec->pools.size() != 1)
    return Status::Invalid(live_json + ": scenario: fit replays one pool; the live run had " +
                           std::to_string(spec->pools.size()));
  ReadObservedOptions ro;
  ro.format = "csv";
  std::vector<ObservedRun> observed;
  FLEETSIM_RETURN_IF_ERROR(ReadObservedFile((std::filesystem::path(dir) / "observed.csv").string(), ro, &observed));
  if (observed.size() != 1) return Status::Invalid(dir + "/observed.csv: expected one run");
  FLEETSIM_RETURN_IF_ERROR(ReplayFromObserved(observed.front(), out));
  out->name = dir;
  out->origin = live_json;
  out->server = false;
  out->scenario = std::move(spec);
  return Status::Ok();
}

int CmdFit(const std::vector<std::string>& files, const std::string& scenario_path, const std::string& split,
           const std::string& out, std::string report_dir, const std::string& format, std::optional<uint64_t> seed,
           const std::string& name, const std::string& terms, bool quiet, const Catalog& catalog,
           const Policies& policies) {
  // Measurement sets (published figures, each run with its own scenario)
  // and benchmark clients' files (replayed on --scenario's pool).
  std::vector<ReplayRun> runs;
  std::vector<std::string> client_files;
  std::optional<uint64_t> set_seed;
  std::set<std::string> set_dates, set_versions;  // of the measured runs' sources
  int sets_read = 0;
  for (const std::string& f : files) {
    // A fleetsim live output folder: its observed requests, replayed on the
    // scenario it ran (with its overrides, time scale and profile).
    std::error_code ec;
    if (std::filesystem::is_directory(f, ec)) {
      ReplayRun r;
      std::optional<double> scale;
      Status s = ReplayFromLiveFolder(f, &r, &scale);
      if (!s.ok()) return Fail(s);
      if (!quiet)
        std::printf(scale ? "%s: its kernels ran at %.3fx the profile's figures (live.json); replayed so\n"
                          : "%s: no kernel_time_scale (its ops were not timed one by one, or it ran without a profile); replayed "
                            "as priced\n",
                    f.c_str(), scale.value_or(1.0));
      runs.push_back(std::move(r));
      continue;
    }
    std::string text;
    Status s = ReadWholeFile(f, "observed file", &text);
    if (!s.ok()) return Fail(s);
    if (!LooksLikeMeasurementSet(text)) {
      client_files.push_back(f);
      continue;
    }
    // --split picks runs across all the sets: one set may have none of it.
    MeasurementSet set;
    s = ParseMeasurementSet(text, f, "", &set);
    if (!s.ok()) return Fail(s);
    if (!set_seed) set_seed = set.seed;
    ++sets_read;
    for (Measurement& m : set.runs) {
      if (!split.empty() && m.split != split) continue;
      set_dates.insert(m.date);
      if (!m.engine_version.empty()) set_versions.insert(m.engine_version);
      runs.push_back(std::move(m.run));
    }
  }
  if (!split.empty() && client_files.empty() && runs.empty())
    return Fail(Status::Invalid(files[0] + ": runs: no run has split \"" + split + "\"" +
                                (sets_read > 1 ? " in any of the " + std::to_string(sets_read) + " sets" : "")));
  if (!split.empty() && !client_files.empty())
    return Fail(Status::Invalid(client_files[0] + ": --split selects runs of measurement sets; this is a benchmark "
                                                  "client's file"));
  if (scenario_path.empty() && !client_files.empty())
    return Fail(Status::Invalid(client_files[0] + ": a benchmark client's file is replayed on a scenario's pool; "
                                                  "give --scenario"));
  ScenarioSpec base;
  if (!scenario_path.empty()) {
    Status s = LoadScenarioFile(scenario_path, &base, {});
    if (!s.ok()) return Fail(s);
    if (base.pools.size() != 1)
      return Fail(Status::Invalid(scenario_path + ": fleet.pools: fit replays one pool; the scenario has " +
                                  std::to_string(base.pools.size())));
  } else {
    base = *runs.front().scenario;
  }
  // --scenario's pool, built once here for every client run (and checked
  // before their files are read); a set's runs are built below.
  std::unique_ptr<ScenarioRun> base_run;
  Status s;
  if (!scenario_path.empty()) {
    s = ScenarioRun::Build(base, catalog, policies, &base_run);
    if (!s.ok()) return Fail(s);
  }
  if (report_dir.empty()) {
    const std::filesystem::path p(out);
    report_dir = (p.parent_path() / (p.stem().string() + "-report")).string();
  }
  s = CheckOutputFile("--out", out);
  if (!s.ok()) return Fail(s);
  ReadObservedOptions ro;
  ro.format = format;
  for (const std::string& f : client_files) {
    std::vector<ObservedRun> observed;
    s = ReadObservedFile(f, ro, &observed);
    if (!s.ok()) return Fail(s);
    for (const ObservedRun& o : observed) {
      ReplayRun r;
      s = ReplayFromObserved(o, &r);
      if (!s.ok()) return Fail(s);
      runs.push_back(std::move(r));
    }
  }
  // Every run's pool: one engine profile for all (the fitted terms are
  // written into it), and the GPU, model and tp the runs share, which the
  // written entries name (an entry without them is generic).
  struct PoolOf {
    std::string engine, gpu, model;
    int tp = 0;
    bool async_scheduling = false;
  };
  std::vector<PoolOf> pools;
  std::unique_ptr<ScenarioRun> first_own;  // the first run's, when it has its own scenario
  for (const ReplayRun& r : runs) {
    const ScenarioRun* built = base_run.get();
    std::unique_ptr<ScenarioRun> own;
    if (r.scenario) {
      // A run's own scenario is named after the run in its messages already.
      s = ScenarioRun::Build(*r.scenario, catalog, policies, &own);
      if (!s.ok()) return Fail(s);
      built = own.get();
    }
    const PoolPlan& pp = built->pools()[0];
    pools.push_back({pp.engine.name, pp.gpu->name, pp.model->name, pp.shard.tp, pp.engine.async_scheduling});
    if (pools.back().async_scheduling != pools.front().async_scheduling)
      return Fail(Status::Invalid((r.origin.empty() ? r.name : r.origin) + ": runs with async scheduling " +
                                  (pools.back().async_scheduling ? "on" : "off") + " and " +
                                  (pools.front().async_scheduling ? "on" : "off") +
                                  " cannot be fitted together (the CPU terms mean different things): fit them apart "
                                  "(--split, or one set per setting)"));
    if (pools.back().engine != pools.front().engine)
      return Fail(Status::Invalid((r.origin.empty() ? r.name : r.origin) + ": runs with engine profile \"" +
                                  pools.back().engine + "\" and \"" + pools.front().engine + "\" (" +
                                  (runs.front().origin.empty() ? runs.front().name : runs.front().origin) +
                                  ") cannot be fitted together: fit one engine at a time (--split, or one set per "
                                  "engine)"));
    if (pools.size() == 1) first_own = std::move(own);
  }
  PoolOf shared = pools.front();
  for (const PoolOf& p : pools) {
    if (p.gpu != shared.gpu) shared.gpu.clear();
    if (p.model != shared.model) shared.model.clear();
    if (p.tp != shared.tp) shared.tp = 0;
  }
  // An entry naming a model or tp names its GPU too (the fallback order).
  if (shared.gpu.empty()) {
    shared.model.clear();
    shared.tp = 0;
  }
  FitOptions fo;
  fo.seed = seed.value_or(scenario_path.empty() && set_seed ? *set_seed : base.seed);
  fo.scope = terms == "cpu" ? FitScope::kCpuServer : terms == "gpu" ? FitScope::kGpu : FitScope::kAll;
  FitResult result;
  s = FitEngine(base, catalog, policies, runs, fo, &result);
  if (!s.ok()) return Fail(s);
  const ScenarioSpec& first = runs.front().scenario ? *runs.front().scenario : base;
  const PoolPlan& pool = (first_own ? first_own : base_run)->pools()[0];

  // The profile: the pool's, with the fitted terms first for this pool.
  EngineProfile profile;
  s = LoadPoolEngineProfile(first.pools[0], *pool.scheduler, catalog, &profile);
  if (!s.ok()) return Fail(s.WithPrefix(first.file + ": "));
  if (!name.empty()) profile.name = name;
  // The fitted CPU terms are what they are under the runs' scheduling.
  if (profile.async_scheduling != shared.async_scheduling) {
    profile.async_scheduling = shared.async_scheduling;
    profile.async_scheduling_source = std::string("as the fitted runs' pools ran (async_scheduling ") +
                                      (shared.async_scheduling ? "true" : "false") + ")";
  }
  std::string used;
  for (const ReplayRun& r : runs) used += (used.empty() ? "" : ", ") + std::filesystem::path(r.name).filename().string();
  // The run names of a large set would make an unreadable source.
  if (runs.size() > 8) {
    used.clear();
    for (const std::string& f : files) used += (used.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
    if (!split.empty()) used += ", split " + split;
  }
  double worst_left_out = 0;
  bool have_left_out = false;
  for (int m = 0; m < kNumFitMetrics; ++m) {
    if (auto e = MedianAbsError(result.left_out, m)) {
      worst_left_out = std::max(worst_left_out, *e);
      have_left_out = true;
    }
  }
  auto joined = [](const std::set<std::string>& s) {
    std::string out;
    for (const std::string& v : s) out += (out.empty() ? "" : "; ") + v;
    return out;
  };
  for (int i = 0; i < kNumFitTerms; ++i) {
    // A term no run is sensitive to (the server's without a served run, the
    // tensor-parallel step without a tp > 1 run) keeps the profile's entries.
    if (!result.informed[i]) continue;
    // A kernel term the fit left where the GPU's figures put it is not
    // written: the GPU's figure (with its own source) stands.
    const bool kernel = i >= kFirstKernelFitTerm;
    if (kernel && std::fabs(result.terms[i] - result.initial_terms[i]) <=
                      1e-4 * std::max(std::fabs(result.initial_terms[i]), 1e-9))
      continue;
    EngineTermEntry e;
    // Four significant figures: the fit is not more precise than that, and
    // the file stays readable; a kernel term within its range.
    e.value = RoundSignificant(result.terms[i], 4);
    if (kernel) {
      const KernelTermInfo& k = kKernelTerms[i - kFirstKernelFitTerm];
      e.value = std::clamp(e.value, k.lo, k.hi);
    }
    e.gpu = shared.gpu;
    e.model = shared.model;
    e.tp = shared.tp;
    e.source = "fleetsim fit on " + std::to_string(runs.size()) + " observed run" + (runs.size() == 1 ? "" : "s") +
               " (" + used + ")" +
               (have_left_out ? "; worst per-metric median error on runs left out " + Percent(worst_left_out)
                              : "; not cross-validated (one run)") +
               (result.determined[i] ? "" : "; not determined by these runs (it stayed near its start)");
    if (set_dates.empty()) {
      e.date = "as observed";
    } else {
      e.date = *set_dates.begin() == *set_dates.rbegin() ? *set_dates.begin()
                                                         : *set_dates.begin() + " to " + *set_dates.rbegin();
    }
    e.engine_version = !set_versions.empty() ? joined(set_versions)
                       : client_files.empty() ? "not stated by the sources"
                                              : "the observed server's (not recorded in the benchmark files)";
    // The new entry replaces every entry for its GPU that would apply to a
    // fitted run instead of it (ResolveEngine prefers the more specific
    // entry, the first of equal ones): an earlier fit for the same scope, or
    // for one model or tp of it. A generic entry cannot displace a GPU's
    // own; that is said, not hidden.
    auto& list = profile.terms[kFitTerms[i]];
    auto specificity = [](const EngineTermEntry& x) {
      return !x.gpu.empty() + !x.model.empty() + (x.tp != 0);
    };
    // An entry naming a GPU that ResolveEngine would pick for this pool.
    auto applies = [](const EngineTermEntry& old, const PoolOf& p) {
      return !old.gpu.empty() && old.gpu == p.gpu && (old.model.empty() || old.model == p.model) &&
             (old.tp == 0 || old.tp == p.tp);
    };
    auto shadows = [&](const EngineTermEntry& old) {
      if (old.gpu != e.gpu || specificity(old) < specificity(e)) return false;
      for (const PoolOf& p : pools)
        if (applies(old, p)) return true;
      return false;
    };
    if (e.gpu.empty()) {
      for (const EngineTermEntry& old : list)
        for (const PoolOf& p : pools)
          if (applies(old, p)) {
            std::fprintf(stderr,
                         "fleetsim: warning: terms.%s: the profile's entry for %s still applies to %s at tp %d "
                         "before the generic fitted one\n",
                         kFitTerms[i], old.gpu.c_str(), p.model.c_str(), p.tp);
            break;
          }
    }
    std::erase_if(list, shadows);
    list.insert(list.begin(), e);
  }
  // What the fit could not tell, on stderr whatever --quiet says.
  for (const std::string& w : result.warnings) std::fprintf(stderr, "fleetsim: warning: fit: %s\n", w.c_str());
  std::string text;
  s = WriteEngineProfileJson(profile, &text);
  if (s.ok()) s = WriteFile(out, text);
  if (!s.ok()) return Fail(s);
  std::unique_ptr<OutputDir> report;
  s = OutputDir::Begin(report_dir, &report);
  if (s.ok()) s = WriteFile(report->path() + "/report.md", FitReportMarkdown(result, runs, profile.name));
  if (s.ok()) s = WriteFile(report->path() + "/errors.svg", FitErrorsSvg(result));
  if (s.ok()) s = report->Commit();
  if (!s.ok()) return Fail(s);
  if (!quiet) {
    std::printf("fitted %s for %s on %s, tp %s, from %zu runs (%d simulations)\n", profile.name.c_str(),
                shared.model.empty() ? "every model" : shared.model.c_str(),
                shared.gpu.empty() ? "every GPU" : shared.gpu.c_str(),
                shared.tp ? std::to_string(shared.tp).c_str() : "any", runs.size(), result.evaluations);
    for (int i = 0; i < kNumFitTerms; ++i) {
      if (!result.informed[i] && i >= kFirstKernelFitTerm) continue;  // the GPU's figure, untouched
      std::printf("  %-32s %10.4g -> %10.4g %s%s\n", kFitTerms[static_cast<size_t>(i)], result.initial_terms[i],
                  result.terms[i], FitTermUnit(i),
                  !result.informed[i]      ? "   (no run depends on it: kept, not written)"
                  : !result.determined[i] ? "   (not determined by these runs)"
                                          : "");
    }
    std::printf("  %-24s %9s %9s %9s   (median |error|)\n", "metric", "before", "fitted", "left out");
    for (int m = 0; m < kNumFitMetrics; ++m)
      if (MedianAbsError(result.before, m))
        std::printf("  %-24s %9s %9s %9s\n", kFitMetrics[m], Percent(MedianAbsError(result.before, m)).c_str(),
                  Percent(MedianAbsError(result.after, m)).c_str(), Percent(MedianAbsError(result.left_out, m)).c_str());
    std::printf("outputs     %s and %s/{report.md,errors.svg}\n", out.c_str(), report_dir.c_str());
  }
  return 0;
}

// Reads a benchmark client's output file and prints what was read: one run
// in full, or a line per run when the file holds several (--run N picks one).
int CmdObserve(const std::string& path, const std::string& format, bool allow_aggregates,
               const std::optional<uint64_t>& run_index) {
  ReadObservedOptions options;
  options.format = format;
  options.allow_aggregates = allow_aggregates;
  std::vector<ObservedRun> runs;
  const Status s = ReadObservedFile(path, options, &runs);
  if (!s.ok()) return Fail(s);
  if (run_index) {
    if (*run_index >= runs.size()) {
      return Fail(Status::Invalid(path + ": --run " + std::to_string(*run_index) + ": out of range; the file holds " +
                                  std::to_string(runs.size()) + (runs.size() == 1 ? " run" : " runs") + " (0 to " +
                                  std::to_string(runs.size() - 1) + ")"));
    }
    std::fputs(FormatObservedRun(runs[*run_index]).c_str(), stdout);
  } else if (runs.size() == 1) {
    std::fputs(FormatObservedRun(runs.front()).c_str(), stdout);
  } else {
    std::fputs(FormatObservedRunTable(runs).c_str(), stdout);
  }
  return 0;
}

// `fleetsim plan`: the planner's search, then its outputs in one folder
// (docs/plan.md). Under mpirun every rank searches the same rounds, each
// running its share of every round's simulations; rank 0 writes.
std::string FormatDuration(double s) {
  char b[32];
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  if (t >= 3600)
    std::snprintf(b, sizeof b, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else
    std::snprintf(b, sizeof b, "%ld:%02ld", t / 60, t % 60);
  return b;
}

Status WriteChosen(Planner& planner, const std::string& dir, RunReport* report) {
  FLEETSIM_RETURN_IF_ERROR(MakeOutputDir(dir));
  FLEETSIM_RETURN_IF_ERROR(planner.RunChosen(RunFolderFiles(dir), report));
  FLEETSIM_RETURN_IF_ERROR(WriteFile(dir + "/summary.json", SummaryToJson(report->summary)));
  ReportFiles files;
  FLEETSIM_RETURN_IF_ERROR(RenderReport(dir, &files));
  FLEETSIM_RETURN_IF_ERROR(WriteFile(dir + "/report.html", files.html));
  return WriteFile(dir + "/report.md", files.md);
}

int CmdPlan(const std::string& path, const std::string& out_dir, int threads, bool quiet, bool force_progress,
            const Catalog& catalog, const Policies& policies) {
  PlanSpec plan;
  Status s = LoadPlanFile(path, &plan);
  if (!s.ok()) return Fail(s);
  std::unique_ptr<BatchRunner> mpi;
  if (LaunchedByMpi()) {
    std::string error;
    mpi = MakeMpiRunner(threads, &error);
    if (!mpi) {
      std::fprintf(stderr, "fleetsim: plan: started by mpirun, but %s\n", error.c_str());
      return 1;
    }
  }
  const bool writer = !mpi || mpi->rank() == 0;
  auto finish = [&](int code) {
    mpi.reset();
    FinishMpi();
    return code;
  };
  std::unique_ptr<OutputDir> out;
  if (writer) s = OutputDir::Begin(out_dir, &out);
  // Every rank stops when the writer cannot write, before any round.
  if (mpi && !mpi->AllAgree(s.ok())) {
    if (!s.ok()) return finish(Fail(s));
    return finish(kExitInput);
  }
  if (!s.ok()) return finish(Fail(s));
  const bool show = writer && !quiet && (force_progress || isatty(STDERR_FILENO));
  const auto start = std::chrono::steady_clock::now();
  bool printed = false;
  PlanOptions options;
  options.threads = threads;
  options.runner = mpi.get();
  options.stop = &g_stop_signal;
  if (show) {
    options.progress = [&](const PlanProgress& p) {
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const int64_t done = p.sims_done + p.sims_round_done;
      const double rate = wall > 0 ? static_cast<double>(done) / wall : 0;
      const double frac = p.families > 0 ? static_cast<double>(p.families_done) / static_cast<double>(p.families) : 0;
      const int width = 24, filled = static_cast<int>(frac * width);
      std::string bar(static_cast<size_t>(filled), '#');
      bar.resize(width, '.');
      const int64_t left = std::max<int64_t>(p.sims_expected - done, p.sims_round - p.sims_round_done);
      std::fprintf(stderr, "\r  [%s] %lld/%lld configurations  %s  %lld sims  %.1f sims/s  about %s left   ",
                   bar.c_str(), static_cast<long long>(p.families_done), static_cast<long long>(p.families),
                   p.phase.c_str(), static_cast<long long>(done), rate,
                   FormatDuration(rate > 0 ? static_cast<double>(left) / rate : NAN).c_str());
      printed = true;
    };
  }
  Planner planner(plan, catalog, policies);
  s = planner.Run(options);
  if (printed) std::fprintf(stderr, "\n");
  if (g_stop_signal) return finish(InterruptedExit(out_dir));
  if (!s.ok()) return finish(Fail(s));
  const PlanResult& r = planner.result();
  if (writer) {
    const std::string dir = out->path();
    s = WriteFile(dir + "/plan.json", PlanResultToJson(r, FLEETSIM_VERSION));
    if (s.ok()) s = WriteFile(dir + "/curves.csv", PlanCurvesCsv(r));
    if (s.ok()) s = WriteFile(dir + "/frontier.csv", PlanFrontierCsv(r));
    RunReport chosen;
    if (s.ok() && r.chosen >= 0) s = WriteChosen(planner, dir + "/chosen", &chosen);
    ReportFiles files;
    if (s.ok()) s = RenderReport(dir, &files);
    if (s.ok()) s = WriteFile(dir + "/report.html", files.html);
    if (s.ok()) s = WriteFile(dir + "/report.md", files.md);
    if (g_stop_signal) return finish(InterruptedExit(out_dir));
    if (!s.ok()) return finish(Fail(s));
    s = out->Commit();
    if (!s.ok()) return finish(Fail(s));
    if (!quiet) {
      std::printf("fleetsim plan %s  (%d replications, seed %llu)\n", r.plan.name.c_str(), r.plan.replications,
                  static_cast<unsigned long long>(r.plan.seed));
      std::fputs(FormatPlanSummary(r).c_str(), stdout);
      std::printf("wall        %.1f s  %.1f simulations/s%s\n",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                  static_cast<double>(r.simulations) /
                      std::max(1e-9, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()),
                  mpi ? (", " + std::to_string(mpi->ranks()) + " MPI ranks").c_str() : "");
      std::printf("outputs     %s/{report.html,report.md,plan.json,curves.csv,frontier.csv%s}\n", out_dir.c_str(),
                  r.chosen >= 0 ? ",chosen/" : "");
    }
  }
  return finish(0);
}

// `fleetsim report DIR`: report.html and report.md again, from a plan's or
// a run's folder.
// What `fleetsim live` is asked.
struct LiveChoices {
  std::string backend = "cpu";
  double time_scale = 1;
  std::string profile;     // a profile for the diff's simulation (and the pools' device)
  bool calibrate = false;  // calibrate this machine even when the scenario names a profile
  bool diff = true;
  // --serve: the requests come from an endpoint on loopback.
  bool serve = false;
  live::ServeOptions serve_options;
};

// Calibrates `backend` for `model` on the quick grid into `path` (device
// named `device`), for the diff's simulation: the cache flushed before each
// timed op (as `fleetsim calibrate` does), and attention priced as measured
// whatever its share of the roofline, since live runs these very kernels.
Status CalibrateForLive(const std::string& backend, const ModelSpec& model, const std::string& device,
                        const Catalog& catalog, bool quiet, const std::string& path, std::string* summary) {
  calibrate::CalibrateOptions co;
  co.backend = backend;
  co.model = model.name;
  co.device = device;
  co.grid = calibrate::GridSize::kQuick;
  co.attention_as_measured = true;  // live runs these kernels, however slow
  co.timing.repetitions = 9;        // a steadier median than the default 5 on a shared machine

  FLEETSIM_RETURN_IF_ERROR(calibrate::CheckCalibrateOptions(co, catalog));
  ProgressBar bar(!quiet && isatty(STDERR_FILENO));
  calibrate::CalibrationResult result;
  FLEETSIM_RETURN_IF_ERROR(calibrate::Calibrate(
      co, catalog, [&](int done, int total, const std::string& what) { bar.Update(done, total, what); }, &result));
  bar.Finish();
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(WriteProfileJson(result.profile, &text));
  FLEETSIM_RETURN_IF_ERROR(WriteFile(path, text));
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "calibrated %s on %s in %.1f s (quick grid, cache flushed before each timed op, attention as "
                "measured), held-out median error %.1f%%",
                model.name.c_str(), result.profile.device_info->name.c_str(), result.profile.calibration->wall_seconds,
                100 * result.held_out_median);
  *summary = buf;
  return Status::Ok();
}

int CmdLive(const std::string& path, const std::vector<std::string>& overrides, std::string out_dir,
            std::optional<uint64_t> seed, const LiveChoices& lc, const OutputChoices& choices, bool quiet,
            const Catalog& catalog, const Policies& policies) {
  ScenarioSpec spec;
  Status s = LoadScenarioFile(path, &spec, overrides);
  if (!s.ok()) return Fail(s);
  ApplyTimeScale(lc.time_scale, &spec.traffic);
  if (out_dir.empty()) out_dir = "out/live-" + std::filesystem::path(path).stem().string();
  std::unique_ptr<OutputDir> out;
  s = OutputDir::Begin(out_dir, &out);
  if (!s.ok()) return Fail(s);
  std::vector<std::string> context;
  if (!lc.profile.empty()) spec.perf_profile = std::filesystem::absolute(lc.profile).string();
  // The diff's simulation needs this machine's kernel times: calibrate
  // unless the scenario (or --profile) names a profile, or when asked.
  bool unknown_device = false;
  for (const PoolSpec& p : spec.pools)
    if (catalog.FindGpu(p.gpu) == nullptr) unknown_device = true;
  const bool calibrated = lc.calibrate || (spec.perf_profile.empty() && unknown_device);
  if (calibrated) {
    if (spec.pools.empty()) return Fail(Status::Invalid(path + ": fleet.pools is empty"));
    const PoolSpec& p0 = spec.pools.front();
    const std::string model_name = !p0.model.empty() ? p0.model : spec.model;
    const ModelSpec* model = catalog.FindModel(model_name);
    if (!model)
      return Fail(Status::Invalid(path + ": " + p0.path + ".model: live mode calibrates zoo models only; \"" +
                                  model_name + "\" is not one (give --profile)"));
    for (const PoolSpec& p : spec.pools)
      if (p.gpu != p0.gpu || (!p.model.empty() ? p.model : spec.model) != model_name)
        return Fail(Status::Invalid(path + ": " + p.path + ": live mode calibrates one model on one device; give "
                                    "--profile for fleets of several"));
    const std::string profile = out->path() + "/profile.json";
    std::string line;
    if (!quiet) std::printf("calibrating %s on the %s backend for the diff (quick grid)\n", model_name.c_str(),
                            lc.backend.c_str());
    s = CalibrateForLive(lc.backend, *model, p0.gpu, catalog, quiet, profile, &line);
    if (!s.ok()) {
      std::fprintf(stderr, "fleetsim: live: calibration failed: %s\n", s.message().c_str());
      return 1;
    }
    if (g_stop_signal) return InterruptedExit(out_dir);
    context.push_back(line + " (profile.json)");
    spec.perf_profile = std::filesystem::absolute(profile).string();
  }
  std::unique_ptr<ScenarioRun> run;
  s = ScenarioRun::Build(spec, catalog, policies, &run);
  if (!s.ok()) return Fail(s);
  live::LiveOptions lo;
  lo.backend = lc.backend;
  lo.seed = seed.value_or(run->spec().seed);
  if (lc.serve) lo.serve = lc.serve_options;
  auto mode = std::make_unique<live::LiveMode>(lo);
  s = mode->Prepare(*run);
  if (!s.ok()) {
    if (s.unavailable()) {
      std::fprintf(stderr, "fleetsim: %s\n", s.message().c_str());  // the port's: not the input's
      return 1;
    }
    return Fail(s);
  }
  if (lc.serve) {
    // Always said, so a script can find the port: one line on stderr.
    std::fprintf(stderr,
                 "fleetsim live: serving http://127.0.0.1:%d/v1 (completions and chat completions, streaming); "
                 "at most %lld requests, accepted for %g s\n",
                 mode->port(), static_cast<long long>(lc.serve_options.max_requests), lc.serve_options.max_seconds);
    std::fflush(stderr);
  }
  if (!quiet && !lc.serve) {
    std::string traffic;
    s = TrafficFigures(run->spec(), seed.value_or(run->spec().seed), &traffic);
    if (!s.ok()) return Fail(s);
    std::fputs(traffic.c_str(), stdout);
    std::printf("  live      %s, %zu replicas (weights and KV cache allocated)\n", mode->Describe().c_str(),
                mode->Stats().size());
  }
  for (const std::string& w : mode->warnings()) {
    std::fprintf(stderr, "warning: live: %s\n", w.c_str());
    context.push_back("warning: " + w);
  }
  const bool show_progress = !quiet && isatty(STDERR_FILENO);
  bool printed = false;
  auto progress = [&](const Progress& p) {
    if (!show_progress || p.wall_s < 1.0) return;
    std::fprintf(stderr, "\r  live %.0f s  arrived %lld  finished %lld   ", TimeToSeconds(p.now),
                 static_cast<long long>(p.arrived), static_cast<long long>(p.finished));
    printed = true;
  };
  const uint64_t run_seed = seed.value_or(run->spec().seed);
  RunReport live_report;
  s = RunInto(*run, out->path(), run_seed, choices, progress, &live_report, mode.get());
  if (printed) std::fprintf(stderr, "\n");
  if (g_stop_signal) return InterruptedExit(out_dir);
  if (!s.ok()) {
    if (mode->status().ok()) return Fail(s);  // the input's (a corrupt trace row): exit 2
    // The machine's (a kernel's error, out of device memory).
    std::fprintf(stderr, "fleetsim: live: %s\n", s.message().c_str());
    return 1;
  }
  const std::vector<live::ReplicaLiveStats> stats = mode->Stats();
  const bool per_op = mode->per_op();
  // --serve: the requests served, for the diff's simulation to replay.
  TrafficSpec served;
  if (lc.serve) {
    served = run->spec().traffic;
    served.kind = TrafficSpec::Kind::kList;
    served.requests = std::make_shared<const std::vector<Request>>(mode->served());
    served.closed_loop.reset();
    served.sessions.reset();
    served.rate_scale = 1;
    served.max_arrival_s = std::numeric_limits<double>::infinity();
    served.max_requests = std::numeric_limits<int64_t>::max();
  }
  mode.reset();  // the workers end here
  // How fast the kernels ran against the profile's figures for the same
  // batches: measured over predicted time of the four kernel kinds, over
  // every replica's steps. Only with a profile (the roofline does not take
  // the scale) and per op (the cpu backend; not where only whole steps are
  // timed). The measured elementwise time also holds the final norm and
  // the sampling rows' gather, which the profile leaves out (a few µs).
  std::optional<double> kernel_scale;
  if (per_op && !spec.perf_profile.empty()) {
    double measured = 0, predicted = 0;
    for (const live::ReplicaLiveStats& r : stats) {
      const live::OpTimes& m = r.worker.measured;
      const IterationParts& p = r.worker.predicted;
      measured += m.gemm + m.attention_prefill + m.attention_decode + m.elementwise;
      predicted += p.gemm + p.attention_prefill + p.attention_decode + p.elementwise;
    }
    if (measured > 0 && predicted > 0) kernel_scale = measured / predicted;
  }
  {
    JsonWriter w;
    w.BeginObject();
    w.Key("format").String("fleetsim-live");
    w.Key("version").Int(1);
    w.Key("backend").String(lc.backend);
    // What fleetsim fit needs to replay this run: the scenario as run.
    w.Key("scenario").String(std::filesystem::absolute(path).string());
    w.Key("overrides").BeginArray();
    for (const std::string& o : overrides) w.String(o);
    w.EndArray();
    w.Key("time_scale").Double(lc.time_scale);
    w.Key("seed").Int(static_cast<int64_t>(run_seed));
    // profile.json when live calibrated (beside this file), else the path used.
    w.Key("profile").String(calibrated ? "profile.json" : spec.perf_profile);
    w.Key("wall_s").Double(live_report.wall_s);
    // fleetsim fit replays the run with its kernels priced so.
    if (kernel_scale) w.Key("kernel_time_scale").Double(*kernel_scale); else w.Key("kernel_time_scale").Null();
    if (lc.serve)
      w.Key("served").BeginObject().Key("requests").Int(static_cast<int64_t>(served.requests->size())).Key("note").String(
          "requests from the endpoint (--serve), not the scenario's traffic; the diff's simulation replays them")
          .EndObject();
    w.Key("replicas").BeginArray();
    for (const live::ReplicaLiveStats& r : stats) {
      w.BeginObject();
      w.Key("name").String(r.name).Key("device").String(r.device).Key("tp").Int(r.tp);
      w.Key("kv_blocks").Int(r.kv_blocks).Key("weight_gib").Double(r.weight_gib);
      w.Key("steps").Int(r.worker.steps).Key("tokens").Int(r.worker.tokens);
      w.Key("forward_busy_s").Double(r.worker.busy_s);
      w.Key("kv_blocks_taken_back").Int(r.worker.blocks_taken_back);
      // Per step, in ms: what the kernels took against what the diff's
      // perf model says for the same batches, by kind of op.
      const double n = r.worker.steps > 0 ? static_cast<double>(r.worker.steps) : 1.0;
      const live::OpTimes& m = r.worker.measured;
      const IterationParts& pr = r.worker.predicted;
      w.Key("per_step_ms").BeginObject();
      w.Key("note").String(per_op ? "measured op by op (the cpu backend runs ops synchronously)"
                                  : "measured: the whole step only (ops are asynchronous on this backend)");
      auto both = [&](const char* key, std::optional<double> measured, std::optional<double> predicted) {
        w.Key(key).BeginObject();
        if (measured) w.Key("measured").Double(*measured / n * 1e-6); else w.Key("measured").Null();
        if (predicted) w.Key("predicted").Double(*predicted / n * 1e-6); else w.Key("predicted").Null();
        w.EndObject();
      };
      both("step", m.total, r.worker.predicted_total);
      if (per_op) {
        both("gemm", m.gemm, pr.gemm);
        both("attention_prefill", m.attention_prefill, pr.attention_prefill);
        both("attention_decode", m.attention_decode, pr.attention_decode);
        both("elementwise", m.elementwise, pr.elementwise);
        both("kv_cache_write", m.kv_write, std::nullopt);
        both("sampling", m.sampling, std::nullopt);
        both("host_indices", m.host, std::nullopt);
      }
      // Rank 0's wait in the ring all-reduces and the logits gather (it
      // includes waiting for slower ranks), against the perf model's
      // collectives (part of "other").
      if (r.tp > 1) both("collective", per_op ? std::optional<double>(m.collective) : std::nullopt, pr.collective);
      both("other", std::nullopt, pr.other);
      both("launch_to_start", r.worker.queue_ns, std::nullopt);
      both("end_to_done", r.worker.return_ns, std::nullopt);
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    s = WriteFile(out->path() + "/live.json", w.Finish());
    if (s.ok()) s = WriteObservedCsv(out->path() + "/requests.csv", out->path() + "/observed.csv");
    if (!s.ok()) return Fail(s);
  }
  LiveDiff diff;
  RunReport as_run_report;
  KernelsAsRun as_run;
  if (lc.diff) {
    // The same scenario simulated: the same traffic and seed, this
    // machine's profile, into sim/.
    const std::string sim_dir = out->path() + "/sim";
    s = MakeOutputDir(sim_dir);
    RunReport sim_report;
    if (s.ok()) s = RunInto(*run, sim_dir, run_seed, choices, nullptr, &sim_report, nullptr, lc.serve ? &served : nullptr);
    if (g_stop_signal) return InterruptedExit(out_dir);
    if (!s.ok()) return Fail(s);
    context.insert(context.begin(), "live: " + lc.backend + " backend, " +
                                        (stats.empty() ? std::string("no replica") : stats.front().device) + ", " +
                                        std::to_string(stats.size()) + " replicas, time scale " +
                                        [&] { char b[32]; std::snprintf(b, sizeof b, "%g", lc.time_scale); return std::string(b); }());
    context.insert(context.begin() + 1, "scenario: " + path + ", seed " + std::to_string(run_seed));
    // And again with the kernels at the speed they ran (sim_kernels_as_run/).
    if (kernel_scale) {
      ScenarioSpec scaled = spec;
      scaled.roofline.kernel_time_scale = *kernel_scale;
      std::unique_ptr<ScenarioRun> scaled_run;
      s = ScenarioRun::Build(scaled, catalog, policies, &scaled_run);
      const std::string dir = out->path() + "/sim_kernels_as_run";
      if (s.ok()) s = MakeOutputDir(dir);
      if (s.ok())
        s = RunInto(*scaled_run, dir, run_seed, choices, nullptr, &as_run_report, nullptr, lc.serve ? &served : nullptr);
      if (g_stop_signal) return InterruptedExit(out_dir);
      if (!s.ok()) return Fail(s);
      as_run.scale = *kernel_scale;
      as_run.sim = &as_run_report.summary;
      as_run.sim_requests = dir + "/requests.csv";
    }
    s = DiffLiveRun(sim_report.summary, live_report.summary, sim_dir + "/requests.csv",
                    out->path() + "/requests.csv", context, LiveDiffTargets{}, kernel_scale ? &as_run : nullptr, &diff);
    if (s.ok()) s = WriteFile(out->path() + "/diff.json", diff.json);
    if (s.ok()) s = WriteFile(out->path() + "/diff.md", diff.markdown);
    for (const auto& [name, svg] : diff.svgs)
      if (s.ok()) s = WriteFile(out->path() + "/" + name, svg);
    if (!s.ok()) return Fail(s);
  }
  s = out->Commit();
  if (!s.ok()) return Fail(s);
  if (!quiet) {
    std::printf("fleetsim live %s  (seed %llu, %s backend)\n", path.c_str(), static_cast<unsigned long long>(run_seed),
                lc.backend.c_str());
    std::fputs(FormatSummaryTable(live_report.summary).c_str(), stdout);
    if (lc.diff) {
      std::printf("diff        %s (sim vs live: P50 TTFT/TPOT within 5%%, P99 within 10%%)\n",
                  diff.within_targets ? "within targets" : "MISSED targets");
      for (const std::string& m : diff.misses) std::printf("            %s\n", m.c_str());
      if (kernel_scale) {
        // The same figures with the kernels priced at the speed they ran.
        std::printf("            kernels ran at %.3fx the profile; priced so: %s\n", *kernel_scale,
                    diff.as_run_line.c_str());
      }
    }
    std::printf("outputs     %s/{summary.json,requests.csv,timeseries.csv,itl.csv,run.json,live.json,observed.csv%s}\n",
                out_dir.c_str(), lc.diff ? (kernel_scale ? ",diff.json,diff.md,sim/,sim_kernels_as_run/" : ",diff.json,diff.md,sim/") : "");
  }
  return 0;
}

int CmdReport(const std::string& dir) {
  ReportFiles files;
  Status s = RenderReport(dir, &files);
  if (s.ok()) s = WriteFile(dir + "/report.html", files.html);
  if (s.ok()) s = WriteFile(dir + "/report.md", files.md);
  if (!s.ok()) return Fail(s);
  std::printf("wrote %s/report.html and %s/report.md\n", dir.c_str(), dir.c_str());
  return 0;
}

}  // namespace
}  // namespace fleetsim

int main(int argc, char** argv) {
  using namespace fleetsim;
  CLI::App app{"fleetsim: discrete-event simulator and capacity planner for LLM inference clusters"};
  app.require_subcommand(1);
  // Usage errors are one line, like every other input error. Set before the
  // subcommands are added: they copy it.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("fleetsim: ") + e.what() + " (see --help)\n";
  });

  std::string scenario, out_dir;
  std::optional<uint64_t> seed;
  std::vector<std::string> overrides;
  OutputChoices choices;
  bool quiet = false;
  CLI::App* run = app.add_subcommand("run", "simulate a scenario and write its outputs");
  run->add_option("scenario", scenario, "scenario JSON file")->required();
  run->add_option("--out", out_dir,
                  "output folder, replaced atomically when the run succeeds (default: out/<scenario file name "
                  "without .json>)");
  run->add_option("--seed", seed, "random seed (default: the scenario's)")->transform(IntegerIn(0, kMaxSeed));
  run->add_option("--set", overrides,
                  "KEY=VALUE: override a scenario key before it is checked, e.g. fleet.pools[0].replicas=4 "
                  "(repeatable; VALUE is JSON, or a string)")
      ->take_all()
      ->allow_extra_args(false);
  run->add_flag("--trace", choices.trace, "also write trace.json (Chrome trace format, ui.perfetto.dev)");
  run->add_option("--trace-requests", choices.trace_requests,
                  "with --trace: keep the first N requests and the iterations before request N arrives")
      ->transform(IntegerIn(1, 1000000000))
      ->capture_default_str();
  run->add_option("--timeseries-interval", choices.timeseries_interval_s,
                  "timeseries.csv sampling interval in seconds (default 1 s, coarser when the run is long; "
                  "coarsened as needed to stay within 1,000,000 rows)")
      ->check(NumberIn(1e-6, 1e9));
  run->add_flag("--quiet", quiet, "print nothing but errors and warnings");
  std::string compare;
  run->add_option("--compare", compare, "run once per registered policy of a kind, side by side")
      ->check(CLI::IsMember({"schedulers", "autoscalers", "routers"}));

  std::string live_scenario, live_out;
  std::vector<std::string> live_overrides;
  std::optional<uint64_t> live_seed;
  LiveChoices live_choices;
  bool live_quiet = false, live_no_diff = false;
  CLI::App* live = app.add_subcommand(
      "live", "run a scenario on this machine's kernels (cpu or cuda) in wall-clock time and diff it against the simulation");
  live->add_option("scenario", live_scenario, "scenario JSON file")->required();
  live->add_option("--backend", live_choices.backend, "kernel backend: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  live->add_option("--out", live_out,
                   "output folder, replaced atomically when the run succeeds (default: out/live-<scenario file name>)");
  live->add_option("--time-scale", live_choices.time_scale,
                   "arrivals come this many times as fast as the scenario's traffic says (2: twice the rate)")
      ->check(NumberIn(1e-3, 1e6))
      ->capture_default_str();
  live->add_option("--seed", live_seed, "random seed (default: the scenario's)")->transform(IntegerIn(0, kMaxSeed));
  live->add_option("--set", live_overrides, "KEY=VALUE: override a scenario key, as with run (repeatable)")
      ->take_all()
      ->allow_extra_args(false);
  live->add_option("--profile", live_choices.profile,
                   "calibration profile of this machine for the diff's simulation (default: the scenario's, else "
                   "calibrated now on the quick grid)");
  live->add_flag("--calibrate", live_choices.calibrate, "calibrate this machine now even when the scenario names a profile");
  live->add_flag("--no-diff", live_no_diff, "run live only: no simulation, no diff");
  live->add_flag("--quiet", live_quiet, "print nothing but errors and warnings");
  live->add_flag("--serve", live_choices.serve,
                 "take the requests from an OpenAI-compatible endpoint on 127.0.0.1 (POST /v1/completions, "
                 "/v1/chat/completions; streaming) instead of the scenario's traffic");
  live->add_option("--port", live_choices.serve_options.port, "--serve: the port (0: a free one, printed)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  live->add_option("--serve-requests", live_choices.serve_options.max_requests,
                   "--serve: accept at most this many completions, then end once they have")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
      ->capture_default_str();
  live->add_option("--serve-seconds", live_choices.serve_options.max_seconds,
                   "--serve: accept no completion after this many seconds, then end once those accepted have")
      ->check(NumberIn(0.1, 86400 * 7))
      ->capture_default_str();
  live->add_option("--serve-connections", live_choices.serve_options.max_connections,
                   "--serve: at most this many connections at once (more are answered 503)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();

  std::string vscenario;
  std::vector<std::string> voverrides;
  CLI::App* validate = app.add_subcommand("validate", "check a scenario without running it");
  validate->add_option("scenario", vscenario, "scenario JSON file")->required();
  validate->add_option("--set", voverrides, "KEY=VALUE: override a scenario key, as with run (repeatable)");

  std::string plan_file, plan_out, report_dir;
  int plan_threads = 1;
  bool plan_quiet = false, plan_progress = false;
  CLI::App* plan = app.add_subcommand(
      "plan", "search configurations for the cheapest fleet that meets latency targets, and report (docs/plan.md)");
  plan->add_option("plan", plan_file, "plan JSON file")->required();
  plan->add_option("--out", plan_out, "output folder, replaced atomically when the plan succeeds")->required();
  plan->add_option("-j,--jobs", plan_threads, "simulations run at once (threads; per MPI rank under mpirun)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  plan->add_flag("--quiet", plan_quiet, "print nothing but errors");
  plan->add_flag("--progress", plan_progress, "show the progress bar even when stderr is not a terminal");
  CLI::App* report = app.add_subcommand("report", "render report.html and report.md of a plan's or a run's folder");
  report->add_option("dir", report_dir, "a fleetsim plan or fleetsim run output folder")->required();

  CLI::App* list = app.add_subcommand("list", "models, GPUs, engines and registered policies");

  CLI::App* calibrate = app.add_subcommand(
      "calibrate", "time a model's operators on this machine's CPU or GPU and write a profile (or: import-vidur, gemm)");
  calibrate->require_subcommand(0, 1);
  calibrate::CalibrateOptions cal;
  std::vector<int> cal_tp = {1};
  std::string cal_grid = "quick", cal_out, cal_report;
  bool cal_no_flush = false, cal_no_links = false;
  calibrate->add_option("--backend", cal.backend, "kernel backend: cpu or cuda")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  calibrate->add_option("--model", cal.model, "model zoo name (fleetsim list)");
  calibrate->add_option("--tp", cal_tp, "tensor-parallel degrees whose shard shapes are timed, e.g. 1,2,4")
      ->delimiter(',')
      ->transform(IntegerIn(1, kMaxTp))
      ->capture_default_str();
  calibrate->add_option("--out", cal_out, "profile JSON to write");
  calibrate->add_option("--report", cal_report, "folder for report.md and its SVGs (default: <out>-report next to --out)");
  calibrate->add_option("--grid", cal_grid, "shape grid: quick or full")->capture_default_str();
  calibrate->add_option("--reps", cal.timing.repetitions, "timed runs per shape (median reported)")
      ->transform(IntegerIn(1, kMaxReps))
      ->capture_default_str();
  calibrate->add_option("--warmup", cal.timing.warmup, "untimed runs per shape first")
      ->transform(IntegerIn(0, kMaxReps))
      ->capture_default_str();
  calibrate->add_flag("--no-flush", cal_no_flush, "do not flush the cache before each timed run");
  calibrate->add_flag("--no-links", cal_no_links, "skip link measurement and the ring all-reduce check");
  calibrate->add_flag("--measured-attention", cal.attention_as_measured,
                      "price attention from the measured times even below the threshold (a profile for fleetsim "
                      "live, which runs these kernels)");
  calibrate->add_option("--device", cal.device,
                        "profile device name (default: the catalogue entry of the CUDA device, or cpu-host)");
  calibrate->add_option("--cuda-device", cal.cuda_device, "CUDA device index to time")
      ->transform(IntegerIn(0, kMaxCudaDevice))
      ->capture_default_str();
  calibrate->add_option("--cpu-ranks", cal.cpu_ranks, "CPU backend: ranks (threads) for links and the ring check")
      ->transform(IntegerIn(2, kMaxCpuRanks))
      ->capture_default_str();
  calibrate->add_option("--date", cal.date, "date written into the profile (default: today, UTC)");
  bool cal_quiet = false;
  calibrate->add_flag("--quiet", cal_quiet, "print nothing but errors");

  std::string g_backend = "cpu", g_dtype = "bf16", g_json;
  std::vector<std::string> g_shapes;
  int g_device = 0;
  calibrate::TimingOptions g_timing;
  g_timing.repetitions = 20;
  CLI::App* gemm = calibrate->add_subcommand("gemm", "time GEMM shapes with the calibration harness");
  gemm->add_option("--backend", g_backend, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
  gemm->add_option("--shapes", g_shapes, "MxNxK shapes, comma-separated")->delimiter(',')->required();
  gemm->add_option("--dtype", g_dtype, "bf16, fp16 or fp32")->capture_default_str();
  gemm->add_option("--reps", g_timing.repetitions, "timed runs per shape")
      ->transform(IntegerIn(1, kMaxReps))
      ->capture_default_str();
  gemm->add_option("--warmup", g_timing.warmup, "untimed runs per shape")
      ->transform(IntegerIn(0, kMaxReps))
      ->capture_default_str();
  gemm->add_option("--cuda-device", g_device, "CUDA device index")
      ->transform(IntegerIn(0, kMaxCudaDevice))
      ->capture_default_str();
  gemm->add_option("--json", g_json, "also write the results as JSON here");
  std::string vidur_compute, vidur_attention, vidur_out, vidur_model, vidur_device;
  std::vector<std::string> vidur_network;
  CLI::App* import_vidur =
      calibrate->add_subcommand("import-vidur",
                                "convert Vidur's profiling CSVs (microsoft/vidur) into a profile: per-layer and fitted "
                                "curves");
  import_vidur->add_option("--compute", vidur_compute, "Vidur compute CSV (the *_mlp.csv)")->required();
  import_vidur->add_option("--attention", vidur_attention,
                           "Vidur attention CSV of the same model and GPU (default: none, attention stays roofline)");
  import_vidur->add_option("--network", vidur_network, "Vidur network CSVs (all_reduce, send_recv)")
      ->delimiter(',');
  import_vidur->add_option("--out", vidur_out, "profile JSON to write")->required();
  import_vidur->add_option("--model", vidur_model,
                           "model zoo name the compute CSV was measured for (default: inferred from its dimensions)");
  import_vidur->add_option("--device", vidur_device,
                           "hardware catalogue name of the GPU measured (default: from the compute file's Vidur "
                           "device tag, h100 -> H100-SXM, a100 -> A100-80G; refused when it has none)");

  std::string observe_file, observe_format;
  bool observe_allow_aggregates = false;
  std::optional<uint64_t> observe_run;
  CLI::App* observe = app.add_subcommand(
      "observe", "read a benchmark client's results (vLLM bench serve, AIPerf, GenAI-Perf, GuideLLM, CSV) and "
                 "summarise them");
  observe->add_option("file", observe_file, "the client's output file")->required();
  observe->add_option("--format", observe_format,
                      "vllm, aiperf, genaiperf, guidellm or csv (default: guessed from the extension and keys)");
  observe->add_flag("--allow-aggregates", observe_allow_aggregates,
                    "read a file without per-request timing for its aggregates alone instead of refusing it");
  observe->add_option("--run", observe_run, "show run N (from 0) of a file that holds several")
      ->transform(IntegerIn(0, 1000000000));

  std::vector<std::string> fit_files;
  std::string fit_scenario, fit_out, fit_report, fit_format, fit_name, fit_split, fit_terms = "all";
  std::optional<uint64_t> fit_seed;
  CLI::App* fit = app.add_subcommand(
      "fit", "fit an engine profile's CPU, server and GPU terms to observed runs of a real server (each replayed "
             "through the scenario's pool) and to measured steps of its engine");
  fit->add_option("observed", fit_files,
                  "benchmark clients' result files (as fleetsim observe reads them), or measurement sets "
                  "(format fleetsim-measurements: published figures, each run with its scenario)")
      ->required();
  fit->add_option("--scenario", fit_scenario, "scenario whose single pool (model, GPU, tp, scheduler, engine) "
                                              "served the observed runs (required for benchmark clients' files)");
  fit->add_option("--split", fit_split, "fit only the runs of the measurement sets whose split is this (\"fit\")");
  fit->add_option("--out", fit_out, "engine profile JSON to write")->required();
  fit->add_option("--report", fit_report, "folder for report.md and errors.svg (default: <out>-report next to --out)");
  fit->add_option("--format", fit_format, "the files' format (default: guessed from each file)");
  fit->add_option("--name", fit_name, "the written profile's name (default: the pool's engine profile's)");
  fit->add_option("--seed", fit_seed, "random seed of the replays (default: the scenario's)")
      ->transform(IntegerIn(0, kMaxSeed));
  fit->add_option("--terms", fit_terms,
                  "which terms to fit: all (default), cpu (the CPU and server terms; the kernels as priced) or gpu "
                  "(the kernel terms, eager launch and custom all-reduce latency)")
      ->check(CLI::IsMember({"all", "cpu", "gpu"}));
  bool fit_quiet = false;
  fit->add_flag("--quiet", fit_quiet, "print nothing but errors and warnings");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitInput;
  }

  Catalog catalog;
  Status s = Catalog::LoadBuiltin(&catalog);
  if (!s.ok()) {
    std::fprintf(stderr, "fleetsim: built-in catalogue: %s\n", s.message().c_str());
    return 1;
  }
  Policies policies;
  RegisterBuiltins(&policies);

  if (*run || *plan || *live) InstallStopHandlers();
  if (*live) {
    live_choices.diff = !live_no_diff;
    return CmdLive(live_scenario, live_overrides, live_out, live_seed, live_choices, OutputChoices{}, live_quiet, catalog,
                   policies);
  }
  if (*plan) return CmdPlan(plan_file, plan_out, plan_threads, plan_quiet, plan_progress, catalog, policies);
  if (*report) return CmdReport(report_dir);
  if (*run && compare == "schedulers")
    return CmdCompareSchedulers(scenario, overrides, out_dir, seed, choices, quiet, catalog, policies);
  if (*run && compare == "autoscalers")
    return CmdCompareAutoscalers(scenario, overrides, out_dir, seed, choices, quiet, catalog, policies);
  if (*run && compare == "routers")
    return CmdCompareRouters(scenario, overrides, out_dir, seed, choices, quiet, catalog, policies);
  if (*run) return CmdRun(scenario, overrides, out_dir, seed, choices, quiet, catalog, policies);
  if (*validate) return CmdValidate(vscenario, voverrides, catalog, policies);
  if (*list) return CmdList(catalog, policies);
  if (*fit)
    return CmdFit(fit_files, fit_scenario, fit_split, fit_out, fit_report, fit_format, fit_seed, fit_name, fit_terms,
                  fit_quiet, catalog, policies);
  if (*observe) return CmdObserve(observe_file, observe_format, observe_allow_aggregates, observe_run);
  if (*import_vidur)
    return CmdImportVidur(vidur_compute, vidur_attention, vidur_network, vidur_out, vidur_model, vidur_device, catalog);
  if (*gemm) return CmdCalibrateGemm(g_backend, g_device, g_shapes, g_dtype, g_timing, g_json);
  if (*calibrate) {
    if (cal.model.empty() || cal_out.empty())
      return Fail(Status::Invalid("calibrate: --model and --out are required (or a subcommand: import-vidur, gemm)"));
    cal.timing.flush_cache = !cal_no_flush;
    cal.links = !cal_no_links;
    return CmdCalibrate(cal, cal_tp, cal_grid, cal_out, cal_report, cal_quiet, catalog);
  }
  return kExitInput;
}
