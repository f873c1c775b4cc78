// model/hf_config: published config.json files read into the same figures as
// the zoo, quantised weights counted by hand, DeepSeek-V3's 671B parameters
// and latent KV, and every refusal naming the file and the key.
#include "model/hf_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "base/file.h"
#include "model/catalog.h"
#include "model/memory_plan.h"

namespace fleetsim {
namespace {

using nlohmann::json;

std::string DataPath(const std::string& file) {
  return std::string(FLEETSIM_SOURCE_DIR) + "/tests/model/data/hf/" + file;
}

json ReadConfig(const std::string& file) {
  std::string text;
  EXPECT_TRUE(ReadWholeFile(DataPath(file), "test config", &text).ok());
  return json::parse(text);
}

// Parses `config` (as if from "cfg.json"); fails the test on an error.
HfModel Parse(const json& config) {
  HfModel m;
  const Status s = ParseHfConfig(config.dump(), "cfg.json", &m);
  EXPECT_TRUE(s.ok()) << s.message();
  return m;
}

std::string ParseError(const json& config) {
  HfModel m;
  const Status s = ParseHfConfig(config.dump(), "cfg.json", &m);
  EXPECT_FALSE(s.ok());
  return s.message();
}

const ModelSpec& Zoo(const Catalog& c, const std::string& name) {
  const ModelSpec* m = c.FindModel(name);
  EXPECT_NE(m, nullptr) << name;
  return *m;
}

void ExpectSameFigures(const ModelSpec& got, const ModelSpec& want) {
  EXPECT_EQ(got.layers, want.layers);
  EXPECT_EQ(got.hidden, want.hidden);
  EXPECT_EQ(got.heads, want.heads);
  EXPECT_EQ(got.kv_heads, want.kv_heads);
  EXPECT_EQ(got.head_dim, want.head_dim);
  EXPECT_EQ(got.intermediate, want.intermediate);
  EXPECT_EQ(got.vocab, want.vocab);
  EXPECT_EQ(got.max_model_len, want.max_model_len);
  EXPECT_EQ(got.experts, want.experts);
  EXPECT_EQ(got.experts_top_k, want.experts_top_k);
  EXPECT_EQ(got.tied_embeddings, want.tied_embeddings);
  EXPECT_EQ(got.weight_dtype, want.weight_dtype);
  EXPECT_EQ(got.kv_dtype, want.kv_dtype);
  EXPECT_EQ(got.compute_dtype, want.compute_dtype);
  EXPECT_EQ(got.ParamCount(), want.ParamCount());
  EXPECT_EQ(got.WeightBytes(), want.WeightBytes());
  EXPECT_EQ(got.KvBytesPerToken(), want.KvBytesPerToken());
}

class HfConfigTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(Catalog::LoadBuiltin(&catalog_).ok()); }
  Catalog catalog_;
};

TEST_F(HfConfigTest, LlamaConfigGivesTheZooEntry) {
  HfModel m;
  ASSERT_TRUE(LoadHfConfigFile(DataPath("llama-3.1-8b.json"), &m).ok());
  ExpectSameFigures(m.spec, Zoo(catalog_, "Llama-3.1-8B"));
  EXPECT_EQ(m.spec.name, DataPath("llama-3.1-8b.json"));
  EXPECT_TRUE(m.warnings.empty()) << m.warnings.front();
}

TEST_F(HfConfigTest, MixtralConfigGivesTheZooEntry) {
  const HfModel m = Parse(ReadConfig("mixtral-8x7b-v0.1.json"));
  ExpectSameFigures(m.spec, Zoo(catalog_, "Mixtral-8x7B"));
}

