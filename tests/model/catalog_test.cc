// Catalog: the built-in data loads, and the loader rejects bad documents
// with the origin and the JSON path in the message.
#include "model/catalog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/embedded_data.h"

namespace fleetsim {
namespace {

Catalog Builtin() {
  Catalog c;
  Status s = Catalog::LoadBuiltin(&c);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

// Replaces the one occurrence of `from` in `text`; fails the test when
// there is none, so a stale fixture cannot make a test pass vacuously.
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "fixture lacks: " << from;
  if (at == std::string::npos) return text;
  return text.replace(at, from.size(), to);
}

const char* const kModel = R"({
  "name": "m",
  "source": "test",
  "layers": 2,
  "hidden": 256,
  "heads": 4,
  "kv_heads": 2,
  "head_dim": 64,
  "intermediate": 512,
  "vocab": 1024,
  "max_model_len": 2048,
  "experts": 0,
  "experts_top_k": 0,
  "tied_embeddings": false,
  "weight_dtype": "bf16",
  "kv_dtype": "bf16",
  "compute_dtype": "bf16"
})";

const char* const kGpu = R"({
  "name": "H2000",
  "vendor": "nvidia",
  "family": "H2000",
  "memory_mib": 1000,
  "bf16_tflops": 100,
  "fp8_tflops": 200,
  "fp32_tflops": 10,
  "mem_bandwidth_gbps": 1000,
  "scale_up": {"kind": "nvlink", "topology": "switch", "gbps_per_direction_per_link": 25, "links": 4, "latency_us": 2},
  "pcie_gbps_per_direction": 32,
  "network_gbps_per_direction": 25,
  "prices": {"on_demand": {"usd_per_gpu_hour": 1.5, "provider": "P", "date": "2026-05", "source": "s"},
             "reserved": null, "spot": null},
  "sources": {"memory_mib": "a", "bf16_tflops": "b", "fp8_tflops": "c", "fp32_tflops": "d",
              "mem_bandwidth_gbps": "e", "scale_up.gbps_per_direction_per_link": "f",
              "scale_up.links": "g", "scale_up.latency_us": "h", "pcie_gbps_per_direction": "i",
              "network_gbps_per_direction": "j"}
})";

TEST(Catalog, LoadsEveryBuiltinModelGpuAndEngine) {
  Catalog c = Builtin();
  EXPECT_EQ(c.ModelNames(),
            (std::vector<std::string>{"DeepSeek-V3", "Kimi-K2", "Llama-2-70B", "Llama-2-7B", "Llama-3.1-405B", "Llama-3.1-70B",
                                      "Llama-3.1-70B-FP8", "Llama-3.1-8B", "Llama-3.1-8B-FP8", "Llama-4-Maverick-17B-128E",
                                      "Llama-4-Scout-17B-16E", "Mistral-7B",
                                      "Mixtral-8x7B", "Qwen2.5-0.5B", "Qwen2.5-1.5B", "Qwen2.5-14B", "Qwen2.5-32B", "Qwen2.5-3B",
                                      "Qwen2.5-72B", "Qwen2.5-7B", "Qwen3-235B-A22B", "Qwen3-30B-A3B", "Qwen3-4B", "gpt-oss-120b", "tiny"}));
  EXPECT_EQ(c.GpuNames(), (std::vector<std::string>{"A100-40G", "A100-80G", "B200", "GB200", "H100-SXM", "H20",
                                                    "H200", "L40S", "MI300X", "MI325X"}));
  EXPECT_EQ(c.EngineNames(), (std::vector<std::string>{"fleetsim_live", "sglang", "vllm", "vllm_v0"}));
  EXPECT_EQ(c.FindModel("Llama-9"), nullptr);
  ASSERT_NE(c.FindEngine("vllm"), nullptr);
  EXPECT_EQ(c.FindEngine("vllm")->engine, "vllm");
  EXPECT_EQ(c.FindEngine("sglang")->cuda_graphs, CudaGraphMode::kDecodeOnly);
}

TEST(Catalog, BuiltinFileNamesMatchTheirEntries) {
  for (const EmbeddedFile& f : EmbeddedZoo()) {
    Catalog c;
    ASSERT_TRUE(c.AddModelJson(f.contents, std::string(f.name)).ok());
    EXPECT_EQ(c.ModelNames().at(0) + ".json", f.name);
  }
  for (const EmbeddedFile& f : EmbeddedHardware()) {
    Catalog c;
    ASSERT_TRUE(c.AddGpuJson(f.contents, std::string(f.name)).ok());
    EXPECT_EQ(c.GpuNames().at(0) + ".json", f.name);
  }
}

