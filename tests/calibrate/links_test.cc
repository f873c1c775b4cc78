// Links, alpha-beta fits, collective predictions and the ring all-reduce
// check (calibrate/links.h), on CPU backends with threads as ranks: the CI
// configuration of what runs on several GPUs.
#include "calibrate/links.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_backend.h"

namespace fleetsim::calibrate {
namespace {

using kernels::Backend;
using kernels::CpuBackend;

// ---- FitAlphaBeta -------------------------------------------------------------

TEST(FitAlphaBeta, RecoversAlphaAndBandwidthFromExactPoints) {
  // t = 2500 ns + S / 12.5 GB/s.
  std::vector<std::pair<double, double>> pts;
  for (double s : {4096.0, 65536.0, 1048576.0, 16777216.0, 268435456.0}) pts.emplace_back(s, 2500.0 + s / 12.5);
  AlphaBeta fit;
  ASSERT_TRUE(FitAlphaBeta(pts, &fit).ok());
  EXPECT_NEAR(fit.alpha_ns, 2500.0, 1e-6 * 2500.0);
  EXPECT_NEAR(fit.gbps, 12.5, 1e-9 * 12.5);
  EXPECT_LT(fit.max_rel_error, 1e-9);
}

TEST(FitAlphaBeta, WeightsRelativeErrorSoSmallCopiesKeepTheirAlpha) {
  // Bandwidth 100 GB/s, alpha 10 us; the 256 MiB point is 1% slow. An
  // unweighted fit would let that point move alpha by microseconds; the
  // relative weighting keeps it near 10 us.
  std::vector<std::pair<double, double>> pts;
  for (double s : {4096.0, 16384.0, 65536.0, 262144.0}) pts.emplace_back(s, 10000.0 + s / 100.0);
  const double big = 268435456.0;
  pts.emplace_back(big, (10000.0 + big / 100.0) * 1.01);
  AlphaBeta fit;
  ASSERT_TRUE(FitAlphaBeta(pts, &fit).ok());
  EXPECT_NEAR(fit.alpha_ns, 10000.0, 100.0);
  EXPECT_GT(fit.max_rel_error, 0.0);
  EXPECT_LT(fit.max_rel_error, 0.011);
}

TEST(FitAlphaBeta, ClampsNegativeAlphaToZeroAndRefitsTheSlope) {
  // Times that extrapolate to a negative intercept: t = -1000 + S / 4.
  std::vector<std::pair<double, double>> pts = {{8192.0, -1000.0 + 8192.0 / 4},
                                                {65536.0, -1000.0 + 65536.0 / 4}};
  AlphaBeta fit;
  ASSERT_TRUE(FitAlphaBeta(pts, &fit).ok());
  EXPECT_EQ(fit.alpha_ns, 0.0);
  // Through the origin, the slope lies between the two points' own ratios.
  EXPECT_GT(fit.gbps, 65536.0 / (-1000.0 + 65536.0 / 4) * 0.999);
  EXPECT_LT(fit.gbps, 8192.0 / (-1000.0 + 8192.0 / 4) * 1.001);
  EXPECT_GT(fit.max_rel_error, 0.0);
}

TEST(FitAlphaBeta, RejectsFewerThanTwoDistinctSizes) {
  AlphaBeta fit;
  EXPECT_FALSE(FitAlphaBeta({}, &fit).ok());
  EXPECT_FALSE(FitAlphaBeta({{4096.0, 100.0}}, &fit).ok());
  const Status s = FitAlphaBeta({{4096.0, 100.0}, {4096.0, 110.0}}, &fit);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("2 distinct sizes"), std::string::npos) << s.message();
}

TEST(FitAlphaBeta, RejectsNonPositiveOrNonFiniteValues) {
  AlphaBeta fit;
  EXPECT_FALSE(FitAlphaBeta({{0.0, 100.0}, {4096.0, 200.0}}, &fit).ok());
  EXPECT_FALSE(FitAlphaBeta({{1024.0, -5.0}, {4096.0, 200.0}}, &fit).ok());
  EXPECT_FALSE(FitAlphaBeta({{1024.0, 0.0}, {4096.0, 200.0}}, &fit).ok());
  EXPECT_FALSE(FitAlphaBeta({{1024.0, NAN}, {4096.0, 200.0}}, &fit).ok());
  EXPECT_FALSE(FitAlphaBeta({{INFINITY, 100.0}, {4096.0, 200.0}}, &fit).ok());
}

TEST(FitAlphaBeta, RejectsTimesThatShrinkWithSize) {
  AlphaBeta fit;
  const Status s = FitAlphaBeta({{1024.0, 500.0}, {1048576.0, 400.0}}, &fit);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("does not grow"), std::string::npos) << s.message();
}

