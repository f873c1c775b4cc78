#include "model/profile_perf_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "model/catalog.h"
#include "tests/model/builtin.h"

namespace fleetsim {
namespace {

// A step of `serial_ns` (the CPU's time `r.cpu_overhead_ns` included in
// full) as the engine `e` runs it: with async scheduling the CPU hides under
// the rest (model/roofline.h, HiddenCpuNs).
double StepNs(const EngineSpec& e, double serial_ns, const RooflinePerfModel::Breakdown& r) {
  return serial_ns - HiddenCpuNs(e.async_scheduling, serial_ns, r.cpu_overhead_ns);
}

// The source of a kind the engine profile times (CPU, launches, server),
// else `other`.
std::string EngineOr(const std::string& kind, const std::string& other) {
  if (kind == "cpu_overhead" || kind == "launch" || kind == "server") return "engine:vllm:estimate";
  return other;
}

struct Fixture {
  Fixture() {
    Status s = Catalog::LoadBuiltin(&catalog);
    EXPECT_TRUE(s.ok()) << s.message();
    s = LoadProfileFile(std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/profiles/vidur-h100-llama2-7b.json", &profile);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  Catalog catalog;
  Profile profile;
};

const char kName[] = "vidur-h100-llama2-7b.json";

TEST(ProfilePerfModel, DecodeOfOneIsProfileSumPlusRooflineAttentionAndOverhead) {
  Fixture f;
  const ModelSpec& m = *f.catalog.FindModel("Llama-2-7B");
  const GpuSpec& g = *f.catalog.FindGpu("H100-SXM");
  const EngineSpec e = model_test::BuiltinEngine("vllm");
  ShardPlan shard;
  std::unique_ptr<ProfilePerfModel> pm;
  const Status s = ProfilePerfModel::Create(f.profile, kName, m, g, shard, e, {}, &pm);
  ASSERT_TRUE(s.ok()) << s.message();

  BatchShape b;
  b.decode_seqs = 1;
  b.decode_tokens = 1;
  b.decode_kv_tokens = 500;
  b.sampled_seqs = 1;
  const RooflinePerfModel roof(m, g, shard, e);
  const RooflinePerfModel::Breakdown r = roof.Explain(b);
  BatchShape unsampled = b;
  unsampled.sampled_seqs = 0;
  const double lm_head_ns = r.gemm_ns - roof.Explain(unsampled).gemm_ns;
  ASSERT_GT(lm_head_ns, 0);
  // Profile at 1 token, tp 1 (Vidur line 262): gemm 156 us, elementwise
  // 20 us per layer; embedding 2 us.
  ASSERT_EQ(f.profile.gemm.at(1).x[0], 1);
  EXPECT_NEAR(f.profile.gemm.at(1).ns[0], 156000, 1e-2);
  const double expected = StepNs(
      e, m.layers * (156000.0 + 20000.0) + 2000.0 + r.attention_decode_ns + r.cpu_overhead_ns + lm_head_ns, r);
  EXPECT_EQ(pm->IterationNs(b), std::llround(expected));
  EXPECT_EQ(r.all_reduce_ns, 0);
  EXPECT_EQ(r.swap_ns, 0);
}

TEST(ProfilePerfModel, SourcesNameTheProfileForTheKindsItTimes) {
  Fixture f;
  const ModelSpec& m = *f.catalog.FindModel("Llama-2-7B");
  std::unique_ptr<ProfilePerfModel> pm;
  ShardPlan tp2;
  tp2.tp = 2;
  ASSERT_TRUE(ProfilePerfModel::Create(f.profile, kName, m, *f.catalog.FindGpu("H100-SXM"), tp2,
                                       model_test::BuiltinEngine("vllm"), {}, &pm)
                  .ok());
  for (const auto& [kind, src] : pm->Sources()) {
    const bool from_profile = kind == "gemm" || kind == "elementwise" || kind == "all_reduce";
    EXPECT_EQ(src, from_profile ? "profile:vidur-h100-llama2-7b.json" : EngineOr(kind, "roofline")) << kind;
  }
}

TEST(ProfilePerfModel, TensorParallelAllReduceComesFromTheProfile) {
  Fixture f;
  const ModelSpec& m = *f.catalog.FindModel("Llama-2-7B");
  const GpuSpec& g = *f.catalog.FindGpu("H100-SXM");
  const EngineSpec e = model_test::BuiltinEngine("vllm");
  ShardPlan tp2;
  tp2.tp = 2;
  std::unique_ptr<ProfilePerfModel> pm;
  ASSERT_TRUE(ProfilePerfModel::Create(f.profile, kName, m, g, tp2, e, {}, &pm).ok());
  BatchShape b;
  b.prefill_seqs = 1;
  b.prefill_tokens = 512;
  b.prefill_attn_pairs = 512 * 513 / 2;
  b.prefill_kv_tokens = 512;
  const RooflinePerfModel::Breakdown r = RooflinePerfModel(m, g, tp2, e).Explain(b);
  const double tokens = 512;
  const double expected =
      StepNs(e,
             m.layers * (f.profile.gemm.at(2).At(tokens) + f.profile.elementwise.at(2).At(tokens)) +
                 f.profile.embedding.at(2).At(tokens) +
                 m.layers * 2 * f.profile.all_reduce_intra_node.at(2).At(tokens * m.hidden * 2) +
                 r.attention_prefill_ns + r.cpu_overhead_ns,
             r);
  EXPECT_EQ(pm->IterationNs(b), std::llround(expected));
}

TEST(ProfilePerfModel, ProfileOfAnotherModelWithoutFitsIsRefusedNamingBoth) {
  Fixture f;
  f.profile.fits.clear();  // per-model curves only
  std::unique_ptr<ProfilePerfModel> pm;
  const Status s = ProfilePerfModel::Create(f.profile, kName, *f.catalog.FindModel("Llama-3.1-8B"),
                                            *f.catalog.FindGpu("H100-SXM"), ShardPlan{},
                                            model_test::BuiltinEngine("vllm"), {}, &pm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("\"Llama-2-7B\""), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("\"Llama-3.1-8B\""), std::string::npos) << s.message();
}

TEST(ProfilePerfModel, ProfileOfAnotherGpuIsRefused) {
  Fixture f;
  std::unique_ptr<ProfilePerfModel> pm;
  const Status s = ProfilePerfModel::Create(f.profile, kName, *f.catalog.FindModel("Llama-2-7B"),
                                            *f.catalog.FindGpu("A100-80G"), ShardPlan{},
                                            model_test::BuiltinEngine("vllm"), {}, &pm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("A100-80G"), std::string::npos) << s.message();
}

// A calibrated profile of another model: fits only (no per-model ops).
Profile FittedProfile(bool attention_measured) {
  Profile p;
  p.device = "H100-SXM";
  p.model = "Llama-2-7B";
  auto fit = [](double fixed, std::vector<double> knots, std::vector<double> values) {
    FittedCurve f;
    f.size_var = "size";
    f.scale_var = "scale";
    f.fixed_ns = fixed;
    f.knots = std::move(knots);
    f.values = std::move(values);
    return f;
  };
  p.fits["gemm.bf16"] = fit(3000, {1, 64, 1024}, {0.002, 0.003, 0.03});
  p.fits["rms_norm.bf16"] = fit(2000, {1, 1024}, {0.001, 0.5});
  p.fits["residual_add.bf16"] = fit(1500, {1, 1024}, {0.001, 0.4});
  p.fits["silu_mul.bf16"] = fit(1800, {1, 1024}, {0.001, 0.45});
  p.fits["rope.bf16"] = fit(2200, {1, 1024}, {0.002, 0.6});
  p.fits["embedding.bf16"] = fit(2500, {1, 1024}, {0.001, 0.3});
  p.fits["attention_prefill.bf16"] = fit(5000, {1000, 1e6}, {0.01, 0.02});
  p.fits["attention_decode.bf16"] = fit(4000, {100, 1e5}, {0.05, 0.3});
  p.fits["attention_decode.bf16"].count_var = "seqs";
  p.fits["attention_decode.bf16"].per_count = 0.2;
  for (const char* kind : {"attention_prefill", "attention_decode"}) {
    AttentionDecision a;
    a.achieved_fraction = attention_measured ? 0.8 : 0.1;
    a.threshold = 0.5;
    a.use_measured = attention_measured;
    a.published_efficiency = std::string(kind) == "attention_prefill" ? 0.3 : 0.5;
    p.attention[kind] = a;
  }
  return p;
}

// kernel_time_scale (set by fleetsim live and fit for a live run's replay)
// multiplies the kernels' four kinds as priced, fitted curves (attention
// included) and the roofline's lm_head alike, and nothing else.
// A step of one 100-token prompt beside ten decodes over 5000 KV tokens.
BatchShape MixedShape() {
  BatchShape b;
  b.prefill_seqs = 1;
  b.prefill_tokens = 100;
  b.prefill_attn_pairs = 100 * 101 / 2;
  b.prefill_kv_tokens = 100;
  b.decode_seqs = 10;
  b.decode_tokens = 10;
  b.decode_kv_tokens = 5000;
  b.sampled_seqs = 11;
  return b;
}

TEST(ProfilePerfModel, KernelTimeScaleMultipliesTheKernelsAsPriced) {
  Fixture f;
  const ModelSpec& m = *f.catalog.FindModel("Llama-3.1-8B");
  const GpuSpec& g = *f.catalog.FindGpu("H100-SXM");
  const EngineSpec e = model_test::BuiltinEngine("vllm");
  const Profile p = FittedProfile(true);
  std::unique_ptr<ProfilePerfModel> plain, scaled;
  RooflineOptions ro;
  ASSERT_TRUE(ProfilePerfModel::Create(p, "cal.json", m, g, ShardPlan{}, e, ro, &plain).ok());
  ro.kernel_time_scale = 1.25;
  ASSERT_TRUE(ProfilePerfModel::Create(p, "cal.json", m, g, ShardPlan{}, e, ro, &scaled).ok());
  const BatchShape b = MixedShape();
  const IterationParts a = plain->Parts(b), c = scaled->Parts(b);
  ASSERT_GT(a.attention_prefill, 0);
  ASSERT_GT(a.attention_decode, 0);
  EXPECT_NEAR(c.gemm, 1.25 * a.gemm, 1e-9 * a.gemm);
  EXPECT_NEAR(c.elementwise, 1.25 * a.elementwise, 1e-9 * a.elementwise);
  EXPECT_NEAR(c.attention_prefill, 1.25 * a.attention_prefill, 1e-9 * a.attention_prefill);
  EXPECT_NEAR(c.attention_decode, 1.25 * a.attention_decode, 1e-9 * a.attention_decode);
  EXPECT_DOUBLE_EQ(c.other, a.other);  // CPU overhead: not a kernel
  const double delta = 0.25 * (a.gemm + a.elementwise + a.attention_prefill + a.attention_decode);
  EXPECT_NEAR(static_cast<double>(scaled->IterationNs(b) - plain->IterationNs(b)), delta, 2.0);
}

TEST(ProfilePerfModel, FittedCurvesTimeAnotherModelsShapes) {
  Fixture f;
  const ModelSpec& m = *f.catalog.FindModel("Llama-3.1-8B");
  const GpuSpec& g = *f.catalog.FindGpu("H100-SXM");
  const EngineSpec e = model_test::BuiltinEngine("vllm");
  const Profile p = FittedProfile(true);
  std::unique_ptr<ProfilePerfModel> pm;
  const Status s = ProfilePerfModel::Create(p, "cal.json", m, g, ShardPlan{}, e, {}, &pm);
  ASSERT_TRUE(s.ok()) << s.message();
  for (const auto& [kind, src] : pm->Sources()) {
    const bool fitted = kind == "gemm" || kind == "elementwise" || kind == "attention_prefill" ||
                        kind == "attention_decode";
    EXPECT_EQ(src, fitted ? "fitted:cal.json" : EngineOr(kind, "roofline")) << kind;
  }
  const BatchShape b = MixedShape();
  // Llama-3.1-8B at tp 1: qkv 4096x6144, o 4096x4096, gate_up 4096x28672,
  // down 14336x4096; 32 heads, 8 KV heads of 128.
  const double nk = 4096.0 * 6144 + 4096.0 * 4096 + 4096.0 * 28672 + 14336.0 * 4096;
  const FittedCurve& gf = p.fits.at("gemm.bf16");
  auto at = [&](const char* op, double size, double scale, double count = 0) {
    return p.fits.at(op).Predict(size, scale, count);
  };
  // The iteration as the fitted source composes it.
  auto expected = [&](const BatchShape& shape) {
    const RooflinePerfModel::Breakdown r = RooflinePerfModel(m, g, ShardPlan{}, e).Explain(shape);
    // vLLM runs the step as a CUDA graph of the captured size's rows.
    const double T = static_cast<double>(r.graph_tokens > 0 ? r.graph_tokens : shape.tokens());
    const double gemm = 4 * gf.fixed_ns + nk * gf.PerUnit(T);
    const double layer_elem = 2 * at("rms_norm.bf16", T, 4096) + 2 * at("residual_add.bf16", T, 4096) +
                              at("rope.bf16", T, 40 * 128) + at("silu_mul.bf16", T, 14336);
    return std::llround(StepNs(e,
                               m.layers * (gemm + layer_elem) + at("embedding.bf16", T, 4096) +
                                   m.layers * at("attention_prefill.bf16", 5050, 32 * 128) +
                                   m.layers * at("attention_decode.bf16", 5000, 8 * 128, shape.decode_seqs) +
                                   r.lm_head_ns + r.cpu_overhead_ns,
                               r));
  };
  EXPECT_EQ(pm->IterationNs(b), expected(b));
  // Decode keeps sequences apart from KV tokens: 10 more sequences over the
  // same KV cost 10 x 0.2 ns per unit of kv_heads·head_dim more per layer.
  BatchShape more = b;
  more.decode_seqs = 20;
  more.decode_tokens = 20;
  more.sampled_seqs = 21;
  EXPECT_EQ(pm->IterationNs(more), expected(more));
  EXPECT_NEAR(at("attention_decode.bf16", 5000, 8 * 128, 20) - at("attention_decode.bf16", 5000, 8 * 128, 10),
              10 * 0.2 * 8 * 128, 1e-6);
}

TEST(ProfilePerfModel, RejectedAttentionIsRooflineAtThePublishedEfficiency) {
  Fixture f;
  const ModelSpec& m = *f.catalog.FindModel("Llama-3.1-8B");
  const GpuSpec& g = *f.catalog.FindGpu("H100-SXM");
  const EngineSpec e = model_test::BuiltinEngine("vllm");
  Profile p = FittedProfile(false);
  p.fits.clear();  // attention only: everything else roofline
  std::unique_ptr<ProfilePerfModel> pm;
  ASSERT_TRUE(ProfilePerfModel::Create(p, "cal.json", m, g, ShardPlan{}, e, {}, &pm).ok());
  for (const auto& [kind, src] : pm->Sources()) EXPECT_EQ(src, EngineOr(kind, "roofline")) << kind;
  RooflineOptions published;
  published.attention_compute_efficiency = 0.3;
  published.attention_memory_efficiency = 0.5;
  const RooflinePerfModel expected(m, g, ShardPlan{}, e, published);
  const RooflinePerfModel plain(m, g, ShardPlan{}, e);
  BatchShape b;
  b.prefill_seqs = 1;
  b.prefill_tokens = 4000;
  b.prefill_attn_pairs = 4000 * 4001 / 2;
  b.prefill_kv_tokens = 4000;
  b.sampled_seqs = 1;
  EXPECT_EQ(pm->IterationNs(b), expected.IterationNs(b));
  EXPECT_GT(pm->IterationNs(b), plain.IterationNs(b));
}

TEST(ProfilePerfModel, MeasuredPeerLinksTimeTheAllReduceWithTheRingFormula) {
  Fixture f;
  const ModelSpec& m = *f.catalog.FindModel("Llama-3.1-8B");
  const GpuSpec& g = *f.catalog.FindGpu("H100-SXM");
  const EngineSpec e = model_test::BuiltinEngine("vllm");
  Profile p;
  p.device = "H100-SXM";
  auto link = [](const char* src, const char* dst, double alpha, double gbps) {
    ProfileLink l;
    l.src = src;
    l.dst = dst;
    l.kind = "peer";
    l.alpha_ns = alpha;
    l.gbps = gbps;
    return l;
  };
  p.links = {link("device0", "device1", 9000, 380), link("device1", "device0", 11000, 360)};
  ShardPlan tp2;
  tp2.tp = 2;
  std::unique_ptr<ProfilePerfModel> pm;
  ASSERT_TRUE(ProfilePerfModel::Create(p, "links.json", m, g, tp2, e, {}, &pm).ok());
  const auto sources = pm->Sources();
  std::map<std::string, std::string> src(sources.begin(), sources.end());
  EXPECT_EQ(src["all_reduce"], "fitted:links.json");
  BatchShape b;
  b.decode_seqs = 4;
  b.decode_tokens = 4;
  b.decode_kv_tokens = 400;
  const RooflinePerfModel roof(m, g, tp2, e);
  const RooflinePerfModel::Breakdown r = roof.Explain(b);
  // The slowest link (360 GB/s) and the largest latency (11 us):
  // 2 per layer x (2(p-1) alpha + 2(p-1)/p S/B), S = 4 tokens x 4096 x 2 B.
  const double one = 2 * 11000.0 + 1.0 * (4 * 4096 * 2) / 360;
  EXPECT_EQ(pm->IterationNs(b), std::llround(r.total_ns() - r.all_reduce_ns + m.layers * 2 * one));
  // Four GPUs were not measured: tp 4 stays roofline.
  ShardPlan tp4;
  tp4.tp = 4;
  ASSERT_TRUE(ProfilePerfModel::Create(p, "links.json", m, g, tp4, e, {}, &pm).ok());
  const auto sources4 = pm->Sources();
  std::map<std::string, std::string> src4(sources4.begin(), sources4.end());
  // (vLLM's custom all-reduce at tp 4, priced from the catalogue's links.)
  EXPECT_EQ(src4["all_reduce"].substr(0, 8), "roofline");
}

}  // namespace
}  // namespace fleetsim
