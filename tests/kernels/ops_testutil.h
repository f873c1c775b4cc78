// Host-side helpers for the op tests: run each op on any backend from host
// tensors (upload, call, download), naive double-precision references, and
// the atol + rtol·|ref| comparison. Tensors are HostMatrix (gemm_testutil.h):
// rows × cols with a row stride `ld` whose padding holds a sentinel, so a
// test also sees writes past the logical columns.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "sim/engine/rng.h"
#include "tests/kernels/gemm_testutil.h"

namespace fleetsim::kernels::testing {

// Tolerance of one backend against a double-precision reference computed
// from the same stored inputs: the output is rounded once to its storage
// type (2^-11 relative for fp16, 2^-8 for bf16, with slack for fp32 sums).
inline Tolerance OpTolerance(DType t) {
  switch (t) {
    case DType::kFp32:
      return {2e-5, 2e-5};
    case DType::kFp16:
      return {1e-4, 1.0 / 1024};
    case DType::kBf16:
      return {1e-4, 1.0 / 128};
  }
  return {0, 0};
}

// Counts elements of `got` outside atol + rtol·|ref| of `ref` (logical
// columns), and padding elements of `got` that lost the sentinel. Reports
// the first few through ADD_FAILURE with `what`.
inline int CompareTensors(const HostMatrix& got, const std::vector<double>& ref, Tolerance tol,
                          const std::string& what) {
  int bad = 0;
  for (int64_t r = 0; r < got.rows; ++r) {
    for (int64_t c = 0; c < got.ld; ++c) {
      const double g = got.Get(r, c);
      if (c >= got.cols) {
        if (g != HostMatrix::kSentinel && bad++ < 3) {
          ADD_FAILURE() << what << ": wrote padding (" << r << "," << c << ") = " << g;
        }
        continue;
      }
      const double e = ref[static_cast<size_t>(r * got.cols + c)];
      if (!(std::fabs(g - e) <= tol.atol + tol.rtol * std::fabs(e)) && bad++ < 3) {
        ADD_FAILURE() << what << ": (" << r << "," << c << ") = " << g << ", reference " << e;
      }
    }
  }
  return bad;
}

// The logical values of m as doubles, row-major without padding.
inline std::vector<double> Values(const HostMatrix& m) {
  std::vector<double> v;
  v.reserve(static_cast<size_t>(m.rows * m.cols));
  for (int64_t r = 0; r < m.rows; ++r) {
    for (int64_t c = 0; c < m.cols; ++c) v.push_back(m.Get(r, c));
  }
  return v;
}

inline Status UploadInts(Backend& backend, const std::vector<int32_t>& v, DeviceBuffer* out) {
  const size_t bytes = v.size() * sizeof(int32_t);
  FLEETSIM_RETURN_IF_ERROR(backend.AllocateBuffer(bytes, out));
  return backend.CopyToDevice(out->data(), v.data(), bytes);
}

// ---- Runners: args carry sizes and strides; pointers are filled in here. ----

inline Status RunRmsNorm(Backend& b, RmsNormArgs args, const HostMatrix& x, const HostMatrix& weight,
                         HostMatrix* out) {
  DeviceBuffer dx, dw, dout;
  FLEETSIM_RETURN_IF_ERROR(Upload(b, x, &dx));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, weight, &dw));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, *out, &dout));
  args.x = dx.data();
  args.weight = dw.data();
  args.out = dout.data();
  FLEETSIM_RETURN_IF_ERROR(b.RmsNorm(args));
  FLEETSIM_RETURN_IF_ERROR(b.Synchronize());
  return Download(b, dout, out);
}

inline Status RunSiluMul(Backend& b, SiluMulArgs args, const HostMatrix& gate, const HostMatrix& up,
                         HostMatrix* out) {
  DeviceBuffer dg, du, dout;
  FLEETSIM_RETURN_IF_ERROR(Upload(b, gate, &dg));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, up, &du));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, *out, &dout));
  args.gate = dg.data();
  args.up = du.data();
  args.out = dout.data();
  FLEETSIM_RETURN_IF_ERROR(b.SiluMul(args));
  FLEETSIM_RETURN_IF_ERROR(b.Synchronize());
  return Download(b, dout, out);
}

inline Status RunResidualAdd(Backend& b, ResidualAddArgs args, const HostMatrix& x, const HostMatrix& y,
                             HostMatrix* out) {
  DeviceBuffer dx, dy, dout;
  FLEETSIM_RETURN_IF_ERROR(Upload(b, x, &dx));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, y, &dy));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, *out, &dout));
  args.a = dx.data();
  args.b = dy.data();
  args.out = dout.data();
  FLEETSIM_RETURN_IF_ERROR(b.ResidualAdd(args));
  FLEETSIM_RETURN_IF_ERROR(b.Synchronize());
  return Download(b, dout, out);
}

