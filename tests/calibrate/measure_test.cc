// Tests of the timing harness (calibrate/measure.h) on the CPU backend,
// through a wrapping backend that counts calls and can refuse allocations.
#include "calibrate/measure.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.h"
#include "kernels/cpu/half.h"

namespace fleetsim::calibrate {
namespace {

using kernels::DType;

// Forwards everything to a CpuBackend, counting the calls the harness makes
// and failing allocations above `max_alloc_bytes` (fault injection, as
// LevelDB's ErrorEnv).
class CountingBackend final : public kernels::Backend {
 public:
  std::string_view name() const override { return inner_.name(); }
  const kernels::DeviceInfo& device() const override { return inner_.device(); }

  Status Allocate(size_t bytes, void** ptr) override {
    ++allocations;
    if (bytes > max_alloc_bytes) {
      *ptr = nullptr;
      return Status::Invalid("counting backend: refusing " + std::to_string(bytes) + " bytes");
    }
    live_bytes += bytes;
    FLEETSIM_RETURN_IF_ERROR(inner_.Allocate(bytes, ptr));
    sizes_.push_back({*ptr, bytes});
    return Status::Ok();
  }
  void Free(void* ptr) override {
    for (auto it = sizes_.begin(); it != sizes_.end(); ++it) {
      if (it->first == ptr) {
        live_bytes -= it->second;
        sizes_.erase(it);
        break;
      }
    }
    inner_.Free(ptr);
  }
  Status CopyToDevice(void* dst, const void* src, size_t bytes) override {
    ++copies_to_device;
    bytes_to_device += bytes;
    return inner_.CopyToDevice(dst, src, bytes);
  }
  Status CopyToHost(void* dst, const void* src, size_t bytes) override { return inner_.CopyToHost(dst, src, bytes); }
  Status CopyOnDevice(void* dst, const void* src, size_t bytes) override {
    return inner_.CopyOnDevice(dst, src, bytes);
  }
  Status Synchronize() override {
    ++synchronizes;
    return inner_.Synchronize();
  }
  Status CopyPeer(Backend& dst_backend, void* dst, const void* src, size_t bytes) override {
    return inner_.CopyPeer(dst_backend, dst, src, bytes);
  }

  Status Gemm(const kernels::GemmArgs& a) override { return inner_.Gemm(a); }
  Status RmsNorm(const kernels::RmsNormArgs& a) override { return inner_.RmsNorm(a); }
  Status SiluMul(const kernels::SiluMulArgs& a) override { return inner_.SiluMul(a); }
  Status ResidualAdd(const kernels::ResidualAddArgs& a) override { return inner_.ResidualAdd(a); }
  Status Embedding(const kernels::EmbeddingArgs& a) override { return inner_.Embedding(a); }
  Status Rope(const kernels::RopeArgs& a) override { return inner_.Rope(a); }
  Status AttentionPrefill(const kernels::AttentionPrefillArgs& a) override { return inner_.AttentionPrefill(a); }
  Status AttentionDecode(const kernels::AttentionDecodeArgs& a) override { return inner_.AttentionDecode(a); }

  Status TimeOnce(const std::function<Status()>& body, double* ns) override {
    ++time_onces;
    return inner_.TimeOnce(body, ns);
  }
  // Counted, and forwarded only when asked: the CPU backend writes twice
  // the L3 that sysconf reports, which on a VM can be the host's whole L3
  // (a GB, seconds per flush).
  Status FlushCache() override {
    ++flushes;
    return forward_flush ? inner_.FlushCache() : Status::Ok();
  }

  int allocations = 0;
  int copies_to_device = 0;
  size_t bytes_to_device = 0;
  size_t live_bytes = 0;
  int synchronizes = 0;
  int time_onces = 0;
  int flushes = 0;
  size_t max_alloc_bytes = SIZE_MAX;
  bool forward_flush = false;

