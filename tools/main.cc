// fleetsim: the command-line front end.
//
//   fleetsim run SCENARIO.json [--out DIR] [--seed N] [--trace] [--quiet]
//   fleetsim validate SCENARIO.json
//   fleetsim list
//   fleetsim calibrate import-vidur --compute FILE --network FILE[,FILE] --out PROFILE.json [--model NAME]
//
// Exit codes: 0 success; 2 bad input (scenario, trace, names, impossible
// configuration) with a one-line message naming the file and JSON path or
// line; 1 anything else.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/vidur_import.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "sim/metrics/text_out.h"
#include "sim/runner/run.h"
#include "sim/scenario/parse.h"

namespace fleetsim {
namespace {

constexpr int kExitInput = 2;

int Fail(const Status& s) {
  std::fprintf(stderr, "fleetsim: %s\n", s.message().c_str());
  return kExitInput;
}

Status LoadAndBuild(const std::string& path, const Catalog& catalog, const Policies& policies,
                    std::unique_ptr<ScenarioRun>* run) {
  ScenarioSpec spec;
  FLEETSIM_RETURN_IF_ERROR(LoadScenarioFile(path, &spec));
  return ScenarioRun::Build(spec, catalog, policies, run);
}

// Creates `dir` (and its parents) for a run's outputs.
Status MakeOutputDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Invalid("cannot create output folder \"" + dir + "\": " + ec.message());
  return Status::Ok();
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  f.close();
  if (!f) return Status::Invalid("cannot write \"" + path + "\": " + std::strerror(errno));
  return Status::Ok();
}

int CmdRun(const std::string& path, std::string out_dir, std::optional<uint64_t> seed, bool trace, bool quiet,
           const Catalog& catalog, const Policies& policies) {
  std::unique_ptr<ScenarioRun> run;
  Status s = LoadAndBuild(path, catalog, policies, &run);
  if (!s.ok()) return Fail(s);
  if (out_dir.empty()) out_dir = "out/" + std::filesystem::path(path).stem().string();
  s = MakeOutputDir(out_dir);
  if (!s.ok()) return Fail(s);

  MetricsOptions mo;
  mo.requests_csv = out_dir + "/requests.csv";
  mo.timeseries_csv = out_dir + "/timeseries.csv";
  if (trace) mo.trace_json = out_dir + "/trace.json";
  const bool show_progress = !quiet && isatty(STDERR_FILENO);
  bool printed_progress = false;
  auto progress = [&](const Progress& p) {
    if (!show_progress || p.wall_s < 1.0) return;
    std::fprintf(stderr, "\r  simulated %.0f s  arrived %lld  finished %lld  wall %.1f s   ", TimeToSeconds(p.now),
                 static_cast<long long>(p.arrived), static_cast<long long>(p.finished), p.wall_s);
    printed_progress = true;
  };
  RunReport report;
  s = run->Run(mo, seed.value_or(run->spec().seed), progress, &report);
  if (printed_progress) std::fprintf(stderr, "\n");
  if (!s.ok()) {
    // A run stopped by bad input leaves no partial outputs to be mistaken
    // for results.
    std::error_code ec;
    for (const std::string& f : {mo.requests_csv, mo.timeseries_csv, mo.trace_json})
      if (!f.empty()) std::filesystem::remove(f, ec);
    return Fail(s);
  }

  s = WriteFile(out_dir + "/summary.json", SummaryToJson(report.summary));
  if (!s.ok()) return Fail(s);
  JsonWriter w;
  w.BeginObject();
  w.Key("wall_s").Double(report.wall_s);
  w.Key("events").Int(static_cast<int64_t>(report.events));
  w.Key("events_per_s").Double(report.wall_s > 0 ? static_cast<double>(report.events) / report.wall_s : 0);
  w.Key("requests_per_wall_s")
      .Double(report.wall_s > 0 ? static_cast<double>(report.summary.arrived) / report.wall_s : 0);
  w.Key("peak_rss_mb").Double(static_cast<double>(report.peak_rss_kb) / 1024.0);
  w.EndObject();
  s = WriteFile(out_dir + "/run.json", w.Finish());
  if (!s.ok()) return Fail(s);

  if (!quiet) {
    const std::string& name = run->spec().name.empty() ? path : run->spec().name;
    std::printf("fleetsim run %s  (seed %llu)\n", name.c_str(),
                static_cast<unsigned long long>(seed.value_or(run->spec().seed)));
    std::fputs(FormatSummaryTable(report.summary).c_str(), stdout);
    std::printf("wall        %.2f s  %.0f events/s  peak RSS %.0f MB\n", report.wall_s,
                report.wall_s > 0 ? static_cast<double>(report.events) / report.wall_s : 0.0,
                static_cast<double>(report.peak_rss_kb) / 1024.0);
    std::printf("outputs     %s/{summary.json,requests.csv,timeseries.csv,run.json%s}\n", out_dir.c_str(),
                trace ? ",trace.json" : "");
  } else {
    for (const std::string& m : report.summary.warnings) std::fprintf(stderr, "warning: %s\n", m.c_str());
  }
  return 0;
}

// `run --compare schedulers`: the scenario once per registered scheduler,
// every pool switched to it, side by side.
int CmdCompareSchedulers(const std::string& path, std::string out_dir, std::optional<uint64_t> seed, bool quiet,
                         const Catalog& catalog, const Policies& policies) {
  ScenarioSpec base;
  Status s = LoadScenarioFile(path, &base);
  if (!s.ok()) return Fail(s);
  {
    std::unique_ptr<ScenarioRun> check;  // the scenario as written must be valid
    s = ScenarioRun::Build(base, catalog, policies, &check);
    if (!s.ok()) return Fail(s);
  }
  if (out_dir.empty()) out_dir = "out/" + std::filesystem::path(path).stem().string();
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
    char line[512];
    if (!s.ok()) {
      std::snprintf(line, sizeof line, "%-12s  cannot run: %s\n", name.c_str(), s.message().c_str());
      table += line;
      csv += name + ",,,,,,,,,,,\"" + s.message() + "\"\n";
      continue;
    }
    const std::string dir = out_dir + "/" + name;
    s = MakeOutputDir(dir);
    if (!s.ok()) return Fail(s);
    MetricsOptions mo;
    mo.requests_csv = dir + "/requests.csv";
    mo.timeseries_csv = dir + "/timeseries.csv";
    RunReport report;
    s = run->Run(mo, seed.value_or(spec.seed), nullptr, &report);
    if (!s.ok()) return Fail(s);
    s = WriteFile(dir + "/summary.json", SummaryToJson(report.summary));
    if (!s.ok()) return Fail(s);
    const Summary& r = report.summary;
    if (r.overloaded) note += std::string(note.empty() ? "" : "; ") + "overloaded";
    std::snprintf(line, sizeof line, "%-12s %9.1f  %9.1f  %9.2f  %9.2f  %9.2f  %8.3f  %9.1f  %7lld  %s\n",
                  name.c_str(), r.ttft.p50, r.ttft.p99, r.tpot.p50, r.tpot.p99, r.itl.p99, r.requests_per_s,
                  r.output_tokens_per_s, static_cast<long long>(r.preemptions), note.c_str());
    table += line;
    std::snprintf(line, sizeof line, "%s,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%lld,%lld,%lld,%s\n", name.c_str(),
                  r.ttft.p50, r.ttft.p99, r.tpot.p50, r.tpot.p99, r.itl.p99, r.requests_per_s, r.output_tokens_per_s,
                  static_cast<long long>(r.preemptions), static_cast<long long>(r.completed),
                  static_cast<long long>(r.unfinished), note.c_str());
    csv += line;
  }
  s = WriteFile(out_dir + "/compare.csv", csv);
  if (!s.ok()) return Fail(s);
  if (!quiet) {
    std::printf("fleetsim run %s --compare schedulers  (latencies in ms)\n", path.c_str());
    std::fputs(table.c_str(), stdout);
    std::printf("outputs     %s/compare.csv and %s/<scheduler>/\n", out_dir.c_str(), out_dir.c_str());
  }
  return 0;
}