TEST(Catalog, BuiltinModelsFollowPublishedConfigs) {
  Catalog c = Builtin();
  const ModelSpec* m = c.FindModel("Llama-3.1-405B");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->layers, 126);
  EXPECT_EQ(m->hidden, 16384);
  EXPECT_EQ(m->heads, 128);
  EXPECT_EQ(m->kv_heads, 8);
  EXPECT_EQ(m->intermediate, 53248);
  EXPECT_EQ(m->vocab, 128256);
  EXPECT_EQ(m->max_model_len, 131072);
  const ModelSpec* mix = c.FindModel("Mixtral-8x7B");
  ASSERT_NE(mix, nullptr);
  EXPECT_TRUE(mix->is_moe());
  EXPECT_EQ(mix->experts, 8);
  EXPECT_EQ(mix->experts_top_k, 2);
  EXPECT_EQ(c.FindModel("Llama-2-7B")->max_model_len, 4096);
  EXPECT_EQ(c.FindModel("Qwen2.5-72B")->vocab, 152064);
}

// Llama 4 Maverick: 48 layers of attention 5120 x (40 + 16) x 128 +
// 5120 x 5120 and two norms; 24 MoE layers of 128 routed experts and one
// shared of 3 x 5120 x 8192 with the router 5120 x 128; 24 dense layers of
// 3 x 5120 x 16384; embedding and lm_head 2 x 202048 x 5120: 400.7B (the
// model card's 400B). Scout: every layer MoE of 16 + 1 experts: 107.8B
// (109B with its vision encoder, not counted). Their chunked attention on
// 36 of 48 layers is priced as an 8192-token window.
TEST(Catalog, Llama4CountsItsInterleavedMoeAndSharedExpert) {
  Catalog c = Builtin();
  const ModelSpec* mav = c.FindModel("Llama-4-Maverick-17B-128E");
  ASSERT_NE(mav, nullptr);
  const int64_t attention = int64_t{5120} * 56 * 128 + int64_t{5120} * 5120 + 2 * 5120;
  const int64_t expert = int64_t{3} * 5120 * 8192;
  const int64_t embedding = 2 * int64_t{202048} * 5120;
  EXPECT_EQ(mav->ParamCount(),
            48 * attention + 24 * (129 * expert + 5120 * 128) + 24 * (int64_t{3} * 5120 * 16384) + embedding + 5120);
  EXPECT_NEAR(static_cast<double>(mav->ParamCount()), 400e9, 400e9 * 0.005);
  const ModelSpec* scout = c.FindModel("Llama-4-Scout-17B-16E");
  ASSERT_NE(scout, nullptr);
  EXPECT_EQ(scout->ParamCount(), 48 * (attention + 17 * expert + 5120 * 16) + embedding + 5120);
  EXPECT_EQ(scout->sliding_layers, 36);
  EXPECT_EQ(scout->sliding_window, 8192);
}

TEST(Catalog, H100MemoryIsTheDriverReportedMiB) {
  Catalog c = Builtin();
  const GpuSpec* h100 = c.FindGpu("H100-SXM");
  ASSERT_NE(h100, nullptr);
  EXPECT_EQ(h100->memory_mib, 81559);
  EXPECT_EQ(h100->memory_bytes(), int64_t{85520809984});  // 81559 * 2^20
  EXPECT_EQ(c.FindGpu("H200")->memory_bytes(), int64_t{143771} * 1048576);
}

TEST(Catalog, EveryBuiltinGpuFigureHasASource) {
  Catalog c = Builtin();
  for (const std::string& name : c.GpuNames()) {
    const GpuSpec* g = c.FindGpu(name);
    for (const char* figure : {"memory_mib", "bf16_tflops", "fp32_tflops", "mem_bandwidth_gbps",
                               "scale_up.links", "scale_up.latency_us", "pcie_gbps_per_direction"}) {
      auto it = g->sources.find(figure);
      ASSERT_NE(it, g->sources.end()) << name << " " << figure;
      EXPECT_FALSE(it->second.empty());
    }
    EXPECT_EQ(g->prices.size(), 3u) << name;
  }
}

