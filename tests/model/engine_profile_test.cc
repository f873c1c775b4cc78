// Engine profiles (model/engine_spec.h): the file format and its errors,
// the fallback order of each term, and what the roofline does with the
// terms: CPU time per step, CUDA-graph padding and eager launch stalls, and
// the all-reduce the engine runs (vLLM's custom one-shot and two-shot
// below 8 MiB where it applies, NCCL's ring elsewhere).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/catalog.h"
#include "model/collectives.h"
#include "model/roofline.h"
#include "tests/model/builtin.h"
#include "tests/model/shapes.h"

namespace fleetsim {
namespace {

using model_test::BuiltinEngine;
using model_test::BuiltinGpu;
using model_test::BuiltinModel;
using testshapes::Decode;
using testshapes::Prefill;
using testshapes::Tp;

// A small profile: a generic estimate for every term, and measured values
// of step_cpu_us for H100-SXM (any model), for H100-SXM with tp 4, and for
// A100-80G and one model at tp 2.
const char* kProfile = R"({
  "format": "fleetsim-engine-profile", "version": 1, "name": "e", "engine": "vllm", "description": "test",
  "cuda_graphs": {"mode": "decode_only", "sizes": [1, 2, 4, 8], "source": "s"},
  "all_reduce": {"algorithm": "vllm_custom", "source": "s"},
  "terms": {
    "step_cpu_us": [
      {"value": 100, "source": "generic", "date": "d", "estimate": true},
      {"value": 200, "gpu": "H100-SXM", "source": "h100", "date": "d", "engine_version": "v"},
      {"value": 300, "gpu": "H100-SXM", "tp": 4, "source": "h100 tp4", "date": "d", "engine_version": "v"},
      {"value": 400, "gpu": "A100-80G", "model": "Llama-3.1-70B", "tp": 2, "source": "a100", "date": "d",
       "engine_version": "v"}
    ],
    "seq_cpu_us": [{"value": 1, "source": "s", "date": "d", "estimate": true}],
    "prefill_token_cpu_us": [{"value": 0.5, "source": "s", "date": "d", "estimate": true}],
    "decode_token_cpu_us": [{"value": 0.25, "source": "s", "date": "d", "estimate": true}],
    "tp_step_cpu_us": [{"value": 150, "source": "s", "date": "d", "estimate": true}],
    "eager_launch_us": [{"value": 10, "source": "s", "date": "d", "estimate": true}],
    "custom_all_reduce_latency_us": [{"value": 5, "source": "s", "date": "d", "estimate": true}],
    "server_request_us": [{"value": 1000, "source": "s", "date": "d", "estimate": true}],
    "server_prompt_token_us": [{"value": 1, "source": "s", "date": "d", "estimate": true}],
    "server_output_token_us": [{"value": 50, "source": "s", "date": "d", "estimate": true}]
  }
})";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

EngineProfile Parse(const std::string& text) {
  EngineProfile p;
  const Status s = ParseEngineProfile(text, "e.json", &p);
  EXPECT_TRUE(s.ok()) << s.message();
  return p;
}

std::string ParseError(const std::string& text) {
  EngineProfile p;
  return ParseEngineProfile(text, "e.json", &p).message();
}

std::string Level(const EngineSpec& e, const std::string& term) {
  for (const auto& s : e.sources)
    if (s.term == term) return s.level + " " + s.source;
  return "missing";
}