inline Status RunEmbedding(Backend& b, EmbeddingArgs args, const std::vector<int32_t>& ids,
                           const HostMatrix& table, HostMatrix* out) {
  DeviceBuffer did, dt, dout;
  FLEETSIM_RETURN_IF_ERROR(UploadInts(b, ids, &did));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, table, &dt));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, *out, &dout));
  args.token_ids = static_cast<const int32_t*>(did.data());
  args.table = dt.data();
  args.out = dout.data();
  FLEETSIM_RETURN_IF_ERROR(b.Embedding(args));
  FLEETSIM_RETURN_IF_ERROR(b.Synchronize());
  return Download(b, dout, out);
}

// Rotates *x in place.
inline Status RunRope(Backend& b, RopeArgs args, const std::vector<int32_t>& positions, HostMatrix* x) {
  DeviceBuffer dp, dx;
  FLEETSIM_RETURN_IF_ERROR(UploadInts(b, positions, &dp));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, *x, &dx));
  args.positions = static_cast<const int32_t*>(dp.data());
  args.x = dx.data();
  FLEETSIM_RETURN_IF_ERROR(b.Rope(args));
  FLEETSIM_RETURN_IF_ERROR(b.Synchronize());
  return Download(b, dx, x);
}

inline Status RunAttentionPrefill(Backend& b, AttentionPrefillArgs args, const std::vector<int32_t>& seq_starts,
                                  const HostMatrix& q, const HostMatrix& k, const HostMatrix& v,
                                  HostMatrix* out) {
  DeviceBuffer ds, dq, dk, dv, dout;
  FLEETSIM_RETURN_IF_ERROR(UploadInts(b, seq_starts, &ds));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, q, &dq));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, k, &dk));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, v, &dv));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, *out, &dout));
  args.seq_starts = static_cast<const int32_t*>(ds.data());
  args.q = dq.data();
  args.k = dk.data();
  args.v = dv.data();
  args.out = dout.data();
  FLEETSIM_RETURN_IF_ERROR(b.AttentionPrefill(args));
  FLEETSIM_RETURN_IF_ERROR(b.Synchronize());
  return Download(b, dout, out);
}

// k_cache and v_cache are (num_blocks·block_size) × (num_kv_heads·head_dim)
// matrices without padding (the cache layout).
inline Status RunAttentionDecode(Backend& b, AttentionDecodeArgs args, const HostMatrix& q,
                                 const HostMatrix& k_cache, const HostMatrix& v_cache,
                                 const std::vector<int32_t>& block_tables,
                                 const std::vector<int32_t>& context_lens, HostMatrix* out) {
  DeviceBuffer dq, dk, dv, dbt, dcl, dout;
  FLEETSIM_RETURN_IF_ERROR(Upload(b, q, &dq));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, k_cache, &dk));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, v_cache, &dv));
  FLEETSIM_RETURN_IF_ERROR(UploadInts(b, block_tables, &dbt));
  FLEETSIM_RETURN_IF_ERROR(UploadInts(b, context_lens, &dcl));
  FLEETSIM_RETURN_IF_ERROR(Upload(b, *out, &dout));
  args.q = dq.data();
  args.k_cache = dk.data();
  args.v_cache = dv.data();
  args.block_tables = static_cast<const int32_t*>(dbt.data());
  args.context_lens = static_cast<const int32_t*>(dcl.data());
  args.out = dout.data();
  FLEETSIM_RETURN_IF_ERROR(b.AttentionDecode(args));
  FLEETSIM_RETURN_IF_ERROR(b.Synchronize());
  return Download(b, dout, out);
}


// ---- Problems shared by the CPU and CUDA tests ------------------------------

// A packed prefill batch with random Q/K/V (uniform in [-1, 1)), sequence
// lengths `lens`, and `pad` extra elements on every row stride.
struct PrefillProblem {
  AttentionPrefillArgs args;  // pointers unset
  std::vector<int32_t> seq_starts;
  HostMatrix q, k, v, out;