TEST(Catalog, BuiltinPricesCarryProviderAndDate) {
  Catalog c = Builtin();
  const auto& h100 = c.FindGpu("H100-SXM")->prices.at("on_demand");
  ASSERT_TRUE(h100.has_value());
  EXPECT_DOUBLE_EQ(h100->usd_per_gpu_hour, 3.78);
  EXPECT_EQ(h100->provider, "Lambda");
  EXPECT_FALSE(h100->date.empty());
  EXPECT_FALSE(c.FindGpu("B200")->prices.at("on_demand").has_value());
  EXPECT_FALSE(c.FindGpu("MI300X")->prices.at("on_demand").has_value());
  EXPECT_DOUBLE_EQ(c.FindGpu("H200")->prices.at("on_demand")->usd_per_gpu_hour, 5.408);
}

TEST(LinkSpec, PeerBandwidthDependsOnTopology) {
  Catalog c = Builtin();
  // NVSwitch: 18 links x 25 GB/s one way to any peer.
  EXPECT_DOUBLE_EQ(c.FindGpu("H100-SXM")->scale_up.PeerGbps(), 450);
  // xGMI mesh: one link to each peer.
  EXPECT_DOUBLE_EQ(c.FindGpu("MI300X")->scale_up.PeerGbps(), 64);
  EXPECT_DOUBLE_EQ(c.FindGpu("L40S")->scale_up.PeerGbps(), 0);
}

TEST(LinkSpec, MeshCollectivesUseOneLinkPerPeer) {
  Catalog c = Builtin();
  const LinkSpec& xgmi = c.FindGpu("MI300X")->scale_up;
  EXPECT_DOUBLE_EQ(xgmi.CollectiveGbps(2), 64);
  EXPECT_DOUBLE_EQ(xgmi.CollectiveGbps(8), 7 * 64);
  EXPECT_DOUBLE_EQ(xgmi.CollectiveGbps(16), 7 * 64);  // no more links than 7
  EXPECT_DOUBLE_EQ(c.FindGpu("H100-SXM")->scale_up.CollectiveGbps(8), 450);
  EXPECT_DOUBLE_EQ(c.FindGpu("L40S")->scale_up.CollectiveGbps(2), 0);
}

TEST(GpuSpec, PeakFollowsComputeDtype) {
  Catalog c = Builtin();
  const GpuSpec* h100 = c.FindGpu("H100-SXM");
  EXPECT_DOUBLE_EQ(h100->PeakTflops(DType::kBf16), 989);
  EXPECT_DOUBLE_EQ(h100->PeakTflops(DType::kFp16), 989);
  EXPECT_DOUBLE_EQ(h100->PeakTflops(DType::kFp8), 1979);
  EXPECT_DOUBLE_EQ(h100->PeakTflops(DType::kFp32), 67);
  // A100 has no FP8 tensor cores: FP8 math runs at the bf16 rate.
  EXPECT_DOUBLE_EQ(c.FindGpu("A100-80G")->PeakTflops(DType::kFp8), 312);
}

// The gpu failure model's default: the H100's published interruption rate
// (Llama 3), with its source; other GPUs have none.
TEST(Catalog, H100CarriesLlama3InterruptionRateWithItsSource) {
  Catalog c = Builtin();
  const GpuSpec* h100 = c.FindGpu("H100-SXM");
  ASSERT_TRUE(h100->gpu_hours_per_interruption.has_value());
  EXPECT_NEAR(*h100->gpu_hours_per_interruption, 16384.0 * 54 * 24 / 419, 1.0);
  EXPECT_NE(h100->interruption_source.find("Llama 3"), std::string::npos);
  EXPECT_FALSE(c.FindGpu("A100-80G")->gpu_hours_per_interruption.has_value());
}

TEST(Catalog, RejectsAFailureRateWithoutSourceOrOutOfRange) {
  Catalog c;
  const std::string with = Replace(kGpu, "\"prices\": {", "\"failures\": {\"gpu_hours_per_interruption\": 1000}, \"prices\": {");
  Status s = c.AddGpuJson(with, "H2000.json");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("source"), std::string::npos) << s.message();
  s = c.AddGpuJson(Replace(kGpu, "\"prices\": {",
                           "\"failures\": {\"gpu_hours_per_interruption\": -1, \"source\": \"x\"}, \"prices\": {"),
                   "H2000.json");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gpu_hours_per_interruption"), std::string::npos) << s.message();
}