TEST(EngineProfile, TermsFallBackFromExactToSameGpuToEstimate) {
  const EngineProfile p = Parse(kProfile);
  EngineSpec e;
  // Exact: names this GPU; the most specific applicable entry wins.
  ASSERT_TRUE(ResolveEngine(p, "H100-SXM", "Llama-3.1-8B", 1, &e).ok());
  EXPECT_EQ(e.cpu_overhead_fixed_us, 200);
  EXPECT_EQ(Level(e, "step_cpu_us"), "exact h100");
  ASSERT_TRUE(ResolveEngine(p, "H100-SXM", "Llama-3.1-8B", 4, &e).ok());
  EXPECT_EQ(e.cpu_overhead_fixed_us, 300);
  // Same GPU: measured on A100-80G for another model and tp.
  ASSERT_TRUE(ResolveEngine(p, "A100-80G", "Llama-3.1-8B", 1, &e).ok());
  EXPECT_EQ(e.cpu_overhead_fixed_us, 400);
  EXPECT_EQ(Level(e, "step_cpu_us"), "same_gpu a100");
  ASSERT_TRUE(ResolveEngine(p, "A100-80G", "Llama-3.1-70B", 2, &e).ok());
  EXPECT_EQ(Level(e, "step_cpu_us"), "exact a100");
  // Estimate: no entry for this GPU.
  ASSERT_TRUE(ResolveEngine(p, "L40S", "Llama-3.1-8B", 1, &e).ok());
  EXPECT_EQ(e.cpu_overhead_fixed_us, 100);
  EXPECT_EQ(Level(e, "step_cpu_us"), "estimate generic");
  EXPECT_EQ(e.WeakestLevel(), "estimate");
  // The custom all-reduce latency is not used at tp 1: not flagged.
  EXPECT_EQ(Level(e, "custom_all_reduce_latency_us"), "unused s");
  ASSERT_TRUE(ResolveEngine(p, "L40S", "Llama-3.1-8B", 2, &e).ok());
  EXPECT_EQ(Level(e, "custom_all_reduce_latency_us"), "estimate s");
}

TEST(EngineProfile, ATermWithNoApplicableEntryIsAnError) {
  // Only an H100 value for step_cpu_us, no generic one.
  const std::string text = Replace(kProfile, R"({"value": 100, "source": "generic", "date": "d", "estimate": true},)", "");
  const EngineProfile p = Parse(text);
  EngineSpec e;
  EXPECT_TRUE(ResolveEngine(p, "H100-SXM", "m", 1, &e).ok());
  EXPECT_EQ(ResolveEngine(p, "L40S", "m", 1, &e).message(),
            "e.json: terms.step_cpu_us: no entry for L40S, and no generic entry (one without \"gpu\")");
}

TEST(EngineProfile, MalformedFilesNameTheJsonPath) {
  EXPECT_EQ(ParseError(Replace(kProfile, R"("version": 1)", R"("version": 2)")),
            "e.json: version: this fleetsim reads version 1, got 2");
  EXPECT_EQ(ParseError(Replace(kProfile, R"("mode": "decode_only")", R"("mode": "sometimes")")),
            "e.json: cuda_graphs.mode: unknown \"sometimes\" (known: all_steps, decode_only, none)");
  EXPECT_EQ(ParseError(Replace(kProfile, "[1, 2, 4, 8]", "[1, 4, 2]")),
            "e.json: cuda_graphs.sizes[2]: sizes must increase");
  EXPECT_EQ(ParseError(Replace(kProfile, R"("algorithm": "vllm_custom")", R"("algorithm": "tree")")),
            "e.json: all_reduce.algorithm: unknown \"tree\" (known: nccl_ring, vllm_custom)");
  EXPECT_EQ(ParseError(Replace(kProfile, R"({"value": 1, "source")", R"({"value": -1, "source")")),
            "e.json: terms.seq_cpu_us[0].value: expected a non-negative number");
  EXPECT_EQ(ParseError(Replace(kProfile, R"({"value": 1, "source")", R"({"value": 1e9, "source")")),
            "e.json: terms.seq_cpu_us[0].value: expected at most 1000000 us");
  EXPECT_EQ(ParseError(Replace(kProfile, R"("source": "h100", "date": "d", "engine_version": "v")",
                               R"("source": "h100", "date": "d")")),
            "e.json: terms.step_cpu_us[1].engine_version: missing: a measured value names the engine version it "
            "was measured on");
  EXPECT_EQ(ParseError(Replace(kProfile, R"("seq_cpu_us": [)", R"("seq_cpu_uss": [)")).substr(0, 41),
            "e.json: terms.seq_cpu_uss: unknown key (k");
  EXPECT_EQ(ParseError(Replace(kProfile, R"("seq_cpu_us": [{"value": 1, "source": "s", "date": "d", "estimate": true}],)",
                               "")),
            "e.json: terms.seq_cpu_us: missing required key (a list of values with their sources)");
  EXPECT_EQ(ParseError(Replace(kProfile, R"("gpu": "H100-SXM", "tp": 4)", R"("gpu": "H100-SXM", "tp": 0)")),
            "e.json: terms.step_cpu_us[2].tp: expected a positive integer");
  // An optional kernel term: its entries read as the engine terms' do, each
  // value within the term's physical range.
  const auto with_kernel = [](const std::string& entries) {
    return Replace(kProfile, R"("seq_cpu_us": [)", R"("gemm_compute_efficiency": )" + entries + R"(, "seq_cpu_us": [)");
  };
  EXPECT_EQ(ParseError(with_kernel(R"([{"value": 5, "source": "s", "date": "d", "estimate": true}])")),
            "e.json: terms.gemm_compute_efficiency[0].value: expected 0.2 to 1 (fraction of dense peak)");
  EXPECT_EQ(ParseError(with_kernel("[]")),
            "e.json: terms.gemm_compute_efficiency: expected a non-empty array of entries");
  EXPECT_EQ(ParseError(with_kernel("[3]")), "e.json: terms.gemm_compute_efficiency[0]: expected an object");
}