// No zoo entry: the published sizes. Qwen2.5-7B is 7.61B with its q/k/v
// biases (28 layers x (3584 + 2 x 512) = 129,024, not counted);
// Mistral-7B-v0.3 is 7.25B.
TEST_F(HfConfigTest, QwenAndMistralFieldsAndCounts) {
  const ModelSpec q = Parse(ReadConfig("qwen2.5-7b-instruct.json")).spec;
  EXPECT_EQ(q.layers, 28);
  EXPECT_EQ(q.hidden, 3584);
  EXPECT_EQ(q.heads, 28);
  EXPECT_EQ(q.kv_heads, 4);
  EXPECT_EQ(q.head_dim, 128);  // 3584 / 28: the config has no head_dim
  EXPECT_EQ(q.intermediate, 18944);
  EXPECT_EQ(q.vocab, 152064);
  EXPECT_EQ(q.max_model_len, 32768);
  EXPECT_EQ(q.ParamCount(), 7615487488);
  const ModelSpec m = Parse(ReadConfig("mistral-7b-v0.3.json")).spec;
  EXPECT_EQ(m.vocab, 32768);
  EXPECT_EQ(m.ParamCount(), 7248023552);
  EXPECT_EQ(m.KvBytesPerToken(), 2 * 32 * 8 * 128 * 2);
}

TEST_F(HfConfigTest, DefaultsKvHeadsToHeadsAndHonoursHeadDim) {
  json c = ReadConfig("llama-3.1-8b.json");
  c.erase("num_key_value_heads");
  c["head_dim"] = 64;
  const ModelSpec m = Parse(c).spec;
  EXPECT_EQ(m.kv_heads, 32);
  EXPECT_EQ(m.head_dim, 64);
}

// Llama-3.1-8B: 1,050,673,152 embedding + lm_head parameters stay bf16;
// the other 6,979,588,096 are quantised.
constexpr int64_t kLlamaEmbedding = 1050673152;
constexpr int64_t kLlamaRest = 6979588096;

TEST_F(HfConfigTest, Fp8WeightsMatchTheFp8ZooEntry) {
  json c = ReadConfig("llama-3.1-8b.json");
  c["quantization_config"] = {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}};
  const ModelSpec m = Parse(c).spec;
  EXPECT_EQ(m.weight_dtype, DType::kFp8);
  EXPECT_EQ(m.kv_dtype, DType::kBf16);
  EXPECT_EQ(m.WeightBytes(), kLlamaEmbedding * 2 + kLlamaRest);  // 9,080,934,400
  EXPECT_EQ(m.WeightBytes(), Zoo(catalog_, "Llama-3.1-8B-FP8").WeightBytes());
  // The RedHatAI checkpoint's own form.
  c["quantization_config"] = json::parse(R"({"quant_method": "compressed-tensors", "format": "float-quantized",
      "config_groups": {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float",
      "strategy": "channel", "symmetric": true, "dynamic": false}}}, "ignore": ["lm_head"]})");
  EXPECT_EQ(Parse(c).spec.WeightBytes(), kLlamaEmbedding * 2 + kLlamaRest);
}

TEST_F(HfConfigTest, AwqInt4CountsScalesAndZerosPerGroup) {
  json c = ReadConfig("llama-3.1-8b.json");
  c["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128},
                              {"zero_point", true}, {"version", "gemm"}};
  const ModelSpec m = Parse(c).spec;
  EXPECT_EQ(m.weight_dtype, DType::kInt4);
  // Half a byte per weight, and per group of 128 an fp16 scale (2 bytes)
  // and a 4-bit zero (0.5): 6,979,588,096 / 128 = 54,528,032 groups.
  EXPECT_EQ(m.WeightBytes(), kLlamaEmbedding * 2 + kLlamaRest / 2 + 54528032 * 5 / 2);  // 5,727,460,432
}

TEST_F(HfConfigTest, GptqInt8CountsScalesAndZerosPerGroup) {
  json c = ReadConfig("llama-3.1-8b.json");
  c["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 8}, {"group_size", 128}, {"sym", true},
                              {"desc_act", false}};
  const ModelSpec m = Parse(c).spec;
  EXPECT_EQ(m.weight_dtype, DType::kInt8);
  EXPECT_EQ(m.WeightBytes(), kLlamaEmbedding * 2 + kLlamaRest + 54528032 * 3);  // scale 2 + zero 1
}