// ---- Collective formulas ----------------------------------------------------------

TEST(CollectiveFormulas, OneRankCostsNothing) {
  const AlphaBeta link{5000.0, 100.0, 0.0};
  EXPECT_EQ(RingAllReduceNs(link, 1, 1e9), 0.0);
  EXPECT_EQ(AllGatherNs(link, 1, 1e9), 0.0);
  EXPECT_EQ(AllToAllNs(link, 1, 1e9), 0.0);
}

TEST(CollectiveFormulas, TwoRanksByHand) {
  // alpha 5 us, 100 GB/s, S = 1e8 bytes.
  const AlphaBeta link{5000.0, 100.0, 0.0};
  // All-reduce: 2·1·5000 + 2·1/2 · 1e8/100 = 10000 + 1e6.
  EXPECT_DOUBLE_EQ(RingAllReduceNs(link, 2, 1e8), 1010000.0);
  // All-gather and all-to-all: 1·5000 + 1/2 · 1e6 = 505000.
  EXPECT_DOUBLE_EQ(AllGatherNs(link, 2, 1e8), 505000.0);
  EXPECT_DOUBLE_EQ(AllToAllNs(link, 2, 1e8), 505000.0);
}

TEST(CollectiveFormulas, EightRanksByHand) {
  // alpha 2 us, 400 GB/s, S = 64 MiB = 67108864 bytes; S/B = 167772.16 ns.
  const AlphaBeta link{2000.0, 400.0, 0.0};
  const double s = 67108864.0;
  // All-reduce: 14·2000 + 14/8 · 167772.16 = 28000 + 293601.28.
  EXPECT_NEAR(RingAllReduceNs(link, 8, s), 321601.28, 1e-6);
  // All-gather / all-to-all: 7·2000 + 7/8 · 167772.16 = 14000 + 146800.64.
  EXPECT_NEAR(AllGatherNs(link, 8, s), 160800.64, 1e-6);
  EXPECT_NEAR(AllToAllNs(link, 8, s), 160800.64, 1e-6);
}

// ---- SlowestRingLink --------------------------------------------------------------

LinkMeasurement Peer(int i, int j, double alpha_ns, double gbps) {
  LinkMeasurement m;
  m.src = "device" + std::to_string(i);
  m.dst = "device" + std::to_string(j);
  m.kind = "peer";
  m.fit = AlphaBeta{alpha_ns, gbps, 0.0};
  return m;
}

TEST(SlowestRingLink, PicksTheSlowestLinkOfTheRingOnly) {
  std::vector<LinkMeasurement> links = {
      Peer(0, 1, 1000, 300), Peer(1, 2, 1000, 100), Peer(2, 0, 1000, 200),
      // Not on the ring 0→1→2→0: even slower, and must be ignored.
      Peer(0, 2, 1000, 1), Peer(2, 1, 1000, 1), Peer(1, 0, 1000, 1)};
  AlphaBeta slow;
  ASSERT_TRUE(SlowestRingLink(links, 3, &slow).ok());
  EXPECT_EQ(slow.gbps, 100.0);
  // A two-rank ring uses 0→1 and 1→0.
  ASSERT_TRUE(SlowestRingLink(links, 2, &slow).ok());
  EXPECT_EQ(slow.gbps, 1.0);
}

TEST(SlowestRingLink, ComparesAtTheReferenceSizeSoLatencyCanLose) {
  // 0→1: fast wire, huge alpha (1 ms); 1→0: slower wire, no alpha. At 64 MiB
  // the first costs 1e6 + 67108864/200 = 1.34 ms, the second 67108864/100 =
  // 0.67 ms: the first is the slow one.
  std::vector<LinkMeasurement> links = {Peer(0, 1, 1e6, 200), Peer(1, 0, 0, 100)};
  AlphaBeta slow;
  ASSERT_TRUE(SlowestRingLink(links, 2, &slow).ok());
  EXPECT_EQ(slow.alpha_ns, 1e6);
}

