// PlanMemory and ActivationReserveBytes against hand arithmetic.
#include "model/memory_plan.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/model/builtin.h"

namespace fleetsim {
namespace {

using model_test::BuiltinGpu;
using model_test::BuiltinModel;

constexpr int64_t kMiB = 1024 * 1024;
constexpr int64_t kGiB = 1024 * kMiB;

ShardPlan Tp(int tp, int pp = 1) {
  ShardPlan s;
  s.tp = tp;
  s.pp = pp;
  return s;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(ActivationReserve, FollowsTheDocumentedFormula) {
  // tiny: hidden 256, 4 heads, 2 KV heads, head_dim 64, intermediate 512,
  // vocab 1024. Per token: 2*256 + (4 + 2*2)*64 + 4*64 + 3*512 = 2816
  // elements of 2 bytes.
  const ModelSpec tiny = BuiltinModel("tiny");
  const int64_t layer = 8192 * 2816 * 2;
  const int64_t logits = 256 * 1024 * 4;
  EXPECT_EQ(ActivationReserveBytes(tiny, Tp(1), 8192), layer + logits + kGiB);
  // Fewer tokens than 256 sampled rows: the logits follow the tokens.
  EXPECT_EQ(ActivationReserveBytes(tiny, Tp(1), 100), 100 * 2816 * 2 + 100 * 1024 * 4 + kGiB);
  // TP2 halves heads, KV heads and MLP columns but not the residual stream.
  EXPECT_EQ(ActivationReserveBytes(tiny, Tp(2), 8192),
            8192 * (2 * 256 + (2 + 2) * 64 + 2 * 64 + 3 * 256) * 2 + logits + kGiB);
}

TEST(PlanMemory, Llama31_8BFitsOnOneH100) {
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  MemoryPlan plan;
  Status s = PlanMemory(m, BuiltinGpu("H100-SXM"), Tp(1), MemoryOptions{}, &plan);
  ASSERT_TRUE(s.ok()) << s.message();
  // 81559 MiB x 0.9, rounded down.
  EXPECT_EQ(plan.budget_bytes_per_gpu, int64_t{76968728985});
  EXPECT_EQ(plan.weight_bytes_per_gpu, int64_t{16060522496});
  EXPECT_EQ(plan.kv_bytes_per_token_per_gpu, 131072);
  // Reserve: 8192 x 61440 x 2 + 256 x 128256 x 4 + 1 GiB.
  EXPECT_EQ(plan.activation_reserve_bytes, int64_t{2211708928});
  EXPECT_EQ(plan.kv_bytes_per_gpu, int64_t{76968728985} - 16060522496 - 2211708928);
  // 58,696,497,561 bytes / (16 x 131072) = 27988.9 blocks.
  EXPECT_EQ(plan.kv_blocks, 27988);
  EXPECT_EQ(plan.kv_tokens(), 27988 * 16);
}

TEST(PlanMemory, Llama31_70BOnOneH100DoesNotFit) {
  MemoryPlan plan;
  Status s = PlanMemory(BuiltinModel("Llama-3.1-70B"), BuiltinGpu("H100-SXM"), Tp(1),
                        MemoryOptions{}, &plan);
  ASSERT_FALSE(s.ok());
  const std::string& msg = s.message();
  EXPECT_TRUE(Contains(msg, "Llama-3.1-70B")) << msg;
  EXPECT_TRUE(Contains(msg, "H100-SXM")) << msg;
  EXPECT_TRUE(Contains(msg, "tp=1")) << msg;
  // Weights: 70,553,706,496 params x 2 bytes = 131.4 GiB. KV of a 131072
  // token sequence: 131072 x 327680 bytes = 40.0 GiB. Budget: 71.7 GiB.
  EXPECT_TRUE(Contains(msg, "weights 131.4 GiB")) << msg;
  EXPECT_TRUE(Contains(msg, "131072-token sequence 40.0 GiB")) << msg;
  EXPECT_TRUE(Contains(msg, "budget is 71.7 GiB")) << msg;
}

TEST(PlanMemory, Llama31_70BNeedsFourH100sForFullContext) {
  // TP2: 65.7 GiB of weights + 20 GiB for one 131072-token sequence exceeds
  // 71.7 GiB; TP4: 32.9 + 10 + reserve fits.
  MemoryPlan plan;
  const ModelSpec m = BuiltinModel("Llama-3.1-70B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  EXPECT_FALSE(PlanMemory(m, h100, Tp(2), MemoryOptions{}, &plan).ok());
  Status s = PlanMemory(m, h100, Tp(4), MemoryOptions{}, &plan);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.kv_bytes_per_token_per_gpu, 327680 / 4);
  EXPECT_GT(plan.kv_blocks, 0);
  // A shorter context lets TP2 start.
  ModelSpec short_context = m;
  short_context.max_model_len = 8192;
  EXPECT_TRUE(PlanMemory(short_context, h100, Tp(2), MemoryOptions{}, &plan).ok());
}

TEST(PlanMemory, Llama31_405BFitsOnEightH200sButNotEightH100s) {
  // 405,853,388,800 params x 2 bytes = 811.7 GB, 94.5 GiB per GPU over 8.
  // H200: budget 143771 MiB x 0.9 = 126.4 GiB; KV per GPU per token is
  // 2 x 126 x 1 x 128 x 2 = 64,512 B, 7.9 GiB for 131072 tokens: it fits.
  // H100: budget 71.7 GiB < 94.5 GiB of weights alone.
  const ModelSpec m = BuiltinModel("Llama-3.1-405B");
  EXPECT_EQ(m.ParamCount(), int64_t{405853388800});
  MemoryPlan plan;
  Status s = PlanMemory(m, BuiltinGpu("H200"), Tp(8), MemoryOptions{}, &plan);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.kv_bytes_per_token_per_gpu, 64512);
  EXPECT_GT(plan.kv_tokens(), 131072);
  s = PlanMemory(m, BuiltinGpu("H100-SXM"), Tp(8), MemoryOptions{}, &plan);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "weights 94.5 GiB")) << s.message();
  // And on four H200s the weights alone (189 GiB per GPU) do not fit.
  EXPECT_FALSE(PlanMemory(m, BuiltinGpu("H200"), Tp(4), MemoryOptions{}, &plan).ok());
}