TEST(EngineProfile, BundledProfilesParseAndSayWhatIsEstimated) {
  const EngineSpec vllm = BuiltinEngine("vllm", "H100-SXM", "Llama-3.1-70B", 4);
  EXPECT_EQ(vllm.cuda_graphs, CudaGraphMode::kAllSteps);
  EXPECT_EQ(vllm.all_reduce, AllReduceAlgorithm::kVllmCustom);
  EXPECT_EQ(Level(vllm, "custom_all_reduce_latency_us").substr(0, 6), "exact ");
  EXPECT_EQ(Level(vllm, "step_cpu_us").substr(0, 9), "estimate ");
  const EngineSpec sglang = BuiltinEngine("sglang", "H100-SXM", "Llama-3.1-8B", 1);
  EXPECT_EQ(sglang.cuda_graphs, CudaGraphMode::kDecodeOnly);
  // vLLM V1 captures [1, 2, 4] + range(8, 513, 8): 8 tokens stay 8, 9 pad to 16.
  EXPECT_EQ(vllm.GraphSize(9, false), 16);
  EXPECT_EQ(vllm.GraphSize(512, false), 512);
  EXPECT_EQ(vllm.GraphSize(513, false), 0);
  // SGLang graphs decode-only steps up to 160.
  EXPECT_EQ(sglang.GraphSize(3, true), 4);
  EXPECT_EQ(sglang.GraphSize(3, false), 0);
  EXPECT_EQ(sglang.GraphSize(161, true), 0);
}

// Written and read back: the same terms for every pool (fleetsim fit writes
// profiles this way).
TEST(EngineProfile, WritesWhatItReads) {
  Catalog c;
  ASSERT_TRUE(Catalog::LoadBuiltin(&c).ok());
  for (const std::string& name : c.EngineNames()) {
    SCOPED_TRACE(name);
    const EngineProfile& p = *c.FindEngine(name);
    std::string text;
    ASSERT_TRUE(WriteEngineProfileJson(p, &text).ok());
    EngineProfile back;
    const Status s = ParseEngineProfile(text, "back.json", &back);
    ASSERT_TRUE(s.ok()) << s.message();
    std::string again;
    ASSERT_TRUE(WriteEngineProfileJson(back, &again).ok());
    EXPECT_EQ(text, again);
    for (int tp : {1, 2, 8}) {
      EngineSpec a, b;
      ASSERT_TRUE(ResolveEngine(p, "H100-SXM", "Llama-3.1-70B", tp, &a).ok());
      ASSERT_TRUE(ResolveEngine(back, "H100-SXM", "Llama-3.1-70B", tp, &b).ok());
      EXPECT_EQ(a.cpu_overhead_fixed_us, b.cpu_overhead_fixed_us);
      EXPECT_EQ(a.custom_all_reduce_latency_us, b.custom_all_reduce_latency_us);
      EXPECT_EQ(a.cuda_graph_sizes, b.cuda_graph_sizes);
    }
  }
}

