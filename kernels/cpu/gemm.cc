// GEMM on the CPU with Eigen.
//
// Why Eigen and not a loop: the calibrator and the live executor run this
// backend on machines without a GPU, and the sizes of real layers (4096² and
// up) take minutes with a naive loop. Eigen's blocked GEMM is within a small
// factor of a vendor BLAS and is already a dependency.
//
// How: Eigen::Map views the caller's row-major buffers with their leading
// dimension as the outer stride, so fp32 operands are never copied. fp16 and
// bf16 operands are widened into dense fp32 scratch matrices first; the
// product runs in fp32 and C is narrowed once with round-to-nearest-even,
// matching what cuBLAS does with CUBLAS_COMPUTE_32F.
#include "kernels/cpu/gemm.h"

#include <Eigen/Core>
#include <cstdint>

#include "kernels/cpu/half.h"

namespace fleetsim::kernels {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstView = Eigen::Map<const RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;
using View = Eigen::Map<RowMatrix, Eigen::Unaligned, Eigen::OuterStride<>>;

// C = alpha·op(A)·op(B) + beta·C on fp32 views; BLAS semantics for beta == 0
// (C not read).
void GemmFp32(const ConstView& a, bool transpose_a, const ConstView& b, bool transpose_b,
              float alpha, float beta, View c) {
  auto run = [&](const auto& op_a, const auto& op_b) {
    if (beta == 0.0f) {
      c.noalias() = alpha * (op_a * op_b);
    } else {
      if (beta != 1.0f) c *= beta;
      c.noalias() += alpha * (op_a * op_b);
    }
  };
  if (!transpose_a && !transpose_b) {
    run(a, b);
  } else if (!transpose_a) {
    run(a, b.transpose());
  } else if (!transpose_b) {
    run(a.transpose(), b);
  } else {
    run(a.transpose(), b.transpose());
  }
}

// Dense fp32 copy of a rows×cols 16-bit matrix stored with leading dimension ld.
// Widens a rows × cols 16-bit matrix (leading dimension ld) into `out`,
// contiguous, and returns a view of it.
template <float (*Widen)(uint16_t)>
ConstView WidenInto(const void* data, int64_t rows, int64_t cols, int64_t ld, std::vector<float>* out) {
  const auto* p = static_cast<const uint16_t*>(data);
  if (out->size() < static_cast<size_t>(rows * cols)) out->resize(static_cast<size_t>(rows * cols));
  float* w = out->data();
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* row = p + r * ld;
    for (int64_t j = 0; j < cols; ++j) w[r * cols + j] = Widen(row[j]);
  }
  return ConstView(w, rows, cols, Eigen::OuterStride<>(cols));
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void Gemm16(const GemmArgs& g, int64_t a_rows, int64_t a_cols, int64_t b_rows, int64_t b_cols,
            GemmScratch* scratch) {
  const ConstView a = WidenInto<Widen>(g.a, a_rows, a_cols, g.lda, &scratch->a);
  const ConstView b = WidenInto<Widen>(g.b, b_rows, b_cols, g.ldb, &scratch->b);
  // With beta == 0 the old C must not be read (it may hold NaN).
  if (g.beta == 0.0f) {
    if (scratch->c.size() < static_cast<size_t>(g.m * g.n)) scratch->c.resize(static_cast<size_t>(g.m * g.n));
  } else {
    WidenInto<Widen>(g.c, g.m, g.n, g.ldc, &scratch->c);
  }
  View c(scratch->c.data(), g.m, g.n, Eigen::OuterStride<>(g.n));
  GemmFp32(a, g.transpose_a, b, g.transpose_b, g.alpha, g.beta, c);
  auto* out = static_cast<uint16_t*>(g.c);
  for (int64_t r = 0; r < g.m; ++r) {
    for (int64_t j = 0; j < g.n; ++j) out[r * g.ldc + j] = Narrow(c(r, j));
  }
}

void ScaleC(const GemmArgs& g) {
  for (int64_t r = 0; r < g.m; ++r) {
    for (int64_t j = 0; j < g.n; ++j) {
      const int64_t i = r * g.ldc + j;
      switch (g.dtype) {
        case DType::kFp32: {
          float* c = static_cast<float*>(g.c);
          c[i] = g.beta == 0.0f ? 0.0f : g.beta * c[i];
          break;
        }
        case DType::kFp16: {
          uint16_t* c = static_cast<uint16_t*>(g.c);
          c[i] = FloatToHalf(g.beta == 0.0f ? 0.0f : g.beta * HalfToFloat(c[i]));
          break;
        }
        case DType::kBf16: {
          uint16_t* c = static_cast<uint16_t*>(g.c);
          c[i] = FloatToBf16(g.beta == 0.0f ? 0.0f : g.beta * Bf16ToFloat(c[i]));
          break;
        }
      }
    }
  }
}

}  // namespace

Status CpuGemm(const GemmArgs& g, GemmScratch* scratch) {
  GemmScratch local;
  if (scratch == nullptr) scratch = &local;
  FLEETSIM_RETURN_IF_ERROR(ValidateGemmArgs(g));
  if (g.m == 0 || g.n == 0) return Status::Ok();
  if (g.k == 0) {
    ScaleC(g);
    return Status::Ok();
  }
  // Shapes of A and B as stored.
  const int64_t a_rows = g.transpose_a ? g.k : g.m;
  const int64_t a_cols = g.transpose_a ? g.m : g.k;
  const int64_t b_rows = g.transpose_b ? g.n : g.k;
  const int64_t b_cols = g.transpose_b ? g.k : g.n;
  switch (g.dtype) {
    case DType::kFp32: {
      const ConstView a(static_cast<const float*>(g.a), a_rows, a_cols, Eigen::OuterStride<>(g.lda));
      const ConstView b(static_cast<const float*>(g.b), b_rows, b_cols, Eigen::OuterStride<>(g.ldb));
      GemmFp32(a, g.transpose_a, b, g.transpose_b, g.alpha, g.beta,
               View(static_cast<float*>(g.c), g.m, g.n, Eigen::OuterStride<>(g.ldc)));
      break;
    }
    case DType::kFp16:
      Gemm16<HalfToFloat, FloatToHalf>(g, a_rows, a_cols, b_rows, b_cols, scratch);
      break;
    case DType::kBf16:
      Gemm16<Bf16ToFloat, FloatToBf16>(g, a_rows, a_cols, b_rows, b_cols, scratch);
      break;
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels
