// The ops live mode adds (kv_cache_write, argmax): the CPU reference against
// hand values and its argument checks, and the CUDA ops against the CPU
// (skipped, with the reason, where no GPU is visible).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/half.h"

namespace fleetsim::kernels {
namespace {

std::unique_ptr<Backend> Cpu() {
  std::unique_ptr<Backend> b;
  FLEETSIM_CHECK(MakeBackend("cpu", &b).ok());
  return b;
}

// A device buffer holding `host`.
template <typename T>
DeviceBuffer Upload(Backend& b, const std::vector<T>& host) {
  DeviceBuffer buf;
  FLEETSIM_CHECK(b.AllocateBuffer(host.size() * sizeof(T), &buf).ok());
  FLEETSIM_CHECK(b.CopyToDevice(buf.data(), host.data(), host.size() * sizeof(T)).ok());
  return buf;
}

template <typename T>
std::vector<T> Download(Backend& b, const DeviceBuffer& buf, size_t n) {
  std::vector<T> host(n);
  FLEETSIM_CHECK(b.CopyToHost(host.data(), buf.data(), n * sizeof(T)).ok());
  return host;
}

// Writes 3 tokens' K/V (2 heads × 4, row stride 10: a slice of a wider
// projection) into an 8-slot cache at slots {5, -1, 0}; returns the caches.
void RunWrite(Backend& b, DType t, std::vector<uint16_t>* k_out, std::vector<uint16_t>* v_out) {
  const int64_t row = 8, stride = 10, slots = 8;
  std::vector<uint16_t> k(3 * stride), v(3 * stride);
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<uint16_t>(1000 + i);
    v[i] = static_cast<uint16_t>(2000 + i);
  }
  std::vector<uint16_t> zeros(static_cast<size_t>(slots * row), 0);
  DeviceBuffer dk = Upload(b, k), dv = Upload(b, v), kc = Upload(b, zeros), vc = Upload(b, zeros);
  DeviceBuffer ds = Upload(b, std::vector<int32_t>{5, -1, 0});
  KvCacheWriteArgs a;
  a.num_tokens = 3;
  a.num_kv_heads = 2;
  a.head_dim = 4;
  a.num_slots = slots;
  a.dtype = t;
  a.k = dk.data();
  a.v = dv.data();
  a.k_stride = stride;
  a.v_stride = stride;
  a.k_cache = kc.data();
  a.v_cache = vc.data();
  a.slots = static_cast<const int32_t*>(ds.data());
  const Status s = b.KvCacheWrite(a);
  ASSERT_TRUE(s.ok()) << s.message();
  *k_out = Download<uint16_t>(b, kc, zeros.size());
  *v_out = Download<uint16_t>(b, vc, zeros.size());
}

TEST(CpuKvCacheWrite, CopiesRowsToTheirSlotsAndSkipsPadding) {
  auto cpu = Cpu();
  std::vector<uint16_t> k, v;
  RunWrite(*cpu, DType::kBf16, &k, &v);
  for (int64_t slot = 0; slot < 8; ++slot) {
    for (int64_t i = 0; i < 8; ++i) {
      const size_t at = static_cast<size_t>(slot * 8 + i);
      // Token 0 went to slot 5, token 2 to slot 0; token 1 was padding.
      const int64_t token = slot == 5 ? 0 : slot == 0 ? 2 : -1;
      EXPECT_EQ(k[at], token < 0 ? 0 : 1000 + token * 10 + i) << slot << " " << i;
      EXPECT_EQ(v[at], token < 0 ? 0 : 2000 + token * 10 + i) << slot << " " << i;
    }
  }
}

TEST(CpuKvCacheWrite, RefusesBadArguments) {
  KvCacheWriteArgs a;
  a.num_tokens = 1;
  a.num_kv_heads = 2;
  a.head_dim = 4;
  a.num_slots = 4;
  a.k_stride = 7;
  a.v_stride = 8;
  int dummy[64];
  a.k = a.v = dummy;
  a.k_cache = dummy;
  a.v_cache = dummy + 32;
  int32_t slot = 0;
  a.slots = &slot;
  Status s = ValidateKvCacheWriteArgs(a);
  EXPECT_NE(s.message().find("kv_cache_write: k_stride=7 is less than num_kv_heads*head_dim=8"), std::string::npos)
      << s.message();
  a.k_stride = 8;
  a.v_cache = a.k_cache;
  EXPECT_NE(ValidateKvCacheWriteArgs(a).message().find("k_cache equals v_cache"), std::string::npos);
  // A slot past the cache is reported by the CPU reference.
  auto cpu = Cpu();
  std::vector<uint16_t> cache(64);
  DeviceBuffer kc = Upload(*cpu, cache), vc = Upload(*cpu, cache), kv = Upload(*cpu, cache);
  DeviceBuffer ds = Upload(*cpu, std::vector<int32_t>{4});
  a.dtype = DType::kBf16;
  a.k = a.v = kv.data();
  a.k_cache = kc.data();
  a.v_cache = vc.data();
  a.slots = static_cast<const int32_t*>(ds.data());
  s = cpu->KvCacheWrite(a);
  EXPECT_NE(s.message().find("slots[0]=4 is not below num_slots=4"), std::string::npos) << s.message();
}

std::vector<int32_t> RunArgmax(Backend& b, DType t, const std::vector<float>& values, int64_t rows, int64_t width,
                               int64_t stride) {
  std::vector<unsigned char> stored(values.size() * DTypeSize(t));
  for (size_t i = 0; i < values.size(); ++i) {
    if (t == DType::kFp32) {
      std::memcpy(stored.data() + 4 * i, &values[i], 4);
    } else {
      const uint16_t h = t == DType::kBf16 ? FloatToBf16(values[i]) : FloatToHalf(values[i]);
      std::memcpy(stored.data() + 2 * i, &h, 2);
    }
  }
  DeviceBuffer x = Upload(b, stored);
  DeviceBuffer out;
  FLEETSIM_CHECK(b.AllocateBuffer(static_cast<size_t>(rows) * 4, &out).ok());
  ArgmaxArgs a;
  a.rows = rows;
  a.width = width;
  a.dtype = t;
  a.x = x.data();
  a.x_stride = stride;
  a.out = static_cast<int32_t*>(out.data());
  const Status s = b.Argmax(a);
  FLEETSIM_CHECK(s.ok());
  return Download<int32_t>(b, out, static_cast<size_t>(rows));
}

TEST(CpuArgmax, PicksTheFirstLargestAndNeverANan) {
  auto cpu = Cpu();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Rows of width 4, stride 5 (the fifth column is not read: 100).
  const std::vector<float> x = {1, 3, 3, 2, 100,      // tie: the first 3
                                -5, -4, -9, -4, 100,  // all negative
                                nan, 0.5, nan, 0.25, 100,
                                nan, nan, nan, nan, 100};
  for (DType t : {DType::kFp32, DType::kFp16, DType::kBf16}) {
    EXPECT_EQ(RunArgmax(*cpu, t, x, 4, 4, 5), (std::vector<int32_t>{1, 1, 1, 0})) << DTypeName(t);
  }
  ArgmaxArgs bad;
  bad.rows = 1;
  bad.width = 4;
  bad.x_stride = 3;
  EXPECT_NE(ValidateArgmaxArgs(bad).message().find("argmax: x_stride=3 is less than width=4"), std::string::npos);
}

class CudaLiveOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    ASSERT_TRUE(MakeBackend("cuda", &cuda_).ok());
    cpu_ = Cpu();
  }
  std::unique_ptr<Backend> cuda_, cpu_;
};

TEST_F(CudaLiveOpsTest, KvCacheWriteMatchesCpuBitForBit) {
  std::vector<uint16_t> k1, v1, k2, v2;
  RunWrite(*cuda_, DType::kBf16, &k1, &v1);
  RunWrite(*cpu_, DType::kBf16, &k2, &v2);
  EXPECT_EQ(k1, k2);
  EXPECT_EQ(v1, v2);
}

TEST_F(CudaLiveOpsTest, ArgmaxMatchesCpuOnWideRows) {
  // A vocabulary-sized row with ties far apart: the lowest column wins.
  const int64_t rows = 3, width = 128256;
  std::vector<float> x(static_cast<size_t>(rows * width));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f;
  x[static_cast<size_t>(0 * width + 70000)] = 5;
  x[static_cast<size_t>(0 * width + 90000)] = 5;
  x[static_cast<size_t>(2 * width + 3)] = std::numeric_limits<float>::quiet_NaN();
  for (DType t : {DType::kFp32, DType::kBf16}) {
    EXPECT_EQ(RunArgmax(*cuda_, t, x, rows, width, width), RunArgmax(*cpu_, t, x, rows, width, width))
        << DTypeName(t);
  }
}

}  // namespace
}  // namespace fleetsim::kernels
