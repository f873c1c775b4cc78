// `fleetsim calibrate`: measures one model's operators on one backend and
// writes a fleetsim profile (model/profile.h) and a calibration report.
//
// Steps: describe the device; measure its ceilings (a large device copy,
// and the best GEMM of the grid); time every shape of the grid
// (calibrate/grid.h) with the harness (calibrate/measure.h); sum the
// model's own shapes into per-layer curves per tp (the "profile" source);
// fit every operator over all its shapes (calibrate/fit.h; the "fitted"
// source, with cross-validated error); decide per attention kind whether the
// measured kernel is good enough to stand for the hardware; measure links
// and check a ring all-reduce built from copies against the alpha-beta
// prediction (calibrate/links.h); and write the report (calibrate/report.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "calibrate/grid.h"
#include "calibrate/measure.h"
#include "calibrate/rank_links.h"
#include "calibrate/report.h"
#include "model/catalog.h"
#include "model/profile.h"

namespace fleetsim::calibrate {

// The attention thresholds: the measured kernel is used only when it
// reaches this fraction of its roofline (see AttentionDecision).
inline constexpr double kPrefillThreshold = 0.5;  // of peak FLOP/s
inline constexpr double kDecodeThreshold = 0.7;   // of memory bandwidth

struct CalibrateOptions {
  std::string backend = "cpu";  // "cpu" or "cuda"
  int cuda_device = 0;          // the device timed (links use every visible one)
  std::string model;            // model zoo name
  std::vector<int> tp = {1};    // tensor-parallel degrees whose shapes are timed
  GridSize grid = GridSize::kQuick;
  TimingOptions timing;
  // The profile's "device": the hardware catalogue name scenarios use. Empty:
  // the catalogue entry matching the CUDA device's name ("NVIDIA H200" ->
  // "H200"), or "cpu-host" for the CPU backend. A name the catalogue does
  // not know is allowed: scenarios then take the device's figures from the
  // profile's device_info.
  std::string device;
  bool links = true;        // measure links and run the ring all-reduce check
  // Attention priced from the measured times whatever their share of the
  // roofline: the profile is for fleetsim live, which runs these very
  // kernels. Off, a kernel below its threshold (calibrate.cc) gives way to
  // the roofline with a published efficiency, as an engine's own kernels
  // (FlashAttention, FlashInfer) reach it.
  bool attention_as_measured = false;
  // Ranks of the CPU backend's link measurement and ring check (threads
  // as ranks); CUDA uses the visible GPUs. >= 2.
  int cpu_ranks = 2;
  std::string date;         // written into the profile; empty: today (UTC)
  // Links between nodes, measured before by MeasureRankLinks (fleetsim
  // calibrate under mpirun): written into the profile's links,
  // collective_checks and topology.
  std::optional<RankLinks> rank_links;
};

struct CalibrationResult {
  Profile profile;
  ReportInput report;
  // Rendered report: the Markdown and one SVG per fitted operator, by file
  // name (the Markdown links to them by these names).
  std::string report_markdown;
  std::vector<std::pair<std::string, std::string>> svgs;
  // Relative error |predicted - measured| / measured of every held-out
  // prediction of every operator's cross-validation, pooled: the one-line
  // answer to "how well do the fits predict shapes they did not see".
  // What went wrong without stopping the run (links not measured, shapes
  // skipped); also in the profile's notes.
  std::vector<std::string> warnings;
  int held_out_count = 0;
  double held_out_median = 0;
  double held_out_p90 = 0;
};

// Called before each timed shape: shapes done so far, shapes in total, and
// what is being timed ("gemm 128x4096x4096 bf16").
using ProgressFn = std::function<void(int done, int total, const std::string& what)>;

// Checks what a user gave before anything is measured: the model, tp
// degrees, repetitions, backend availability and device index. Its errors
// are bad input; Calibrate's others are failures of the machine.
Status CheckCalibrateOptions(const CalibrateOptions& options, const Catalog& catalog);

// Runs the calibration (CheckCalibrateOptions first). Errors: unknown model (naming the valid ones), bad
// tp, a backend that cannot be created (CUDA without a GPU says so), a
// CUDA device the catalogue does not know and no `device` given.
Status Calibrate(const CalibrateOptions& options, const Catalog& catalog, const ProgressFn& progress,
                 CalibrationResult* out);

// The catalogue name for a CUDA device name, or "" when none matches.
std::string CatalogueNameForDevice(const std::string& cuda_name, const Catalog& catalog);

// Times GEMMs of the given shapes with the harness, for comparing it with a
// bare vendor-library loop (calibrate/gpu-check.sh). Each result is the
// shape and its Timing.
struct GemmBenchResult {
  GemmShape shape;
  Timing timing;
  double tflops = 0;  // 2·m·n·k / median
};
Status BenchGemms(const std::string& backend, int cuda_device, const std::vector<GemmShape>& shapes,
                  const TimingOptions& timing, std::vector<GemmBenchResult>* out, std::string* device_name);

}  // namespace fleetsim::calibrate
