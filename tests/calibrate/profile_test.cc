#include "model/profile.h"

#include <gtest/gtest.h>

#include <string>

namespace fleetsim {
namespace {

ProfileCurve Curve(std::vector<double> x, std::vector<double> ns) {
  ProfileCurve c;
  c.x = std::move(x);
  c.ns = std::move(ns);
  return c;
}

TEST(ProfileCurve, InterpolatesLinearlyBetweenGridPoints) {
  const ProfileCurve c = Curve({1, 3, 7}, {100, 200, 600});
  EXPECT_DOUBLE_EQ(c.At(1), 100);
  EXPECT_DOUBLE_EQ(c.At(2), 150);
  EXPECT_DOUBLE_EQ(c.At(3), 200);
  EXPECT_DOUBLE_EQ(c.At(6), 500);
  EXPECT_DOUBLE_EQ(c.At(7), 600);
}

TEST(ProfileCurve, BelowTheGridIsTheFirstPoint) {
  const ProfileCurve c = Curve({4, 8}, {100, 300});
  EXPECT_DOUBLE_EQ(c.At(0), 100);
  EXPECT_DOUBLE_EQ(c.At(3.9), 100);
}

TEST(ProfileCurve, AboveTheGridExtrapolatesFromTheLastTwoPoints) {
  const ProfileCurve c = Curve({1, 4, 8}, {50, 100, 300});
  EXPECT_DOUBLE_EQ(c.At(10), 400);  // slope 50 per unit
  EXPECT_DOUBLE_EQ(c.At(16), 700);
}

TEST(ProfileCurve, NoisyFallingTailDoesNotPredictLessTimeForMoreWork) {
  const ProfileCurve c = Curve({1, 2}, {300, 200});
  EXPECT_DOUBLE_EQ(c.At(5), 200);
  EXPECT_DOUBLE_EQ(Curve({5}, {42}).At(1000), 42);
}

Profile Sample() {
  Profile p;
  p.device = "H100-SXM";
  p.source = "unit test \"quoted\"";
  p.date = "2024-05-01";
  p.model = "Llama-2-7B";
  p.gemm[1] = Curve({1, 2, 16}, {156000, 151000.5, 170000.125});
  p.gemm[2] = Curve({1}, {80000});
  p.elementwise[1] = Curve({1, 2}, {20000, 21000});
  p.embedding[1] = Curve({1, 2}, {2000, 3000});
  p.all_reduce_intra_node[2] = Curve({2048, 10240}, {7000, 7000});
  p.all_reduce_intra_node[8] = Curve({2048}, {37000});
  p.send_recv_inter_node = Curve({2048}, {17000});
  p.send_recv_intra_node = Curve({2048, 10240}, {5000, 6000});
  p.notes = {"one", "two"};
  return p;
}

TEST(Profile, WriteThenLoadRoundTrips) {
  const Profile p = Sample();
  std::string text;
  ASSERT_TRUE(WriteProfileJson(p, &text).ok());
  Profile back;
  const Status s = LoadProfile(text, "p.json", &back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(back == p);
  std::string again;
  ASSERT_TRUE(WriteProfileJson(back, &again).ok());
  EXPECT_EQ(again, text);
}

TEST(Profile, CollectivesOnlyProfileNeedsNoModel) {
  Profile p;
  p.device = "H100-SXM";
  p.all_reduce_intra_node[4] = Curve({1, 2}, {3, 4});
  std::string text;
  ASSERT_TRUE(WriteProfileJson(p, &text).ok());
  Profile back;
  ASSERT_TRUE(LoadProfile(text, "p.json", &back).ok());
  EXPECT_FALSE(back.model.has_value());
  EXPECT_TRUE(back == p);
}

std::string Load(const std::string& text) {
  Profile p;
  const Status s = LoadProfile(text, "p.json", &p);
  return s.ok() ? "ok" : s.message();
}

TEST(Profile, RejectsUnknownKeysNamingThePath) {
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "H100-SXM", "bogus": 1})"),
            "p.json: bogus: unknown key (valid: format, device, source, date, model, ops, collectives, notes, "
            "device_info, calibration, measurements, fits, attention, links, collective_checks, topology)");
  const std::string m =
      Load(R"({"format": "fleetsim-profile-1", "device": "d", "model": "m", "ops": {"gemm": {"tp": {"1": [[1, 2]]}, "x": 1}}})");
  EXPECT_EQ(m.rfind("p.json: ops.gemm.x: unknown key", 0), 0u) << m;
}