// DeepSeek-V3, counted from its config (hidden 7168, 61 layers, 128 heads):
//   MLA per layer: q_a 7168x1536 + norm 1536 + q_b 1536x128x192
//     + kv_a 7168x576 + norm 512 + kv_b 512x128x256 + o 16384x7168
//     = 187,107,328; two norms 14,336
//   3 dense layers: MLP 3x7168x18432 = 396,361,728
//   58 MoE layers: (256 routed + 1 shared) x 3x7168x2048 + router 256x7168
//     = 11,320,164,352
//   embedding + lm_head 2 x 129280x7168 = 1,853,358,080; final norm 7168
//   total = 61 x 187,121,664 + 3 x 396,361,728 + 58 x 11,320,164,352
//     + 1,853,358,080 + 7168 = 671,026,404,352
// against the published 671B (the 685B on the Hub adds the 14B
// multi-token-prediction module, which vLLM loads only for speculative
// decoding).
TEST_F(HfConfigTest, DeepSeekV3CountsTo671BAndKeepsALatentKv) {
  HfModel hf;
  ASSERT_TRUE(LoadHfConfigFile(DataPath("deepseek-v3.json"), &hf).ok());
  const ModelSpec& m = hf.spec;
  EXPECT_EQ(m.ParamCount(), 671026404352);
  EXPECT_NEAR(static_cast<double>(m.ParamCount()), 671e9, 671e9 * 0.005);
  ASSERT_TRUE(m.mla.has_value());
  EXPECT_EQ(m.mla->kv_lora_rank + m.mla->qk_rope_head_dim, 576);
  EXPECT_EQ(m.experts, 256);
  EXPECT_EQ(m.experts_top_k, 8);
  EXPECT_EQ(m.shared_experts, 1);
  EXPECT_EQ(m.dense_layers, 3);
  EXPECT_EQ(m.max_model_len, 163840);
  // KV: one 576-element latent per layer in bf16.
  EXPECT_EQ(m.KvBytesPerToken(), 61 * 576 * 2);
  // FP8 weights with one fp32 scale per 128 x 128 block; embedding and
  // lm_head in bf16.
  EXPECT_EQ(m.weight_dtype, DType::kFp8);
  const int64_t embedding = 1853358080, rest = 671026404352 - embedding;
  EXPECT_EQ(m.WeightBytes(), std::llround(embedding * 2.0 + rest + rest / 16384.0 * 4));
  // Every tensor-parallel GPU keeps the whole latent.
  ShardPlan tp8;
  tp8.tp = 8;
  EXPECT_EQ(KvBytesPerTokenPerGpu(m, tp8), 61 * 576 * 2);
  MemoryPlan plan;
  const Status s = PlanMemory(m, *catalog_.FindGpu("H200"), tp8, MemoryOptions{}, &plan);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_GT(plan.kv_blocks, 0);
  // The multi-token-prediction module is read, for speculative.method mtp.
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_TRUE(hf.warnings.empty()) << hf.warnings.front();
}