 private:
  kernels::CpuBackend inner_;
  std::vector<std::pair<void*, size_t>> sizes_;
};

// Fast options for tests that only check behaviour, not timings.
TimingOptions Quick() {
  TimingOptions o;
  o.warmup = 1;
  o.repetitions = 2;
  o.flush_cache = false;
  return o;
}

// ---- Summarize --------------------------------------------------------------

TEST(Summarize, OddCountMedianIsMiddleSample) {
  const Timing t = Summarize({50, 10, 40, 20, 30});
  EXPECT_EQ(t.repetitions, 5);
  EXPECT_DOUBLE_EQ(t.median_ns, 30);
  EXPECT_DOUBLE_EQ(t.min_ns, 10);
  EXPECT_DOUBLE_EQ(t.max_ns, 50);
  // Sorted 10..50: p25 at rank 1 (20), p75 at rank 3 (40): (40-20)/30.
  EXPECT_DOUBLE_EQ(t.spread, 20.0 / 30.0);
}

TEST(Summarize, EvenCountInterpolatesBetweenOrderStatistics) {
  const Timing t = Summarize({4, 1, 3, 2});
  EXPECT_EQ(t.repetitions, 4);
  EXPECT_DOUBLE_EQ(t.median_ns, 2.5);
  EXPECT_DOUBLE_EQ(t.min_ns, 1);
  EXPECT_DOUBLE_EQ(t.max_ns, 4);
  // p25 at rank 0.75 → 1.75; p75 at rank 2.25 → 3.25.
  EXPECT_DOUBLE_EQ(t.spread, 1.5 / 2.5);
}

TEST(Summarize, SingleSampleHasNoSpread) {
  const Timing t = Summarize({7});
  EXPECT_DOUBLE_EQ(t.median_ns, 7);
  EXPECT_DOUBLE_EQ(t.min_ns, 7);
  EXPECT_DOUBLE_EQ(t.max_ns, 7);
  EXPECT_DOUBLE_EQ(t.spread, 0);
}

TEST(Summarize, ZeroMedianGivesZeroSpread) {
  const Timing t = Summarize({0, 0, 0, 5});
  EXPECT_DOUBLE_EQ(t.median_ns, 0);
  EXPECT_DOUBLE_EQ(t.spread, 0);
}

// ---- TimeOp -----------------------------------------------------------------

TEST(TimeOp, RunsWarmupPlusRepetitionsAndFlushesBeforeEachTimedRun) {
  CountingBackend b;
  TimingOptions o;
  o.warmup = 3;
  o.repetitions = 4;
  o.flush_cache = true;
  int calls = 0;
  Timing t;
  ASSERT_TRUE(TimeOp(b, [&] { ++calls; return Status::Ok(); }, o, &t).ok());
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(b.time_onces, 4);
  EXPECT_EQ(b.flushes, 4);
  EXPECT_EQ(t.repetitions, 4);
  EXPECT_GE(t.min_ns, 0);
  EXPECT_LE(t.min_ns, t.median_ns);
  EXPECT_LE(t.median_ns, t.max_ns);
}

TEST(TimeOp, DoesNotFlushWhenNotAsked) {
  CountingBackend b;
  TimingOptions o;
  o.warmup = 0;
  o.repetitions = 3;
  o.flush_cache = false;
  int calls = 0;
  Timing t;
  ASSERT_TRUE(TimeOp(b, [&] { ++calls; return Status::Ok(); }, o, &t).ok());
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(b.time_onces, 3);
  EXPECT_EQ(b.flushes, 0);
}

TEST(TimeOp, PropagatesTheOpsError) {
  CountingBackend b;
  int calls = 0;
  Timing t;
  t.median_ns = -1;  // must stay untouched
  const Status s = TimeOp(
      b,
      [&] {
        ++calls;
        return calls == 2 ? Status::Invalid("op exploded") : Status::Ok();
      },
      Quick(), &t);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "op exploded");
  EXPECT_EQ(calls, 2);  // stopped at the failing run
  EXPECT_EQ(t.median_ns, -1);
}

TEST(TimeOp, RejectsBadOptionsBeforeRunning) {
  CountingBackend b;
  int calls = 0;
  Timing t;
  TimingOptions o = Quick();
  o.repetitions = 0;
  Status s = TimeOp(b, [&] { ++calls; return Status::Ok(); }, o, &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("repetitions=0"), std::string::npos) << s.message();
  o = Quick();
  o.warmup = -1;
  s = TimeOp(b, [&] { ++calls; return Status::Ok(); }, o, &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("warmup=-1"), std::string::npos) << s.message();
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(ValidateTimingOptions(TimingOptions()).ok());
}

// ---- Fill pattern and block table --------------------------------------------

TEST(BenchFillValue, IsSmallNormalAndPeriodic) {
  std::set<float> seen;
  for (int64_t i = 0; i < 1000; ++i) {
    const float v = BenchFillValue(i);
    EXPECT_LT(std::fabs(v), 0.125f);
    if (v != 0) {
      EXPECT_GE(std::fabs(v), 1.0f / 4096);
    }
    EXPECT_EQ(v, BenchFillValue(i + 1000 * 12345));
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 1000u);  // a permutation of the 1000 levels
}

TEST(ScatteredBlockTable, IsAPermutationThatScatters) {
  for (int64_t n : {1, 2, 16, 100, 1024, 4099}) {
    const std::vector<int32_t> t = ScatteredBlockTable(n);
    ASSERT_EQ(static_cast<int64_t>(t.size()), n);
    std::vector<int32_t> sorted = t;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i) << "n=" << n;
    if (n >= 16) {
      int adjacent = 0;
      for (size_t i = 1; i < t.size(); ++i) adjacent += (t[i] == t[i - 1] + 1);
      EXPECT_EQ(adjacent, 0) << "n=" << n;
    }
  }
}

