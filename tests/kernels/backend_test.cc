// The backend interface: the factory, memory helpers, device descriptions,
// and the CUDA GEMM against the CPU reference when a GPU is present.
#include "kernels/backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/kernels/gemm_testutil.h"

namespace fleetsim::kernels {
namespace {

using testing::GemmProblem;
using testing::HostMatrix;

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(MakeBackend, UnknownNameListsValidNames) {
  std::unique_ptr<Backend> b;
  const Status s = MakeBackend("nope", &b);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(b == nullptr);
  EXPECT_EQ(s.message(), "unknown backend \"nope\" (known: cpu, cuda)");
}

TEST(MakeBackend, KnownBackendsAreDescribed) {
  const std::vector<BackendDescription> known = KnownBackends();
  ASSERT_EQ(known.size(), 2u);
  EXPECT_EQ(known[0].name, "cpu");
  EXPECT_EQ(known[1].name, "cuda");
  for (const BackendDescription& d : known) EXPECT_FALSE(d.description.empty()) << d.name;
}

TEST(MakeBackend, CpuAlwaysWorksAndDescribesItself) {
  std::unique_ptr<Backend> b;
  ASSERT_TRUE(MakeBackend("cpu", &b).ok());
  ASSERT_TRUE(b != nullptr);
  EXPECT_EQ(b->name(), "cpu");
  EXPECT_EQ(b->device().backend, "cpu");
  EXPECT_FALSE(b->device().name.empty());
  EXPECT_TRUE(Contains(b->device().software, "Eigen")) << b->device().software;
  EXPECT_TRUE(Contains(b->device().ToString(), "cpu device 0: ")) << b->device().ToString();
}

TEST(MakeBackend, CudaUnavailableSaysWhy) {
  std::string why;
  if (CudaDeviceAvailable(&why)) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(why.empty());
  std::unique_ptr<Backend> b;
  const Status s = MakeBackend("cuda", &b);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(b == nullptr);
  EXPECT_TRUE(Contains(s.message(), "backend \"cuda\" is not available")) << s.message();
  if (CudaBuilt()) {
    EXPECT_TRUE(Contains(s.message(), "no CUDA device")) << s.message();
  } else {
    EXPECT_TRUE(Contains(s.message(), "built without CUDA")) << s.message();
  }
  EXPECT_TRUE(Contains(s.message(), why)) << s.message();
}

TEST(DeviceInfo, ToStringListsWhatIsKnown) {
  DeviceInfo d;
  d.backend = "cuda";
  d.name = "NVIDIA H200";
  d.device_ordinal = 1;
  d.memory_bytes = int64_t{143771} << 20;
  d.compute_units = 132;
  d.compute_capability = 90;
  d.sm_clock_khz = 1980000;
  d.memory_clock_khz = 2619000;
  d.memory_bus_width_bits = 5120;
  d.software = "CUDA runtime 13.0";
  EXPECT_EQ(d.ToString(),
            "cuda device 1: NVIDIA H200 (sm_90, 132 SMs, 140.4 GiB, SM clock 1980 MHz, "
            "memory clock 2619 MHz x 5120-bit, CUDA runtime 13.0)");
}

// Memory helpers, run against every backend this machine can create.
std::vector<std::string> AvailableBackends() {
  std::vector<std::string> names = {"cpu"};
  if (CudaDeviceAvailable(nullptr)) names.push_back("cuda");
  return names;
}

TEST(Backend, CopiesRoundTripThroughDeviceMemory) {
  for (const std::string& name : AvailableBackends()) {
    std::unique_ptr<Backend> b;
    ASSERT_TRUE(MakeBackend(name, &b).ok()) << name;
    std::vector<uint8_t> src(1000), back(1000, 0);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
    DeviceBuffer d1, d2;
    ASSERT_TRUE(b->AllocateBuffer(src.size(), &d1).ok()) << name;
    ASSERT_TRUE(b->AllocateBuffer(src.size(), &d2).ok()) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d1.data()) % 256, 0u) << name;
    EXPECT_EQ(d1.bytes(), src.size());
    ASSERT_TRUE(b->CopyToDevice(d1.data(), src.data(), src.size()).ok()) << name;
    ASSERT_TRUE(b->CopyOnDevice(d2.data(), d1.data(), src.size()).ok()) << name;
    ASSERT_TRUE(b->Synchronize().ok()) << name;
    ASSERT_TRUE(b->CopyToHost(back.data(), d2.data(), back.size()).ok()) << name;
    EXPECT_EQ(back, src) << name;
  }
}

TEST(Backend, ZeroByteAllocationIsNull) {
  for (const std::string& name : AvailableBackends()) {
    std::unique_ptr<Backend> b;
    ASSERT_TRUE(MakeBackend(name, &b).ok()) << name;
    void* p = reinterpret_cast<void*>(0x1);
    ASSERT_TRUE(b->Allocate(0, &p).ok()) << name;
    EXPECT_EQ(p, nullptr) << name;
    b->Free(nullptr);  // no-op
  }
}