// Qwen3-30B-A3B: per layer, attention 2048 x 4096 (Q) + 2 x 2048 x 512
// (K, V) + 4096 x 2048 (O) = 18,874,368 (q_norm and k_norm, 256, are not
// counted: norms are under a per mille), 128 experts
// of 3 x 2048 x 768 = 603,979,776, router 2048 x 128 = 262,144, two norms
// 4096; embedding and lm_head 2 x 151936 x 2048; final norm 2048: 30.53B,
// the model card's 30.5B. The catalogue's entry is the same model.
TEST_F(HfConfigTest, Qwen3MoeCountsTo30BAndMatchesTheCatalogue) {
  HfModel hf;
  ASSERT_TRUE(LoadHfConfigFile(DataPath("qwen3-30b-a3b.json"), &hf).ok());
  const ModelSpec& m = hf.spec;
  const int64_t layer = 18874368 + 603979776 + 262144 + 4096;
  EXPECT_EQ(m.ParamCount(), 48 * layer + 2 * int64_t{151936} * 2048 + 2048);
  EXPECT_NEAR(static_cast<double>(m.ParamCount()), 30.5e9, 30.5e9 * 0.005);
  EXPECT_EQ(m.experts, 128);
  EXPECT_EQ(m.experts_top_k, 8);
  EXPECT_EQ(m.intermediate, 768);
  EXPECT_TRUE(m.qk_norm);
  EXPECT_EQ(m.KvBytesPerToken(), 48 * 2 * 4 * 128 * 2);
  EXPECT_TRUE(hf.warnings.empty()) << hf.warnings.front();
  const ModelSpec* zoo = catalog_.FindModel("Qwen3-30B-A3B");
  ASSERT_NE(zoo, nullptr);
  EXPECT_EQ(zoo->ParamCount(), m.ParamCount());
  EXPECT_EQ(zoo->KvBytesPerToken(), m.KvBytesPerToken());
  // Qwen3-235B-A22B, the same family larger: 94 layers of attention
  // 4096 x 8192 + 2 x 4096 x 512 + 8192 x 4096, 128 experts of 3 x 4096 x
  // 1536, router 4096 x 128, two norms; embedding and lm_head 2 x 151936 x
  // 4096: 235.1B (the model card's 235B).
  const ModelSpec* big = catalog_.FindModel("Qwen3-235B-A22B");
  ASSERT_NE(big, nullptr);
  const int64_t big_layer = int64_t{71303168} + 2415919104 + 524288 + 8192;
  EXPECT_EQ(big->ParamCount(), 94 * big_layer + 2 * int64_t{151936} * 4096 + 4096);
  EXPECT_NEAR(static_cast<double>(big->ParamCount()), 235e9, 235e9 * 0.005);

  json c = ReadConfig("qwen3-30b-a3b.json");
  c["decoder_sparse_step"] = 2;
  EXPECT_NE(ParseError(c).find("cfg.json: decoder_sparse_step: "), std::string::npos);
  c = ReadConfig("qwen3-30b-a3b.json");
  c["mlp_only_layers"] = {0, 1};
  EXPECT_NE(ParseError(c).find("cfg.json: mlp_only_layers: "), std::string::npos);
}

// gpt-oss-120b: per layer, attention 2880 x 4096 (Q) + 2 x 2880 x 512
// (K, V) + 4096 x 2880 (O) = 26,542,080, 128 experts of 3 x 2880 x 2880
// = 3,185,049,600, router 2880 x 128 = 368,640, two norms 5760;
// embedding and lm_head 2 x 201088 x 2880; final norm 2880: 116.83B, the
// model card's 116.8B. MXFP4 experts: 4.25 bits per weight; the rest bf16.
TEST_F(HfConfigTest, GptOssReadsSlidingLayersSinksAndMxfp4Experts) {
  HfModel hf;
  ASSERT_TRUE(LoadHfConfigFile(DataPath("gpt-oss-120b.json"), &hf).ok());
  const ModelSpec& m = hf.spec;
  const int64_t experts = int64_t{36} * 3185049600;
  const int64_t embedding = 2 * int64_t{201088} * 2880;
  EXPECT_EQ(m.ParamCount(), 36 * (26542080 + 3185049600 + 368640 + 5760) + embedding + 2880);
  EXPECT_NEAR(static_cast<double>(m.ParamCount()), 116.8e9, 116.8e9 * 0.005);
  EXPECT_EQ(m.sliding_layers, 18);
  EXPECT_EQ(m.sliding_window, 128);
  EXPECT_TRUE(m.attention_sinks);
  ASSERT_TRUE(m.expert_weight_dtype.has_value());
  EXPECT_EQ(*m.expert_weight_dtype, DType::kFp4);
  EXPECT_EQ(m.weight_dtype, DType::kBf16);
  EXPECT_EQ(m.RoutedExpertParamCount(), experts);
  const double bytes = (m.ParamCount() - experts) * 2.0 + experts * (0.5 + 1.0 / 32);
  EXPECT_NEAR(static_cast<double>(m.WeightBytes()), bytes, 1);
  // About 65 GB: one 80 GB H100 holds it.
  EXPECT_NEAR(static_cast<double>(m.WeightBytes()), 65.2e9, 0.2e9);
  const ModelSpec* zoo = catalog_.FindModel("gpt-oss-120b");
  ASSERT_NE(zoo, nullptr);
  EXPECT_EQ(zoo->ParamCount(), m.ParamCount());
  EXPECT_EQ(zoo->WeightBytes(), m.WeightBytes());
  EXPECT_EQ(zoo->sliding_layers, m.sliding_layers);

  json c = ReadConfig("gpt-oss-120b.json");
  c["layer_types"][3] = "chunked_attention";
  EXPECT_NE(ParseError(c).find("cfg.json: layer_types: unknown layer type"), std::string::npos);
  c = ReadConfig("gpt-oss-120b.json");
  c["layer_types"].erase(0);
  EXPECT_NE(ParseError(c).find("cfg.json: layer_types: expected an array of num_hidden_layers (36)"),
            std::string::npos);
}