// ---- OpBench ------------------------------------------------------------------

TEST(OpBench, EveryOpTimesASmallShape) {
  CountingBackend b;
  OpBench bench(&b, Quick());
  for (DType dt : {DType::kFp32, DType::kBf16, DType::kFp16}) {
    SCOPED_TRACE(std::string(kernels::DTypeName(dt)));
    Timing t;
    ASSERT_TRUE(bench.Gemm({32, 48, 64, dt}, &t).ok());
    EXPECT_GT(t.median_ns, 0);
    EXPECT_EQ(t.repetitions, 2);
    t = Timing();
    ASSERT_TRUE(bench.RmsNorm({8, 256, dt}, &t).ok());
    EXPECT_GT(t.median_ns, 0);
    t = Timing();
    ASSERT_TRUE(bench.SiluMul({8, 256, dt}, &t).ok());
    EXPECT_GT(t.median_ns, 0);
    t = Timing();
    ASSERT_TRUE(bench.ResidualAdd({8, 256, dt}, &t).ok());
    EXPECT_GT(t.median_ns, 0);
    t = Timing();
    ASSERT_TRUE(bench.Rope({16, 4, 64, dt}, &t).ok());
    EXPECT_GT(t.median_ns, 0);
    t = Timing();
    ASSERT_TRUE(bench.Embedding({16, 100, 128, dt}, &t).ok());
    EXPECT_GT(t.median_ns, 0);
    t = Timing();
    ASSERT_TRUE(bench.AttentionPrefill({2, 24, 4, 2, 32, dt}, &t).ok());
    EXPECT_GT(t.median_ns, 0);
    t = Timing();
    DecodeShape d;
    d.seqs = 3;
    d.context_len = 50;  // not a multiple of block_size: a partial last block
    d.heads = 4;
    d.kv_heads = 1;
    d.head_dim = 32;
    d.block_size = 16;
    d.dtype = dt;
    ASSERT_TRUE(bench.AttentionDecode(d, &t).ok());
    EXPECT_GT(t.median_ns, 0);
  }
}