TEST(Profile, RejectsBadCurvesNamingTheElement) {
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "d", "model": "m",
                     "ops": {"gemm": {"tp": {"1": [[1, 2], [1, 3]]}}}})"),
            "p.json: ops.gemm.tp.1[1]: x must increase strictly along the array");
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "d", "model": "m",
                     "ops": {"gemm": {"tp": {"1": [[1, -2]]}}}})"),
            "p.json: ops.gemm.tp.1[0]: time must be a finite non-negative number of ns");
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "d", "model": "m",
                     "ops": {"gemm": {"tp": {"0": [[1, 2]]}}}})"),
            "p.json: ops.gemm.tp.0: key must be a positive integer");
  EXPECT_EQ(Load(R"({"format": "fleetsim-profile-1", "device": "d",
                     "ops": {"gemm": {"tp": {"1": [[1, 2]]}}}})"),
            "p.json: model: required (a model name) when \"ops\" holds measurements");
  EXPECT_EQ(Load(R"({"format": "other", "device": "d"})"),
            "p.json: format: expected \"fleetsim-profile-1\", got \"other\"");
  EXPECT_EQ(Load("{").rfind("p.json: invalid JSON at line 1, column 2: ", 0), 0u) << Load("{");
}

TEST(Profile, RejectsDeepNestingNamingTheFile) {
  // 100,000 levels under "notes": refused before anything is built or shown.
  std::string text = "{\"format\": \"fleetsim-profile-1\", \"device\": \"d\",\n \"notes\": ";
  text += std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(Load(text), "p.json: invalid JSON at line 2, column 266: nested deeper than 256 levels");
}


Profile Calibrated() {
  Profile p = Sample();
  ProfileDeviceInfo& d = p.device_info.emplace();
  d.backend = "cuda";
  d.name = "NVIDIA H100 80GB HBM3";
  d.software = "CUDA runtime 13.0";
  d.memory_bytes = 85520809984;
  d.compute_units = 132;
  d.compute_capability = 90;
  d.sm_clock_khz = 1980000;
  d.gemm_tflops["bf16"] = 760.5;
  d.copy_gbps = 2900;
  d.h2d_gbps = 53;
  d.d2h_gbps = 51.5;
  ProfileCalibration& c = p.calibration.emplace();
  c.backend = "cuda";
  c.grid = "quick";
  c.tp = {1, 2};
  c.warmup = 2;
  c.repetitions = 5;
  c.flush_cache = true;
  c.wall_seconds = 61.5;
  p.measurements["gemm.bf16"] = {{"m", "n", "k", "median_ns", "spread"}, {{1, 4096, 4096, 20000, 0.01}}};
  FittedCurve f;
  f.size_var = "m";
  f.scale_var = "n*k";
  f.fixed_ns = 3000;
  f.knots = {1, 16, 256};
  f.values = {0.001, 0.0011, 0.004};
  f.cv_method = "leave-one-group-out over 4 groups";
  f.cv_median_rel_error = 0.031;
  f.cv_p90_rel_error = 0.08;
  f.samples = 52;
  p.fits["gemm.bf16"] = f;
  f.size_var = "kv_tokens";
  f.scale_var = "kv_heads*head_dim";
  f.count_var = "seqs";
  f.per_count = 0.05;
  p.fits["attention_decode.bf16"] = f;
  AttentionDecision a;
  a.achieved_fraction = 0.12;
  a.threshold = 0.5;
  a.ceiling = "datasheet";
  a.published_efficiency = 0.6;
  a.published_source = "FA3 paper";
  p.attention["attention_prefill"] = a;
  ProfileLink l;
  l.src = "device0";
  l.dst = "device1";
  l.kind = "peer";
  l.alpha_ns = 8000;
  l.gbps = 380;
  l.points = Curve({4096, 1048576}, {8500, 11000});
  p.links.push_back(l);
  p.collective_checks.push_back({"ring_all_reduce", 2, 67108864, 400000, 380000});
  p.links.push_back({"rank0", "rank1", "rank_staged", 12000, 3.5, {{4096, 65536}, {13000, 31000}}});
  p.collective_checks.push_back({"ring_all_reduce_ranks", 2, 16777216, 15000000, 4000000, 7000000});
  p.topology = ProfileTopology{2, {"between nodes, host-staged"}, {"between nodes, device to device"}};
  return p;
}

TEST(Profile, CalibratedSectionsRoundTrip) {
  const Profile p = Calibrated();
  std::string text, again;
  ASSERT_TRUE(WriteProfileJson(p, &text).ok());
  Profile back;
  const Status s = LoadProfile(text, "p.json", &back);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(back == p);
  ASSERT_TRUE(WriteProfileJson(back, &again).ok());
  EXPECT_EQ(text, again);
  // Table rows and points stay on one line each.
  EXPECT_NE(text.find("[1.0, 4096.0, 4096.0, 20000.0, 0.01]"), std::string::npos) << text;
}