TEST(Catalog, H100CarriesAwsSpotReclamationWithItsSource) {
  Catalog c = Builtin();
  const GpuSpec* h100 = c.FindGpu("H100-SXM");
  ASSERT_TRUE(h100->spot.has_value());
  EXPECT_EQ(h100->spot->provider, "AWS");
  ASSERT_TRUE(h100->spot->notice_s.has_value());
  EXPECT_DOUBLE_EQ(*h100->spot->notice_s, 120);  // EC2's two-minute interruption notice
  ASSERT_TRUE(h100->spot->reclaims_per_hour.has_value());
  // The Spot Instance Advisor's 15-20% a month for p5.48xlarge, at its midpoint.
  EXPECT_NEAR(*h100->spot->reclaims_per_hour, -std::log(1 - 0.175) / 730, 1e-7);
  EXPECT_NE(h100->spot->source.find("Spot Instance Advisor"), std::string::npos);
  EXPECT_FALSE(c.FindGpu("MI300X")->spot.has_value());
}

TEST(Catalog, RejectsAMalformedSpotBlock) {
  Catalog c;
  const auto with = [](const std::string& spot) {
    return Replace(kGpu, "\"prices\": {", "\"spot\": " + spot + ", \"prices\": {");
  };
  Status s = c.AddGpuJson(with(R"({"provider": "AWS", "notice_s": 30, "source": "s"})"), "H2000.json");
  EXPECT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(c.FindGpu("H2000")->spot.has_value());
  EXPECT_FALSE(c.FindGpu("H2000")->spot->reclaims_per_hour.has_value());
  Catalog d;
  s = d.AddGpuJson(with(R"({"provider": "AWS", "notice_s": 30, "source": "s", "notice": 1})"), "H2000.json");
  EXPECT_EQ(s.message().rfind("H2000.json: spot.notice: unknown key", 0), 0u) << s.message();
  s = d.AddGpuJson(with(R"({"provider": "AWS", "notice_s": "120", "source": "s"})"), "H2000.json");
  EXPECT_EQ(s.message(), "H2000.json: spot.notice_s: expected a non-negative number");
  s = d.AddGpuJson(with(R"({"provider": "AWS", "reclaims_per_hour": 0, "source": "s"})"), "H2000.json");
  EXPECT_EQ(s.message(), "H2000.json: spot.reclaims_per_hour: expected a positive number");
  s = d.AddGpuJson(with(R"({"provider": "AWS", "notice_s": 120})"), "H2000.json");
  EXPECT_EQ(s.message(), "H2000.json: spot.source: missing required key");
  s = d.AddGpuJson(with(R"({"provider": "AWS", "source": "s"})"), "H2000.json");
  EXPECT_EQ(s.message().rfind("H2000.json: spot.notice_s: missing", 0), 0u) << s.message();
  s = d.AddGpuJson(with("[]"), "H2000.json");
  EXPECT_EQ(s.message(), "H2000.json: spot: expected an object");
}

TEST(Catalog, AcceptsTheFixtures) {
  Catalog c;
  Status s = c.AddModelJson(kModel, "m.json");
  EXPECT_TRUE(s.ok()) << s.message();
  s = c.AddGpuJson(kGpu, "H2000.json");
  EXPECT_TRUE(s.ok()) << s.message();
  const GpuSpec* g = c.FindGpu("H2000");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->scale_up.links, 4);
  EXPECT_EQ(g->sources.at("scale_up.links"), "g");
}

TEST(Catalog, RejectsMalformedJsonWithLineAndColumn) {
  Catalog c;
  Status s = c.AddModelJson("{\n  \"name\": \"x\",\n  \"layers\": ,\n}", "x.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("x.json: invalid JSON at line 3, column 13: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("unexpected ','"), std::string::npos) << s.message();
  // Truncated input: the error sits one past the last character.
  s = c.AddGpuJson("{\"a\": 1", "t.json");
  EXPECT_EQ(s.message().rfind("t.json: invalid JSON at line 1, column 8: ", 0), 0u) << s.message();
}

TEST(Catalog, RejectsDeepNestingNamingTheDocument) {
  Catalog c;
  const std::string deep = "{\"name\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  const Status s = c.AddModelJson(deep, "deep.json");
  EXPECT_EQ(s.message(), "deep.json: invalid JSON at line 1, column 265: nested deeper than 256 levels");
}

TEST(Catalog, RejectsNonObjectDocument) {
  Catalog c;
  Status s = c.AddEngineJson("[1, 2]", "e.json");
  EXPECT_EQ(s.message(), "e.json: expected a JSON object at the top level");
}

