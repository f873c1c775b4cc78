// Cost of one IterationNs call per performance source, on Llama-3.1-8B /
// H100 at tp 2: the simulator asks once per replica iteration, so this is
// what makes a profile-based bench-1m slower or not than the roofline. The
// profiles are synthetic (only the call cost matters here): per-model
// curves for the profile source; fits for every kind and measured peer
// links for the fitted source.
#include <benchmark/benchmark.h>

#include <memory>

#include "model/catalog.h"
#include "model/profile_perf_model.h"
#include "model/roofline.h"

namespace fleetsim {
namespace {

struct Setup {
  Setup() {
    FLEETSIM_CHECK(Catalog::LoadBuiltin(&catalog).ok());
    model = catalog.FindModel("Llama-3.1-8B");
    gpu = catalog.FindGpu("H100-SXM");
    shard.tp = 2;
    FLEETSIM_CHECK(ResolveEngine(*catalog.FindEngine("vllm"), gpu->name, model->name, shard.tp, &engine).ok());
  }
  Catalog catalog;
  const ModelSpec* model = nullptr;
  const GpuSpec* gpu = nullptr;
  EngineSpec engine;
  ShardPlan shard;
};

// Shapes cycling through prefill-heavy, mixed and decode-only steps.
BatchShape Shape(int i) {
  BatchShape b;
  b.decode_seqs = 8 + i % 200;
  b.decode_tokens = b.decode_seqs;
  b.decode_kv_tokens = b.decode_seqs * (300 + 7 * (i % 50));
  b.sampled_seqs = b.decode_seqs;
  if (i % 3 == 0) {
    b.prefill_seqs = 1;
    b.prefill_tokens = 512 + i % 1000;
    b.prefill_attn_pairs = b.prefill_tokens * (b.prefill_tokens + 1) / 2;
    b.prefill_kv_tokens = b.prefill_tokens;
    b.sampled_seqs += 1;
  }
  return b;
}

void Run(benchmark::State& state, const PerfModel& m) {
  int i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(m.IterationNs(Shape(i)));
    i = (i + 1) % 600;
  }
}

void BM_Roofline(benchmark::State& state) {
  Setup s;
  const RooflinePerfModel m(*s.model, *s.gpu, s.shard, s.engine);
  Run(state, m);
}
BENCHMARK(BM_Roofline);

FittedCurve Fit(double fixed, double a, double b) {
  FittedCurve f;
  f.fixed_ns = fixed;
  f.knots = {1, 4, 16, 64, 256, 1024, 4096};
  f.values = {a, a, a * 1.1, a * 1.5, b / 4, b, b * 4};
  return f;
}

Profile FullProfile(bool per_model) {
  Profile p;
  p.device = "H100-SXM";
  p.model = "Llama-3.1-8B";
  ProfileCurve c;
  for (double t = 1; t <= 8192; t *= 2) {
    c.x.push_back(t);
    c.ns.push_back(50000 + 20 * t);
  }
  if (per_model) {
    p.gemm[2] = p.elementwise[2] = p.embedding[2] = c;
    p.all_reduce_intra_node[2] = c;
  }
  for (const char* op : {"gemm", "rms_norm", "residual_add", "silu_mul", "rope", "embedding", "attention_prefill",
                         "attention_decode"})
    p.fits[std::string(op) + ".bf16"] = Fit(3000, 1e-3, 4e-3);
  for (const char* kind : {"attention_prefill", "attention_decode"}) {
    AttentionDecision a;
    a.use_measured = true;
    a.achieved_fraction = 0.8;
    a.threshold = 0.5;
    p.attention[kind] = a;
  }
  ProfileLink l;
  l.kind = "peer";
  l.src = "device0";
  l.dst = "device1";
  l.alpha_ns = 8000;
  l.gbps = 380;
  p.links = {l};
  l.src = "device1";
  l.dst = "device0";
  p.links.push_back(l);
  return p;
}

void BM_ProfileSource(benchmark::State& state) {
  Setup s;
  std::unique_ptr<ProfilePerfModel> m;
  FLEETSIM_CHECK(ProfilePerfModel::Create(FullProfile(true), "p", *s.model, *s.gpu, s.shard, s.engine, {}, &m).ok());
  Run(state, *m);
}
BENCHMARK(BM_ProfileSource);

void BM_FittedSource(benchmark::State& state) {
  Setup s;
  std::unique_ptr<ProfilePerfModel> m;
  FLEETSIM_CHECK(ProfilePerfModel::Create(FullProfile(false), "p", *s.model, *s.gpu, s.shard, s.engine, {}, &m).ok());
  Run(state, *m);
}
BENCHMARK(BM_FittedSource);

}  // namespace
}  // namespace fleetsim

BENCHMARK_MAIN();