// NVIDIA ModelOpt NVFP4 (nvidia/*-FP4 checkpoints): fp4 weights with one
// e4m3 scale byte per 16, FP4 products (W4A4, at the FP4 peak on
// Blackwell), the KV cache in fp8; embedding and lm_head left in bf16.
TEST_F(HfConfigTest, ModelOptNvfp4IsFp4WithByteScalesPer16) {
  json c = ReadConfig("llama-3.1-8b.json");
  c["quantization_config"] = {{"quant_method", "modelopt"},
                              {"quant_algo", "NVFP4"},
                              {"group_size", 16},
                              {"kv_cache_quant_algo", "FP8"},
                              {"exclude_modules", {"lm_head"}}};
  const ModelSpec m = Parse(c).spec;
  EXPECT_EQ(m.weight_dtype, DType::kFp4);
  EXPECT_EQ(m.GemmDType(), DType::kFp4);
  EXPECT_EQ(m.kv_dtype, DType::kFp8);
  EXPECT_EQ(m.quant_group_size, 16);
  ASSERT_TRUE(m.embedding_dtype.has_value());
  EXPECT_EQ(*m.embedding_dtype, DType::kBf16);
  const double embedding = m.EmbeddingParamCount(), rest = m.ParamCount() - embedding;
  EXPECT_NEAR(static_cast<double>(m.WeightBytes()), embedding * 2 + rest * (0.5 + 1.0 / 16), 1);
  c["quantization_config"]["quant_algo"] = "INT4_AWQ";
  EXPECT_NE(ParseError(c).find("cfg.json: quantization_config.quant_algo: unknown ModelOpt algorithm"),
            std::string::npos);
}

// Kimi K2: DeepSeek-V3's architecture under model_type kimi_k2, with 64
// heads, 384 experts and one dense layer. Per layer, MLA with 64 heads:
// q_a 7168 x 1536 + 1536, q_b 1536 x 64 x 192, kv_a 7168 x 576 + 512, kv_b
// 512 x 64 x 256, O 64 x 128 x 7168 = 101,124,096 and two norms 14,336;
// the dense layer 3 x 7168 x 18432; each of 60 MoE layers 385 experts of
// 3 x 7168 x 2048 and the router 7168 x 384; embedding and lm_head 2 x
// 163840 x 7168: 1.03T (the model card's "1T total").
TEST_F(HfConfigTest, KimiK2IsDeepSeekV3WithMoreExpertsAndFewerHeads) {
  HfModel hf;
  const Status s = LoadHfConfigFile(DataPath("kimi-k2-instruct.json"), &hf);
  ASSERT_TRUE(s.ok()) << s.message();
  const ModelSpec& m = hf.spec;
  const int64_t attention = 101124096, norms = 14336;
  const int64_t dense = int64_t{3} * 7168 * 18432;
  const int64_t moe = int64_t{385} * 3 * 7168 * 2048 + 7168 * 384;
  EXPECT_EQ(m.ParamCount(), 61 * (attention + norms) + dense + 60 * moe + 2 * int64_t{163840} * 7168 + 7168);
  EXPECT_NEAR(static_cast<double>(m.ParamCount()), 1.03e12, 0.01e12);
  EXPECT_EQ(m.experts, 384);
  EXPECT_EQ(m.dense_layers, 1);
  EXPECT_EQ(m.mtp_layers, 0);
  EXPECT_EQ(m.KvBytesPerToken(), 61 * 576 * 2);
  const ModelSpec* zoo = catalog_.FindModel("Kimi-K2");
  ASSERT_NE(zoo, nullptr);
  EXPECT_EQ(zoo->ParamCount(), m.ParamCount());
  EXPECT_EQ(zoo->WeightBytes(), m.WeightBytes());
  // A model_type of another family than the architecture is still refused.
  json c = ReadConfig("kimi-k2-instruct.json");
  c["model_type"] = "llama";
  EXPECT_NE(ParseError(c).find("cfg.json: model_type: \"llama\" does not match architecture DeepseekV3ForCausalLM"),
            std::string::npos);
}

