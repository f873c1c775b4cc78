// How well a Llama-2-7B H100 profile's fitted curves predict other models'
// per-layer operator times on the same GPU (calibrate/vidur_transfer.h):
// median and p90 relative error per operator kind, per model and tp. Run by
// `make bench`; tests/fidelity/vidur_transfer_test.cc holds the bounds.
//
// Usage: vidur_transfer_bench [--per-gemm] [SOURCE_CSV TARGET_CSV...]
// (default: the bundled 7B CSV, fitted without its tp 4 rows, against the
// bundled Qwen-72B and CodeLlama-34B slices).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "calibrate/vidur_transfer.h"

int main(int argc, char** argv) {
  const std::string root = FLEETSIM_SOURCE_DIR;
  bool per_gemm = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--per-gemm") == 0) {
      per_gemm = true;
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (files.size() == 1) {
    std::fprintf(stderr, "usage: vidur_transfer_bench [--per-gemm] [SOURCE_CSV TARGET_CSV...]\n");
    return 2;
  }
  if (files.empty()) {
    files = {root + "/tests/calibrate/data/compute_h100_meta-llama_Llama-2-7b-hf_mlp.csv",
             root + "/tests/fidelity/data/compute_h100_Qwen_Qwen-72B_mlp_slice.csv",
             root + "/tests/fidelity/data/compute_h100_codellama_CodeLlama-34b-Instruct-hf_mlp_slice.csv"};
  }
  fleetsim::calibrate::TransferOptions options;
  std::vector<fleetsim::calibrate::TransferError> errors;
  const fleetsim::Status s =
      fleetsim::calibrate::VidurTransfer(files[0], {files.begin() + 1, files.end()}, options, &errors);
  if (!s.ok()) {
    std::fprintf(stderr, "vidur_transfer_bench: %s\n", s.message().c_str());
    return 2;
  }
  std::printf("Fitted curves of %s (tp 4 held out of the fit), per layer on one GPU of the tp shard:\n",
              files[0].substr(files[0].find_last_of('/') + 1).c_str());
  std::printf("relative error |predicted - measured| / measured over the token counts (1..4096)\n\n");
  std::printf("%-62s %4s %-15s %6s %8s %8s %8s %10s\n", "model", "tp", "op", "points", "median", "p90", "max",
              "pred/meas");
  for (const auto& e : errors) {
    const bool layer = e.op == "gemm" || e.op == "elementwise";
    if (!layer && !per_gemm) continue;
    const std::string tp = e.tp == 0 ? "all" : std::to_string(e.tp);
    std::printf("%-62s %4s %-15s %6d %7.1f%% %7.1f%% %7.1f%% %10.3f\n", e.model.c_str(), tp.c_str(), e.op.c_str(),
                e.points, 100 * e.median, 100 * e.p90, 100 * e.max, e.median_ratio);
  }
  return 0;
}
