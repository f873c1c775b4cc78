// The CPU calibration pipeline end to end, as CI runs it: calibrate the tiny
// zoo model on the CPU backend, write the profile, and simulate a scenario on
// the device the profile describes, with the profile's times.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "calibrate/calibrate.h"
#include "model/catalog.h"
#include "model/profile.h"
#include "sim/runner/run.h"
#include "sim/scenario/parse.h"

namespace fleetsim::calibrate {
namespace {

namespace fs = std::filesystem;

TEST(CalibratePipeline, TinyModelOnCpuCalibratesAndSimulates) {
  Catalog catalog;
  ASSERT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
  CalibrateOptions o;
  o.backend = "cpu";
  o.model = "tiny";
  o.tp = {1, 2};
  o.timing.warmup = 1;
  o.timing.repetitions = 3;
  o.date = "2026-01-01";
  int calls = 0, last_total = 0;
  CalibrationResult r;
  const Status s = Calibrate(o, catalog, [&](int, int total, const std::string&) { ++calls, last_total = total; }, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  const Profile& p = r.profile;
  EXPECT_GT(calls, last_total / 2);
  EXPECT_EQ(p.device, "cpu-host");
  EXPECT_EQ(*p.model, "tiny");
  ASSERT_TRUE(p.device_info && p.calibration);
  EXPECT_EQ(p.calibration->tp, (std::vector<int>{1, 2}));
  EXPECT_GT(p.device_info->copy_gbps, 0);
  EXPECT_GT(p.device_info->gemm_tflops.at("bf16"), 0);
  // The model's own shapes, per layer and tp: the "profile" source.
  for (int tp : {1, 2}) {
    ASSERT_TRUE(p.gemm.count(tp) && p.elementwise.count(tp) && p.embedding.count(tp)) << tp;
    EXPECT_EQ(p.gemm.at(tp).x.front(), 1);
  }
  // Every operator measured and fitted, with a cross-validated error.
  for (const char* op : {"gemm", "rms_norm", "residual_add", "silu_mul", "rope", "embedding", "attention_prefill",
                         "attention_decode"}) {
    const std::string key = std::string(op) + ".bf16";
    ASSERT_TRUE(p.fits.count(key)) << key;
    EXPECT_FALSE(p.fits.at(key).cv_method.empty()) << key;
    EXPECT_EQ(p.fits.at(key).samples, static_cast<int>(p.measurements.at(key).rows.size())) << key;
  }
  // The CPU reference attention is nowhere near a tuned kernel: the
  // profile must say so and fall back to the published efficiency.
  ASSERT_EQ(p.attention.size(), 2u);
  for (const auto& [kind, a] : p.attention) {
    EXPECT_FALSE(a.use_measured) << kind;
    EXPECT_GT(a.published_efficiency, 0) << kind;
  }
  // Links between two CPU "devices" (threads as ranks), and the ring check.
  EXPECT_EQ(p.links.size(), 6u);  // h2d and d2h of each, peer both ways
  ASSERT_EQ(p.collective_checks.size(), 1u);
  EXPECT_EQ(p.collective_checks[0].ranks, 2);
  EXPECT_GT(p.collective_checks[0].measured_ns, 0);
  EXPECT_GT(p.collective_checks[0].predicted_ns, 0);
  // The ring all-reduce as live mode's tp 2 runs it, timed from 1 KiB to
  // the check's 16 MiB (a factor of 4 apart).
  ASSERT_EQ(p.all_reduce_intra_node.size(), 1u);
  const ProfileCurve& ring = p.all_reduce_intra_node.at(2);
  ASSERT_EQ(ring.x.size(), 8u);
  EXPECT_EQ(ring.x.front(), 1024);
  EXPECT_EQ(ring.x.back(), 16.0 * 1024 * 1024);
  for (double ns : ring.ns) EXPECT_GT(ns, 0);
  // The report covers every fit.
  EXPECT_EQ(r.svgs.size(), p.fits.size());
  EXPECT_NE(r.report_markdown.find("gemm.bf16"), std::string::npos);

  // Write it, read it back, and simulate on the device it describes.
  const fs::path dir = fs::temp_directory_path() / ("fleetsim_pipeline_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text;
  ASSERT_TRUE(WriteProfileJson(p, &text).ok());
  std::ofstream(dir / "tiny-cpu.json") << text;
  Profile back;
  const Status loaded = LoadProfileFile((dir / "tiny-cpu.json").string(), &back);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(back, p);
  std::ofstream(dir / "scenario.json") << R"({
    "name": "tiny-cpu", "seed": 7, "model": "tiny",
    "fleet": {"router": "round_robin", "pools": [
      {"name": "cpu", "gpu": "cpu-host", "replicas": 1, "tp": 1, "max_num_batched_tokens": 1024, "max_num_seqs": 64}]},
    "traffic": {"generator": {"arrival": "poisson", "rate_per_s": 2,
                              "prompt_tokens": 64, "output_tokens": 16},
                "max_requests": 40},
    "perf": {"profile": "tiny-cpu.json"}})";
  ScenarioSpec spec;
  Status ls = LoadScenarioFile((dir / "scenario.json").string(), &spec);
  ASSERT_TRUE(ls.ok()) << ls.message();
  Policies policies;
  RegisterBuiltins(&policies);
  std::unique_ptr<ScenarioRun> run;
  ls = ScenarioRun::Build(spec, catalog, policies, &run);
  ASSERT_TRUE(ls.ok()) << ls.message();
  MetricsOptions mo;
  RunReport report;
  ls = run->Run(mo, 7, nullptr, &report);
  ASSERT_TRUE(ls.ok()) << ls.message();
  EXPECT_EQ(report.summary.completed, 40);
  std::map<std::string, std::string> sources(report.summary.perf_sources.begin(), report.summary.perf_sources.end());
  EXPECT_EQ(sources["gemm"], "profile:tiny-cpu.json");
  EXPECT_EQ(sources["elementwise"], "profile:tiny-cpu.json");
  EXPECT_EQ(sources["attention_decode"], "roofline");
  // At tp 2 the all-reduces are priced from the measured ring.
  spec.pools[0].tp = 2;
  ls = ScenarioRun::Build(spec, catalog, policies, &run);
  ASSERT_TRUE(ls.ok()) << ls.message();
  ls = run->Run(mo, 7, nullptr, &report);
  ASSERT_TRUE(ls.ok()) << ls.message();
  sources = std::map<std::string, std::string>(report.summary.perf_sources.begin(), report.summary.perf_sources.end());
  EXPECT_EQ(sources["all_reduce"], "profile:tiny-cpu.json");
  fs::remove_all(dir);
}

TEST(CalibratePipeline, UnknownModelAndCudaWithoutGpuAreClearErrors) {
  Catalog catalog;
  ASSERT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
  CalibrateOptions o;
  o.model = "no-such-model";
  CalibrationResult r;
  Status s = Calibrate(o, catalog, nullptr, &r);
  EXPECT_EQ(s.message().rfind("unknown model \"no-such-model\" (valid: ", 0), 0u) << s.message();
  o.model = "tiny";
  o.tp = {3};
  s = Calibrate(o, catalog, nullptr, &r);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--tp 3"), std::string::npos) << s.message();
  std::string why;
  if (!kernels::CudaDeviceAvailable(&why)) {
    o.tp = {1};
    o.backend = "cuda";
    s = Calibrate(o, catalog, nullptr, &r);
    EXPECT_NE(s.message().find("backend \"cuda\" is not available"), std::string::npos) << s.message();
  }
}

TEST(CatalogueNameForDevice, MapsDriverNamesToCatalogueEntries) {
  Catalog catalog;
  ASSERT_TRUE(Catalog::LoadBuiltin(&catalog).ok());
  EXPECT_EQ(CatalogueNameForDevice("NVIDIA H200", catalog), "H200");
  EXPECT_EQ(CatalogueNameForDevice("NVIDIA H100 80GB HBM3", catalog), "H100-SXM");
  EXPECT_EQ(CatalogueNameForDevice("NVIDIA A100-SXM4-40GB", catalog), "A100-40G");
  EXPECT_EQ(CatalogueNameForDevice("NVIDIA H100 PCIe", catalog), "");
  EXPECT_EQ(CatalogueNameForDevice("NVIDIA GeForce RTX 4090", catalog), "");
}

}  // namespace
}  // namespace fleetsim::calibrate