  PrefillProblem(DType dtype, const std::vector<int32_t>& lens, int64_t num_heads, int64_t num_kv_heads,
                 int64_t head_dim, int64_t pad, uint64_t seed)
      : seq_starts(Starts(lens)),
        q(dtype, seq_starts.back(), num_heads * head_dim, num_heads * head_dim + pad),
        k(dtype, seq_starts.back(), num_kv_heads * head_dim, num_kv_heads * head_dim + pad),
        v(dtype, seq_starts.back(), num_kv_heads * head_dim, num_kv_heads * head_dim + 2 * pad),
        out(dtype, seq_starts.back(), num_heads * head_dim, num_heads * head_dim + pad) {
    args.num_seqs = static_cast<int64_t>(lens.size());
    args.num_tokens = seq_starts.back();
    args.num_heads = num_heads;
    args.num_kv_heads = num_kv_heads;
    args.head_dim = head_dim;
    args.dtype = dtype;
    args.q_stride = q.ld;
    args.k_stride = k.ld;
    args.v_stride = v.ld;
    args.out_stride = out.ld;
    Rng rng = Rng::ForStream(seed, 0, "attention_prefill_test");
    q.FillRandom(rng);
    k.FillRandom(rng);
    v.FillRandom(rng);
  }

  static std::vector<int32_t> Starts(const std::vector<int32_t>& lens) {
    std::vector<int32_t> starts{0};
    for (int32_t n : lens) starts.push_back(starts.back() + n);
    return starts;
  }

  Status Run(Backend& b, HostMatrix* result) const {
    *result = out;
    return RunAttentionPrefill(b, args, seq_starts, q, k, v, result);
  }

  std::string Describe() const {
    return std::string(DTypeName(args.dtype)) + " seqs=" + std::to_string(args.num_seqs) +
           " tokens=" + std::to_string(args.num_tokens) + " heads=" + std::to_string(args.num_heads) +
           "/" + std::to_string(args.num_kv_heads) + " head_dim=" + std::to_string(args.head_dim);
  }
};

// A decode batch over a paged cache. Each sequence's context K/V are random;
// its blocks are placed in the cache in an order drawn from `seed` (or in
// order when `shuffle` is false), with one spare unused block of garbage.
struct DecodeProblem {
  AttentionDecodeArgs args;  // pointers unset
  std::vector<int32_t> context_lens, block_tables;
  HostMatrix q, k_cache, v_cache, out;

  DecodeProblem(DType dtype, const std::vector<int32_t>& lens, int64_t num_heads, int64_t num_kv_heads,
                int64_t head_dim, int64_t block_size, bool shuffle, uint64_t seed)
      : context_lens(lens),
        q(dtype, static_cast<int64_t>(lens.size()), num_heads * head_dim, num_heads * head_dim + 1),
        k_cache(dtype, CacheSlots(lens, block_size), num_kv_heads * head_dim, num_kv_heads * head_dim),
        v_cache(dtype, CacheSlots(lens, block_size), num_kv_heads * head_dim, num_kv_heads * head_dim),
        out(dtype, static_cast<int64_t>(lens.size()), num_heads * head_dim, num_heads * head_dim + 3) {
    int64_t max_blocks = 0;
    for (int32_t n : lens) max_blocks = std::max<int64_t>(max_blocks, (n + block_size - 1) / block_size);
    const int64_t num_blocks = k_cache.rows / block_size;
    args.num_seqs = static_cast<int64_t>(lens.size());
    args.num_heads = num_heads;
    args.num_kv_heads = num_kv_heads;
    args.head_dim = head_dim;
    args.block_size = block_size;
    args.num_blocks = num_blocks;
    args.max_blocks_per_seq = max_blocks;
    args.dtype = dtype;
    args.q_stride = q.ld;
    args.out_stride = out.ld;
    args.block_table_stride = max_blocks + 2;
    // A permutation of the blocks (Fisher–Yates with the project's RNG).
    Rng rng = Rng::ForStream(seed, 0, "attention_decode_test");
    std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
    for (int64_t i = 0; i < num_blocks; ++i) perm[i] = static_cast<int32_t>(i);
    if (shuffle) {
      for (int64_t i = num_blocks - 1; i > 0; --i) std::swap(perm[i], perm[static_cast<size_t>(rng.Below(static_cast<uint64_t>(i + 1)))]);
    }
    // Unused table entries hold -1: reading one would be a bug the sentinel
    // makes loud (out-of-range slot).
    block_tables.assign(static_cast<size_t>(args.num_seqs * args.block_table_stride), -1);
    int64_t next = 0;
    for (int64_t s = 0; s < args.num_seqs; ++s) {
      for (int64_t j = 0; j < (lens[s] + block_size - 1) / block_size; ++j) {
        block_tables[s * args.block_table_stride + j] = perm[next++];
      }
    }
    q.FillRandom(rng);
    k_cache.FillRandom(rng);
    v_cache.FillRandom(rng);
  }