int CmdValidate(const std::string& path, const Catalog& catalog, const Policies& policies) {
  std::unique_ptr<ScenarioRun> run;
  Status s = LoadAndBuild(path, catalog, policies, &run);
  if (!s.ok()) return Fail(s);
  std::printf("%s: ok\n", path.c_str());
  for (const PoolPlan& p : run->pools()) {
    std::printf("  pool %-12s %d x %s on %d x %s: KV cache %lld blocks of %d tokens, budget %lld tokens, "
                "max %lld seqs%s\n",
                p.spec->name.c_str(), p.spec->replicas, p.model->name.c_str(), p.shard.gpus(), p.gpu->name.c_str(),
                static_cast<long long>(p.memory.kv_blocks), p.spec->block_size,
                static_cast<long long>(p.limits.max_num_batched_tokens),
                static_cast<long long>(p.limits.max_num_seqs), p.usd_per_gpu_hour ? "" : ", no price");
  }
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
    const EngineSpec* e = catalog.FindEngine(n);
    std::printf("  %-10s CPU overhead %.0f us + %.1f us per sequence per iteration\n", n.c_str(),
                e->cpu_overhead_fixed_us, e->cpu_overhead_per_seq_us);
  }
  std::printf("schedulers:\n");
  for (const auto& e : policies.schedulers.entries())
    std::printf("  %-18s %s\n", e.name.c_str(), e.description.c_str());
  std::printf("routers:\n");
  for (const auto& e : policies.routers.entries())
    std::printf("  %-18s %s\n", e.name.c_str(), e.description.c_str());
  std::printf("perf sources:\n  %-18s %s\n  %-18s %s\n", "roofline",
              "datasheet ceilings x measured efficiencies (model/roofline.h)", "profile",
              "measured per-operator times from a profile JSON (perf.profile; model/profile_perf_model.h)");
  return 0;
}

