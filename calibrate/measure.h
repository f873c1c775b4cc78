// The timing harness of `fleetsim calibrate`: runs one operator of the
// kernel Backend (kernels/backend.h) on one shape and reports the
// distribution of its time.
//
// Method, per shape: allocate (or reuse) operand buffers and fill them with
// deterministic small values (no NaN, no denormals: both slow some
// hardware down); run the op `warmup` times untimed (first-call costs:
// cuBLAS heuristics, page faults, instruction caches); then `repetitions`
// times, each preceded by Backend::FlushCache (operands come from memory,
// as a serving engine's weights do) and timed with Backend::TimeOnce (CUDA
// events on "cuda"). The median is the figure; min, max and the
// interquartile spread say how much to trust it.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::calibrate {

struct TimingOptions {
  int warmup = 2;          // untimed runs before the timed ones, >= 0
  int repetitions = 5;     // timed runs, >= 1
  bool flush_cache = true;  // Backend::FlushCache before every timed run
};

struct Timing {
  double median_ns = 0;
  double min_ns = 0;
  double max_ns = 0;
  // (75th - 25th percentile) / median: 0 for a perfectly steady op.
  double spread = 0;
  int repetitions = 0;
};

// OK, or a Status naming the first bad field (warmup < 0, repetitions < 1).
Status ValidateTimingOptions(const TimingOptions& options);

// Summary statistics of raw samples (ns). REQUIRES: !samples.empty().
// Percentiles by linear interpolation between order statistics.
Timing Summarize(std::vector<double> samples);

// Times `op` (which enqueues work on `backend`) as described above: op runs
// options.warmup + options.repetitions times; with options.flush_cache,
// backend.FlushCache() precedes each timed run (only those). The first error
// of op, FlushCache, TimeOnce or the post-warm-up Synchronize is returned
// as is, and *out is then left untouched; invalid options are answered
// before op runs.
Status TimeOp(kernels::Backend& backend, const std::function<Status()>& op, const TimingOptions& options,
              Timing* out);

// The value element i of every floating-point operand OpBench fills holds,
// before rounding to the operand's storage type: ((i·7919) mod 1000 − 500)
// / 4096: small (|v| < 0.125), each of the 1000 levels once per period of
// 1000 (mean −2^-13), never subnormal. Public so that a test (or a
// suspicious user) can recompute an op's result from its inputs.
// REQUIRES: i >= 0.
float BenchFillValue(int64_t i);

// The block table OpBench::AttentionDecode uses, flattened: a deterministic
// permutation of [0, num_blocks) that scatters consecutive entries across
// the cache. Sequence s owns entries [s·b, (s+1)·b), b = blocks per sequence.
// REQUIRES: 0 < num_blocks <= INT32_MAX.
std::vector<int32_t> ScatteredBlockTable(int64_t num_blocks);

// ---- Operator shapes, one struct per op (see kernels/backend.h) ----------
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;  // C (m×n) = A (m×k) · B (k×n), no transposes
  kernels::DType dtype = kernels::DType::kBf16;
};
// RmsNorm, SiluMul and ResidualAdd over `rows` tokens of `width` elements.
struct RowsShape {
  int64_t rows = 0, width = 0;
  kernels::DType dtype = kernels::DType::kBf16;
};
struct RopeShape {
  int64_t tokens = 0, heads = 0, head_dim = 0;  // one call rotates `heads` heads per token
  kernels::DType dtype = kernels::DType::kBf16;
};
struct EmbeddingShape {
  int64_t tokens = 0, vocab = 0, hidden = 0;
  kernels::DType dtype = kernels::DType::kBf16;
};
// `seqs` prompts of `seq_len` tokens each, packed (varlen).
struct PrefillShape {
  int64_t seqs = 0, seq_len = 0, heads = 0, kv_heads = 0, head_dim = 0;
  kernels::DType dtype = kernels::DType::kBf16;
};
// `seqs` sequences each with `context_len` tokens in a paged cache whose
// blocks are scattered (a shuffled block table, as after a serving engine
// has run a while).
struct DecodeShape {
  int64_t seqs = 0, context_len = 0, heads = 0, kv_heads = 0, head_dim = 0, block_size = 16;
  kernels::DType dtype = kernels::DType::kBf16;
};

// Times operators on one backend. Each method checks the shape (every
// dimension > 0, heads a multiple of kv_heads, head_dim even for Rope, index
// tensors within int32) and answers a bad one with a Status naming the op
// and field, e.g. `gemm: k=0 must be > 0`.
//
// Buffers: one per operand role, shared by the ops (so memory follows the
// largest operand of any op in a role, not the sum over ops). They grow to
// the largest shape seen, by at least half again when they grow, and are
// reused: a shape that fits allocates nothing, and an ascending sweep
// allocates O(log(largest/smallest)) times per role. Inputs are filled with
// BenchFillValue once per growth (or dtype change), not per shape; index
// tensors are rebuilt per shape. A shape whose buffers do not fit in device
// memory, even after every buffer is released, is answered with the
// allocation's Status (callers skip it and say so); the bench stays usable.
// Not thread-safe; one OpBench per backend.
class OpBench {
 public:
  // REQUIRES: backend outlives this object.
  OpBench(kernels::Backend* backend, const TimingOptions& options);
  ~OpBench();
  OpBench(const OpBench&) = delete;
  OpBench& operator=(const OpBench&) = delete;

  kernels::Backend& backend() const { return *backend_; }
  const TimingOptions& options() const { return options_; }

  Status Gemm(const GemmShape& s, Timing* out);
  Status RmsNorm(const RowsShape& s, Timing* out);
  Status SiluMul(const RowsShape& s, Timing* out);
  Status ResidualAdd(const RowsShape& s, Timing* out);
  Status Rope(const RopeShape& s, Timing* out);
  Status Embedding(const EmbeddingShape& s, Timing* out);
  Status AttentionPrefill(const PrefillShape& s, Timing* out);
  Status AttentionDecode(const DecodeShape& s, Timing* out);

  // For tests: the device pointer of the output of the last op that timed
  // successfully (C for Gemm, x for Rope, which works in place), or null.
  // Valid until the next call, which may reallocate it.
  const void* LastOutputForTest() const;

 private:
  struct Buffers;  // defined in measure.cc

  // Shape checks, buffers and input fill shared by RmsNorm, SiluMul and
  // ResidualAdd; `second_is_vector`: the second input is RmsNorm's weight
  // (width elements) rather than a rows×width tensor.
  Status PrepareRows(const char* op, const RowsShape& s, bool second_is_vector);

  kernels::Backend* backend_;
  TimingOptions options_;
  Buffers* buffers_;
};

}  // namespace fleetsim::calibrate