TEST(OpBench, RejectsInvalidShapesNamingOpAndField) {
  CountingBackend b;
  OpBench bench(&b, Quick());
  Timing t;
  auto expect = [](const Status& s, const std::string& text) {
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(text), std::string::npos) << s.message();
  };
  expect(bench.Gemm({4, 4, 0, DType::kFp32}, &t), "gemm: k=0 must be > 0");
  expect(bench.Gemm({-1, 4, 4, DType::kFp32}, &t), "gemm: m=-1");
  expect(bench.RmsNorm({0, 8, DType::kFp32}, &t), "rms_norm: rows=0");
  expect(bench.SiluMul({8, 0, DType::kFp32}, &t), "silu_mul: width=0");
  expect(bench.ResidualAdd({8, -3, DType::kFp32}, &t), "residual_add: width=-3");
  expect(bench.Rope({4, 2, 7, DType::kFp32}, &t), "rope: head_dim=7 must be even");
  expect(bench.Rope({4, 0, 8, DType::kFp32}, &t), "rope: heads=0");
  expect(bench.Embedding({4, 0, 8, DType::kFp32}, &t), "embedding: vocab=0");
  expect(bench.AttentionPrefill({1, 8, 6, 4, 16, DType::kFp32}, &t),
         "attention_prefill: heads=6 is not a multiple of kv_heads=4");
  expect(bench.AttentionPrefill({1, 0, 4, 4, 16, DType::kFp32}, &t), "attention_prefill: seq_len=0");
  DecodeShape d{2, 32, 4, 4, 16, 0, DType::kFp32};
  expect(bench.AttentionDecode(d, &t), "attention_decode: block_size=0");
  d.block_size = 16;
  d.context_len = 0;
  expect(bench.AttentionDecode(d, &t), "attention_decode: context_len=0");
  expect(bench.Gemm({int64_t{1} << 40, int64_t{1} << 40, 4, DType::kFp32}, &t), "gemm: shape too large");
  EXPECT_EQ(b.allocations, 0);  // nothing was touched
  EXPECT_EQ(b.time_onces, 0);
}

// Reference C = A·B over the fill pattern rounded to `dt`, in double.
std::vector<double> ReferenceGemm(int64_t m, int64_t n, int64_t k, DType dt) {
  auto in = [dt](int64_t i) {
    const float v = BenchFillValue(i);
    if (dt == DType::kBf16) return kernels::Bf16ToFloat(kernels::FloatToBf16(v));
    if (dt == DType::kFp16) return kernels::HalfToFloat(kernels::FloatToHalf(v));
    return v;
  };
  std::vector<double> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p) acc += double(in(i * k + p)) * double(in(p * n + j));
      c[static_cast<size_t>(i * n + j)] = acc;
    }
  return c;
}

std::vector<float> ReadOutput(kernels::Backend& b, const void* out, int64_t elems, DType dt) {
  std::vector<float> v(static_cast<size_t>(elems));
  if (dt == DType::kFp32) {
    EXPECT_TRUE(b.CopyToHost(v.data(), out, v.size() * 4).ok());
    return v;
  }
  std::vector<uint16_t> h(v.size());
  EXPECT_TRUE(b.CopyToHost(h.data(), out, h.size() * 2).ok());
  for (size_t i = 0; i < h.size(); ++i)
    v[i] = dt == DType::kBf16 ? kernels::Bf16ToFloat(h[i]) : kernels::HalfToFloat(h[i]);
  return v;
}

void ExpectGemmRight(OpBench& bench, int64_t m, int64_t n, int64_t k, DType dt, double rtol) {
  SCOPED_TRACE("gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + " " +
               std::string(kernels::DTypeName(dt)));
  Timing t;
  ASSERT_TRUE(bench.Gemm({m, n, k, dt}, &t).ok());
  ASSERT_NE(bench.LastOutputForTest(), nullptr);
  const std::vector<float> got = ReadOutput(bench.backend(), bench.LastOutputForTest(), m * n, dt);
  const std::vector<double> want = ReferenceGemm(m, n, k, dt);
  double max_abs = 0;
  for (double w : want) max_abs = std::max(max_abs, std::fabs(w));
  ASSERT_GT(max_abs, 1e-3);  // the inputs are not all zero
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-6 + rtol * std::fabs(want[i]) + rtol * 1e-2 * max_abs) << "element " << i;
  }
}