// Converts Vidur's published CSVs into a fleetsim profile JSON.
int CmdImportVidur(const std::string& compute, const std::vector<std::string>& network, const std::string& out,
                   const std::string& model, const Catalog& catalog) {
  ImportOptions options;
  options.model = model;
  options.catalog = &catalog;
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

}  // namespace
}  // namespace fleetsim

int main(int argc, char** argv) {
  using namespace fleetsim;
  CLI::App app{"fleetsim: discrete-event simulator and capacity planner for LLM inference clusters"};
  app.require_subcommand(1);

  std::string scenario, out_dir;
  std::optional<uint64_t> seed;
  bool trace = false, quiet = false;
  CLI::App* run = app.add_subcommand("run", "simulate a scenario and write its outputs");
  run->add_option("scenario", scenario, "scenario JSON file")->required();
  run->add_option("--out", out_dir, "output folder (default: out/<scenario name>)");
  run->add_option("--seed", seed, "random seed (default: the scenario's)");
  run->add_flag("--trace", trace, "also write trace.json (Chrome trace format, ui.perfetto.dev)");
  run->add_flag("--quiet", quiet, "print nothing but errors and warnings");
  std::string compare;
  run->add_option("--compare", compare, "run once per registered policy of a kind, side by side")
      ->check(CLI::IsMember({"schedulers"}));

  std::string vscenario;
  CLI::App* validate = app.add_subcommand("validate", "check a scenario without running it");
  validate->add_option("scenario", vscenario, "scenario JSON file")->required();

  CLI::App* list = app.add_subcommand("list", "models, GPUs, engines and registered policies");

  CLI::App* calibrate = app.add_subcommand("calibrate", "build performance profiles");
  calibrate->require_subcommand(1);
  std::string vidur_compute, vidur_out, vidur_model;
  std::vector<std::string> vidur_network;
  CLI::App* import_vidur =
      calibrate->add_subcommand("import-vidur", "convert Vidur's profiling CSVs (microsoft/vidur) into a profile");
  import_vidur->add_option("--compute", vidur_compute, "Vidur compute CSV (the *_mlp.csv)")->required();
  import_vidur->add_option("--network", vidur_network, "Vidur network CSVs (all_reduce, send_recv)")
      ->delimiter(',');
  import_vidur->add_option("--out", vidur_out, "profile JSON to write")->required();
  import_vidur->add_option("--model", vidur_model,
                           "model zoo name the compute CSV was measured for (default: inferred from its dimensions)");

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

  if (*run && compare == "schedulers") return CmdCompareSchedulers(scenario, out_dir, seed, quiet, catalog, policies);
  if (*run) return CmdRun(scenario, out_dir, seed, trace, quiet, catalog, policies);
  if (*validate) return CmdValidate(vscenario, catalog, policies);
  if (*list) return CmdList(catalog, policies);
  if (*import_vidur) return CmdImportVidur(vidur_compute, vidur_network, vidur_out, vidur_model, catalog);
  return kExitInput;
}