// vLLM's kernel choice (custom_all_reduce.cuh): one-shot on 2 GPUs, or on
// NVLink below 512 KiB up to 4 GPUs and below 256 KiB up to 8; two-shot
// otherwise; enabled for 2, 4, 6, 8 GPUs, and on PCIe for 2 only.
TEST(EngineProfile, VllmCustomAllReduceFollowsTheEnginesRules) {
  EXPECT_TRUE(VllmCustomAllReduce::Enabled(2, false));
  EXPECT_FALSE(VllmCustomAllReduce::Enabled(4, false));
  EXPECT_TRUE(VllmCustomAllReduce::Enabled(8, true));
  EXPECT_FALSE(VllmCustomAllReduce::Enabled(3, true));
  EXPECT_FALSE(VllmCustomAllReduce::Enabled(16, true));
  EXPECT_TRUE(VllmCustomAllReduce::OneShot(2, 4e6));
  EXPECT_TRUE(VllmCustomAllReduce::OneShot(4, 500 * 1024));
  EXPECT_FALSE(VllmCustomAllReduce::OneShot(4, 512 * 1024));
  EXPECT_TRUE(VllmCustomAllReduce::OneShot(8, 255 * 1024));
  EXPECT_FALSE(VllmCustomAllReduce::OneShot(8, 256 * 1024));
  // Costs by hand: latency 5 us, 100 GB/s.
  //   one-shot, 8 GPUs, 128 KiB: 5000 + 7 x 131072 / 100 = 14175.04 ns
  //   two-shot, 8 GPUs, 1 MiB: 7500 + 2 x 7/8 x 1048576 / 100 = 25850.08 ns
  EXPECT_NEAR(VllmCustomAllReduce::Ns(5000, 100, 8, 131072), 14175.04, 1e-6);
  EXPECT_NEAR(VllmCustomAllReduce::Ns(5000, 100, 8, 1048576), 25850.08, 1e-6);
}

// The all-reduce time of a Llama-3.1-70B tp-8 decode step on H100 under
// each algorithm: vLLM's custom all-reduce is cheaper than NCCL's ring for
// small messages (one synchronisation against 2(p-1) ring steps), and the
// same above 8 MiB.
TEST(EngineProfile, RooflinePricesTheAllReduceTheEngineRuns) {
  const ModelSpec m = BuiltinModel("Llama-3.1-70B");
  const GpuSpec g = BuiltinGpu("H100-SXM");
  EngineSpec custom = BuiltinEngine("vllm", "H100-SXM", "Llama-3.1-70B", 8);
  custom.cpu_overhead_fixed_us = custom.cpu_overhead_per_seq_us = 0;
  EngineSpec ring = custom;
  ring.all_reduce = AllReduceAlgorithm::kNcclRing;
  RooflinePerfModel a(m, g, Tp(8), custom), b(m, g, Tp(8), ring);
  // 8 sequences: 8 x 8192 x 2 bytes = 128 KiB per all-reduce, one-shot.
  const auto small_a = a.Explain(Decode(8, 1000)), small_b = b.Explain(Decode(8, 1000));
  EXPECT_LT(small_a.all_reduce_ns - small_a.gather_ns, 0.5 * (small_b.all_reduce_ns - small_b.gather_ns));
  // 1024 tokens: 16 MiB per all-reduce, NCCL for both.
  const auto big_a = a.Explain(Prefill(1024)), big_b = b.Explain(Prefill(1024));
  EXPECT_DOUBLE_EQ(big_a.all_reduce_ns, big_b.all_reduce_ns);
  // By hand for the one-shot: 160 all-reduces x (5.8 us + 7 x 131072 B / (450 GB/s x 0.85)).
  const double one = 5800 + 7 * 131072 / (g.scale_up.CollectiveGbps(8) * 0.85);
  EXPECT_NEAR(small_a.all_reduce_ns - small_a.gather_ns, 160 * one, 1e-6 * 160 * one);
}