TEST_F(HfConfigTest, UnknownKeysAreWarningsNotErrors) {
  json c = ReadConfig("llama-3.1-8b.json");
  c["some_future_key"] = 3;
  const HfModel m = Parse(c);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("some_future_key"), std::string::npos);
}

TEST_F(HfConfigTest, RefusalsNameFileAndKey) {
  json c = ReadConfig("llama-3.1-8b.json");
  c["architectures"] = {"GPT2LMHeadModel"};
  EXPECT_NE(ParseError(c).find("cfg.json: architectures: unknown architecture \"GPT2LMHeadModel\""), std::string::npos);

  c = ReadConfig("llama-3.1-8b.json");
  c["model_type"] = "gpt2";
  EXPECT_NE(ParseError(c).find("cfg.json: model_type: unknown model_type \"gpt2\""), std::string::npos);

  EXPECT_NE(ParseError(ReadConfig("mistral-7b-v0.1.json")).find("cfg.json: sliding_window: "), std::string::npos);

  c = ReadConfig("qwen2.5-7b-instruct.json");
  c["use_sliding_window"] = true;
  EXPECT_NE(ParseError(c).find("cfg.json: sliding_window: "), std::string::npos);

  c = ReadConfig("llama-3.1-8b.json");
  c["layer_types"] = {"full_attention", "sliding_attention"};
  EXPECT_NE(ParseError(c).find("cfg.json: layer_types: "), std::string::npos);

  c = ReadConfig("deepseek-v3.json");
  c["moe_layer_freq"] = 2;
  EXPECT_NE(ParseError(c).find("cfg.json: moe_layer_freq: "), std::string::npos);

  c = ReadConfig("llama-3.1-8b.json");
  c["quantization_config"] = {{"quant_method", "bitsandbytes"}};
  EXPECT_NE(ParseError(c).find("cfg.json: quantization_config.quant_method: unknown quantisation method"),
            std::string::npos);

  c = ReadConfig("llama-3.1-8b.json");
  c["quantization_config"] = {{"quant_method", "awq"}, {"bits", 3}, {"group_size", 128}};
  EXPECT_NE(ParseError(c).find("cfg.json: quantization_config.bits: "), std::string::npos);

  c = ReadConfig("llama-3.1-8b.json");
  c.erase("hidden_size");
  EXPECT_NE(ParseError(c).find("cfg.json: hidden_size: missing required key"), std::string::npos);

  c = ReadConfig("mixtral-8x7b-v0.1.json");
  c.erase("num_local_experts");
  EXPECT_NE(ParseError(c).find("cfg.json: num_local_experts: missing required key"), std::string::npos);

  c = ReadConfig("deepseek-v3.json");
  c.erase("kv_lora_rank");
  EXPECT_NE(ParseError(c).find("cfg.json: kv_lora_rank: missing required key"), std::string::npos);
}

}  // namespace
}  // namespace fleetsim
