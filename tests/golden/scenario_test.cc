// End-to-end runs of scenarios through ScenarioRun: golden summaries of the
// bundled scenarios, conservation, determinism, and a case whose every
// timestamp is computed by hand from the PerfModel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/model/builtin.h"
#include "model/catalog.h"
#include "model/expert_balance.h"
#include "model/memory_plan.h"
#include "model/roofline.h"
#include "sim/runner/run.h"
#include "sim/scenario/parse.h"
#include "tests/golden/golden_util.h"

namespace fleetsim {
namespace {

class GoldenScenario : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenScenario, SummaryMatchesGoldenAndConserves) {
  const std::string name = GetParam();
  ScenarioSpec spec = LoadBundled(name);
  Outcome o = RunSpec(spec, spec.seed, name);
  ExpectConservation(o.summary);
  const fs::path golden = fs::path(FLEETSIM_SOURCE_DIR) / "tests/golden" / (name + ".summary.json");
  if (std::getenv("FLEETSIM_UPDATE_GOLDEN")) {
    std::ofstream(golden, std::ios::binary) << o.summary_json;
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " missing; run with FLEETSIM_UPDATE_GOLDEN=1";
  EXPECT_EQ(o.summary_json, ReadFile(golden))
      << "summary of " << name << " changed; if intended, rerun with FLEETSIM_UPDATE_GOLDEN=1 and review the diff";
}

#ifdef FLEETSIM_SLOW_TESTS
INSTANTIATE_TEST_SUITE_P(Bundled, GoldenScenario,
                         ::testing::Values("quickstart", "azure-conv-llama70b-h100", "scheduler-compare",
                                           "mooncake-prefix", "llama2-7b-h100-vidur", "memory-pressure", "bench-1m",
                                           "diurnal-autoscale"));
#else
INSTANTIATE_TEST_SUITE_P(Bundled, GoldenScenario,
                         ::testing::Values("quickstart", "azure-conv-llama70b-h100", "scheduler-compare",
                                           "mooncake-prefix", "llama2-7b-h100-vidur", "memory-pressure"));
#endif

TEST(Scenario, SameSeedGivesByteIdenticalOutputs) {
  ScenarioSpec spec = LoadBundled("quickstart");
  Outcome a = RunSpec(spec, 11, "det_a");
  Outcome b = RunSpec(spec, 11, "det_b");
  EXPECT_EQ(a.summary_json, b.summary_json);
  EXPECT_EQ(a.requests_csv, b.requests_csv);
  Outcome c = RunSpec(spec, 12, "det_c");
  EXPECT_NE(a.requests_csv, c.requests_csv);
}

TEST(Scenario, DurationCutLeavesUnfinishedAndConserves) {
  ScenarioSpec spec = LoadBundled("quickstart");
  spec.duration_s = 20.0;
  spec.traffic.max_requests = 100000;
  Outcome o = RunSpec(spec, 3, "duration");
  ExpectConservation(o.summary);
  EXPECT_GT(o.summary.unfinished, 0);
  EXPECT_DOUBLE_EQ(o.summary.simulated_s, 20.0);
}

TEST(Scenario, OverloadIsFlagged) {
  ScenarioSpec spec = LoadBundled("quickstart");
  spec.traffic.rate_per_s = 60;  // several times what two replicas serve
  spec.traffic.max_requests = 6000;
  Outcome o = RunSpec(spec, 3, "overload");
  ExpectConservation(o.summary);
  EXPECT_TRUE(o.summary.overloaded);
  ScenarioSpec calm = LoadBundled("quickstart");
  EXPECT_FALSE(RunSpec(calm, 3, "calm").summary.overloaded);
}

TEST(Scenario, WarmupExcludesEarlyArrivalsFromMetrics) {
  ScenarioSpec spec = LoadBundled("quickstart");
  spec.warmup_s = 30;
  Outcome o = RunSpec(spec, 3, "warmup");
  ExpectConservation(o.summary);
  int64_t late = 0, late_completed = 0;
  for (const auto& r : CsvRows(o.requests_csv)) {
    if (ParseSeconds(r[1]) < 30 * kSecond) continue;
    ++late;
    late_completed += r[10] == "completed";
  }
  EXPECT_LT(o.summary.measured, o.summary.arrived);
  EXPECT_EQ(o.summary.measured, late);
  EXPECT_EQ(o.summary.ttft.count, late_completed);
  EXPECT_GT(late, 0);
}

TEST(Scenario, TraceIsValidChromeTraceJson) {
  ScenarioSpec spec = LoadBundled("quickstart");
  spec.traffic.max_requests = 200;
  std::unique_ptr<ScenarioRun> run;
  ASSERT_TRUE(ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &run).ok());
  fs::path dir = TempDir("trace");
  MetricsOptions mo;
  mo.trace_json = (dir / "trace.json").string();
  RunReport report;
  ASSERT_TRUE(run->Run(mo, 1, nullptr, &report).ok());
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir / "trace.json"));
  fs::remove_all(dir);
  int64_t begins = 0, ends = 0, iterations = 0;
  for (const auto& e : j.at("traceEvents")) {
    const std::string ph = e.at("ph");
    begins += ph == "b";
    ends += ph == "e";
    if (ph == "X") {
      ++iterations;
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
      EXPECT_TRUE(e.at("args").contains("prefill_tokens"));
    }
  }
  EXPECT_EQ(begins, 200);
  EXPECT_EQ(ends, 200);
  EXPECT_GT(iterations, 200);
}

