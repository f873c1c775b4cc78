// RooflinePerfModel against napkin arithmetic: memory-bound decode,
// compute-bound prefill, tensor-parallel scaling, MoE expert reads.
#include "tests/model/shapes.h"
#include "model/roofline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "tests/model/builtin.h"

namespace fleetsim {
namespace {

using testshapes::Decode;
using testshapes::Prefill;
using testshapes::Tp;

using model_test::BuiltinEngine;
using model_test::BuiltinGpu;
using model_test::BuiltinModel;




// Options and engine with no fixed overheads, to compare the kernels with
// the napkin arithmetic alone.
RooflineOptions NoLaunch() {
  RooflineOptions o;
  o.launch_overhead_us = 0;
  return o;
}
EngineSpec NoCpu() {
  EngineSpec e;
  e.name = "none";
  return e;
}

// Weight elements of one layer's dense matrices (QKV, O, and for a dense
// model the gated MLP), with the per-layer arithmetic of DOMAIN.md.
double AttentionWeights(const ModelSpec& m) {
  return static_cast<double>(m.hidden) * (m.heads + 2.0 * m.kv_heads) * m.head_dim +
         static_cast<double>(m.heads) * m.head_dim * m.hidden;
}
double MlpWeights(const ModelSpec& m) { return 3.0 * m.hidden * m.intermediate; }

TEST(Roofline, SourcesNameEveryOperatorKind) {
  RooflinePerfModel model(BuiltinModel("tiny"), BuiltinGpu("H100-SXM"), Tp(1), BuiltinEngine("vllm"));
  std::set<std::string> kinds;
  for (const auto& [kind, source] : model.Sources()) {
    // The engine's own terms name the engine profile and how they were
    // resolved; the kernels are the roofline's.
    const bool engine = kind == "cpu_overhead" || kind == "launch" || kind == "server";
    EXPECT_EQ(source, engine ? "engine:vllm:estimate" : "roofline") << kind;
    kinds.insert(kind);
  }
  EXPECT_EQ(kinds.size(), std::size(kOpKinds));
  for (const char* kind : kOpKinds) EXPECT_EQ(kinds.count(kind), 1u) << kind;
}

TEST(Roofline, IterationNsIsTheRoundedBreakdownTotal) {
  for (const char* name : {"Llama-3.1-8B", "Mixtral-8x7B", "tiny"}) {
    for (int tp : {1, 2}) {
      RooflinePerfModel model(BuiltinModel(name), BuiltinGpu("H100-SXM"), Tp(tp),
                              BuiltinEngine("vllm"));
      BatchShape mixed = Decode(37, 1500);
      mixed.prefill_seqs = 2;
      mixed.prefill_tokens = 700;
      mixed.prefill_attn_pairs = 123456;
      mixed.prefill_kv_tokens = 2000;
      mixed.sampled_seqs = 38;
      for (const BatchShape& shape : {Decode(1, 10), Decode(256, 3000), Prefill(8192), mixed}) {
        const RooflinePerfModel::Breakdown b = model.Explain(shape);
        EXPECT_EQ(model.IterationNs(shape), std::llround(b.total_ns())) << name;
        for (double part : {b.gemm_ns, b.attention_prefill_ns, b.attention_decode_ns,
                            b.elementwise_ns, b.all_reduce_ns, b.cpu_overhead_ns}) {
          EXPECT_GE(part, 0);
        }
      }
    }
  }
}

TEST(Roofline, Llama8BDecodeAtBatchOneReadsTheWeightsOnce) {
  // A decode step of one sequence reads every weight once (the embedding
  // only one row) and the sequence's KV, at 85% of 3.35 TB/s.
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  const int64_t context = 1000;
  const double embedding_bytes = 2.0 * m.vocab * m.hidden;
  const double bytes = static_cast<double>(m.WeightBytes()) - embedding_bytes +
                       static_cast<double>(context) * m.KvBytesPerToken();
  const double memory_ns = bytes / (3350 * 0.85);  // GB/s = bytes per ns
  EXPECT_NEAR(memory_ns, 5.32e6, 0.01e6);          // about 5.3 ms

  RooflinePerfModel bare(m, h100, Tp(1), NoCpu(), NoLaunch());
  EXPECT_NEAR(static_cast<double>(bare.IterationNs(Decode(1, context))), memory_ns, 0.01 * memory_ns);

  // The overheads: 2 us for each of 32 x (4 GEMMs + attention + 4
  // elementwise) + lm_head + embedding + final norm kernels; vLLM's 1000 us
  // + 5 us per sequence of CPU runs under the GPU's work (async scheduling).
  RooflinePerfModel full(m, h100, Tp(1), BuiltinEngine("vllm"));
  const RooflinePerfModel::Breakdown b = full.Explain(Decode(1, context));
  EXPECT_EQ(b.kernel_launches, 32 * 9 + 3);
  const double expected = memory_ns + (32 * 9 + 3) * 2e3;
  EXPECT_NEAR(static_cast<double>(full.IterationNs(Decode(1, context))), expected, 0.01 * expected);
  EXPECT_DOUBLE_EQ(b.cpu_overhead_ns, 1005e3);
  EXPECT_DOUBLE_EQ(b.cpu_hidden_ns, 1005e3);
  EXPECT_EQ(b.all_reduce_ns, 0);
}

TEST(Roofline, LargePrefillIsComputeBound) {
  // 8192 prompt tokens: 2 x 8192 x (dense weights of 32 layers) FLOPs at
  // 80% of 989 TFLOP/s, about 145 ms, while reading the weights takes 5 ms.
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  RooflinePerfModel model(m, BuiltinGpu("H100-SXM"), Tp(1), NoCpu(), NoLaunch());
  const double tokens = 8192;
  const double flops = 2 * tokens * m.layers * (AttentionWeights(m) + MlpWeights(m));
  const double compute_ns = flops / (989e3 * 0.80);  // 1 TFLOP/s = 1e3 FLOP/ns
  const RooflinePerfModel::Breakdown b = model.Explain(Prefill(8192));
  EXPECT_NEAR(b.gemm_ns, compute_ns, 0.01 * compute_ns);
  const double weight_read_ns = static_cast<double>(m.WeightBytes()) / (3350 * 0.85);
  EXPECT_GT(b.gemm_ns, 20 * weight_read_ns);
  // Causal attention: 4 x 32 heads x 128 x 8192 x 8193 / 2 FLOPs per layer
  // at 60% of peak.
  const double attn_ns = 32 * 4.0 * 32 * 128 * (8192.0 * 8193 / 2) / (989e3 * 0.60);
  EXPECT_NEAR(b.attention_prefill_ns, attn_ns, 1e-9 * attn_ns);
}

TEST(Roofline, TensorParallelHalvesGemmsAndAddsAllReduces) {
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  RooflinePerfModel tp1(m, h100, Tp(1), BuiltinEngine("vllm"));
  RooflinePerfModel tp2(m, h100, Tp(2), BuiltinEngine("vllm"));
  const BatchShape shape = Prefill(8192);
  const RooflinePerfModel::Breakdown one = tp1.Explain(shape);
  const RooflinePerfModel::Breakdown two = tp2.Explain(shape);
  EXPECT_NEAR(two.gemm_ns / one.gemm_ns, 0.5, 0.02);
  EXPECT_EQ(one.all_reduce_ns, 0);
  // Two ring all-reduces per layer of 8192 x 4096 x 2 bytes over 2 GPUs:
  // 2(p-1) alpha + 2(p-1)/p S / B = 2 x 2 us + S / (450 GB/s x 0.85),
  // plus one gather of the sampled row's logits: alpha + 1/2 x 128256 x 2 / B.
  const double link = 450 * 0.85;
  const double all_reduce = 2 * 2e3 + 8192.0 * 4096 * 2 / link;
  const double gather = 2e3 + 0.5 * 128256 * 2 / link;
  const double expected = 2 * 32 * all_reduce + gather;
  EXPECT_NEAR(two.all_reduce_ns, expected, 1e-9 * expected);
}

TEST(Roofline, PipelineCostsAllLayersPlusSends) {
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  RooflinePerfModel pp1(m, h100, Tp(1), NoCpu());
  RooflinePerfModel pp2(m, h100, Tp(1, 2), NoCpu());
  const BatchShape shape = Decode(64, 2000);
  const RooflinePerfModel::Breakdown one = pp1.Explain(shape);
  const RooflinePerfModel::Breakdown two = pp2.Explain(shape);
  // One batch passes both stages: the same kernels, plus one send of
  // 64 x 4096 x 2 bytes.
  EXPECT_DOUBLE_EQ(two.gemm_ns, one.gemm_ns);
  EXPECT_DOUBLE_EQ(two.attention_decode_ns, one.attention_decode_ns);
  EXPECT_NEAR(two.all_reduce_ns, 2e3 + 64.0 * 4096 * 2 / (450 * 0.85), 1e-6);
}

TEST(Roofline, MixtralDecodeAtBatchOneReadsTopKOfTheExperts) {
  // One token reads k = 2 of E = 8 experts per layer: the attention and
  // router weights, 2 x 3 x hidden x intermediate expert weights, and the
  // lm_head, in bf16 at 85% of 3.35 TB/s.
  const ModelSpec m = BuiltinModel("Mixtral-8x7B");
  RooflinePerfModel model(m, BuiltinGpu("H100-SXM"), Tp(1), NoCpu(), NoLaunch());
  const double per_layer = AttentionWeights(m) + static_cast<double>(m.hidden) * m.experts + 2 * MlpWeights(m);
  const double bytes = 2 * (m.layers * per_layer + static_cast<double>(m.vocab) * m.hidden);
  const double expected_ns = bytes / (3350 * 0.85);
  const RooflinePerfModel::Breakdown b = model.Explain(Decode(1, 1));
  EXPECT_NEAR(b.gemm_ns, expected_ns, 0.01 * expected_ns);
  // About a third of the weights (2 of 8 experts plus the shared part).
  EXPECT_LT(bytes, 0.3 * m.WeightBytes());

  // At batch 256 nearly every expert is touched: (1 - 6/8)^256 is ~0, so
  // the step reads all weights but the embedding, plus the activations of
  // the 512 routed rows into and out of each expert GEMM (gate+up: hidden
  // in, 2 x intermediate out; down: intermediate in, hidden out).
  const double routed_rows = 256 * 2;
  const double expert_activations =
      m.layers * routed_rows * 2.0 * (2.0 * m.hidden + 3.0 * m.intermediate);
  const double all_ns = (static_cast<double>(m.WeightBytes()) - 2.0 * m.vocab * m.hidden +
                         expert_activations) / (3350 * 0.85);
  EXPECT_NEAR(model.Explain(Decode(256, 1)).gemm_ns, all_ns, 0.01 * all_ns);
}

ShardPlan Ep(int tp, int dp) {
  ShardPlan s;
  s.tp = tp;
  s.ep = tp * dp;
  s.dp = dp;
  return s;
}

// Mixtral on four GPUs as four data-parallel attention ranks with the
// experts spread over them (tp 1, ep 4, dp 4). Four decoders, one per rank:
// each rank reads its attention, router and lm_head weights for one row,
// and its 2 of the 8 experts for the ones the 4 tokens touch,
// 8 (1 - (6/8)^4) / 4 of them; each MoE layer sends every token's two
// copies there and back, 3/4 of them off the GPU, over NVLink at 85% of
// 450 GB/s after 2 us each way.
TEST(Roofline, ExpertParallelWithDataParallelAttentionByHand) {
  const ModelSpec m = BuiltinModel("Mixtral-8x7B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  RooflinePerfModel ep(m, h100, Ep(1, 4), NoCpu(), NoLaunch());
  const RooflinePerfModel::Breakdown b = ep.Explain(Decode(4, 4));
  const double touched = 8 * (1 - std::pow(0.75, 4)) / 4;
  const double per_layer = AttentionWeights(m) + static_cast<double>(m.hidden) * m.experts + touched * MlpWeights(m);
  const double bytes = 2 * (m.layers * per_layer + static_cast<double>(m.vocab) * m.hidden);
  EXPECT_NEAR(b.gemm_ns, bytes / (3350 * 0.85), 0.01 * bytes / (3350 * 0.85));
  const double a2a_bytes = 4.0 / 4 * 2 * m.hidden * 2 * 3.0 / 4;  // this GPU's token, k copies, 3/4 away
  const double a2a = 2 * m.layers * (2e3 + a2a_bytes / (450 * 0.85));
  EXPECT_NEAR(b.all_to_all_ns, a2a, 1e-9 * a2a);
  EXPECT_DOUBLE_EQ(b.all_reduce_ns, b.all_to_all_ns);  // tp 1: no all-reduce
  // Attention reads each rank's quarter of the KV.
  RooflinePerfModel tp1(m, h100, Tp(1), NoCpu(), NoLaunch());
  EXPECT_NEAR(ep.Explain(Decode(4, 40000)).attention_decode_ns, tp1.Explain(Decode(1, 40000)).attention_decode_ns,
              1e-6);
}

// The busiest GPU's routed rows set the experts' time: in a compute-bound
// prefill the expert products grow linearly with the skew, by one GPU's
// share of the routed FLOPs per unit of skew.
TEST(Roofline, ExpertLoadSkewScalesTheBusiestGpusExpertTime) {
  const ModelSpec m = BuiltinModel("Mixtral-8x7B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  auto gemm = [&](double skew) {
    RooflineOptions o = NoLaunch();
    o.expert_load_skew = skew;
    return RooflinePerfModel(m, h100, Ep(2, 2), NoCpu(), o).Explain(Prefill(16384)).gemm_ns;
  };
  const double g1 = gemm(1), g2 = gemm(2), g3 = gemm(3);
  const double rows = 16384.0 * 2 / 4;  // all tokens' two copies over four GPUs
  const double flops = m.layers * rows * 2.0 * MlpWeights(m);
  const double per_skew = flops / (h100.PeakTflops(DType::kBf16) * 1e3 * 0.8);
  EXPECT_NEAR(g2 - g1, per_skew, 1e-6 * per_skew);
  EXPECT_NEAR(g3 - g2, per_skew, 1e-6 * per_skew);
}

TEST(Roofline, IterationTimeGrowsWithTokens) {
  for (const char* name : {"Llama-3.1-8B", "Mixtral-8x7B", "Llama-3.1-70B"}) {
    for (int tp : {1, 4}) {
      RooflinePerfModel model(BuiltinModel(name), BuiltinGpu("H100-SXM"), Tp(tp),
                              BuiltinEngine("vllm"));
      int64_t previous = 0;
      for (int batch = 1; batch <= 1024; ++batch) {
        const int64_t ns = model.IterationNs(Decode(batch, 2000));
        EXPECT_GE(ns, previous) << name << " tp" << tp << " decode batch " << batch;
        previous = ns;
      }
      previous = 0;
      for (int64_t tokens = 1; tokens <= 16384; tokens += 61) {
        const int64_t ns = model.IterationNs(Prefill(tokens));
        EXPECT_GE(ns, previous) << name << " tp" << tp << " prefill " << tokens;
        previous = ns;
      }
    }
  }
}

TEST(Roofline, GpuWithoutScaleUpFabricUsesPcie) {
  // L40S has no NVLink: a TP2 all-reduce crosses PCIe at 32 GB/s one way.
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec l40s = BuiltinGpu("L40S");
  RooflinePerfModel model(m, l40s, Tp(2), NoCpu());
  const RooflinePerfModel::Breakdown b = model.Explain(Decode(1, 100));
  const double alpha = l40s.scale_up.latency_us * 1e3;
  const double link = 32 * 0.85;
  const double expected = 2 * 32 * (2 * alpha + 4096.0 * 2 / link) + alpha + 0.5 * 128256 * 2 / link;
  EXPECT_NEAR(b.all_reduce_ns, expected, 1e-9 * expected);
}

TEST(Roofline, MeshAllReduceBandwidthGrowsWithTp) {
  // MI300X: TP2 talks over the one xGMI link between the pair (64 GB/s one
  // way); TP8 runs rings over all 7 links (448 GB/s).
  const ModelSpec m = BuiltinModel("Llama-3.1-70B");
  const GpuSpec mi300x = BuiltinGpu("MI300X");
  const BatchShape shape = Prefill(4096);
  const double alpha = mi300x.scale_up.latency_us * 1e3;
  const double bytes = 4096.0 * 8192 * 2;
  for (int tp : {2, 8}) {
    RooflinePerfModel model(m, mi300x, Tp(tp), NoCpu());
    const double p = tp;
    const double bw = (tp == 2 ? 64 : 448) * 0.85;
    const double expected = 2 * 80 * (2 * (p - 1) * alpha + 2 * (p - 1) / p * bytes / bw) +
                            (p - 1) * alpha + (p - 1) / p * 128256 * 2 / bw;
    EXPECT_NEAR(model.Explain(shape).all_reduce_ns, expected, 1e-9 * expected) << "tp" << tp;
  }
}

TEST(Roofline, FasterGpuIsFaster) {
  const ModelSpec m = BuiltinModel("Llama-3.1-70B");
  const EngineSpec vllm = BuiltinEngine("vllm");
  RooflinePerfModel h100(m, BuiltinGpu("H100-SXM"), Tp(4), vllm);
  RooflinePerfModel h200(m, BuiltinGpu("H200"), Tp(4), vllm);
  RooflinePerfModel a100(m, BuiltinGpu("A100-80G"), Tp(4), vllm);
  // Decode is memory-bound: HBM bandwidth decides (4.8 > 3.35 > 2.039 TB/s).
  EXPECT_LT(h200.IterationNs(Decode(32, 4000)), h100.IterationNs(Decode(32, 4000)));
  EXPECT_LT(h100.IterationNs(Decode(32, 4000)), a100.IterationNs(Decode(32, 4000)));
  // Prefill is compute-bound: H100 and H200 share a peak, A100 has a third.
  EXPECT_LT(h100.IterationNs(Prefill(4096)), a100.IterationNs(Prefill(4096)) / 2);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

// An FP8 checkpoint reads its layers' weights in one byte but keeps the
// lm_head in bf16 (model_spec.h embedding_dtype): a memory-bound decode
// step's lm_head costs the same as the bf16 model's, its layers' GEMMs
// about half.
TEST(Roofline, Fp8CheckpointKeepsItsLmHeadInBf16) {
  const ModelSpec bf16 = BuiltinModel("Llama-3.1-8B"), fp8 = BuiltinModel("Llama-3.1-8B-FP8");
  ASSERT_TRUE(fp8.embedding_dtype.has_value());
  RooflineOptions o;
  o.launch_overhead_us = 0;
  EngineSpec e;
  e.name = "none";
  const RooflinePerfModel a(bf16, BuiltinGpu("H100-SXM"), Tp(1), e, o), b(fp8, BuiltinGpu("H100-SXM"), Tp(1), e, o);
  const auto x = a.Explain(Decode(1, 100)), y = b.Explain(Decode(1, 100));
  EXPECT_DOUBLE_EQ(x.lm_head_ns, y.lm_head_ns);
  const double layers_a = x.gemm_ns - x.lm_head_ns, layers_b = y.gemm_ns - y.lm_head_ns;
  EXPECT_NEAR(layers_b / layers_a, 0.5, 0.02);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

// DeepSeek-V3's multi-head latent attention (model/roofline.h), by hand on
// an H200 at the constant efficiencies (60% of the 989 TFLOP/s bf16 peak
// for prefill attention; 85% of 4.8 TB/s for GEMM reads) and FlashMLA's
// for absorbed decode (66.7% of the peak, 89.6% of the bandwidth).
constexpr double kH200AttnFlopsPerNs = 989e3 * 0.6, kH200BytesPerNs = 4800 * 0.85;
constexpr double kH200MlaFlopsPerNs = 989e3 * 0.667, kH200MlaBytesPerNs = 4800 * 0.896;

// Decode is absorbed: every head attends over the one 576-element latent
// (512 + 64 rotary) per KV token, read once for all heads: 1152 bytes per
// token and layer, against 2 h (2 x 512 + 64) FLOPs for h heads. With 16
// heads per GPU (tp 8) a KV token costs 34,816 FLOPs to 1152 bytes:
// memory-bound. Data-parallel attention puts all 128 heads on each GPU:
// 278,528 FLOPs per KV token, past the H200's ridge, so compute-bound;
// which is why FlashMLA quotes both ceilings.
TEST(RooflineMla, DeepSeekDecodeReadsOneLatentAndTurnsComputeBoundWithAllHeads) {
  const ModelSpec m = BuiltinModel("DeepSeek-V3");
  const GpuSpec h200 = BuiltinGpu("H200");
  const int64_t x = 40000;
  RooflinePerfModel tp8(m, h200, Tp(8), NoCpu(), NoLaunch());
  const double per_kv_tp8 = tp8.Explain(Decode(1, 2 * x)).attention_decode_ns - tp8.Explain(Decode(1, x)).attention_decode_ns;
  const double memory = 61.0 * x * 576 * 2 / kH200MlaBytesPerNs;
  EXPECT_NEAR(per_kv_tp8, memory, 1e-6 * memory);

  RooflinePerfModel dp(m, h200, Ep(1, 8), NoCpu(), NoLaunch());
  // Eight sequences, one per rank, each of context x and 2x.
  const double per_kv_dp = dp.Explain(Decode(8, 2 * x)).attention_decode_ns - dp.Explain(Decode(8, x)).attention_decode_ns;
  const double compute = 61.0 * x * 2 * 128 * (2 * 512 + 64) / kH200MlaFlopsPerNs;
  EXPECT_NEAR(per_kv_dp, compute, 1e-6 * compute);
  EXPECT_GT(compute, 61.0 * x * 576 * 2 / kH200MlaBytesPerNs);
}

// Prefill runs as multi-head attention over the up-projected keys (128 +
// 64 rotary) and values (128): 2 h (192 + 128) FLOPs per query-key pair;
// kv_b expands every KV token the chunk reads (a GEMM of those rows).
TEST(RooflineMla, DeepSeekPrefillIsMultiHeadOverExpandedKeys) {
  const ModelSpec m = BuiltinModel("DeepSeek-V3");
  RooflinePerfModel tp8(m, BuiltinGpu("H200"), Tp(8), NoCpu(), NoLaunch());
  const BatchShape s = Prefill(8192);
  const double pairs = static_cast<double>(s.prefill_attn_pairs);
  const double compute = 61.0 * pairs * 2 * 16 * (192 + 128) / kH200AttnFlopsPerNs;
  EXPECT_NEAR(tp8.Explain(s).attention_prefill_ns, compute, 1e-6 * compute);
}

// One decode token at tp 8 reads, per GPU: every layer's fused q_a + kv_a
// down-projection (replicated), its 16 heads' share of q_b and O and the
// absorbed kv_b; the 3 leading dense layers' 18432-column MLP / 8; and in
// each of the 58 MoE layers the router, the 8 routed experts' and the
// shared expert's 2048 columns / 8; all FP8 with one fp32 scale per
// 128 x 128 block, at 85% of 4.8 TB/s.
TEST(RooflineMla, DeepSeekDecodeAtBatchOneReadsDenseSharedAndRoutedWeights) {
  const ModelSpec m = BuiltinModel("DeepSeek-V3");
  RooflinePerfModel tp8(m, BuiltinGpu("H200"), Tp(8), NoCpu(), NoLaunch());
  const double attention = 7168.0 * (1536 + 576) + 1536.0 * 16 * 192 + 16.0 * 128 * 7168 + 512.0 * 16 * 256;
  const double dense = 3.0 * 7168 * 18432 / 8;
  const double moe = 7168.0 * 256 + (8 + 1) * 3.0 * 7168 * 2048 / 8;
  const double bytes = (61 * attention + 3 * dense + 58 * moe) * (1 + 4.0 / 16384);
  const RooflinePerfModel::Breakdown b = tp8.Explain(Decode(1, 1));
  const double expected = bytes / kH200BytesPerNs;
  // Activations in and out of each product add under 1%.
  EXPECT_NEAR(b.gemm_ns - b.lm_head_ns, expected, 0.01 * expected);
  EXPECT_GT(b.gemm_ns - b.lm_head_ns, expected);
}

// FP8 checkpoints that quantise activations (DeepSeek-V3's block-scaled
// FP8) multiply at the FP8 peak: a 16384-token prefill's GEMMs take little
// more than half the time of the same model's at the bf16 peak (the routed
// experts, 512 rows each at tp 8, are near the ridge at FP8 and do not halve).
TEST(RooflineMla, Fp8GemmsRunAtTheFp8Peak) {
  ModelSpec fp8 = BuiltinModel("DeepSeek-V3");
  ModelSpec bf16 = fp8;
  bf16.gemm_dtype.reset();
  const GpuSpec h200 = BuiltinGpu("H200");
  const double a = RooflinePerfModel(fp8, h200, Tp(8), NoCpu(), NoLaunch()).Explain(Prefill(16384)).gemm_ns;
  const double b = RooflinePerfModel(bf16, h200, Tp(8), NoCpu(), NoLaunch()).Explain(Prefill(16384)).gemm_ns;
  EXPECT_GT(a / b, 0.5);
  EXPECT_LT(a / b, 0.65);
}


// gpt-oss-120b's sliding layers (18 of 36, window 128) read at most 128
// keys per decode: past the window, a longer context costs only the 18
// full layers' K and V (2 x 8 x 64 bf16 per token and layer, at 85% of
// 3.35 TB/s).
TEST(RooflineSlidingWindow, GptOssLongContextCostsOnlyTheFullLayers) {
  const ModelSpec m = BuiltinModel("gpt-oss-120b");
  RooflinePerfModel h100(m, BuiltinGpu("H100-SXM"), Tp(1), NoCpu(), NoLaunch());
  const int64_t x = 20000;
  const double per_kv = h100.Explain(Decode(4, 2 * x)).attention_decode_ns - h100.Explain(Decode(4, x)).attention_decode_ns;
  const double full = 18.0 * 4 * x * 2 * 8 * 64 * 2 / (3350 * 0.85);
  EXPECT_NEAR(per_kv, full, 1e-6 * full);
  // A prefill of 8192 tokens: the sliding layers see 128 keys per query.
  ModelSpec dense_attention = m;
  dense_attention.sliding_layers = 0;
  dense_attention.sliding_window = 0;
  RooflinePerfModel all_full(dense_attention, BuiltinGpu("H100-SXM"), Tp(1), NoCpu(), NoLaunch());
  const double windowed = h100.Explain(Prefill(8192)).attention_prefill_ns;
  const double whole = all_full.Explain(Prefill(8192)).attention_prefill_ns;
  EXPECT_LT(windowed, 0.55 * whole);  // the windowed layers then read their Q, K, V and O
  EXPECT_GT(windowed, 0.5 * whole);
}


// FP4 products run at Blackwell's FP4 peak: a compute-bound prefill of an
// NVFP4 checkpoint on a B200 takes half the GEMM time of its FP8 one; on
// an H100 (no FP4 tensor cores) the FP4 products fall back to the bf16 peak.
TEST(RooflineMla, Fp4GemmsRunAtBlackwellsFp4Peak) {
  ModelSpec fp8 = BuiltinModel("Llama-3.1-8B-FP8");
  fp8.gemm_dtype = DType::kFp8;  // W8A8 at the FP8 peak
  ModelSpec fp4 = fp8;
  fp4.weight_dtype = DType::kFp4;
  fp4.gemm_dtype = DType::kFp4;
  const GpuSpec b200 = BuiltinGpu("B200"), h100 = BuiltinGpu("H100-SXM");
  auto gemm = [&](const ModelSpec& m, const GpuSpec& g) {
    const auto b = RooflinePerfModel(m, g, Tp(1), NoCpu(), NoLaunch()).Explain(Prefill(16384));
    return b.gemm_ns - b.lm_head_ns;
  };
  EXPECT_NEAR(gemm(fp4, b200) / gemm(fp8, b200), 0.5, 0.03);
  EXPECT_NEAR(gemm(fp4, h100) / gemm(fp8, h100), 2.0, 0.1);
}

}  // namespace
}  // namespace fleetsim