TEST(SlowestRingLink, RejectsMissingLinksAndTooFewRanks) {
  std::vector<LinkMeasurement> links = {Peer(0, 1, 1000, 300), Peer(1, 0, 1000, 300)};
  AlphaBeta slow;
  EXPECT_FALSE(SlowestRingLink(links, 1, &slow).ok());
  const Status s = SlowestRingLink(links, 3, &slow);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("device1 -> device2"), std::string::npos) << s.message();
}

// ---- MeasureLinks on CPU backends ----------------------------------------------------

TimingOptions QuickTiming() {
  TimingOptions t;
  t.warmup = 1;
  t.repetitions = 3;
  t.flush_cache = false;
  return t;
}

TEST(MeasureLinks, MeasuresHostLinksPerDeviceAndPeersBothWays) {
  CpuBackend a, b;
  LinkOptions options;
  options.sizes_bytes = {4096.0, 65536.0, 1048576.0};
  options.timing = QuickTiming();
  std::vector<std::string> lines;
  std::vector<LinkMeasurement> links;
  const Status s = MeasureLinks({&a, &b}, options, [&](const std::string& l) { lines.push_back(l); }, &links);
  ASSERT_TRUE(s.ok()) << s.message();

  std::map<std::string, const LinkMeasurement*> by_name;
  for (const LinkMeasurement& m : links) by_name[m.src + ">" + m.dst + ":" + m.kind] = &m;
  const std::vector<std::string> expected = {"host>device0:h2d", "device0>host:d2h", "host>device1:h2d",
                                             "device1>host:d2h", "device0>device1:peer", "device1>device0:peer"};
  ASSERT_EQ(links.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const LinkMeasurement& m = links[i];
    EXPECT_EQ(m.src + ">" + m.dst + ":" + m.kind, expected[i]) << "link " << i;
    ASSERT_EQ(m.points.size(), 3u) << expected[i];
    for (size_t k = 0; k < m.points.size(); ++k) {
      EXPECT_EQ(m.points[k].bytes, options.sizes_bytes[k]);
      EXPECT_GT(m.points[k].timing.median_ns, 0.0) << expected[i];
      EXPECT_EQ(m.points[k].timing.repetitions, 3);
    }
    EXPECT_GT(m.fit.gbps, 0.0) << expected[i];
    EXPECT_TRUE(std::isfinite(m.fit.gbps)) << expected[i];
    EXPECT_GE(m.fit.alpha_ns, 0.0) << expected[i];
  }
  EXPECT_EQ(lines.size(), links.size());

  // The measured ring of two CPU "devices" has a slowest link.
  AlphaBeta slow;
  ASSERT_TRUE(SlowestRingLink(links, 2, &slow).ok());
  EXPECT_GT(slow.gbps, 0.0);
}

// A backend of another kind: a CPU backend under another name, so that
// peer copies between it and "cpu" must be refused.
class OtherKindBackend final : public Backend {
 public:
  std::string_view name() const override { return "other"; }
  const kernels::DeviceInfo& device() const override { return cpu_.device(); }
  Status Allocate(size_t bytes, void** ptr) override { return cpu_.Allocate(bytes, ptr); }
  void Free(void* ptr) override { cpu_.Free(ptr); }
  Status CopyToDevice(void* d, const void* s, size_t n) override { return cpu_.CopyToDevice(d, s, n); }
  Status CopyToHost(void* d, const void* s, size_t n) override { return cpu_.CopyToHost(d, s, n); }
  Status CopyOnDevice(void* d, const void* s, size_t n) override { return cpu_.CopyOnDevice(d, s, n); }
  Status Synchronize() override { return Status::Ok(); }
  Status CopyPeer(Backend&, void*, const void*, size_t) override {
    return Status::Invalid("other backend: no peer copies");
  }
  Status Gemm(const kernels::GemmArgs& a) override { return cpu_.Gemm(a); }
  Status RmsNorm(const kernels::RmsNormArgs& a) override { return cpu_.RmsNorm(a); }
  Status SiluMul(const kernels::SiluMulArgs& a) override { return cpu_.SiluMul(a); }
  Status ResidualAdd(const kernels::ResidualAddArgs& a) override { return cpu_.ResidualAdd(a); }
  Status Embedding(const kernels::EmbeddingArgs& a) override { return cpu_.Embedding(a); }
  Status Rope(const kernels::RopeArgs& a) override { return cpu_.Rope(a); }
  Status AttentionPrefill(const kernels::AttentionPrefillArgs& a) override { return cpu_.AttentionPrefill(a); }
  Status AttentionDecode(const kernels::AttentionDecodeArgs& a) override { return cpu_.AttentionDecode(a); }
  Status TimeOnce(const std::function<Status()>& body, double* ns) override { return cpu_.TimeOnce(body, ns); }
  Status FlushCache() override { return cpu_.FlushCache(); }

