#include "model/profile_perf_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/catalog.h"

namespace fleetsim {
namespace {

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
  const EngineSpec& e = *f.catalog.FindEngine("vllm");
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
  const double expected = m.layers * (156000.0 + 20000.0) + 2000.0 + r.attention_decode_ns + r.cpu_overhead_ns + lm_head_ns;
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
                                       *f.catalog.FindEngine("vllm"), {}, &pm)
                  .ok());
  for (const auto& [kind, src] : pm->Sources()) {
    const bool from_profile = kind == "gemm" || kind == "elementwise" || kind == "all_reduce";
    EXPECT_EQ(src, from_profile ? "profile:vidur-h100-llama2-7b.json" : "roofline") << kind;
  }
}

TEST(ProfilePerfModel, TensorParallelAllReduceComesFromTheProfile) {
  Fixture f;
  const ModelSpec& m = *f.catalog.FindModel("Llama-2-7B");
  const GpuSpec& g = *f.catalog.FindGpu("H100-SXM");
  const EngineSpec& e = *f.catalog.FindEngine("vllm");
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
  const double expected = m.layers * (f.profile.gemm.at(2).At(tokens) + f.profile.elementwise.at(2).At(tokens)) +
                          f.profile.embedding.at(2).At(tokens) +
                          m.layers * 2 * f.profile.all_reduce_intra_node.at(2).At(tokens * m.hidden * 2) +
                          r.attention_prefill_ns + r.cpu_overhead_ns;
  EXPECT_EQ(pm->IterationNs(b), std::llround(expected));
}

TEST(ProfilePerfModel, ProfileOfAnotherModelIsRefusedNamingBoth) {
  Fixture f;
  std::unique_ptr<ProfilePerfModel> pm;
  const Status s = ProfilePerfModel::Create(f.profile, kName, *f.catalog.FindModel("Llama-3.1-8B"),
                                            *f.catalog.FindGpu("H100-SXM"), ShardPlan{},
                                            *f.catalog.FindEngine("vllm"), {}, &pm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("\"Llama-2-7B\""), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("\"Llama-3.1-8B\""), std::string::npos) << s.message();
}

TEST(ProfilePerfModel, ProfileOfAnotherGpuIsRefused) {
  Fixture f;
  std::unique_ptr<ProfilePerfModel> pm;
  const Status s = ProfilePerfModel::Create(f.profile, kName, *f.catalog.FindModel("Llama-2-7B"),
                                            *f.catalog.FindGpu("A100-80G"), ShardPlan{},
                                            *f.catalog.FindEngine("vllm"), {}, &pm);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("A100-80G"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fleetsim