TEST(PlanMemory, KvHeadsAreReplicatedWhenTpExceedsThem) {
  // Llama-3.1-8B has 8 KV heads: at TP16 each GPU still holds one.
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  EXPECT_EQ(KvBytesPerTokenPerGpu(m, Tp(8)), 2 * 32 * 1 * 128 * 2);
  EXPECT_EQ(KvBytesPerTokenPerGpu(m, Tp(16)), 2 * 32 * 1 * 128 * 2);
  EXPECT_EQ(KvBytesPerTokenPerGpu(m, Tp(2)), m.KvBytesPerToken() / 2);
  // Pipeline stages each hold their layers' KV.
  EXPECT_EQ(KvBytesPerTokenPerGpu(m, Tp(1, 2)), m.KvBytesPerToken() / 2);
  EXPECT_EQ(KvBytesPerTokenPerGpu(m, Tp(2, 2)), m.KvBytesPerToken() / 4);
}

TEST(PlanMemory, LatentKvIsNotSplitByTp) {
  ModelSpec m = BuiltinModel("Llama-3.1-8B");
  m.kv_bytes_per_token_override = 32000;
  EXPECT_EQ(KvBytesPerTokenPerGpu(m, Tp(4)), 32000);
  EXPECT_EQ(KvBytesPerTokenPerGpu(m, Tp(4, 2)), 16000);
}

TEST(PlanMemory, PipelineSplitsWeights) {
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  MemoryPlan plan;
  ASSERT_TRUE(PlanMemory(m, BuiltinGpu("H100-SXM"), Tp(1, 2), MemoryOptions{}, &plan).ok());
  EXPECT_EQ(plan.weight_bytes_per_gpu, m.WeightBytes() / 2);
}

TEST(PlanMemory, UtilizationAndBlockSizeScaleTheCache) {
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  MemoryOptions options;
  MemoryPlan a, b;
  ASSERT_TRUE(PlanMemory(m, h100, Tp(1), options, &a).ok());
  options.gpu_memory_utilization = 0.8;
  ASSERT_TRUE(PlanMemory(m, h100, Tp(1), options, &b).ok());
  EXPECT_LT(b.kv_blocks, a.kv_blocks);
  options.gpu_memory_utilization = 0.9;
  options.block_size = 32;
  ASSERT_TRUE(PlanMemory(m, h100, Tp(1), options, &b).ok());
  EXPECT_EQ(b.kv_blocks, a.kv_bytes_per_gpu / (32 * 131072));
}