 private:
  CpuBackend cpu_;
};

TEST(MeasureLinks, RejectsEmptyNullAndMixedDevices) {
  CpuBackend a;
  OtherKindBackend other;
  LinkOptions options;
  options.sizes_bytes = {4096.0, 65536.0};
  options.timing = QuickTiming();
  std::vector<LinkMeasurement> links;
  EXPECT_FALSE(MeasureLinks({}, options, nullptr, &links).ok());
  EXPECT_FALSE(MeasureLinks({&a, nullptr}, options, nullptr, &links).ok());
  const Status mixed = MeasureLinks({&a, &other}, options, nullptr, &links);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.message().find("\"other\""), std::string::npos) << mixed.message();
  EXPECT_TRUE(links.empty());
}

TEST(MeasureLinks, RejectsBadSizes) {
  CpuBackend a;
  LinkOptions options;
  options.timing = QuickTiming();
  std::vector<LinkMeasurement> links;
  options.sizes_bytes = {4096.0};
  EXPECT_FALSE(MeasureLinks({&a}, options, nullptr, &links).ok());
  options.sizes_bytes = {4096.0, 4096.0};
  EXPECT_FALSE(MeasureLinks({&a}, options, nullptr, &links).ok());
  options.sizes_bytes = {0.0, 4096.0};
  EXPECT_FALSE(MeasureLinks({&a}, options, nullptr, &links).ok());
  options.sizes_bytes = {100.5, 4096.0};
  EXPECT_FALSE(MeasureLinks({&a}, options, nullptr, &links).ok());
  EXPECT_TRUE(links.empty());
}

// ---- RunRingAllReduce on CPU ranks -------------------------------------------------------

std::vector<Backend*> Pointers(std::vector<std::unique_ptr<CpuBackend>>& owned) {
  std::vector<Backend*> out;
  for (auto& b : owned) out.push_back(b.get());
  return out;
}

class RingAllReduceOnCpu : public ::testing::TestWithParam<int> {};

TEST_P(RingAllReduceOnCpu, SumsExactlyOnEveryRankAndTimesIt) {
  const int p = GetParam();
  std::vector<std::unique_ptr<CpuBackend>> owned;
  for (int r = 0; r < p; ++r) owned.push_back(std::make_unique<CpuBackend>());
  const AlphaBeta link{1000.0, 5.0, 0.0};
  // 1 MiB + 12 bytes: 262147 floats, not a multiple of 2, 3 or 4, so the
  // padding path is exercised.
  const double bytes = 1048576.0 + 12.0;
  RingCheck check;
  const Status s = RunRingAllReduce(Pointers(owned), bytes, QuickTiming(), link, &check);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(check.ranks, p);
  const double elems = std::ceil(std::ceil(bytes / 4) / p) * p;
  EXPECT_EQ(check.bytes, elems * 4);
  EXPECT_EQ(check.max_abs_error, 0.0);
  EXPECT_GT(check.measured_ns, 0.0);
  EXPECT_TRUE(std::isfinite(check.measured_ns));
  EXPECT_DOUBLE_EQ(check.predicted_ns, RingAllReduceNs(link, p, check.bytes));
  EXPECT_GT(check.predicted_ns, 0.0);
  EXPECT_DOUBLE_EQ(check.ratio, check.measured_ns / check.predicted_ns);
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingAllReduceOnCpu, ::testing::Values(2, 3, 4));