TEST(OpBench, GemmResultMatchesTheFillPattern) {
  CountingBackend b;
  OpBench bench(&b, Quick());
  ExpectGemmRight(bench, 17, 23, 31, DType::kFp32, 1e-5);
  // A larger shape grows the buffers and fills only the new tail; a smaller
  // one then reuses the filled prefix.
  ExpectGemmRight(bench, 40, 33, 57, DType::kFp32, 1e-5);
  ExpectGemmRight(bench, 9, 11, 13, DType::kFp32, 1e-5);
  // A dtype change refills in the new storage format.
  ExpectGemmRight(bench, 20, 30, 40, DType::kBf16, 1e-2);
  ExpectGemmRight(bench, 20, 30, 40, DType::kFp16, 2e-3);
  ExpectGemmRight(bench, 20, 30, 40, DType::kFp32, 1e-5);
  // Larger than what is filled but within the allocations: only the tails
  // (from elements 800 of A and 1200 of B) are written.
  const size_t copied = b.bytes_to_device;
  const int allocs = b.allocations;
  ExpectGemmRight(bench, 30, 33, 50, DType::kFp32, 1e-5);
  EXPECT_EQ(b.allocations, allocs);
  EXPECT_EQ(b.bytes_to_device - copied, (1500u - 800u + 1650u - 1200u) * 4);
}

TEST(OpBench, RopeInPlaceDoesNotLeakIntoLaterOps) {
  CountingBackend b;
  OpBench bench(&b, Quick());
  Timing t;
  ExpectGemmRight(bench, 16, 16, 16, DType::kFp32, 1e-5);
  // Rope rotates in0 (GEMM's A) in place; the next GEMM must see the
  // pattern again.
  ASSERT_TRUE(bench.Rope({8, 2, 16, DType::kFp32}, &t).ok());
  ExpectGemmRight(bench, 16, 16, 16, DType::kFp32, 1e-5);
}

TEST(OpBench, SmallerShapeAfterLargerOneReusesBuffers) {
  CountingBackend b;
  OpBench bench(&b, Quick());
  Timing t;
  ASSERT_TRUE(bench.Gemm({64, 64, 64, DType::kBf16}, &t).ok());
  const int allocs = b.allocations;
  EXPECT_EQ(allocs, 3);  // A, B, C
  const size_t copied = b.bytes_to_device;
  EXPECT_EQ(copied, 2u * 64 * 64 * 2);  // A and B filled, C not
  ASSERT_TRUE(bench.Gemm({32, 16, 48, DType::kBf16}, &t).ok());
  ASSERT_TRUE(bench.Gemm({64, 64, 64, DType::kBf16}, &t).ok());
  EXPECT_EQ(b.allocations, allocs);
  EXPECT_EQ(b.bytes_to_device, copied);  // already filled: nothing copied
  // Ops sharing the roles reuse them too: RmsNorm fits in A/B/C's buffers.
  ASSERT_TRUE(bench.RmsNorm({16, 128, DType::kBf16}, &t).ok());
  EXPECT_EQ(b.allocations, allocs);
  // A slightly larger GEMM grows with slack, so the next step up fits.
  ASSERT_TRUE(bench.Gemm({64, 64, 72, DType::kBf16}, &t).ok());
  const int after_growth = b.allocations;
  EXPECT_GT(after_growth, allocs);
  ASSERT_TRUE(bench.Gemm({64, 64, 80, DType::kBf16}, &t).ok());
  EXPECT_EQ(b.allocations, after_growth);
}

TEST(OpBench, ShapeThatDoesNotFitFailsAndBenchStaysUsable) {
  CountingBackend b;
  OpBench bench(&b, Quick());
  Timing t;
  ASSERT_TRUE(bench.Gemm({64, 64, 64, DType::kFp32}, &t).ok());
  b.max_alloc_bytes = 1 << 20;
  const Status s = bench.Gemm({1024, 1024, 1024, DType::kFp32}, &t);  // 4 MiB operands
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gemm: counting backend: refusing"), std::string::npos) << s.message();
  EXPECT_EQ(b.live_bytes, 0u);  // released everything rather than keep a half-built set
  ExpectGemmRight(bench, 40, 30, 20, DType::kFp32, 1e-5);
  // Slack that does not fit is dropped: growing A and C from 256 KiB, 1.5×
  // (384 KiB) is over the limit but the exact 264 KiB is not.
  b.max_alloc_bytes = 300 * 1024;
  ASSERT_TRUE(bench.Gemm({256, 256, 256, DType::kFp32}, &t).ok());
  const int allocs = b.allocations;
  ExpectGemmRight(bench, 264, 256, 256, DType::kFp32, 1e-5);
  EXPECT_EQ(b.allocations, allocs + 4);  // A and C: refused slack, then exact
}