TEST(EngineProfile, GraphedStepsArePaddedAndEagerStepsWaitForLaunches) {
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec g = BuiltinGpu("H100-SXM");
  EngineSpec e;
  ASSERT_TRUE(ResolveEngine(Parse(kProfile), "H100-SXM", "Llama-3.1-8B", 1, &e).ok());
  RooflinePerfModel model(m, g, Tp(1), e);
  // Decode-only graphs at [1, 2, 4, 8]: 3 sequences run as 4.
  const auto three = model.Explain(Decode(3, 100)), four = model.Explain(Decode(4, 100));
  EXPECT_EQ(three.graph_tokens, 4);
  EXPECT_DOUBLE_EQ(three.gemm_ns - three.lm_head_ns, four.gemm_ns - four.lm_head_ns);
  EXPECT_EQ(three.launch_stall_ns, 0);
  // A prefill step runs eager: a one-token prefill of the tiny model is so
  // short that the GPU waits for the CPU to launch its kernels at 10 us each.
  EngineSpec tiny_engine;
  ASSERT_TRUE(ResolveEngine(Parse(kProfile), "H100-SXM", "tiny", 1, &tiny_engine).ok());
  RooflinePerfModel tiny_model(BuiltinModel("tiny"), g, Tp(1), tiny_engine);
  const auto tiny = tiny_model.Explain(Prefill(1));
  EXPECT_EQ(tiny.graph_tokens, 0);
  EXPECT_GT(tiny.launch_stall_ns, 0);
  const double gpu = tiny.gemm_ns + tiny.attention_prefill_ns + tiny.attention_decode_ns + tiny.elementwise_ns +
                     tiny.all_reduce_ns;
  EXPECT_NEAR(gpu + tiny.launch_stall_ns, static_cast<double>(tiny.kernel_launches) * 10e3, 1e-6);
  // CPU terms: 200 us + 1 us per sequence + 0.5 us per prefill token.
  EXPECT_DOUBLE_EQ(model.Explain(Prefill(1000)).cpu_overhead_ns, 200e3 + 1e3 + 1000 * 0.5e3);
  EXPECT_DOUBLE_EQ(four.cpu_overhead_ns, 200e3 + 4 * 1e3 + 4 * 0.25e3);
}

// tp_step_cpu_us: every step of a tensor-parallel pool waits for its workers
// (150 us in kProfile); at tp 1 the term is resolved "unused", neither
// priced nor flagged as an estimate.
TEST(EngineProfile, TensorParallelStepsAddTheirHandOff) {
  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec g = BuiltinGpu("H100-SXM");
  EngineSpec one, two;
  ASSERT_TRUE(ResolveEngine(Parse(kProfile), "H100-SXM", "Llama-3.1-8B", 1, &one).ok());
  ASSERT_TRUE(ResolveEngine(Parse(kProfile), "H100-SXM", "Llama-3.1-8B", 2, &two).ok());
  EXPECT_EQ(one.tp_step_cpu_us, 150);
  EXPECT_EQ(Level(one, "tp_step_cpu_us"), "unused s");
  EXPECT_EQ(Level(two, "tp_step_cpu_us"), "estimate s");
  const std::vector<std::string> estimated = one.TermsAt("estimate");
  EXPECT_EQ(std::count(estimated.begin(), estimated.end(), "tp_step_cpu_us"), 0);
  // two resolves step_cpu_us to the tp-less H100 entry (200 us), as one does.
  ASSERT_EQ(one.cpu_overhead_fixed_us, two.cpu_overhead_fixed_us);
  RooflinePerfModel a(m, g, Tp(1), one), b(m, g, Tp(2), two);
  EXPECT_DOUBLE_EQ(a.Explain(Decode(4, 100)).cpu_overhead_ns, 200e3 + 4 * 1e3 + 4 * 0.25e3);
  EXPECT_DOUBLE_EQ(b.Explain(Decode(4, 100)).cpu_overhead_ns, 200e3 + 150e3 + 4 * 1e3 + 4 * 0.25e3);
}