TEST(DeviceBuffer, MoveTransfersOwnership) {
  std::unique_ptr<Backend> b;
  ASSERT_TRUE(MakeBackend("cpu", &b).ok());
  DeviceBuffer a;
  ASSERT_TRUE(b->AllocateBuffer(64, &a).ok());
  void* p = a.data();
  ASSERT_NE(p, nullptr);
  DeviceBuffer moved(std::move(a));
  EXPECT_EQ(moved.data(), p);
  EXPECT_EQ(moved.bytes(), 64u);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): the contract under test
  EXPECT_EQ(a.bytes(), 0u);
  DeviceBuffer assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.data(), p);
  assigned.Reset();
  EXPECT_EQ(assigned.data(), nullptr);
}

// ---- CUDA vs CPU ------------------------------------------------------------

TEST(CudaGemm, MatchesCpuReference) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  std::unique_ptr<Backend> cuda, cpu;
  {
    const Status s = MakeBackend("cuda", &cuda);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  ASSERT_TRUE(MakeBackend("cpu", &cpu).ok());
  const DeviceInfo& d = cuda->device();
  EXPECT_GT(d.compute_capability, 0) << d.ToString();
  EXPECT_GT(d.sm_clock_khz, 0) << d.ToString();
  EXPECT_GT(d.memory_bytes, 0) << d.ToString();
  std::printf("cuda: %s\n", d.ToString().c_str());

  struct Shape {
    int64_t m, n, k;
  };
  // Non-square, odd and tensor-core-unfriendly sizes, plus one real layer
  // slice (a 4096-wide projection for 128 tokens).
  const Shape shapes[] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {1, 96, 40}, {128, 64, 257}, {128, 512, 4096}};
  uint64_t seed = 100;
  for (DType dtype : {DType::kFp32, DType::kFp16, DType::kBf16}) {
    const testing::Tolerance tol = testing::GemmTolerance(dtype);
    for (const Shape& s : shapes) {
      for (int t = 0; t < 4; ++t) {
        const bool ta = (t & 1) != 0, tb = (t & 2) != 0;
        const float beta = t == 3 ? 0.75f : 0.0f;
        GemmProblem p(dtype, s.m, s.n, s.k, ta, tb, 1.25f, beta, t == 2 ? 5 : 0, seed++);
        HostMatrix on_gpu = p.c, on_cpu = p.c;
        Status st = p.Run(*cuda, &on_gpu);
        ASSERT_TRUE(st.ok()) << p.Describe() << ": " << st.message();
        st = p.Run(*cpu, &on_cpu);
        ASSERT_TRUE(st.ok()) << p.Describe() << ": " << st.message();
        int bad = 0;
        for (int64_t i = 0; i < s.m; ++i) {
          for (int64_t j = 0; j < on_gpu.ld; ++j) {
            const double g = on_gpu.Get(i, j), c = on_cpu.Get(i, j);
            // Two fp32 accumulations in different orders, each rounded once:
            // allow the tolerance twice over, and let the absolute part grow
            // like the random walk of fp32 rounding errors, √K.
            const double atol = tol.atol * std::max(1.0, std::sqrt(s.k / 64.0));
            const double limit = 2 * (atol + tol.rtol * std::fabs(c));
            if (!(std::fabs(g - c) <= limit) && bad++ < 3) {
              ADD_FAILURE() << p.Describe() << ": C(" << i << "," << j << ") cuda " << g << " cpu " << c;
            }
          }
        }
      }
    }
  }
}

TEST(CudaGemm, RejectsInvalidArgumentsWithoutLaunching) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  std::unique_ptr<Backend> cuda;
  ASSERT_TRUE(MakeBackend("cuda", &cuda).ok());
  GemmArgs g;
  g.m = g.n = g.k = 4;
  g.lda = 2;  // < K
  g.ldb = g.ldc = 4;
  const Status s = cuda->Gemm(g);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "lda=2")) << s.message();
  EXPECT_TRUE(cuda->Synchronize().ok());
}

TEST(CudaBackend, OutOfMemoryIsAStatusNamingTheCall) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  std::unique_ptr<Backend> cuda;
  ASSERT_TRUE(MakeBackend("cuda", &cuda).ok());
  DeviceBuffer huge;
  const Status s = cuda->AllocateBuffer(size_t{1} << 50, &huge);  // 1 PiB
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "cudaMalloc")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "cudaErrorMemoryAllocation")) << s.message();
  // The failure must not poison later work on the backend.
  DeviceBuffer small;
  EXPECT_TRUE(cuda->AllocateBuffer(1024, &small).ok());
  EXPECT_TRUE(cuda->Synchronize().ok());
}

TEST(CudaBackend, OutOfRangeDeviceIsRejected) {
  std::string why;
  if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  BackendOptions options;
  options.cuda_device = 1000;
  std::unique_ptr<Backend> cuda;
  const Status s = MakeBackend("cuda", options, &cuda);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(Contains(s.message(), "device 1000")) << s.message();
}

}  // namespace
}  // namespace fleetsim::kernels
