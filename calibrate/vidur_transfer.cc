#include "calibrate/vidur_transfer.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "calibrate/fit.h"
#include "calibrate/vidur_import.h"
#include "model/profile.h"

namespace fleetsim::calibrate {
namespace {

std::string BaseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// (predicted, measured) pairs of one (tp, op).
using Pairs = std::vector<std::pair<double, double>>;

TransferError Summarise(const std::string& model, int tp, const std::string& op, const Pairs& pairs) {
  std::vector<double> errors, ratios;
  for (const auto& [predicted, measured] : pairs) {
    errors.push_back(std::abs(predicted - measured) / measured);
    ratios.push_back(predicted / measured);
  }
  std::sort(errors.begin(), errors.end());
  std::sort(ratios.begin(), ratios.end());
  TransferError e;
  e.model = model;
  e.tp = tp;
  e.op = op;
  e.points = static_cast<int>(pairs.size());
  e.median = Quantile(errors, 0.5);
  e.p90 = Quantile(errors, 0.9);
  e.max = errors.back();
  e.median_ratio = Quantile(ratios, 0.5);
  return e;
}

const char* const kGemmColumns[] = {"attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj"};

// Predicts every row of one model and appends its errors to *out.
Status Predict(const std::string& model, const std::vector<VidurComputeRow>& rows,
               const std::map<std::string, FittedCurve>& fits, std::vector<TransferError>* out) {
  // op -> tp -> pairs; tp 0 pools them.
  std::map<std::string, std::map<int, Pairs>> pairs;
  for (const VidurComputeRow& r : rows) {
    double gemm_measured = 0, gemm_predicted = 0, elem_measured = 0, elem_predicted = 0;
    for (const VidurOpTime& t : VidurOpTimes(r)) {
      if (t.per_layer == 0) continue;  // the embedding runs once per iteration
      auto it = fits.find(t.op + ".fp16");
      if (it == fits.end())
        return Status::Invalid(model + ": the source has no fit of " + t.op + " (" + t.column + ")");
      const double predicted = it->second.Predict(t.size, t.scale);
      if (t.gemm) {
        gemm_measured += t.ns;
        gemm_predicted += predicted;
        for (int tp : {r.tp, 0}) pairs[t.column][tp].emplace_back(predicted, t.ns);
      } else {
        elem_measured += t.per_layer * t.ns;
        elem_predicted += t.per_layer * predicted;
      }
    }
    for (int tp : {r.tp, 0}) {
      pairs["gemm"][tp].emplace_back(gemm_predicted, gemm_measured);
      pairs["elementwise"][tp].emplace_back(elem_predicted, elem_measured);
    }
  }
  std::vector<std::string> order = {"gemm", "elementwise"};
  order.insert(order.end(), std::begin(kGemmColumns), std::end(kGemmColumns));
  std::map<int, std::vector<TransferError>> by_tp;
  for (const std::string& op : order) {
    for (const auto& [tp, p] : pairs[op]) {
      // A measured time of 0 has no relative error; Vidur's have none.
      Pairs kept;
      for (const auto& [pr, me] : p)
        if (me > 0) kept.emplace_back(pr, me);
      if (!kept.empty()) by_tp[tp].push_back(Summarise(model, tp, op, kept));
    }
  }
  for (auto& [tp, errors] : by_tp)
    if (tp != 0) out->insert(out->end(), errors.begin(), errors.end());
  out->insert(out->end(), by_tp[0].begin(), by_tp[0].end());
  return Status::Ok();
}

}  // namespace

Status VidurTransfer(const std::string& source_csv, const std::vector<std::string>& target_csvs,
                     const TransferOptions& options, std::vector<TransferError>* out) {
  std::vector<VidurComputeRow> rows, fitted, held;
  FLEETSIM_RETURN_IF_ERROR(ReadVidurCompute(source_csv, &rows));
  for (const VidurComputeRow& r : rows) {
    const bool out_of_fit =
        std::find(options.held_out_tp.begin(), options.held_out_tp.end(), r.tp) != options.held_out_tp.end();
    (out_of_fit ? held : fitted).push_back(r);
  }
  if (fitted.empty()) return Status::Invalid(source_csv + ": every row is held out; nothing to fit");
  std::map<std::string, FittedCurve> fits;
  FLEETSIM_RETURN_IF_ERROR(FitVidurCompute(fitted, "fp16", &fits).WithPrefix(source_csv + ": "));
  std::vector<TransferError> errors;
  if (!held.empty()) FLEETSIM_RETURN_IF_ERROR(Predict(BaseName(source_csv) + " (held out)", held, fits, &errors));
  for (const std::string& path : target_csvs) {
    std::vector<VidurComputeRow> target;
    FLEETSIM_RETURN_IF_ERROR(ReadVidurCompute(path, &target));
    FLEETSIM_RETURN_IF_ERROR(Predict(BaseName(path), target, fits, &errors));
  }
  *out = std::move(errors);
  return Status::Ok();
}

}  // namespace fleetsim::calibrate