// memory-pressure gives the KV cache room for a few long requests only: the
// vLLM scheduler must preempt, and every preempted request is recomputed
// and still completes. The per-request preemption counts in requests.csv
// add up to the summary's total (two separate counters), and at every
// sampled second the KV cache is within its capacity.
TEST(Scenario, MemoryPressurePreemptsByRecomputeAndStillCompletesEveryRequest) {
  ScenarioSpec spec = LoadBundled("memory-pressure");
  std::unique_ptr<ScenarioRun> run;
  ASSERT_TRUE(ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &run).ok());
  fs::path dir = TempDir("pressure");
  MetricsOptions mo;
  mo.requests_csv = (dir / "requests.csv").string();
  mo.timeseries_csv = (dir / "timeseries.csv").string();
  RunReport report;
  ASSERT_TRUE(run->Run(mo, spec.seed, nullptr, &report).ok());
  const std::string requests = ReadFile(dir / "requests.csv");
  const std::string timeseries = ReadFile(dir / "timeseries.csv");
  fs::remove_all(dir);
  const Summary& s = report.summary;
  ExpectConservation(s);
  EXPECT_EQ(s.completed, s.arrived);
  EXPECT_GT(s.preemptions, 50);  // 94 with vLLM V1's async scheduling, 100+ without
  int64_t preempted_requests = 0, preemptions = 0;
  for (const auto& r : CsvRows(requests)) {
    EXPECT_EQ(r[10], "completed");
    const int64_t n = std::stoll(r[9]);
    preemptions += n;
    preempted_requests += n > 0;
  }
  EXPECT_EQ(preemptions, s.preemptions);
  EXPECT_GT(preempted_requests, 50);
  double peak_kv = 0;
  for (const auto& r : CsvRows(timeseries)) peak_kv = std::max(peak_kv, std::stod(r[5]));
  EXPECT_LE(peak_kv, 1.0);
  EXPECT_GT(peak_kv, 0.9);  // the cache did fill
}

// One replica, constant arrivals one second apart (far below capacity),
// fixed lengths: every request meets an idle replica, so its first token
// comes after the API server's parsing and tokenisation, exactly one
// prefill iteration and the server's streaming of the token; each later
// token after one decode iteration, to the nanosecond.
TEST(Scenario, HandComputedTimelineMatchesPerfModelToTheNanosecond) {
  const ScenarioSpec spec = FixedLengths(/*rate_per_s=*/1.0, /*requests=*/5, /*prompt=*/1000, /*output=*/17);
  Outcome o = RunSpec(spec, 1, "hand");
  ASSERT_EQ(o.summary.completed, 5);

  const World& w = TheWorld();
  const EngineSpec engine = model_test::BuiltinEngine("vllm");
  const GpuSpec& gpu = *w.catalog.FindGpu("H100-SXM");
  RooflinePerfModel perf(*w.catalog.FindModel("Llama-3.1-8B"), gpu, ShardPlan{}, engine,
                         RooflineOptionsFor(gpu, RooflineOptions{}, false));  // as a scenario runs it
  const SimTime server = std::llround(engine.server_request_us * 1e3) +
                         std::llround(engine.server_prompt_token_us * 1e3 * 1000) +
                         std::llround(engine.server_output_token_us * 1e3);
  ASSERT_GT(server, 0);
  BatchShape prefill;
  prefill.prefill_seqs = 1;
  prefill.prefill_tokens = 1000;
  prefill.prefill_attn_pairs = 1000 * 1001 / 2;
  prefill.prefill_kv_tokens = 1000;
  prefill.sampled_seqs = 1;
  const SimTime ttft = server + perf.IterationNs(prefill);
  SimTime decode_total = 0;
  for (int k = 0; k < 16; ++k) {
    BatchShape d;
    d.decode_seqs = 1;
    d.decode_tokens = 1;
    d.decode_kv_tokens = 1000 + k + 1;
    d.sampled_seqs = 1;
    decode_total += perf.IterationNs(d);
  }
  auto rows = CsvRows(o.requests_csv);
  ASSERT_EQ(rows.size(), 5u);
  for (const auto& r : rows) {
    SCOPED_TRACE(r[0]);
    const SimTime arrival = ParseSeconds(r[1]);
    EXPECT_EQ(arrival, std::stoll(r[0]) * kSecond);
    EXPECT_EQ(ParseSeconds(r[3]) - arrival, ttft);                   // TTFT
    EXPECT_EQ(ParseSeconds(r[4]) - ParseSeconds(r[3]), decode_total);  // TPOT x 16
    EXPECT_EQ(r[10], "completed");
    EXPECT_EQ(r[12], "0");  // no prefix ids, nothing cached
  }
  EXPECT_NEAR(*o.summary.tpot.p50, TimeToMillis(decode_total) / 16.0, 1e-6);
  EXPECT_NEAR(*o.summary.ttft.p50, TimeToMillis(ttft), 1e-6);
}

}  // namespace
}  // namespace fleetsim

