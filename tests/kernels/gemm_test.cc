// The CPU GEMM (the reference for every backend) against a naive triple loop
// in double, over every dtype, transposes, non-square shapes and padded
// leading dimensions; plus the argument contract shared by all backends.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>

#include "kernels/backend.h"
#include "kernels/cpu/gemm.h"
#include "tests/kernels/gemm_testutil.h"

namespace fleetsim::kernels {

// Readable parameter values in gtest output ("bf16", not "4-byte object").
void PrintTo(DType t, std::ostream* os) { *os << DTypeName(t); }

namespace {

using testing::GemmProblem;
using testing::HostMatrix;

struct Shape {
  int64_t m, n, k;
};

// Non-square on purpose: a swapped M/N or a wrong leading dimension cannot
// hide behind symmetry. 257 and 65 cross Eigen's block sizes.
const Shape kShapes[] = {{1, 1, 1}, {7, 5, 3}, {3, 7, 1}, {16, 16, 16}, {33, 17, 65},
                         {64, 1, 128}, {1, 96, 40}, {50, 70, 257}};

// Compares got (layout of `expected_layout`) with ref; also checks that the
// padding columns kept their sentinel. Returns the number of mismatches
// (reported via ADD_FAILURE, at most a few).
int CompareWithReference(const GemmProblem& p, const HostMatrix& got, const std::vector<double>& ref) {
  const testing::Tolerance tol = testing::GemmTolerance(p.args.dtype);
  int bad = 0;
  for (int64_t i = 0; i < p.args.m; ++i) {
    for (int64_t j = 0; j < got.ld; ++j) {
      const double g = got.Get(i, j);
      if (j >= p.args.n) {
        if (g != HostMatrix::kSentinel && bad++ < 3) {
          ADD_FAILURE() << p.Describe() << ": wrote padding C(" << i << "," << j << ") = " << g;
        }
        continue;
      }
      const double r = ref[static_cast<size_t>(i * p.args.n + j)];
      if (!(std::fabs(g - r) <= tol.atol + tol.rtol * std::fabs(r)) && bad++ < 3) {
        ADD_FAILURE() << p.Describe() << ": C(" << i << "," << j << ") = " << g << ", reference " << r;
      }
    }
  }
  return bad;
}

class CpuGemmTest : public ::testing::TestWithParam<std::tuple<DType, bool, bool>> {};

TEST_P(CpuGemmTest, MatchesNaiveLoop) {
  const auto [dtype, ta, tb] = GetParam();
  std::unique_ptr<Backend> cpu;
  ASSERT_TRUE(MakeBackend("cpu", &cpu).ok());
  uint64_t seed = 1;
  for (const Shape& s : kShapes) {
    for (const auto& [alpha, beta, pad] : {std::tuple<float, float, int64_t>{1.0f, 0.0f, 0},
                                           std::tuple<float, float, int64_t>{0.5f, -2.0f, 3}}) {
      GemmProblem p(dtype, s.m, s.n, s.k, ta, tb, alpha, beta, pad, seed++);
      HostMatrix got = p.c;
      const Status st = p.Run(*cpu, &got);
      ASSERT_TRUE(st.ok()) << p.Describe() << ": " << st.message();
      EXPECT_EQ(CompareWithReference(p, got, testing::NaiveGemm(p.args, p.a, p.b, p.c)), 0);
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<std::tuple<DType, bool, bool>>& info) {
  const auto [dtype, ta, tb] = info.param;
  return std::string(DTypeName(dtype)) + (ta ? "_At" : "_A") + (tb ? "_Bt" : "_B");
}

INSTANTIATE_TEST_SUITE_P(AllDtypesAndTransposes, CpuGemmTest,
                         ::testing::Combine(::testing::Values(DType::kFp32, DType::kFp16, DType::kBf16),
                                            ::testing::Bool(), ::testing::Bool()),
                         ParamName);

TEST(CpuGemm, BetaZeroDoesNotReadC) {
  for (DType dtype : {DType::kFp32, DType::kFp16, DType::kBf16}) {
    GemmProblem p(dtype, 4, 6, 5, false, false, 1.0f, 0.0f, 0, 7);
    p.c.Fill(std::numeric_limits<float>::quiet_NaN());
    GemmArgs g = p.args;
    HostMatrix a = p.a, b = p.b, c = p.c;
    g.a = a.bytes.data();
    g.b = b.bytes.data();
    g.c = c.bytes.data();
    ASSERT_TRUE(CpuGemm(g).ok());
    const std::vector<double> ref = testing::NaiveGemm(g, a, b, c);
    for (int64_t i = 0; i < 4 * 6; ++i) {
      EXPECT_FALSE(std::isnan(c.GetFlat(i))) << DTypeName(dtype) << " element " << i;
      EXPECT_NEAR(c.GetFlat(i), ref[static_cast<size_t>(i)], 1e-2) << DTypeName(dtype);
    }
  }
}

TEST(CpuGemm, ZeroKScalesC) {
  for (DType dtype : {DType::kFp32, DType::kFp16, DType::kBf16}) {
    HostMatrix c(dtype, 2, 3, 3);
    c.Fill(1.5f);
    GemmArgs g;
    g.m = 2;
    g.n = 3;
    g.k = 0;
    g.dtype = dtype;
    g.beta = 2.0f;
    g.lda = 1;
    g.ldb = 3;
    g.ldc = 3;
    g.c = c.bytes.data();
    ASSERT_TRUE(CpuGemm(g).ok());
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(c.GetFlat(i), 3.0f) << DTypeName(dtype);
    g.beta = 0.0f;
    ASSERT_TRUE(CpuGemm(g).ok());
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(c.GetFlat(i), 0.0f) << DTypeName(dtype);
  }
}

TEST(CpuGemm, EmptyOutputIsANoOp) {
  GemmArgs g;
  g.m = 0;
  g.n = 5;
  g.k = 4;
  g.lda = 4;
  g.ldb = 5;
  g.ldc = 5;
  EXPECT_TRUE(CpuGemm(g).ok());
}

TEST(CpuGemm, RoundsOutputOnceToNearestEven) {
  // 1·1 + 2^-8·1 = 1.00390625 is exactly halfway between the bf16 values 1
  // and 1.0078125 and must round to the even one, 1 (rounding halves up
  // would give 1.0078125); 1 + 3·2^-8 is halfway between 1.0078125 and
  // 1.015625 and must round up to the even 1.015625 (truncation would not).
  HostMatrix a(DType::kBf16, 1, 2, 2), b(DType::kBf16, 2, 1, 1), c(DType::kBf16, 1, 1, 1);
  a.Set(0, 0, 1.0f);
  a.Set(0, 1, 0.00390625f);
  b.Set(0, 0, 1.0f);
  b.Set(1, 0, 1.0f);
  GemmArgs g;
  g.m = 1;
  g.n = 1;
  g.k = 2;
  g.dtype = DType::kBf16;
  g.lda = 2;
  g.ldb = 1;
  g.ldc = 1;
  g.a = a.bytes.data();
  g.b = b.bytes.data();
  g.c = c.bytes.data();
  ASSERT_TRUE(CpuGemm(g).ok());
  EXPECT_EQ(c.Get(0, 0), 1.0f);
  a.Set(0, 1, 3 * 0.00390625f);
  ASSERT_TRUE(CpuGemm(g).ok());
  EXPECT_EQ(c.Get(0, 0), 1.015625f);
}

GemmArgs ValidArgs() {
  static float buf[64];
  GemmArgs g;
  g.m = 4;
  g.n = 3;
  g.k = 5;
  g.lda = 5;
  g.ldb = 3;
  g.ldc = 3;
  g.a = buf;
  g.b = buf;
  g.c = buf + 32;
  return g;
}

TEST(ValidateGemmArgs, AcceptsConsistentArguments) {
  EXPECT_TRUE(ValidateGemmArgs(ValidArgs()).ok());
  GemmArgs g = ValidArgs();
  g.transpose_a = true;  // A stored K×M: lda >= M = 4
  g.lda = 4;
  EXPECT_TRUE(ValidateGemmArgs(g).ok());
}

TEST(ValidateGemmArgs, RejectsShortLeadingDimensionNamingIt) {
  GemmArgs g = ValidArgs();
  g.lda = 3;
  Status s = ValidateGemmArgs(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("lda=3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("(K)"), std::string::npos) << s.message();

  g = ValidArgs();
  g.transpose_b = true;  // B stored N×K: ldb >= K = 5
  g.ldb = 3;
  s = ValidateGemmArgs(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ldb=3"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("transpose_b"), std::string::npos) << s.message();

  g = ValidArgs();
  g.ldc = 2;
  s = ValidateGemmArgs(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ldc=2"), std::string::npos) << s.message();
}

TEST(ValidateGemmArgs, RejectsNegativeSizesAndNullPointers) {
  GemmArgs g = ValidArgs();
  g.k = -1;
  Status s = ValidateGemmArgs(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("k=-1"), std::string::npos) << s.message();

  g = ValidArgs();
  g.b = nullptr;
  s = ValidateGemmArgs(g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("b is null"), std::string::npos) << s.message();

  g = ValidArgs();
  g.c = nullptr;
  EXPECT_FALSE(ValidateGemmArgs(g).ok());

  // Empty output: nothing is touched, null pointers are fine.
  g = ValidArgs();
  g.n = 0;
  g.a = g.b = nullptr;
  g.c = nullptr;
  EXPECT_TRUE(ValidateGemmArgs(g).ok());
}

TEST(CpuGemm, ReturnsValidationError) {
  GemmArgs g = ValidArgs();
  g.ldc = 1;
  EXPECT_FALSE(CpuGemm(g).ok());
}

}  // namespace
}  // namespace fleetsim::kernels
