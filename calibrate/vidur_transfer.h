// Transfer check of fitted curves (model/fitted_curve.h) across models: fit
// one model's Vidur compute CSV the way `calibrate import-vidur` does
// (FitVidurCompute), then predict the per-layer operator times of other
// models measured on the same GPU, and of the source's own rows held out of
// the fit, and report the relative errors.
//
// This is how far a profile of one model can be trusted for another: the
// "fitted" source of ProfilePerfModel evaluates the same curves at the same
// shapes (per layer, per GPU of a tp shard: the sum of the four GEMMs, and
// 2 norms + rope + activation + 2 residual adds).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace fleetsim::calibrate {

struct TransferOptions {
  // The source's rows at these tps are left out of the fit and predicted
  // like a target: GEMM and elementwise shapes the fit never saw, between
  // and beside the ones it did. Empty: fit every row.
  std::vector<int> held_out_tp = {4};
};

// Relative errors |predicted - measured| / measured of one operator kind,
// over the token counts of one model at one tp.
struct TransferError {
  std::string model;  // the CSV's file name; "(held out)" appended for the source's own rows
  int tp = 0;         // 0: every tp of the model pooled
  // "gemm" or "elementwise" (per layer), or one of Vidur's timers
  // ("attn_pre_proj", "mlp_up_proj", ...: each GEMM alone)
  std::string op;
  int points = 0;
  double median = 0, p90 = 0, max = 0;
  // Median of predicted / measured: below 1, the fit predicts too little.
  double median_ratio = 0;
};

// Fits `source_csv` (less its held-out tps) and predicts every row of each
// target and the held-out rows. Rows come per model (source held-out first,
// then targets in order), per tp ascending with the pooled tp 0 last, per
// op: gemm, elementwise, then the four GEMMs in Vidur's order.
// Errors: a CSV that ReadVidurCompute refuses; a held-out tp that leaves
// nothing to fit; an operator a target needs that the source has no fit for
// (e.g. a GELU model against a SwiGLU source).
Status VidurTransfer(const std::string& source_csv, const std::vector<std::string>& target_csvs,
                     const TransferOptions& options, std::vector<TransferError>* out);

}  // namespace fleetsim::calibrate