// A profile written before tp_step_cpu_us existed (every earlier fleetsim
// fit output) still loads: the term reads as 0, flagged as an estimate.
TEST(EngineProfile, AProfileWithoutTheTensorParallelStepReadsItAsZero) {
  std::string old = kProfile;
  const std::string line = "    \"tp_step_cpu_us\": [{\"value\": 150, \"source\": \"s\", \"date\": \"d\", \"estimate\": true}],\n";
  const size_t at = old.find(line);
  ASSERT_NE(at, std::string::npos);
  old.erase(at, line.size());
  const EngineProfile p = Parse(old);
  EngineSpec two;
  ASSERT_TRUE(ResolveEngine(p, "H100-SXM", "Llama-3.1-8B", 2, &two).ok());
  EXPECT_EQ(two.tp_step_cpu_us, 0);
  EXPECT_EQ(Level(two, "tp_step_cpu_us").substr(0, 9), "estimate ");
  EXPECT_NE(Level(two, "tp_step_cpu_us").find("written before fleetsim had tp_step_cpu_us"), std::string::npos);
}

// Async scheduling (vLLM V1's default, SGLang's overlap scheduler): the CPU
// prepares step N+1 while step N runs, so a step costs the longer of its
// GPU and CPU time. A profile without the key schedules between steps; one
// with it must say where that comes from.
TEST(EngineProfile, AsyncSchedulingHidesTheCpuUnderTheGpu) {
  const std::string with = Replace(kProfile, R"("all_reduce": {"algorithm": "vllm_custom", "source": "s"},)",
                                   R"("all_reduce": {"algorithm": "vllm_custom", "source": "s"},
  "async_scheduling": {"enabled": true, "new_requests": "step_after_next", "source": "overlap"},)");
  const EngineProfile serial_p = Parse(kProfile), async_p = Parse(with);
  EXPECT_FALSE(serial_p.async_scheduling);
  EXPECT_TRUE(async_p.async_scheduling);
  EXPECT_EQ(async_p.async_scheduling_source, "overlap");
  EXPECT_TRUE(async_p.admit_after_next_step);
  EXPECT_EQ(ParseError(Replace(with, R"("new_requests": "step_after_next", )", "")),
            "e.json: async_scheduling.new_requests: missing required key");
  EXPECT_EQ(ParseError(Replace(with, R"("step_after_next")", R"("later")")),
            "e.json: async_scheduling.new_requests: unknown \"later\" (known: next_step, step_after_next)");
  EXPECT_EQ(ParseError(Replace(with, R"("enabled": true)", R"("enabled": 1)")),
            "e.json: async_scheduling.enabled: expected true or false");
  EXPECT_EQ(ParseError(Replace(with, R"(, "source": "overlap")", "")).substr(0, 40),
            "e.json: async_scheduling.source: missing");
  EXPECT_EQ(ParseError(Replace(with, R"("enabled": true)", R"("enabled": true, "depth": 2)")).substr(0, 43),
            "e.json: async_scheduling.depth: unknown key");
  std::string text;
  ASSERT_TRUE(WriteEngineProfileJson(async_p, &text).ok());
  EXPECT_TRUE(Parse(text).async_scheduling);
  EXPECT_TRUE(Parse(text).admit_after_next_step);

  const ModelSpec m = BuiltinModel("Llama-3.1-8B");
  const GpuSpec g = BuiltinGpu("H100-SXM");
  EngineSpec serial_e, async_e;
  ASSERT_TRUE(ResolveEngine(serial_p, "H100-SXM", "Llama-3.1-8B", 1, &serial_e).ok());
  ASSERT_TRUE(ResolveEngine(async_p, "H100-SXM", "Llama-3.1-8B", 1, &async_e).ok());
  EXPECT_TRUE(async_e.async_scheduling);
  RooflinePerfModel serial(m, g, Tp(1), serial_e), overlapped(m, g, Tp(1), async_e);
  // Each of these steps reads 16 GB of weights (~5 ms on an H100), longer
  // than its 0.2-0.7 ms of CPU: all of the CPU is hidden.
  for (const BatchShape& shape : {Decode(4, 100), Decode(64, 2000), Prefill(1000)}) {
    const auto s = serial.Explain(shape), a = overlapped.Explain(shape);
    EXPECT_EQ(s.cpu_hidden_ns, 0);
    EXPECT_DOUBLE_EQ(a.cpu_overhead_ns, s.cpu_overhead_ns);
    const double gpu = s.serial_ns() - s.cpu_overhead_ns;
    ASSERT_GT(gpu, s.cpu_overhead_ns);
    EXPECT_DOUBLE_EQ(a.cpu_hidden_ns, s.cpu_overhead_ns);
    EXPECT_NEAR(a.total_ns(), gpu, 1e-6);
    EXPECT_EQ(overlapped.IterationNs(shape), std::llround(gpu));
    // The parts sum to the step; a pipeline's split keeps the CPU in full
    // (its executor runs the CPU ahead of the stages itself).
    const IterationParts p = overlapped.Parts(shape);
    EXPECT_NEAR(p.gemm + p.attention_prefill + p.attention_decode + p.elementwise + p.other, a.total_ns(), 1e-3);
    EXPECT_EQ(overlapped.Split(shape).cpu_ns, serial.Split(shape).cpu_ns);
    EXPECT_EQ(overlapped.Split(shape).layers_ns, serial.Split(shape).layers_ns);
  }
  // When the CPU takes longer (a tiny model's step), the step costs the CPU.
  EngineSpec slow = async_e;
  slow.cpu_overhead_fixed_us = 50000;
  RooflinePerfModel cpu_bound(m, g, Tp(1), slow);
  const auto c = cpu_bound.Explain(Decode(1, 10));
  EXPECT_NEAR(c.total_ns(), c.cpu_overhead_ns, 1e-6);
  // The bundled engines: vLLM V1 and SGLang overlap, vLLM V0 does not.
  EXPECT_TRUE(BuiltinEngine("vllm", "H100-SXM", "Llama-3.1-8B", 1).async_scheduling);
  EXPECT_TRUE(BuiltinEngine("sglang", "H100-SXM", "Llama-3.1-8B", 1).async_scheduling);
  EXPECT_FALSE(BuiltinEngine("vllm_v0", "H100-SXM", "Llama-3.1-8B", 1).async_scheduling);
  // SGLang takes a request that comes during a step into the step after
  // the next; vLLM V1 into the next.
  EXPECT_TRUE(BuiltinEngine("sglang", "H100-SXM", "Llama-3.1-8B", 1).admit_after_next_step);
  EXPECT_FALSE(BuiltinEngine("vllm", "H100-SXM", "Llama-3.1-8B", 1).admit_after_next_step);
}