namespace fleetsim {
namespace {

#ifdef FLEETSIM_SLOW_TESTS
// scenarios/router-ablation.json (the Mooncake conversation trace on 8
// replicas with prefix caching): the cache-aware routers keep prompts that
// share a prefix together, so more prefill is served from the cache and
// the tail of TTFT falls, against round robin's blind spread.
TEST(RouterAblation, PrefixAwareAndWeightedScorersBeatRoundRobinOnTtftP99) {
  const ScenarioSpec base = LoadBundled("router-ablation");
  std::map<std::string, Summary> by;
  for (const char* router : {"round_robin", "prefix_aware", "weighted_scorers"}) {
    ScenarioSpec spec = base;
    spec.router = router;
    spec.router_options.clear();
    Outcome o = RunSpec(spec, spec.seed, std::string("ablation_") + router);
    ExpectConservation(o.summary);
    by[router] = o.summary;
  }
  ASSERT_TRUE(by["round_robin"].ttft.p99 && by["prefix_aware"].ttft.p99 && by["weighted_scorers"].ttft.p99);
  for (const char* router : {"prefix_aware", "weighted_scorers"}) {
    EXPECT_LT(*by[router].ttft.p99, *by["round_robin"].ttft.p99) << router;
    EXPECT_GT(by[router].prefix_hit_rate, by["round_robin"].prefix_hit_rate) << router;
  }
}
#endif


// The bundled scenarios of the models people plan for now (docs/sharding.md):
// each runs end to end, conserves its requests, keeps its load (no
// overload) and its latency targets for nine in ten requests, with its
// model's defining figures in the pool's plan. The published check of
// DeepSeek-V3's roofline is in tests/fidelity/data/public_serving.json
// (InferenceX's SGLang TP8 H200 sweep, held out).
TEST(BundledModels, DeepSeekDisaggregatedWideEp) {
  const ScenarioSpec spec = LoadBundled("deepseek-v3-h200-disagg");
  std::unique_ptr<ScenarioRun> run;
  ASSERT_TRUE(ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &run).ok());
  const PoolPlan& decode = run->pools()[1];
  EXPECT_EQ(decode.shard.ep, 32);
  EXPECT_EQ(decode.shard.dp, 32);
  // One 576-element bf16 latent per token and layer, whole on every rank.
  EXPECT_EQ(decode.memory.kv_bytes_per_token_per_gpu, 61 * 576 * 2);
  // Six nodes: two TP8 prefill replicas, the decode replica on four.
  EXPECT_EQ(run->placement().nodes(), 6);
  const Outcome o = RunSpec(spec, spec.seed, "deepseek");
  ExpectConservation(o.summary);
  EXPECT_FALSE(o.summary.overloaded);
  EXPECT_GT(o.summary.completed, 0.99 * o.summary.arrived);
  ASSERT_TRUE(o.summary.attainment.has_value());
  EXPECT_GT(*o.summary.attainment, 0.9);
}

TEST(BundledModels, Qwen3MoeAndGptOssOnOneH100) {
  for (const char* name : {"qwen3-30b-a3b-h100", "gpt-oss-120b-h100"}) {
    SCOPED_TRACE(name);
    const ScenarioSpec spec = LoadBundled(name);
    std::unique_ptr<ScenarioRun> run;
    ASSERT_TRUE(ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &run).ok());
    const PoolPlan& p = run->pools()[0];
    EXPECT_EQ(p.shard.gpus(), 1);
    EXPECT_GT(p.memory.kv_tokens(), 50000);
    // gpt-oss: the full 131072-token context fits beside 61 GiB of weights
    // because a sequence's sliding layers keep only their window
    // (model/memory_plan.h); with 1024 sequences allowed, counting every
    // layer per token leaves the cache more tokens than a window each would.
    if (std::string(name) == "gpt-oss-120b-h100") EXPECT_EQ(p.max_model_len, 131072);
    const Outcome o = RunSpec(spec, spec.seed, name);
    ExpectConservation(o.summary);
    EXPECT_FALSE(o.summary.overloaded);
    EXPECT_GT(o.summary.completed, 0.95 * o.summary.arrived);
    ASSERT_TRUE(o.summary.attainment.has_value());
    EXPECT_GT(*o.summary.attainment, 0.9);
  }
}

