// Every CUDA op against the CPU reference on the same stored inputs, within
// atol + rtol·|ref| (twice the per-backend tolerance: both round once, maybe
// to neighbouring values). Skipped, with the reason, where no GPU is visible;
// compiled in every build, so the CUDA-less build keeps them honest.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "tests/kernels/ops_testutil.h"

namespace fleetsim::kernels {
namespace {

using testing::DecodeProblem;
using testing::HostMatrix;
using testing::PrefillProblem;

const DType kAllDTypes[] = {DType::kFp32, DType::kFp16, DType::kBf16};

testing::Tolerance CrossBackendTolerance(DType t) {
  const testing::Tolerance tol = testing::OpTolerance(t);
  return {2 * tol.atol, 2 * tol.rtol};
}

// Sets up "cuda" and "cpu" or skips the test.
class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!CudaDeviceAvailable(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    const Status s = MakeBackend("cuda", &cuda_);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(MakeBackend("cpu", &cpu_).ok());
  }

  // The CPU result as the reference for CompareTensors.
  static std::vector<double> Ref(const HostMatrix& on_cpu) { return testing::Values(on_cpu); }

  std::unique_ptr<Backend> cuda_, cpu_;
};

TEST_F(CudaOpsTest, RmsNormMatchesCpu) {
  for (DType t : kAllDTypes) {
    for (int64_t hidden : {1, 67, 4096}) {
      const int64_t rows = 9;
      HostMatrix x(t, rows, hidden, hidden + 2), w(t, 1, hidden, hidden), out(t, rows, hidden, hidden + 1);
      Rng rng = Rng::ForStream(static_cast<uint64_t>(hidden), 0, "cuda_rms_norm_test");
      x.FillRandom(rng);
      w.FillRandom(rng);
      RmsNormArgs a;
      a.rows = rows;
      a.hidden = hidden;
      a.eps = 1e-5f;
      a.dtype = t;
      a.x_stride = x.ld;
      a.out_stride = out.ld;
      HostMatrix on_gpu = out, on_cpu = out;
      Status s = testing::RunRmsNorm(*cuda_, a, x, w, &on_gpu);
      ASSERT_TRUE(s.ok()) << s.message();
      ASSERT_TRUE(testing::RunRmsNorm(*cpu_, a, x, w, &on_cpu).ok());
      EXPECT_EQ(testing::CompareTensors(on_gpu, Ref(on_cpu), CrossBackendTolerance(t),
                                        "rms_norm " + std::string(DTypeName(t)) + " hidden=" + std::to_string(hidden)),
                0);
    }
  }
}

TEST_F(CudaOpsTest, SiluMulMatchesCpu) {
  for (DType t : kAllDTypes) {
    const int64_t rows = 7, width = 1000;
    HostMatrix gate(t, rows, width, 2 * width), up(t, rows, width, width), out(t, rows, width, width + 3);
    Rng rng = Rng::ForStream(2, 0, "cuda_silu_mul_test");
    gate.FillRandom(rng);
    up.FillRandom(rng);
    SiluMulArgs a;
    a.rows = rows;
    a.width = width;
    a.dtype = t;
    a.gate_stride = gate.ld;
    a.up_stride = up.ld;
    a.out_stride = out.ld;
    HostMatrix on_gpu = out, on_cpu = out;
    Status s = testing::RunSiluMul(*cuda_, a, gate, up, &on_gpu);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(testing::RunSiluMul(*cpu_, a, gate, up, &on_cpu).ok());
    EXPECT_EQ(testing::CompareTensors(on_gpu, Ref(on_cpu), CrossBackendTolerance(t), "silu_mul"), 0)
        << DTypeName(t);
  }
}

TEST_F(CudaOpsTest, ResidualAddMatchesCpuExactly) {
  // One fp32 add rounded once to nearest even: both backends store the same bits.
  for (DType t : kAllDTypes) {
    HostMatrix x(t, 5, 300, 301), y(t, 5, 300, 300), out(t, 5, 300, 302);
    Rng rng = Rng::ForStream(3, 0, "cuda_residual_add_test");
    x.FillRandom(rng);
    y.FillRandom(rng);
    ResidualAddArgs a;
    a.rows = 5;
    a.width = 300;
    a.dtype = t;
    a.a_stride = x.ld;
    a.b_stride = y.ld;
    a.out_stride = out.ld;
    HostMatrix on_gpu = out, on_cpu = out;
    Status s = testing::RunResidualAdd(*cuda_, a, x, y, &on_gpu);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(testing::RunResidualAdd(*cpu_, a, x, y, &on_cpu).ok());
    EXPECT_EQ(testing::CompareTensors(on_gpu, Ref(on_cpu), {0, 0}, "residual_add"), 0) << DTypeName(t);
  }
}

TEST_F(CudaOpsTest, EmbeddingMatchesCpuExactly) {
  for (DType t : kAllDTypes) {
    HostMatrix table(t, 50, 96, 96), out(t, 6, 96, 100);
    Rng rng = Rng::ForStream(4, 0, "cuda_embedding_test");
    table.FillRandom(rng);
    EmbeddingArgs a;
    a.num_tokens = 6;
    a.vocab_size = 50;
    a.hidden = 96;
    a.dtype = t;
    a.out_stride = out.ld;
    const std::vector<int32_t> ids = {49, 0, 17, 17, -3, 50};  // the last two are out of range
    HostMatrix on_gpu = out, on_cpu = out;
    Status s = testing::RunEmbedding(*cuda_, a, ids, table, &on_gpu);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(testing::RunEmbedding(*cpu_, a, ids, table, &on_cpu).ok());
    EXPECT_EQ(std::memcmp(on_gpu.bytes.data(), on_cpu.bytes.data(), on_cpu.size_bytes()), 0) << DTypeName(t);
  }
}

TEST_F(CudaOpsTest, RopeMatchesCpu) {
  for (DType t : kAllDTypes) {
    const int64_t tokens = 6, heads = 8, hd = 128;
    HostMatrix x(t, tokens, heads * hd, heads * hd + 64);  // Q as a slice of a fused QKV row
    Rng rng = Rng::ForStream(5, 0, "cuda_rope_test");
    x.FillRandom(rng);
    const std::vector<int32_t> pos = {0, 1, 2, 1000, 32767, 131071};
    RopeArgs a;
    a.num_tokens = tokens;
    a.num_heads = heads;
    a.head_dim = hd;
    a.theta = 500000.0;
    a.dtype = t;
    a.x_stride = x.ld;
    HostMatrix on_gpu = x, on_cpu = x;
    Status s = testing::RunRope(*cuda_, a, pos, &on_gpu);
    ASSERT_TRUE(s.ok()) << s.message();
    ASSERT_TRUE(testing::RunRope(*cpu_, a, pos, &on_cpu).ok());
    EXPECT_EQ(testing::CompareTensors(on_gpu, Ref(on_cpu), CrossBackendTolerance(t), "rope"), 0) << DTypeName(t);
  }
}

TEST_F(CudaOpsTest, AttentionPrefillMatchesCpu) {
  struct Case {
    std::vector<int32_t> lens;
    int64_t heads, kv_heads, head_dim;
  };
  // Lengths that cross the kernel's 128-key tiles, an empty sequence, MHA,
  // GQA and MQA, and head sizes below, at and above the block width.
  const Case cases[] = {{{1, 130, 0, 7}, 8, 2, 64},
                        {{300}, 4, 4, 128},
                        {{5, 129}, 6, 1, 256},
                        {{3}, 2, 1, 24}};
  uint64_t seed = 100;
  for (DType t : kAllDTypes) {
    for (const Case& c : cases) {
      PrefillProblem p(t, c.lens, c.heads, c.kv_heads, c.head_dim, 8, seed++);
      HostMatrix on_gpu = p.out, on_cpu = p.out;
      Status s = p.Run(*cuda_, &on_gpu);
      ASSERT_TRUE(s.ok()) << p.Describe() << ": " << s.message();
      ASSERT_TRUE(p.Run(*cpu_, &on_cpu).ok());
      EXPECT_EQ(testing::CompareTensors(on_gpu, Ref(on_cpu), CrossBackendTolerance(t), p.Describe()), 0);
    }
  }
}

TEST_F(CudaOpsTest, AttentionDecodeMatchesCpu) {
  struct Case {
    std::vector<int32_t> lens;
    int64_t heads, kv_heads, head_dim, block_size;
  };
  const Case cases[] = {{{1, 17, 0, 129, 1000}, 8, 2, 128, 16},
                        {{64}, 32, 8, 64, 1},
                        {{7, 300}, 4, 1, 256, 32},
                        {{2}, 2, 2, 8, 3}};
  uint64_t seed = 200;
  for (DType t : kAllDTypes) {
    for (const Case& c : cases) {
      DecodeProblem p(t, c.lens, c.heads, c.kv_heads, c.head_dim, c.block_size, true, seed++);
      HostMatrix on_gpu = p.out, on_cpu = p.out;
      Status s = p.Run(*cuda_, &on_gpu);
      ASSERT_TRUE(s.ok()) << p.Describe() << ": " << s.message();
      ASSERT_TRUE(p.Run(*cpu_, &on_cpu).ok());
      EXPECT_EQ(testing::CompareTensors(on_gpu, Ref(on_cpu), CrossBackendTolerance(t), p.Describe()), 0);
    }
  }
}

TEST_F(CudaOpsTest, AttentionRejectsHeadDimBeyondTheKernelLimit) {
  AttentionDecodeArgs a;
  a.num_seqs = 1;
  a.num_heads = a.num_kv_heads = 1;
  a.head_dim = 1024;
  a.block_size = 16;
  a.q_stride = a.out_stride = 1024;
  static float dummy[4];
  a.q = a.out = dummy;
  a.context_lens = reinterpret_cast<const int32_t*>(dummy);
  const Status s = cuda_->AttentionDecode(a);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("head_dim=1024"), std::string::npos) << s.message();
  EXPECT_TRUE(cuda_->Synchronize().ok());
}