// vllm_v0 is the vllm_v0 scheduler's engine: decode-only graphs up to 256
// (V0's capture list), and on A100-80G the CPU terms fitted on published
// runs (tests/fidelity/data/public_serving.json), exact there and estimates
// elsewhere.
TEST(EngineProfile, VllmV0IsFittedOnA100AndEstimatedElsewhere) {
  const EngineSpec a100 = BuiltinEngine("vllm_v0", "A100-80G", "Qwen2.5-7B", 1);
  EXPECT_EQ(a100.cuda_graphs, CudaGraphMode::kDecodeOnly);
  EXPECT_EQ(a100.GraphSize(200, true), 200);
  EXPECT_EQ(a100.GraphSize(257, true), 0);
  EXPECT_EQ(a100.GraphSize(8, false), 0);
  for (const char* term : {"step_cpu_us", "seq_cpu_us", "prefill_token_cpu_us"})
    EXPECT_EQ(Level(a100, term).substr(0, 6), "exact ") << term;
  EXPECT_NE(Level(a100, "step_cpu_us").find("fleetsim fit on"), std::string::npos);
  EXPECT_GT(a100.cpu_overhead_fixed_us, 1000);  // V0 spends more than the 1 ms V1 estimate
  const EngineSpec a100_tp4 = BuiltinEngine("vllm_v0", "A100-80G", "Qwen2.5-72B", 4);
  EXPECT_EQ(Level(a100_tp4, "tp_step_cpu_us").substr(0, 6), "exact ");
  const EngineSpec h100 = BuiltinEngine("vllm_v0", "H100-SXM", "Llama-3.1-8B", 1);
  EXPECT_EQ(Level(h100, "step_cpu_us").substr(0, 9), "estimate ");
  EXPECT_EQ(h100.cpu_overhead_fixed_us, a100.cpu_overhead_fixed_us);
}

}  // namespace
}  // namespace fleetsim
