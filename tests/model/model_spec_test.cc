// ModelSpec arithmetic against hand-computed and published figures.
#include "model/model_spec.h"

#include <gtest/gtest.h>

#include "model/dtype.h"
#include "tests/model/builtin.h"

namespace fleetsim {
namespace {

ModelSpec Model(const char* name) { return model_test::BuiltinModel(name); }

TEST(ModelSpec, Llama31_70BKvBytesPerToken) {
  // 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 bytes.
  EXPECT_EQ(Model("Llama-3.1-70B").KvBytesPerToken(), 327680);
}

TEST(ModelSpec, Llama31_8BParamCountMatchesPublished) {
  // embedding + lm_head: 2 x 128256 x 4096 = 1,050,673,152
  // per layer: QKV 4096 x 6144 + O 4096 x 4096 + MLP 3 x 4096 x 14336
  //            + 2 x 4096 norms = 218,112,000; x 32 = 6,979,584,000
  // final norm 4096. Meta publishes 8.03e9.
  const ModelSpec m = Model("Llama-3.1-8B");
  EXPECT_EQ(m.ParamCount(), int64_t{8030261248});
  EXPECT_NEAR(static_cast<double>(m.ParamCount()), 8.03e9, 0.01e9);
  EXPECT_EQ(m.WeightBytes(), 2 * m.ParamCount());  // bf16
}

TEST(ModelSpec, Llama31_70BParamCount) {
  EXPECT_EQ(Model("Llama-3.1-70B").ParamCount(), int64_t{70553706496});
}

TEST(ModelSpec, MixtralCountsEveryExpertAndTheRouter) {
  // 32 layers x (QKV 25,165,824 + O 16,777,216 + 8 experts x 176,160,768
  // + router 32,768 + norms 8,192) + 2 x 32000 x 4096 + 4096: the 46.7e9
  // parameters Mistral publishes.
  EXPECT_EQ(Model("Mixtral-8x7B").ParamCount(), int64_t{46702792704});
}

TEST(ModelSpec, TiedEmbeddingsDropTheLmHead) {
  ModelSpec m = Model("tiny");
  const int64_t untied = m.ParamCount();
  m.tied_embeddings = true;
  EXPECT_EQ(untied - m.ParamCount(), int64_t{m.vocab} * m.hidden);
}

TEST(ModelSpec, DtypesScaleBytes) {
  ModelSpec m = Model("Llama-3.1-8B");
  const int64_t kv_bf16 = m.KvBytesPerToken();
  EXPECT_EQ(kv_bf16, 131072);
  m.kv_dtype = DType::kFp8;
  EXPECT_EQ(m.KvBytesPerToken(), kv_bf16 / 2);
  m.weight_dtype = DType::kInt4;
  EXPECT_EQ(m.WeightBytes(), m.ParamCount() / 2);
  m.kv_bytes_per_token_override = 70272;  // a latent-attention figure
  EXPECT_EQ(m.KvBytesPerToken(), 70272);
}

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::kFp32, DType::kBf16, DType::kFp16, DType::kFp8, DType::kInt8, DType::kInt4}) {
    std::optional<DType> parsed = ParseDType(DTypeName(t));
    ASSERT_TRUE(parsed.has_value()) << DTypeName(t);
    EXPECT_EQ(*parsed, t);
  }
  EXPECT_FALSE(ParseDType("bfloat16").has_value());
  EXPECT_DOUBLE_EQ(DTypeBytes(DType::kInt4), 0.5);
  EXPECT_DOUBLE_EQ(DTypeBytes(DType::kFp32), 4);
}

}  // namespace
}  // namespace fleetsim
