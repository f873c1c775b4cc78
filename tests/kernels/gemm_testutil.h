// Host-side helpers shared by the GEMM tests: matrices in any kernel dtype,
// seeded random fill, and the naive triple-loop reference in double.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/half.h"
#include "sim/engine/rng.h"

namespace fleetsim::kernels::testing {

// A rows×cols row-major matrix with leading dimension ld, stored as `dtype`.
// Padding elements (columns cols..ld-1) hold a sentinel so tests can check
// that an op never writes past the logical columns.
struct HostMatrix {
  DType dtype = DType::kFp32;
  int64_t rows = 0, cols = 0, ld = 0;
  std::vector<unsigned char> bytes;

  static constexpr float kSentinel = 4224.0f;  // 2^12 + 2^7: exact in fp16, bf16, fp32

  HostMatrix(DType t, int64_t r, int64_t c, int64_t leading)
      : dtype(t), rows(r), cols(c), ld(leading),
        bytes(static_cast<size_t>(std::max<int64_t>(r * leading, 1)) * DTypeSize(t)) {
    for (int64_t i = 0; i < r * leading; ++i) SetFlat(i, kSentinel);
  }

  float GetFlat(int64_t i) const {
    if (dtype == DType::kFp32) {
      float f;
      std::memcpy(&f, bytes.data() + i * 4, 4);
      return f;
    }
    uint16_t h;
    std::memcpy(&h, bytes.data() + i * 2, 2);
    return dtype == DType::kFp16 ? HalfToFloat(h) : Bf16ToFloat(h);
  }
  // Stores v rounded to the matrix's dtype.
  void SetFlat(int64_t i, float v) {
    if (dtype == DType::kFp32) {
      std::memcpy(bytes.data() + i * 4, &v, 4);
      return;
    }
    const uint16_t h = dtype == DType::kFp16 ? FloatToHalf(v) : FloatToBf16(v);
    std::memcpy(bytes.data() + i * 2, &h, 2);
  }
  float Get(int64_t r, int64_t c) const { return GetFlat(r * ld + c); }
  void Set(int64_t r, int64_t c, float v) { SetFlat(r * ld + c, v); }

  // Uniform values in [-1, 1), rounded to dtype, in the logical columns.
  void FillRandom(Rng& rng) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) Set(r, c, static_cast<float>(2.0 * rng.Uniform() - 1.0));
    }
  }
  void Fill(float v) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) Set(r, c, v);
    }
  }
  size_t size_bytes() const { return bytes.size(); }
};

// alpha·op(A)·op(B) + beta·C in double from the stored (already rounded)
// values: the naive loop every GEMM is judged against. With beta == 0 C is
// not read, as in BLAS.
inline std::vector<double> NaiveGemm(const GemmArgs& g, const HostMatrix& a, const HostMatrix& b,
                                     const HostMatrix& c_in) {
  std::vector<double> out(static_cast<size_t>(g.m * g.n));
  for (int64_t i = 0; i < g.m; ++i) {
    for (int64_t j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < g.k; ++p) {
        const double av = g.transpose_a ? a.Get(p, i) : a.Get(i, p);
        const double bv = g.transpose_b ? b.Get(j, p) : b.Get(p, j);
        sum += av * bv;
      }
      double v = static_cast<double>(g.alpha) * sum;
      if (g.beta != 0.0f) v += static_cast<double>(g.beta) * c_in.Get(i, j);
      out[static_cast<size_t>(i * g.n + j)] = v;
    }
  }
  return out;
}

// |got − ref| allowed: atol + rtol·|ref|. rtol covers the final rounding to
// the storage type (2^-8 relative for bf16, 2^-11 for fp16) with a factor 2
// of slack for the fp32 accumulation order; atol covers results near zero
// where fp32 cancellation dominates.
struct Tolerance {
  double atol;
  double rtol;
};

inline Tolerance GemmTolerance(DType t) {
  switch (t) {
    case DType::kFp32:
      return {1e-4, 1e-5};
    case DType::kFp16:
      return {1e-4, 1.0 / 1024};
    case DType::kBf16:
      return {1e-4, 1.0 / 128};
  }
  return {0, 0};
}

// Allocates a device copy of `m` on `backend`.
inline Status Upload(Backend& backend, const HostMatrix& m, DeviceBuffer* out) {
  FLEETSIM_RETURN_IF_ERROR(backend.AllocateBuffer(m.size_bytes(), out));
  return backend.CopyToDevice(out->data(), m.bytes.data(), m.size_bytes());
}

inline Status Download(Backend& backend, const DeviceBuffer& buf, HostMatrix* m) {
  return backend.CopyToHost(m->bytes.data(), buf.data(), m->size_bytes());
}

// A GEMM problem with host inputs generated from `seed`, packed with the
// given extra padding on every leading dimension.
struct GemmProblem {
  GemmArgs args;  // pointers unset; dims, flags, scalars, leading dims set
  HostMatrix a, b, c;

  GemmProblem(DType dtype, int64_t m, int64_t n, int64_t k, bool ta, bool tb, float alpha, float beta,
              int64_t pad, uint64_t seed)
      : a(dtype, ta ? k : m, ta ? m : k, (ta ? m : k) + pad),
        b(dtype, tb ? n : k, tb ? k : n, (tb ? k : n) + pad),
        c(dtype, m, n, n + pad) {
    args.m = m;
    args.n = n;
    args.k = k;
    args.dtype = dtype;
    args.transpose_a = ta;
    args.transpose_b = tb;
    args.alpha = alpha;
    args.beta = beta;
    args.lda = a.ld;
    args.ldb = b.ld;
    args.ldc = c.ld;
    Rng rng = Rng::ForStream(seed, 0, "gemm_test");
    a.FillRandom(rng);
    b.FillRandom(rng);
    c.FillRandom(rng);
  }

  std::string Describe() const {
    return std::string(DTypeName(args.dtype)) + " m=" + std::to_string(args.m) + " n=" +
           std::to_string(args.n) + " k=" + std::to_string(args.k) + (args.transpose_a ? " A^T" : "") +
           (args.transpose_b ? " B^T" : "") + " alpha=" + std::to_string(args.alpha) +
           " beta=" + std::to_string(args.beta) + " pad=" + std::to_string(c.ld - c.cols);
  }

  // Runs the problem on `backend`; the result lands in *c_out (same layout
  // as c, padding included).
  Status Run(Backend& backend, HostMatrix* c_out) const {
    DeviceBuffer da, db, dc;
    FLEETSIM_RETURN_IF_ERROR(Upload(backend, a, &da));
    FLEETSIM_RETURN_IF_ERROR(Upload(backend, b, &db));
    FLEETSIM_RETURN_IF_ERROR(Upload(backend, c, &dc));
    GemmArgs g = args;
    g.a = da.data();
    g.b = db.data();
    g.c = dc.data();
    FLEETSIM_RETURN_IF_ERROR(backend.Gemm(g));
    FLEETSIM_RETURN_IF_ERROR(backend.Synchronize());
    *c_out = c;
    return Download(backend, dc, c_out);
  }
};

}  // namespace fleetsim::kernels::testing