  // Slots for every sequence's blocks plus one spare block.
  static int64_t CacheSlots(const std::vector<int32_t>& lens, int64_t block_size) {
    int64_t blocks = 1;
    for (int32_t n : lens) blocks += (n + block_size - 1) / block_size;
    return blocks * block_size;
  }

  // The cache row holding token t of sequence s.
  int64_t Slot(int64_t s, int64_t t) const {
    return block_tables[s * args.block_table_stride + t / args.block_size] * args.block_size +
           t % args.block_size;
  }

  Status Run(Backend& b, HostMatrix* result) const {
    *result = out;
    return RunAttentionDecode(b, args, q, k_cache, v_cache, block_tables, context_lens, result);
  }

  std::string Describe() const {
    return std::string(DTypeName(args.dtype)) + " seqs=" + std::to_string(args.num_seqs) + " heads=" +
           std::to_string(args.num_heads) + "/" + std::to_string(args.num_kv_heads) + " head_dim=" +
           std::to_string(args.head_dim) + " block_size=" + std::to_string(args.block_size);
  }
};

// ---- Naive double-precision references ------------------------------------

// Softmax(q·Kᵀ/√d)·V for one query row over `keys` (rows of k and v given by
// index), all in double.
inline void NaiveAttendRow(const HostMatrix& q, int64_t q_row, int64_t q_col, const HostMatrix& k,
                           const HostMatrix& v, const std::vector<int64_t>& key_rows, int64_t kv_col,
                           int64_t head_dim, double* out) {
  std::vector<double> scores;
  double max_score = -INFINITY;
  for (int64_t r : key_rows) {
    double dot = 0;
    for (int64_t d = 0; d < head_dim; ++d) dot += q.Get(q_row, q_col + d) * k.Get(r, kv_col + d);
    scores.push_back(dot / std::sqrt(static_cast<double>(head_dim)));
    max_score = std::max(max_score, scores.back());
  }
  double denom = 0;
  for (double& s : scores) {
    s = std::exp(s - max_score);
    denom += s;
  }
  for (int64_t d = 0; d < head_dim; ++d) {
    double acc = 0;
    for (size_t j = 0; j < key_rows.size(); ++j) acc += scores[j] * v.Get(key_rows[j], kv_col + d);
    out[d] = key_rows.empty() ? 0.0 : acc / denom;
  }
}

inline std::vector<double> NaiveAttentionPrefill(const AttentionPrefillArgs& a,
                                                 const std::vector<int32_t>& seq_starts,
                                                 const HostMatrix& q, const HostMatrix& k,
                                                 const HostMatrix& v) {
  const int64_t width = a.num_heads * a.head_dim;
  std::vector<double> out(static_cast<size_t>(a.num_tokens * width));
  const int64_t group = a.num_heads / a.num_kv_heads;
  for (int64_t s = 0; s < a.num_seqs; ++s) {
    for (int64_t t = seq_starts[s]; t < seq_starts[s + 1]; ++t) {
      std::vector<int64_t> keys;
      for (int64_t j = seq_starts[s]; j <= t; ++j) keys.push_back(j);
      for (int64_t h = 0; h < a.num_heads; ++h) {
        NaiveAttendRow(q, t, h * a.head_dim, k, v, keys, (h / group) * a.head_dim, a.head_dim,
                       &out[static_cast<size_t>(t * width + h * a.head_dim)]);
      }
    }
  }
  return out;
}

inline std::vector<double> NaiveAttentionDecode(const AttentionDecodeArgs& a, const HostMatrix& q,
                                                const HostMatrix& k_cache, const HostMatrix& v_cache,
                                                const std::vector<int32_t>& block_tables,
                                                const std::vector<int32_t>& context_lens) {
  const int64_t width = a.num_heads * a.head_dim;
  std::vector<double> out(static_cast<size_t>(a.num_seqs * width));
  const int64_t group = a.num_heads / a.num_kv_heads;
  for (int64_t s = 0; s < a.num_seqs; ++s) {
    std::vector<int64_t> slots;
    for (int64_t t = 0; t < context_lens[s]; ++t) {
      slots.push_back(block_tables[s * a.block_table_stride + t / a.block_size] * a.block_size +
                      t % a.block_size);
    }
    for (int64_t h = 0; h < a.num_heads; ++h) {
      NaiveAttendRow(q, s, h * a.head_dim, k_cache, v_cache, slots, (h / group) * a.head_dim,
                     a.head_dim, &out[static_cast<size_t>(s * width + h * a.head_dim)]);
    }
  }
  return out;
}

}  // namespace fleetsim::kernels::testing
