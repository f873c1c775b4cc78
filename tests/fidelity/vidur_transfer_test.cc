// Bounds on how well a Llama-2-7B H100 profile's fitted curves predict the
// per-layer operator times of larger models on the same GPU, at tp 1, 2, 4
// and 8 (calibrate/vidur_transfer.h). Targets: Vidur's Qwen-72B and
// CodeLlama-34B H100 measurements (subsampled slices in data/), and the 7B's
// own tp 4 rows, held out of the fit. `make bench` prints every figure
// (tests/bench/vidur_transfer_bench.cc).
//
// Measured when the bounds were set (per layer, pooled over tp, median /
// p90 relative error): GEMMs 4.1% / 12.2% (7B tp 4 held out), 4.8% / 15.8%
// (Qwen-72B), 4.3% / 13.0% (CodeLlama-34B); elementwise 1.9% / 5.7%,
// 4.5% / 10.4%, 4.4% / 11.0%. The worst single (model, tp): GEMMs 6.7% /
// 16.7%, elementwise 5.4% / 12.8% (Qwen-72B at tp 1, whose weights are up to
// 4.5x the 7B's largest). The bounds leave a margin over these; a change of
// the fitter or the importer that loses it fails here.
#include "calibrate/vidur_transfer.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace fleetsim::calibrate {
namespace {

const std::string kRoot = FLEETSIM_SOURCE_DIR;
const std::string kSource = kRoot + "/tests/calibrate/data/compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv";
const std::string kQwen = kRoot + "/tests/fidelity/data/compute_h100_Qwen_Qwen-72B_mlp_slice.csv";
const std::string kCodeLlama =
    kRoot + "/tests/fidelity/data/compute_h100_codellama_CodeLlama-34b-Instruct-hf_mlp_slice.csv";

// Per (model, tp): median and p90 of the per-layer relative error.
constexpr double kMedianPerTp = 0.08, kP90PerTp = 0.20;
// Per model, every tp pooled.
constexpr double kMedianPooled = 0.06, kP90Pooled = 0.18;
// Each GEMM alone (per model, pooled): noisier, kernel choices swing
// single shapes by up to ±40%.
constexpr double kMedianPerGemm = 0.15;

std::vector<TransferError> Errors() {
  std::vector<TransferError> errors;
  const Status s = VidurTransfer(kSource, {kQwen, kCodeLlama}, TransferOptions(), &errors);
  EXPECT_TRUE(s.ok()) << s.message();
  return errors;
}

TEST(VidurTransfer, CoversEveryModelAndTp) {
  std::set<std::pair<std::string, int>> seen;
  for (const TransferError& e : Errors())
    if (e.op == "gemm") seen.insert({e.model, e.tp});
  const std::set<std::pair<std::string, int>> want = {
      {"compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv (held out)", 4},
      {"compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv (held out)", 0},
      {"compute_h100_Qwen_Qwen-72B_mlp_slice.csv", 1},
      {"compute_h100_Qwen_Qwen-72B_mlp_slice.csv", 2},
      {"compute_h100_Qwen_Qwen-72B_mlp_slice.csv", 4},
      {"compute_h100_Qwen_Qwen-72B_mlp_slice.csv", 8},
      {"compute_h100_Qwen_Qwen-72B_mlp_slice.csv", 0},
      {"compute_h100_codellama_CodeLlama-34b-Instruct-hf_mlp_slice.csv", 1},
      {"compute_h100_codellama_CodeLlama-34b-Instruct-hf_mlp_slice.csv", 2},
      {"compute_h100_codellama_CodeLlama-34b-Instruct-hf_mlp_slice.csv", 4},
      {"compute_h100_codellama_CodeLlama-34b-Instruct-hf_mlp_slice.csv", 8},
      {"compute_h100_codellama_CodeLlama-34b-Instruct-hf_mlp_slice.csv", 0},
  };
  EXPECT_EQ(seen, want);
}

TEST(VidurTransfer, PerLayerErrorsStayWithinTheStatedBounds) {
  for (const TransferError& e : Errors()) {
    if (e.op != "gemm" && e.op != "elementwise") continue;
    const std::string where = e.model + " tp " + std::to_string(e.tp) + " " + e.op;
    EXPECT_GE(e.points, 60) << where;
    EXPECT_LE(e.median, e.tp == 0 ? kMedianPooled : kMedianPerTp) << where;
    EXPECT_LE(e.p90, e.tp == 0 ? kP90Pooled : kP90PerTp) << where;
    // No systematic bias of more than the median bound either way.
    EXPECT_NEAR(e.median_ratio, 1.0, kMedianPerTp) << where;
  }
}

TEST(VidurTransfer, EachGemmAloneStaysWithinItsBound) {
  int gemms = 0;
  for (const TransferError& e : Errors()) {
    if (e.tp != 0 || e.op == "gemm" || e.op == "elementwise") continue;
    ++gemms;
    EXPECT_LE(e.median, kMedianPerGemm) << e.model << " " << e.op;
  }
  EXPECT_EQ(gemms, 3 * 4);
}

TEST(VidurTransfer, RefusesToHoldOutEverything) {
  TransferOptions o;
  o.held_out_tp = {1, 2, 4, 8};
  std::vector<TransferError> errors;
  EXPECT_EQ(VidurTransfer(kSource, {}, o, &errors).message(), kSource + ": every row is held out; nothing to fit");
}

}  // namespace
}  // namespace fleetsim::calibrate
