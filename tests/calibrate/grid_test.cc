#include "calibrate/grid.h"

#include <gtest/gtest.h>

#include "model/catalog.h"

namespace fleetsim::calibrate {
namespace {

const ModelSpec& Model(const char* name) {
  static Catalog* c = [] {
    auto* cat = new Catalog();
    EXPECT_TRUE(Catalog::LoadBuiltin(cat).ok());
    return cat;
  }();
  return *c->FindModel(name);
}

TEST(Grid, LlamaShardShapesFollowTensorParallelism) {
  Grid g;
  ASSERT_TRUE(MakeGrid(Model("Llama-3.1-8B"), {1, 2}, GridSize::kQuick, DefaultLimits("cuda"), &g).ok());
  ASSERT_EQ(g.shards.size(), 2u);
  // Llama-3.1-8B: hidden 4096, 32 heads, 8 KV heads of 128, MLP 14336.
  const ShardShapes& t1 = g.shards[0];
  ASSERT_EQ(t1.gemms.size(), 4u);
  EXPECT_EQ(t1.gemms[0].n, (32 + 2 * 8) * 128);  // qkv
  EXPECT_EQ(t1.gemms[0].k, 4096);
  EXPECT_EQ(t1.gemms[1].k, 32 * 128);      // o
  EXPECT_EQ(t1.gemms[2].n, 2 * 14336);     // gate_up
  EXPECT_EQ(t1.gemms[3].k, 14336);         // down
  const ShardShapes& t2 = g.shards[1];
  EXPECT_EQ(t2.heads, 16);
  EXPECT_EQ(t2.kv_heads, 4);
  EXPECT_EQ(t2.gemms[0].n, (16 + 2 * 4) * 128);
  EXPECT_EQ(t2.gemms[3].k, 7168);
  EXPECT_EQ(t2.lm_head.n, 128256 / 2);
  // Quick: powers of two from 1 to the cap.
  EXPECT_EQ(g.tokens.front(), 1);
  EXPECT_EQ(g.tokens.back(), 8192);
  EXPECT_EQ(g.tokens.size(), 14u);
  EXPECT_TRUE(g.extra_gemms.empty());
  EXPECT_FALSE(g.prefill.empty());
  EXPECT_FALSE(g.decode.empty());
  for (const DecodeShape& d : g.decode) EXPECT_LE(d.seqs * d.context_len, DefaultLimits("cuda").max_decode_kv_tokens);
}

TEST(Grid, FullGridAddsMidpointsAndGenericShapes) {
  Grid q, f;
  ASSERT_TRUE(MakeGrid(Model("Llama-3.1-8B"), {1}, GridSize::kQuick, DefaultLimits("cuda"), &q).ok());
  ASSERT_TRUE(MakeGrid(Model("Llama-3.1-8B"), {1}, GridSize::kFull, DefaultLimits("cuda"), &f).ok());
  EXPECT_GT(f.tokens.size(), q.tokens.size());
  EXPECT_NE(std::find(f.tokens.begin(), f.tokens.end(), 3), f.tokens.end());
  EXPECT_FALSE(f.extra_gemms.empty());
  EXPECT_GT(f.decode.size(), q.decode.size());
}

TEST(Grid, CpuLimitsCapTheGridAndPromptsStayWithinTheContext) {
  Grid g;
  ASSERT_TRUE(MakeGrid(Model("tiny"), {1}, GridSize::kQuick, DefaultLimits("cpu"), &g).ok());
  EXPECT_EQ(g.tokens.back(), 1024);
  for (const PrefillShape& p : g.prefill) EXPECT_LE(p.seq_len, 512);
  for (const DecodeShape& d : g.decode) EXPECT_LE(d.seqs * d.context_len, 1 << 15);
}

TEST(Grid, MoeModelsGetExpertProducts) {
  Grid g;
  ASSERT_TRUE(MakeGrid(Model("Mixtral-8x7B"), {2}, GridSize::kQuick, DefaultLimits("cuda"), &g).ok());
  int experts = 0;
  for (const LayerGemm& lg : g.shards[0].gemms) experts += lg.expert;
  EXPECT_EQ(experts, 2);
}

TEST(Grid, RejectsBadDegreesAndNames) {
  Grid g;
  Status s = MakeGrid(Model("tiny"), {3}, GridSize::kQuick, DefaultLimits("cpu"), &g);
  EXPECT_NE(s.message().find("--tp 3"), std::string::npos) << s.message();
  s = MakeGrid(Model("tiny"), {1, 1}, GridSize::kQuick, DefaultLimits("cpu"), &g);
  EXPECT_EQ(s.message(), "--tp: 1 is listed twice");
  s = MakeGrid(Model("tiny"), {}, GridSize::kQuick, DefaultLimits("cpu"), &g);
  EXPECT_FALSE(s.ok());
  GridSize size;
  EXPECT_EQ(ParseGridSize("medium", &size).message(), "unknown grid \"medium\" (valid: quick, full)");
}

}  // namespace
}  // namespace fleetsim::calibrate
