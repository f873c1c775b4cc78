// The roofline's GEMM times on H100 (and H200, below) against measured GEMMs of models its
// fit never saw: Vidur's CodeLlama-34B and Qwen-72B H100 profiles (slices in
// data/), every GEMM of a layer (QKV, O, gate+up, down) at tp 1, 2, 4 and 8.
// The GPU's shape fit (model/hardware/H100-SXM.json "gemm_shape",
// tools/fit_gemm_shape.py on Llama-2-7B, internlm-20b and phi-2) is what a
// scenario gets by default; the constant-efficiency form it replaced is
// checked to be the optimistic one, so the test also says why the fit is
// there.
//
// Measured when the bounds were set (every row of the full held-out files,
// tools/fit_gemm_shape.py): median |error| 7.2% (CodeLlama-34B) and 7.6%
// (Qwen-72B), median signed error +0.9% and -0.4%, worst tp 9.8% (tp 8);
// the constant form: 18% and 17% too fast, 24% at tp 8.
#include "model/roofline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/vidur_import.h"
#include "model/batch_shape.h"
#include "model/catalog.h"
#include "model/engine_spec.h"

namespace fleetsim {
namespace {

const std::string kRoot = FLEETSIM_SOURCE_DIR;
const char* kTargets[] = {"/tests/fidelity/data/compute_h100_Qwen_Qwen-72B_mlp_slice.csv",
                          "/tests/fidelity/data/compute_h100_codellama_CodeLlama-34b-Instruct-hf_mlp_slice.csv"};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[v.size() / 2];
}

struct Errors {
  std::map<int, std::vector<double>> signed_by_tp;  // predicted / measured - 1
  std::vector<double> all;
};

Errors Compare(const GpuSpec& gpu, const RooflineOptions& options, const std::string& csv) {
  std::vector<VidurComputeRow> rows;
  const Status s = ReadVidurCompute(csv, &rows);
  EXPECT_TRUE(s.ok()) << s.message();
  Errors e;
  for (const auto& r : rows) {
    const double hd = static_cast<double>(r.hidden / r.heads), d = static_cast<double>(r.hidden);
    const double e_ = static_cast<double>(r.intermediate), tp = r.tp;
    // Vidur's layer (mlp_impl.py): N and K per tensor-parallel worker.
    const struct {
      double n, k, measured;
    } gemms[] = {{(r.heads + 2.0 * r.kv_heads) * hd / tp, d, r.pre_proj_ns},
                 {d, r.heads * hd / tp, r.post_proj_ns},
                 {(r.gated_mlp ? 2 : 1) * e_ / tp, d, r.up_proj_ns},
                 {d, e_ / tp, r.down_proj_ns}};
    for (const auto& g : gemms) {
      const double err =
          RooflinePerfModel::GemmTimeNs(gpu, options, static_cast<double>(r.tokens), g.n, g.k) / g.measured - 1;
      e.signed_by_tp[r.tp].push_back(err);
      e.all.push_back(err);
    }
  }
  return e;
}

std::vector<double> Abs(std::vector<double> v) {
  for (double& x : v) x = std::fabs(x);
  return v;
}

TEST(RooflineGemmFidelity, H100ShapeFitPredictsHeldOutModelsWithoutBias) {
  Catalog c;
  ASSERT_TRUE(Catalog::LoadBuiltin(&c).ok());
  const GpuSpec& h100 = *c.FindGpu("H100-SXM");
  ASSERT_TRUE(h100.gemm_shape.has_value());
  const RooflineOptions fitted = RooflineOptionsFor(h100, RooflineOptions(), false);
  ASSERT_TRUE(fitted.gemm_shape);
  const RooflineOptions constant;  // 0.80 / 0.85 and 2 us per kernel
  for (const char* target : kTargets) {
    SCOPED_TRACE(target);
    const Errors f = Compare(h100, fitted, kRoot + target);
    ASSERT_GT(f.all.size(), 500u);
    EXPECT_LT(Median(Abs(f.all)), 0.10);
    EXPECT_LT(std::fabs(Median(f.all)), 0.05);  // no bias
    for (const auto& [tp, errs] : f.signed_by_tp) {
      SCOPED_TRACE(tp);
      EXPECT_LT(Median(Abs(errs)), 0.13);
      EXPECT_LT(std::fabs(Median(errs)), 0.08);
    }
    // What the fit replaced: too fast on these shapes, more so at tp 8.
    const Errors k = Compare(h100, constant, kRoot + target);
    EXPECT_LT(Median(k.all), -0.12);
    EXPECT_LT(Median(k.signed_by_tp.at(8)), Median(k.signed_by_tp.at(2)));
  }
}

// H200: cuBLAS GEMMs measured on an H200 with fleetsim calibrate gemm (L2
// cleaned before each run), the four GEMMs of Llama-3.1-70B at tp 1 to 8 and
// of Llama-3.1-8B, M = 1 to 2048 (data/h200_cublas_gemm_decode_shapes.json).
// H200.json's gemm_shape was fitted on the shapes without N or K of 2048 or
// 14336; those are held out. Measured when the bounds were set: held out
// median 3.4%, bias +2.8%; fitted 4.4%, +3.2%; the H100 fit the H200 used
// before: 14.8%; the constant form: 16.9%, 16.8% too fast.
TEST(RooflineGemmFidelity, H200ShapeFitPredictsMeasuredDecodeShapes) {
  Catalog c;
  ASSERT_TRUE(Catalog::LoadBuiltin(&c).ok());
  const GpuSpec& h200 = *c.FindGpu("H200");
  const RooflineOptions fitted = RooflineOptionsFor(h200, RooflineOptions(), false);
  ASSERT_TRUE(fitted.gemm_shape);
  std::ifstream in(kRoot + "/tests/fidelity/data/h200_cublas_gemm_decode_shapes.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::vector<double> held, fit, constant;
  for (const auto& r : doc.at("results")) {
    const double m = r.at("m"), n = r.at("n"), k = r.at("k"), measured = r.at("median_ns");
    const double err = RooflinePerfModel::GemmTimeNs(h200, fitted, m, n, k) / measured - 1;
    (n == 2048 || k == 2048 || n == 14336 || k == 14336 ? held : fit).push_back(err);
    constant.push_back(RooflinePerfModel::GemmTimeNs(h200, RooflineOptions(), m, n, k) / measured - 1);
  }
  ASSERT_EQ(held.size(), 24u);
  ASSERT_EQ(fit.size(), 96u);
  EXPECT_LT(Median(Abs(held)), 0.06);
  EXPECT_LT(std::fabs(Median(held)), 0.05);
  EXPECT_LT(Median(Abs(fit)), 0.06);
  EXPECT_LT(Median(constant), -0.12);  // what the constant form would say: too fast
}

// Prefill attention on Hopper: FlashAttention-3-class kernels (cuDNN's,
// through PyTorch) measured on an H200 for whole causal prompts of 128 to
// 8192 tokens, one or eight sequences, with the query and KV heads of
// Llama-3.1-70B at tp 1 to 8 and Llama-3.1-8B
// (data/h200_cudnn_attention.json). H200.json's attention_shape was fitted
// with the 16-head rows held out (tools/fit_attention_shape.py): measured
// when the bounds were set, held out 3.0%, fitted 3.3%; the constant 0.60
// of peak is 51% too fast (a 512-token prompt reaches 19% of peak).
TEST(RooflineAttentionFidelity, H200PrefillShapeFitPredictsMeasuredKernels) {
  Catalog c;
  ASSERT_TRUE(Catalog::LoadBuiltin(&c).ok());
  const GpuSpec& h200 = *c.FindGpu("H200");
  ASSERT_TRUE(h200.attention_shape.has_value());
  const RooflineOptions fitted = RooflineOptionsFor(h200, RooflineOptions(), false);
  ASSERT_TRUE(fitted.attention_shape);
  // A scenario's own attention efficiency keeps the constant form.
  EXPECT_FALSE(RooflineOptionsFor(h200, RooflineOptions(), false, /*attention_efficiency_set=*/true).attention_shape);
  std::ifstream in(kRoot + "/tests/fidelity/data/h200_cudnn_attention.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  // Query heads on one GPU -> a zoo model and tp with those heads.
  const std::map<int, std::pair<const char*, int>> by_heads = {
      {64, {"Llama-3.1-70B", 1}}, {16, {"Llama-3.1-70B", 4}}, {8, {"Llama-3.1-70B", 8}}};
  std::vector<double> shaped, constant;
  for (const auto& r : doc.at("results")) {
    if (r.at("kind") != "prefill") continue;
    const int hq = r.at("hq"), hkv = r.at("hkv");
    // 32 query heads: tp 2 of the 70B has 4 KV heads, the 8B 8.
    const auto [model_name, tp] =
        hq == 32 ? std::pair<const char*, int>{hkv == 4 ? "Llama-3.1-70B" : "Llama-3.1-8B", hkv == 4 ? 2 : 1}
                 : by_heads.at(hq);
    const ModelSpec& model = *c.FindModel(model_name);
    EngineSpec engine;
    ASSERT_TRUE(ResolveEngine(*c.FindEngine("vllm"), "H200", model_name, tp, &engine).ok());
    const int64_t b = r.at("b"), len = r.at("q_len");
    BatchShape shape;
    shape.prefill_seqs = static_cast<int32_t>(b);
    shape.prefill_tokens = b * len;
    shape.prefill_attn_pairs = b * len * (len + 1) / 2;
    shape.prefill_kv_tokens = b * len;
    shape.sampled_seqs = static_cast<int32_t>(b);
    const double measured = r.at("median_ns");
    const RooflinePerfModel a(model, h200, ShardPlan{tp, 1, 1}, engine, fitted);
    const RooflinePerfModel k(model, h200, ShardPlan{tp, 1, 1}, engine, RooflineOptions());
    shaped.push_back(a.Explain(shape).attention_prefill_ns / model.layers / measured - 1);
    constant.push_back(k.Explain(shape).attention_prefill_ns / model.layers / measured - 1);
  }
  ASSERT_EQ(shaped.size(), 25u);
  EXPECT_LT(Median(Abs(shaped)), 0.05);
  EXPECT_LT(std::fabs(Median(shaped)), 0.03);
  EXPECT_LT(Median(constant), -0.30);  // the constant 0.60 of peak: far too fast
}

// A scenario that sets a GEMM efficiency keeps the constant form.
TEST(RooflineGemmFidelity, ScenarioEfficienciesReplaceTheFit) {
  Catalog c;
  ASSERT_TRUE(Catalog::LoadBuiltin(&c).ok());
  RooflineOptions mine;
  mine.gemm_compute_efficiency = 0.5;
  const RooflineOptions o = RooflineOptionsFor(*c.FindGpu("H100-SXM"), mine, /*gemm_efficiency_set=*/true);
  EXPECT_FALSE(o.gemm_shape);
  EXPECT_EQ(o.gemm_compute_efficiency, 0.5);
  // A GPU without a fit keeps the constant form too.
  EXPECT_FALSE(RooflineOptionsFor(*c.FindGpu("L40S"), RooflineOptions(), false).gemm_shape);
}

}  // namespace
}  // namespace fleetsim