TEST(Catalog, RejectsUnknownKey) {
  Catalog c;
  Status s = c.AddModelJson(Replace(kModel, "\"layers\"", "\"layer\""), "m.json");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("m.json: layer: unknown key (known: attention_sinks, compute_dtype, ", 0), 0u)
      << s.message();
  s = c.AddGpuJson(Replace(kGpu, "\"links\"", "\"lnks\""), "H2000.json");
  EXPECT_EQ(s.message().rfind("H2000.json: scale_up.lnks: unknown key", 0), 0u) << s.message();
}

// The keys of latent attention, sliding windows and expert-only
// quantisation are checked together, each error naming its key.
TEST(Catalog, RejectsInconsistentArchitectureKeys) {
  auto error = [](const std::string& extra) {
    Catalog c;
    return c.AddModelJson(Replace(kModel, "\"name\": \"m\",", "\"name\": \"m\", " + extra), "m.json").message();
  };
  EXPECT_EQ(error("\"sliding_window\": 128,"), "m.json: sliding_layers: required with sliding_window");
  EXPECT_EQ(error("\"sliding_window\": 128, \"sliding_layers\": 2,"),
            "m.json: sliding_layers: expected fewer than layers (2): a model of sliding-window layers alone is not "
            "modelled");
  EXPECT_EQ(error("\"expert_weight_dtype\": \"fp4\","), "m.json: expert_weight_dtype: only for an MoE model (experts > 0)");
  EXPECT_EQ(error("\"quant_group_bytes\": 2,"), "m.json: quant_group_size: required with quant_group_bytes");
  EXPECT_EQ(error("\"shared_experts\": 1,"), "m.json: shared_experts: only for an MoE model (experts > 0)");
  EXPECT_EQ(error("\"mla\": {\"q_lora_rank\": 0, \"kv_lora_rank\": 32, \"qk_nope_head_dim\": 32, "
                  "\"qk_rope_head_dim\": 16, \"v_head_dim\": 32},"),
            "m.json: head_dim: expected mla.qk_nope_head_dim + mla.qk_rope_head_dim (48)");
  Catalog ok;
  const Status s = ok.AddModelJson(Replace(kModel, "\"name\": \"m\",", "\"name\": \"m\", \"sliding_window\": 64, \"sliding_layers\": 1,"), "m.json");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ok.FindModel("m")->sliding_layers, 1);
}

TEST(Catalog, RejectsMissingKey) {
  Catalog c;
  Status s = c.AddModelJson(Replace(kModel, "\"vocab\": 1024,", ""), "m.json");
  EXPECT_EQ(s.message(), "m.json: vocab: missing required key");
  s = c.AddGpuJson(Replace(kGpu, "\"reserved\": null,", ""), "H2000.json");
  EXPECT_EQ(s.message(), "H2000.json: prices.reserved: missing required key (null when unknown)");
}

TEST(Catalog, RejectsGpuFigureWithoutSource) {
  Catalog c;
  Status s = c.AddGpuJson(Replace(kGpu, "\"fp32_tflops\": \"d\",", ""), "H2000.json");
  EXPECT_EQ(s.message(), "H2000.json: sources.fp32_tflops: missing: every figure needs a source");
  // A source for a figure the file does not have is a misspelling.
  s = c.AddGpuJson(Replace(kGpu, "\"fp32_tflops\": \"d\"", "\"fp32_tflop\": \"d\""), "H2000.json");
  EXPECT_EQ(s.message().rfind("H2000.json: sources.fp32_tflop: not a figure of this file", 0), 0u)
      << s.message();
}

TEST(Catalog, NullFp8NeedsNoSource) {
  Catalog c;
  std::string doc = Replace(kGpu, "\"fp8_tflops\": 200", "\"fp8_tflops\": null");
  doc = Replace(doc, "\"fp8_tflops\": \"c\",", "");
  Status s = c.AddGpuJson(doc, "H2000.json");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(c.FindGpu("H2000")->fp8_tflops, 0);
}