TEST_F(CudaOpsTest, CopyPeerBetweenTwoBackends) {
  // To device 1 when there is one, else to a second backend on device 0:
  // the copy goes through cudaMemcpyPeerAsync either way.
  std::unique_ptr<Backend> other;
  BackendOptions second;
  second.cuda_device = 1;
  if (!MakeBackend("cuda", second, &other).ok()) {
    ASSERT_TRUE(MakeBackend("cuda", &other).ok());
  }
  const size_t bytes = 1 << 20;
  DeviceBuffer a, b;
  ASSERT_TRUE(cuda_->AllocateBuffer(bytes, &a).ok());
  ASSERT_TRUE(other->AllocateBuffer(bytes, &b).ok());
  std::vector<unsigned char> in(bytes), out(bytes, 0);
  for (size_t i = 0; i < bytes; ++i) in[i] = static_cast<unsigned char>(i * 31 + 7);
  ASSERT_TRUE(cuda_->CopyToDevice(a.data(), in.data(), bytes).ok());
  ASSERT_TRUE(other->Synchronize().ok());
  const Status s = cuda_->CopyPeer(*other, b.data(), a.data(), bytes);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(cuda_->Synchronize().ok());
  ASSERT_TRUE(other->CopyToHost(out.data(), b.data(), bytes).ok());
  EXPECT_EQ(in, out);
  // Across kinds is a Status, not a crash.
  const Status cross = cuda_->CopyPeer(*cpu_, in.data(), a.data(), 16);
  ASSERT_FALSE(cross.ok());
  EXPECT_NE(cross.message().find("same kind"), std::string::npos) << cross.message();
}

}  // namespace
}  // namespace fleetsim::kernels