// A GB200 NVL72 rack is one NVLink domain: a pool's nodes default to 72
// GPUs, so DeepSeek-V3 at EP64 stays inside one.
TEST(BundledModels, Gb200NodesAreWholeNvlinkDomains) {
  ScenarioSpec spec;
  const Status parsed = ParseScenario(R"({
    "name": "gb200", "seed": 1, "model": "DeepSeek-V3",
    "fleet": {"pools": [{"name": "rack", "gpu": "GB200", "replicas": 1, "tp": 1, "ep": 64, "dp_attention": true}]},
    "traffic": {"generator": {"arrival": "poisson", "rate_per_s": 1, "prompt_tokens": 100, "output_tokens": 10}},
    "duration_s": 1})", "gb200.json", ".", &spec);
  ASSERT_TRUE(parsed.ok()) << parsed.message();
  std::unique_ptr<ScenarioRun> run;
  const Status s = ScenarioRun::Build(spec, TheWorld().catalog, TheWorld().policies, &run);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(run->placement().gpus_per_node, 72);
  EXPECT_EQ(run->placement().nodes(), 1);
  // The catalogue's GB200 memory is an estimate, and the run says so.
  const std::vector<std::string>& w = run->pools()[0].warnings;
  EXPECT_TRUE(std::any_of(w.begin(), w.end(), [](const std::string& s) {
    return s.find("GB200: memory_mib estimated") != std::string::npos;
  }));
}


// An expert_balance derives the skew (model/expert_balance.h): Zipf
// popularity of exponent 1 over DeepSeek-V3's 256 experts, placed in id
// order on 32 GPUs, leaves the busiest GPU several times the mean; an
// EPLB balancer with 32 redundant copies (DeepSeek's prefill deployment)
// brings it within a few per cent, for one more expert's weights per GPU.
TEST(BundledModels, ExpertBalanceDerivesTheSkewAndRedundantCopiesCostWeights) {
  const std::string path = std::string(FLEETSIM_SOURCE_DIR) + "/scenarios/deepseek-v3-h200-disagg.json";
  ScenarioSpec fixed, eplb;
  ASSERT_TRUE(LoadScenarioFile(path, &fixed, {"fleet.pools[1].expert_balance={\"zipf_s\": 1}"}).ok());
  ASSERT_TRUE(
      LoadScenarioFile(path, &eplb, {"fleet.pools[1].expert_balance={\"zipf_s\": 1, \"redundant_experts\": 32}"}).ok());
  std::unique_ptr<ScenarioRun> a, b;
  ASSERT_TRUE(ScenarioRun::Build(fixed, TheWorld().catalog, TheWorld().policies, &a).ok());
  ASSERT_TRUE(ScenarioRun::Build(eplb, TheWorld().catalog, TheWorld().policies, &b).ok());
  const PoolPlan &pa = a->pools()[1], &pb = b->pools()[1];
  EXPECT_DOUBLE_EQ(pa.expert_load_skew, BalanceExperts(ZipfLoads(256, 1), 32, std::nullopt).skew);
  EXPECT_GT(pa.expert_load_skew, 3);
  EXPECT_LT(pb.expert_load_skew, 1.05);
  EXPECT_EQ(pb.redundant_experts, 32);
  const double one_expert_per_gpu = static_cast<double>(ExpertWeightBytes(*pb.model)) / 256;
  EXPECT_NEAR(static_cast<double>(pb.memory.weight_bytes_per_gpu - pa.memory.weight_bytes_per_gpu), one_expert_per_gpu,
              2);
  const Outcome o = RunSpec(eplb, eplb.seed, "eplb");
  ExpectConservation(o.summary);
  const nlohmann::json j = nlohmann::json::parse(o.summary_json);
  EXPECT_EQ(j["fleet"]["pools"][1]["redundant_experts"], 32);
  EXPECT_NEAR(j["fleet"]["pools"][1]["expert_load_skew"].get<double>(), pb.expert_load_skew, 1e-9);
  bool warned = false;
  for (const auto& w : j["warnings"]) warned = warned || w.get<std::string>().find("synthetic") != std::string::npos;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace fleetsim