TEST(RingAllReduce, OneRankIsTheIdentityAndPredictsZero) {
  CpuBackend a;
  RingCheck check;
  const Status s = RunRingAllReduce({&a}, 4096.0, QuickTiming(), AlphaBeta{1000.0, 5.0, 0.0}, &check);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(check.max_abs_error, 0.0);
  EXPECT_EQ(check.predicted_ns, 0.0);
  EXPECT_EQ(check.ratio, 0.0);
}

TEST(RingAllReduce, RejectsEmptyMixedRepeatedAndNullRanks) {
  CpuBackend a, b;
  OtherKindBackend other;
  const AlphaBeta link{1000.0, 5.0, 0.0};
  RingCheck check;
  const Status empty = RunRingAllReduce({}, 4096.0, QuickTiming(), link, &check);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.message().find("no ranks"), std::string::npos) << empty.message();
  const Status mixed = RunRingAllReduce({&a, &other}, 4096.0, QuickTiming(), link, &check);
  ASSERT_FALSE(mixed.ok());
  EXPECT_NE(mixed.message().find("one kind"), std::string::npos) << mixed.message();
  EXPECT_FALSE(RunRingAllReduce({&a, &a}, 4096.0, QuickTiming(), link, &check).ok());
  EXPECT_FALSE(RunRingAllReduce({&a, nullptr}, 4096.0, QuickTiming(), link, &check).ok());
  EXPECT_FALSE(RunRingAllReduce({&a, &b}, 0.0, QuickTiming(), link, &check).ok());
  EXPECT_FALSE(RunRingAllReduce({&a, &b}, 4096.0, QuickTiming(), AlphaBeta{}, &check).ok());
  TimingOptions none = QuickTiming();
  none.repetitions = 0;
  EXPECT_FALSE(RunRingAllReduce({&a, &b}, 4096.0, none, link, &check).ok());
}

// A rank whose backend fails mid-ring (here: its additions) must not leave
// the other ranks waiting at a barrier forever; the error comes back.
class FailingAddBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  const kernels::DeviceInfo& device() const override { return cpu_.device(); }
  Status Allocate(size_t bytes, void** ptr) override { return cpu_.Allocate(bytes, ptr); }
  void Free(void* ptr) override { cpu_.Free(ptr); }
  Status CopyToDevice(void* d, const void* s, size_t n) override { return cpu_.CopyToDevice(d, s, n); }
  Status CopyToHost(void* d, const void* s, size_t n) override { return cpu_.CopyToHost(d, s, n); }
  Status CopyOnDevice(void* d, const void* s, size_t n) override { return cpu_.CopyOnDevice(d, s, n); }
  Status Synchronize() override { return Status::Ok(); }
  Status CopyPeer(Backend& dst, void* d, const void* s, size_t n) override { return cpu_.CopyPeer(dst, d, s, n); }
  Status Gemm(const kernels::GemmArgs& a) override { return cpu_.Gemm(a); }
  Status RmsNorm(const kernels::RmsNormArgs& a) override { return cpu_.RmsNorm(a); }
  Status SiluMul(const kernels::SiluMulArgs& a) override { return cpu_.SiluMul(a); }
  Status ResidualAdd(const kernels::ResidualAddArgs&) override {
    return Status::Invalid("residual_add: injected failure");
  }
  Status Embedding(const kernels::EmbeddingArgs& a) override { return cpu_.Embedding(a); }
  Status Rope(const kernels::RopeArgs& a) override { return cpu_.Rope(a); }
  Status AttentionPrefill(const kernels::AttentionPrefillArgs& a) override { return cpu_.AttentionPrefill(a); }
  Status AttentionDecode(const kernels::AttentionDecodeArgs& a) override { return cpu_.AttentionDecode(a); }
  Status TimeOnce(const std::function<Status()>& body, double* ns) override { return cpu_.TimeOnce(body, ns); }
  Status FlushCache() override { return cpu_.FlushCache(); }

 private:
  CpuBackend cpu_;
};

TEST(RingAllReduce, ReportsARankFailureWithoutDeadlock) {
  CpuBackend a, c;
  FailingAddBackend b;
  RingCheck check;
  const Status s = RunRingAllReduce({&a, &b, &c}, 65536.0, QuickTiming(), AlphaBeta{1000.0, 5.0, 0.0}, &check);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("rank 1"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("injected failure"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace fleetsim::calibrate