TEST(Catalog, RejectsNegativeOrMistypedFigures) {
  Catalog c;
  EXPECT_EQ(c.AddGpuJson(Replace(kGpu, "\"bf16_tflops\": 100", "\"bf16_tflops\": -5"), "H2000.json")
                .message(),
            "H2000.json: bf16_tflops: expected a positive number");
  EXPECT_EQ(c.AddGpuJson(Replace(kGpu, "\"links\": 4", "\"links\": 0"), "H2000.json").message(),
            "H2000.json: scale_up.links: expected a positive integer");
  EXPECT_EQ(c.AddGpuJson(Replace(kGpu, "\"links\": 4", "\"links\": 4.5"), "H2000.json").message(),
            "H2000.json: scale_up.links: expected a positive integer");
  EXPECT_EQ(c.AddGpuJson(Replace(kGpu, "\"usd_per_gpu_hour\": 1.5", "\"usd_per_gpu_hour\": \"1.5\""),
                         "H2000.json")
                .message(),
            "H2000.json: prices.on_demand.usd_per_gpu_hour: expected a positive number");
  EXPECT_EQ(c.AddModelJson(Replace(kModel, "\"layers\": 2", "\"layers\": -2"), "m.json").message(),
            "m.json: layers: expected a positive integer");
  EXPECT_EQ(c.AddModelJson(Replace(kModel, "\"layers\": 2", "\"layers\": 99999999999"), "m.json")
                .message(),
            "m.json: layers: expected a positive integer no larger than 2147483647");
  EXPECT_EQ(c.AddModelJson(Replace(kModel, "\"tied_embeddings\": false", "\"tied_embeddings\": 0"),
                           "m.json")
                .message(),
            "m.json: tied_embeddings: expected true or false");
}

TEST(Catalog, RejectsInconsistentModel) {
  Catalog c;
  EXPECT_EQ(c.AddModelJson(Replace(kModel, "\"kv_heads\": 2", "\"kv_heads\": 3"), "m.json").message(),
            "m.json: kv_heads: expected a divisor of heads (4)");
  EXPECT_EQ(
      c.AddModelJson(Replace(kModel, "\"experts_top_k\": 0", "\"experts_top_k\": 2"), "m.json")
          .message(),
      "m.json: experts_top_k: expected 0 for a dense model (experts is 0)");
  EXPECT_EQ(c.AddModelJson(Replace(kModel, "\"kv_dtype\": \"bf16\"", "\"kv_dtype\": \"bf17\""),
                           "m.json")
                .message(),
            "m.json: kv_dtype: unknown dtype \"bf17\" (known: fp32, bf16, fp16, fp8, int8, int4)");
}

TEST(Catalog, RejectsUnknownTopologyAndLinksOnNone) {
  Catalog c;
  EXPECT_EQ(c.AddGpuJson(Replace(kGpu, "\"switch\"", "\"ring\""), "H2000.json").message(),
            "H2000.json: scale_up.topology: unknown topology \"ring\" (known: mesh, none, switch)");
  EXPECT_EQ(c.AddGpuJson(Replace(kGpu, "\"switch\"", "\"none\""), "H2000.json").message(),
            "H2000.json: scale_up.links: expected 0 when topology is \"none\"");
}

TEST(Catalog, RejectsDuplicateName) {
  Catalog c;
  ASSERT_TRUE(c.AddModelJson(kModel, "a.json").ok());
  EXPECT_EQ(c.AddModelJson(kModel, "b.json").message(),
            "b.json: name: duplicate model \"m\" (already in the catalogue)");
}

TEST(JoinNames, SeparatesWithCommas) {
  EXPECT_EQ(JoinNames({}), "");
  EXPECT_EQ(JoinNames({"A"}), "A");
  EXPECT_EQ(JoinNames({"A", "B", "C"}), "A, B, C");
}


// Blackwell's FP4 peak, and a GB200 NVL72 rack as one NVLink domain of 72.
TEST(Catalog, Gb200IsOneNvlinkDomainOf72WithAnFp4Peak) {
  Catalog c = Builtin();
  const GpuSpec* gb200 = c.FindGpu("GB200");
  ASSERT_NE(gb200, nullptr);
  EXPECT_EQ(gb200->scale_up.domain_gpus, 72);
  EXPECT_DOUBLE_EQ(gb200->PeakTflops(DType::kFp4), 10000);
  EXPECT_EQ(c.FindGpu("B200")->scale_up.domain_gpus, 8);
  EXPECT_DOUBLE_EQ(c.FindGpu("B200")->PeakTflops(DType::kFp4), 9000);
  // Before Blackwell, FP4 weights multiply at the bf16 peak.
  EXPECT_DOUBLE_EQ(c.FindGpu("H100-SXM")->PeakTflops(DType::kFp4), c.FindGpu("H100-SXM")->bf16_tflops);
  EXPECT_EQ(ParseDType("fp4"), DType::kFp4);
  EXPECT_DOUBLE_EQ(DTypeBytes(DType::kFp4), 0.5);
}

}  // namespace
}  // namespace fleetsim