// Mixtral with its experts over four GPUs, attention data-parallel (tp 1,
// ep 4, dp 4): each GPU holds a quarter of the experts and all the rest,
// and each rank its own KV cache, so the replica has four caches' blocks.
TEST(PlanMemory, ExpertParallelSplitsTheExpertsAndKeepsACachePerRank) {
  const ModelSpec m = BuiltinModel("Mixtral-8x7B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  ShardPlan s;
  s.ep = 4;
  s.dp = 4;
  MemoryPlan plan;
  ASSERT_TRUE(PlanMemory(m, h100, s, MemoryOptions{}, &plan).ok());
  const int64_t experts = 2 * int64_t{3} * m.hidden * m.intermediate * m.experts * m.layers;  // bf16
  EXPECT_EQ(ExpertWeightBytes(m), experts);
  EXPECT_EQ(plan.weight_bytes_per_gpu, experts / 4 + (m.WeightBytes() - experts));
  EXPECT_EQ(plan.kv_bytes_per_token_per_gpu, KvBytesPerTokenPerGpu(m, Tp(1)));
  EXPECT_EQ(plan.kv_blocks, 4 * (plan.kv_bytes_per_gpu / (16 * plan.kv_bytes_per_token_per_gpu)));
  EXPECT_EQ(s.gpus(), 4);
  // ep must be tp x dp, and dp needs ep.
  s.ep = 2;
  EXPECT_FALSE(CheckShardPlan(m, s).ok());
  ShardPlan dp_only;
  dp_only.dp = 2;
  EXPECT_FALSE(CheckShardPlan(m, dp_only).ok());
}

TEST(PlanMemory, RejectsBadShardsAndOptions) {
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec h100 = BuiltinGpu("H100-SXM");
  MemoryPlan plan;
  Status s = PlanMemory(m, h100, Tp(3), MemoryOptions{}, &plan);
  EXPECT_EQ(s.message(), "Llama-3.1-8B with tp=3 pp=1: tp must divide the 32 attention heads");
  EXPECT_FALSE(PlanMemory(m, h100, Tp(0), MemoryOptions{}, &plan).ok());
  EXPECT_FALSE(PlanMemory(m, h100, Tp(1, 33), MemoryOptions{}, &plan).ok());
  ShardPlan ep = Tp(2);
  ep.ep = 2;
  EXPECT_FALSE(CheckShardPlan(m, ep).ok());
  EXPECT_TRUE(CheckShardPlan(BuiltinModel("Mixtral-8x7B"), ep).ok());
  MemoryOptions bad;
  bad.gpu_memory_utilization = 0;
  EXPECT_FALSE(PlanMemory(m, h100, Tp(1), bad, &plan).ok());
  bad = MemoryOptions{};
  bad.block_size = 0;
  EXPECT_FALSE(PlanMemory(m, h100, Tp(1), bad, &plan).ok());
}


// gpt-oss-120b on one H100: 65 GB of weights (MXFP4 experts); the 18
// full-attention layers keep 2 x 8 x 64 bf16 per token and layer for the
// whole context, the 18 sliding ones a window of 128 tokens + one block per
// running sequence (vLLM's hybrid KV cache manager), so the full 131072-token
// context fits where counting every layer at full length would not.
TEST(PlanMemory, GptOssSlidingLayersKeepAWindowPerSequence) {
  const ModelSpec m = BuiltinModel("gpt-oss-120b");
  MemoryOptions o;
  o.max_num_seqs = 256;
  MemoryPlan plan;
  const Status s = PlanMemory(m, BuiltinGpu("H100-SXM"), Tp(1), o, &plan);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.weight_bytes_per_gpu, m.WeightBytes());
  EXPECT_EQ(plan.kv_bytes_per_token_per_gpu, 18 * 2 * 8 * 64 * 2);
  EXPECT_EQ(plan.sliding_window_reserve_bytes, int64_t{256} * (128 + 16) * 18 * 2 * 8 * 64 * 2);
  EXPECT_EQ(plan.kv_bytes_per_gpu, plan.budget_bytes_per_gpu - plan.weight_bytes_per_gpu -
                                       plan.activation_reserve_bytes - plan.sliding_window_reserve_bytes);
  EXPECT_EQ(plan.kv_blocks, plan.kv_bytes_per_gpu / (16 * plan.kv_bytes_per_token_per_gpu));
  // Every layer at full length would need 131072 x 73728 bytes for one
  // sequence: 9 GiB, past the budget beside 60.7 GiB of weights.
  ModelSpec all_full = m;
  all_full.sliding_layers = 0;
  all_full.sliding_window = 0;
  EXPECT_FALSE(PlanMemory(all_full, BuiltinGpu("H100-SXM"), Tp(1), o, &plan).ok());
}


// A large window for many sequences: Llama 4 Scout's 8192-token chunks on
// 36 of its 48 layers, 1024 sequences allowed on four H100s. A window each
// would take 1024 x 8208 tokens of the sliding layers' KV, more than the
// cache holds, so every layer's KV is counted per token instead (still an
// upper bound on what the sliding layers keep), and no reserve is made.
TEST(PlanMemory, LargeWindowsForManySequencesCountEveryLayerPerToken) {
  const ModelSpec m = BuiltinModel("Llama-4-Scout-17B-16E");
  ModelSpec engine = m;
  engine.max_model_len = 131072;
  MemoryOptions o;
  o.max_num_seqs = 1024;
  MemoryPlan plan;
  const Status s = PlanMemory(engine, BuiltinGpu("H100-SXM"), Tp(4), o, &plan);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(plan.sliding_window_reserve_bytes, 0);
  EXPECT_EQ(plan.kv_bytes_per_token_per_gpu, KvBytesPerTokenPerGpu(m, Tp(4)));
  // With 16 sequences the windows fit, and the full layers alone count per token.
  o.max_num_seqs = 16;
  ASSERT_TRUE(PlanMemory(engine, BuiltinGpu("H100-SXM"), Tp(4), o, &plan).ok());
  EXPECT_GT(plan.sliding_window_reserve_bytes, 0);
  EXPECT_EQ(plan.kv_bytes_per_token_per_gpu, KvBytesPerTokenPerGpu(m, Tp(4)) / 4);
}

}  // namespace
}  // namespace fleetsim