TEST(OpBench, DecodeSeesEveryBlockOfTheScatteredTable) {
  // Decode over the bench's inputs must equal attention over the fill
  // pattern's K/V gathered through ScatteredBlockTable: proves the caches
  // are filled, the table is the documented one and context_lens cover the
  // partial last block.
  CountingBackend b;
  OpBench bench(&b, Quick());
  DecodeShape d;
  d.seqs = 2;
  d.context_len = 37;
  d.heads = 2;
  d.kv_heads = 1;
  d.head_dim = 8;
  d.block_size = 4;
  d.dtype = DType::kFp32;
  Timing t;
  ASSERT_TRUE(bench.AttentionDecode(d, &t).ok());
  const int64_t bps = (d.context_len + d.block_size - 1) / d.block_size;
  const std::vector<int32_t> table = ScatteredBlockTable(d.seqs * bps);
  const std::vector<float> got =
      ReadOutput(b, bench.LastOutputForTest(), d.seqs * d.heads * d.head_dim, DType::kFp32);
  const int64_t slot = d.kv_heads * d.head_dim;
  for (int64_t s = 0; s < d.seqs; ++s) {
    for (int64_t h = 0; h < d.heads; ++h) {
      const int64_t q0 = (s * d.heads + h) * d.head_dim;
      std::vector<double> scores(static_cast<size_t>(d.context_len));
      double mx = -1e300;
      for (int64_t tok = 0; tok < d.context_len; ++tok) {
        const int64_t blk = table[static_cast<size_t>(s * bps + tok / d.block_size)];
        const int64_t k0 = (blk * d.block_size + tok % d.block_size) * slot;
        double dot = 0;
        for (int64_t i = 0; i < d.head_dim; ++i) dot += double(BenchFillValue(q0 + i)) * BenchFillValue(k0 + i);
        scores[static_cast<size_t>(tok)] = dot / std::sqrt(double(d.head_dim));
        mx = std::max(mx, scores[static_cast<size_t>(tok)]);
      }
      double denom = 0;
      for (double& sc : scores) denom += (sc = std::exp(sc - mx));
      for (int64_t i = 0; i < d.head_dim; ++i) {
        double acc = 0;
        for (int64_t tok = 0; tok < d.context_len; ++tok) {
          const int64_t blk = table[static_cast<size_t>(s * bps + tok / d.block_size)];
          const int64_t v0 = (blk * d.block_size + tok % d.block_size) * slot;
          acc += scores[static_cast<size_t>(tok)] / denom * BenchFillValue(v0 + i);
        }
        ASSERT_NEAR(got[static_cast<size_t>(q0 + i)], acc, 1e-5) << "seq " << s << " head " << h << " dim " << i;
      }
    }
  }
}

TEST(OpBench, LargerGemmTakesLonger) {
  kernels::CpuBackend b;
  TimingOptions o;
  o.warmup = 1;
  o.repetitions = 5;
  o.flush_cache = false;
  OpBench bench(&b, o);
  Timing small, large;
  ASSERT_TRUE(bench.Gemm({16, 16, 16, DType::kFp32}, &small).ok());
  ASSERT_TRUE(bench.Gemm({256, 256, 256, DType::kFp32}, &large).ok());
  // 4096× the FLOPs; even with fixed overheads dominating the small one,
  // a factor of 4 is safe.
  EXPECT_GT(large.median_ns, 4 * small.median_ns) << small.median_ns << " vs " << large.median_ns;
}

}  // namespace
}  // namespace fleetsim::calibrate