TEST(Profile, CalibratedSectionsAreCheckedWithTheirPaths) {
  auto load = [](const std::string& body) {
    Profile p;
    const Status s = LoadProfile(R"({"format": "fleetsim-profile-1", "device": "d", )" + body + "}", "p.json", &p);
    return s.ok() ? std::string("ok") : s.message();
  };
  EXPECT_EQ(load(R"("measurements": {"gemm.bf16": {"fields": ["m", "ns"], "rows": []}})"),
            "p.json: measurements.gemm.bf16.fields: the last two columns must be \"median_ns\" and \"spread\"");
  EXPECT_EQ(load(R"("measurements": {"g": {"fields": ["m", "median_ns", "spread"], "rows": [[1, 2]]}})"),
            "p.json: measurements.g.rows[0]: expected 3 numbers, one per field");
  EXPECT_EQ(load(R"("fits": {"gemm.bf16": {"size": "m", "scale": "n*k", "fixed_ns": 1, "knots": [2, 1], "values": [1, 1]}})"),
            "p.json: fits.gemm.bf16.knots[1]: knots must be in [1, 1e15] and increase");
  // The per-count term: both keys or neither.
  EXPECT_EQ(
      load(
          R"("fits": {"d": {"size": "kv", "scale": "w", "fixed_ns": 1, "knots": [1], "values": [1], "per_count": 2}})"),
      "p.json: fits.d.per_count: \"count\" (a non-empty name) and \"per_count\" go together");
  EXPECT_EQ(
      load(
          R"("fits": {"d": {"size": "kv", "scale": "w", "fixed_ns": 1, "knots": [1], "values": [1], "count": "seqs"}})"),
      "p.json: fits.d.count: \"count\" (a non-empty name) and \"per_count\" go together");
  EXPECT_EQ(
      load(
          R"("fits": {"d": {"size": "kv", "scale": "w", "fixed_ns": 1, "knots": [1], "values": [1], "count": "seqs", "per_count": -1}})"),
      "p.json: fits.d.per_count: must be at least 0.0");
  EXPECT_EQ(load(R"("attention": {"attention_prefill": {"achieved_fraction": 0.1, "threshold": 0.5, "use_measured": false}})"),
            "p.json: attention.attention_prefill.published_efficiency: required in (0, 1] when the measured kernel is "
            "not used");
  EXPECT_EQ(load(R"("attention": {"attention_mlp": {"achieved_fraction": 1, "threshold": 0.5, "use_measured": true}})"),
            "p.json: attention.attention_mlp: unknown attention kind (valid: attention_prefill, attention_decode)");
  EXPECT_EQ(load(R"("links": [{"src": "a", "dst": "b", "kind": "nvlink", "alpha_ns": 1, "gbps": 1}])"),
            "p.json: links[0].kind: expected \"h2d\", \"d2h\", \"peer\", \"rank_staged\" or \"rank_direct\"");
  EXPECT_EQ(load(R"("topology": {"ranks": 0})"), "p.json: topology.ranks: expected at least 1");
  EXPECT_EQ(load(R"("topology": {"ranks": 2, "measured": [3]})"), "p.json: topology.measured[0]: expected a string");
  EXPECT_EQ(load(R"("topology": {"ranks": 2, "nodes": 2})").rfind("p.json: topology.nodes: unknown key", 0), 0u);
  EXPECT_EQ(load(R"("device_info": {"backend": "cpu", "name": "x", "memory_bytes": -1})"),
            "p.json: device_info.memory_bytes: expected a non-negative integer");
}

TEST(Profile, DescribesAnUncataloguedDeviceFromItsMeasurements) {
  Profile p = Calibrated();
  p.device = "my-gpu";
  GpuSpec g;
  ASSERT_TRUE(GpuSpecFromProfile(p, &g).ok());
  EXPECT_EQ(g.name, "my-gpu");
  EXPECT_EQ(g.memory_mib, 85520809984 / (1024 * 1024));
  EXPECT_EQ(g.bf16_tflops, 760.5);
  EXPECT_EQ(g.fp32_tflops, 760.5);
  EXPECT_EQ(g.mem_bandwidth_gbps, 2900);
  EXPECT_EQ(g.pcie_gbps_per_direction, 51.5);
  EXPECT_EQ(g.scale_up.PeerGbps(), 380);
  EXPECT_EQ(g.scale_up.latency_us, 8);
  EXPECT_FALSE(g.prices.at("on_demand").has_value());
  p.device_info.reset();
  EXPECT_EQ(GpuSpecFromProfile(p, &g).message(), "profile of \"my-gpu\" has no device_info to describe the device with");
}

}  // namespace
}  // namespace fleetsim
