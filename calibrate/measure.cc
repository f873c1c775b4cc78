// The timing harness: statistics, the timing loop and OpBench, which owns the
// operand buffers of every op it times.
//
// Buffers. OpBench keeps one device buffer per operand role and shares the
// roles across ops, so device memory follows the largest shape of any op in a
// role rather than the sum over ops:
//   in0  GEMM A, RmsNorm x, SiluMul gate, ResidualAdd a, Rope x (in place),
//        attention q
//   in1  GEMM B, RmsNorm weight, SiluMul up, ResidualAdd b, embedding table,
//        prefill k, decode k_cache
//   in2  prefill v, decode v_cache
//   out  every op's output (written, never read)
//   idx0 token ids, positions, seq_starts, block table
//   idx1 decode context_lens
// Floating-point inputs hold BenchFillValue(i) at element i, rounded to the
// dtype they were last filled in. The pattern depends only on i, so a buffer
// that grows within its allocation is filled only over its new tail, and a
// shape that fits in the filled prefix copies nothing. Index tensors depend on
// the shape and are rebuilt per shape (they are small).
#include "calibrate/measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "kernels/cpu/half.h"

namespace fleetsim::calibrate {

using kernels::DType;

// ---- Statistics -------------------------------------------------------------

namespace {

// Percentile p in [0, 1] of sorted samples, interpolating linearly between
// the order statistics at ranks floor(p·(n-1)) and ceil(p·(n-1)).
double Percentile(const std::vector<double>& sorted, double p) {
  const double pos = p * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + frac * (sorted[hi] - sorted[lo]);
}

}  // namespace

Timing Summarize(std::vector<double> samples) {
  FLEETSIM_CHECK(!samples.empty());
  std::sort(samples.begin(), samples.end());
  Timing t;
  t.repetitions = static_cast<int>(samples.size());
  t.min_ns = samples.front();
  t.max_ns = samples.back();
  t.median_ns = Percentile(samples, 0.5);
  const double iqr = Percentile(samples, 0.75) - Percentile(samples, 0.25);
  // A zero median (a clock too coarse for the op) has no meaningful relative
  // spread; report 0 rather than inf or NaN.
  t.spread = t.median_ns > 0 ? iqr / t.median_ns : 0.0;
  return t;
}

Status ValidateTimingOptions(const TimingOptions& options) {
  if (options.warmup < 0) {
    return Status::Invalid("timing options: warmup=" + std::to_string(options.warmup) +
                           " must be >= 0");
  }
  if (options.repetitions < 1) {
    return Status::Invalid("timing options: repetitions=" + std::to_string(options.repetitions) +
                           " must be >= 1");
  }
  return Status::Ok();
}

Status TimeOp(kernels::Backend& backend, const std::function<Status()>& op, const TimingOptions& options,
              Timing* out) {
  FLEETSIM_RETURN_IF_ERROR(ValidateTimingOptions(options));
  for (int i = 0; i < options.warmup; ++i) FLEETSIM_RETURN_IF_ERROR(op());
  // Ops may be asynchronous: an error a warm-up run hit on the device shows
  // up here, before it could be blamed on a timed run.
  if (options.warmup > 0) FLEETSIM_RETURN_IF_ERROR(backend.Synchronize());
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(options.repetitions));
  for (int i = 0; i < options.repetitions; ++i) {
    if (options.flush_cache) FLEETSIM_RETURN_IF_ERROR(backend.FlushCache());
    double ns = 0;
    FLEETSIM_RETURN_IF_ERROR(backend.TimeOnce(op, &ns));
    samples.push_back(ns);
  }
  *out = Summarize(std::move(samples));
  return Status::Ok();
}

float BenchFillValue(int64_t i) {
  // 7919 is prime and coprime to 1000, so each period of 1000 elements holds
  // every value of -500..499 once: a mean near zero, no long runs, and a
  // smallest non-zero magnitude of 2^-12, a normal number in fp32, bf16 and
  // fp16 alike. Small magnitudes keep long reductions (GEMM with large k,
  // attention scores) far from fp16's overflow.
  const int64_t r = ((i % 1000) * 7919) % 1000;
  return static_cast<float>(r - 500) / 4096.0f;
}

// ---- OpBench buffers --------------------------------------------------------

namespace {

// Elements per period of BenchFillValue.
constexpr int64_t kFillPeriod = 1000;
// Elements written per CopyToDevice when filling: bounds the host staging
// buffer (4 MB of fp32) whatever the device buffer's size.
constexpr int64_t kFillChunk = 1000 * kFillPeriod;

uint16_t ToStorage16(DType dtype, float v) {
  return dtype == DType::kFp16 ? kernels::FloatToHalf(v) : kernels::FloatToBf16(v);
}

// a·b into *out; false on int64 overflow or a negative operand.
bool MulOk(int64_t a, int64_t b, int64_t* out) {
  if (a < 0 || b < 0) return false;
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) return false;
  *out = a * b;
  return true;
}

// Product of dims, or a Status naming the op when it overflows int64.
Status Product(const char* op, std::initializer_list<int64_t> dims, int64_t* out) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (!MulOk(p, d, &p)) return Status::Invalid(std::string(op) + ": shape too large (element count overflows)");
  }
  *out = p;
  return Status::Ok();
}

Status Positive(const char* op, const char* field, int64_t v) {
  if (v > 0) return Status::Ok();
  return Status::Invalid(std::string(op) + ": " + field + "=" + std::to_string(v) + " must be > 0");
}

Status FitsInt32(const char* op, const char* what, int64_t v) {
  if (v <= std::numeric_limits<int32_t>::max()) return Status::Ok();
  return Status::Invalid(std::string(op) + ": " + what + "=" + std::to_string(v) +
                         " does not fit the int32 index tensors kernels take");
}

}  // namespace

struct OpBench::Buffers {
  struct Slot {
    kernels::DeviceBuffer buf;
    // Elements [0, valid) hold BenchFillValue in `dtype`, except the first
    // `rotated`, which hold that pattern after Rope rotated it in place
    // (still small and finite: a rotation keeps each pair's norm).
    DType dtype = DType::kFp32;
    int64_t valid = 0;
    int64_t rotated = 0;

    void Forget() {
      valid = 0;
      rotated = 0;
    }
  };
  struct Need {
    Slot* slot;
    int64_t bytes;
  };

  explicit Buffers(kernels::Backend* b) : backend(b) {}

  kernels::Backend* backend;
  Slot in0, in1, in2, out, idx0, idx1;
  // Device pointer of the last successfully timed op's output.
  const void* last_output = nullptr;

  void ReleaseAll() {
    for (Slot* s : {&in0, &in1, &in2, &out, &idx0, &idx1}) {
      s->buf.Reset();
      s->Forget();
    }
    last_output = nullptr;
  }

  // Makes every slot in `needs` hold at least its bytes. A slot that must
  // grow is freed first (lower peak memory; its contents are refilled
  // anyway) and reallocated with half again its old size when that fits,
  // so an ascending sweep reallocates O(log) times, not once per shape.
  // When an allocation fails, everything is released (buffers kept for
  // other ops, or that slack, may be what does not fit) and the exact
  // sizes are tried once more; a second failure leaves the bench empty but
  // usable and returns the backend's Status.
  Status Reserve(const char* op, std::initializer_list<Need> needs) {
    Status st = Grow(needs, /*exact=*/false);
    if (st.ok()) return st;
    ReleaseAll();
    st = Grow(needs, /*exact=*/true);
    if (st.ok()) return st;
    ReleaseAll();
    return st.WithPrefix(std::string(op) + ": ");
  }

  Status Grow(std::initializer_list<Need> needs, bool exact) {
    for (const Need& n : needs) {
      Slot& s = *n.slot;
      const size_t want = static_cast<size_t>(n.bytes);
      if (s.buf.bytes() >= want) continue;
      const size_t old = s.buf.bytes();
      s.buf.Reset();
      s.Forget();
      const size_t roomy = std::max(want, old + old / 2);
      Status st = backend->AllocateBuffer(exact ? want : roomy, &s.buf);
      if (!st.ok() && !exact && roomy > want) st = backend->AllocateBuffer(want, &s.buf);
      FLEETSIM_RETURN_IF_ERROR(st);
    }
    return Status::Ok();
  }

  // Makes elements [0, elems) of `s` hold the fill pattern in `dtype`,
  // writing only what is not there yet. `allow_rotated`: Rope's in-place
  // output is acceptable input (only Rope itself says so).
  // REQUIRES: s holds at least elems·DTypeSize(dtype) bytes.
  Status Fill(Slot& s, int64_t elems, DType dtype, bool allow_rotated) {
    FLEETSIM_CHECK(static_cast<size_t>(elems) * kernels::DTypeSize(dtype) <= s.buf.bytes());
    if (s.dtype != dtype) {
      s.Forget();
      s.dtype = dtype;
    }
    if (!allow_rotated && s.rotated > 0) {
      FLEETSIM_RETURN_IF_ERROR(WritePattern(s, 0, std::min(s.rotated, s.valid)));
      s.rotated = 0;
    }
    if (s.valid < elems) {
      FLEETSIM_RETURN_IF_ERROR(WritePattern(s, s.valid, elems));
      s.valid = elems;
    }
    return Status::Ok();
  }

  // Writes BenchFillValue(i) for i in [begin, end) in s.dtype. The pattern
  // repeats every kFillPeriod elements, so one staging buffer of a chunk
  // plus a period serves every chunk: chunk start c reads it from offset
  // c mod period.
  Status WritePattern(Slot& s, int64_t begin, int64_t end) {
    if (begin >= end) return Status::Ok();
    const size_t esize = kernels::DTypeSize(s.dtype);
    const int64_t chunk = std::min(kFillChunk, end - begin);
    const int64_t staged = chunk + kFillPeriod;
    std::vector<unsigned char> host(static_cast<size_t>(staged) * esize);
    for (int64_t j = 0; j < staged; ++j) {
      const float v = BenchFillValue(j);
      unsigned char* dst = host.data() + static_cast<size_t>(j) * esize;
      if (s.dtype == DType::kFp32) {
        std::memcpy(dst, &v, sizeof v);
      } else {
        const uint16_t h = ToStorage16(s.dtype, v);
        std::memcpy(dst, &h, sizeof h);
      }
    }
    unsigned char* base = static_cast<unsigned char*>(s.buf.data());
    for (int64_t c = begin; c < end; c += chunk) {
      const int64_t n = std::min(chunk, end - c);
      FLEETSIM_RETURN_IF_ERROR(backend->CopyToDevice(base + static_cast<size_t>(c) * esize,
                                                     host.data() + static_cast<size_t>(c % kFillPeriod) * esize,
                                                     static_cast<size_t>(n) * esize));
    }
    return Status::Ok();
  }

  // Copies an index tensor (rebuilt per shape) into `s`.
  // REQUIRES: s holds at least values.size()·4 bytes.
  Status CopyIndices(Slot& s, const std::vector<int32_t>& values) {
    FLEETSIM_CHECK(values.size() * sizeof(int32_t) <= s.buf.bytes());
    s.Forget();
    return backend->CopyToDevice(s.buf.data(), values.data(), values.size() * sizeof(int32_t));
  }
};

namespace {

// Bytes of `elems` elements of `esize` bytes, or a Status naming the op.
Status Bytes(const char* op, int64_t elems, size_t esize, int64_t* out) {
  if (!MulOk(elems, static_cast<int64_t>(esize), out)) {
    return Status::Invalid(std::string(op) + ": shape too large (byte count overflows)");
  }
  return Status::Ok();
}

}  // namespace

OpBench::OpBench(kernels::Backend* backend, const TimingOptions& options)
    : backend_(backend), options_(options), buffers_(new Buffers(backend)) {
  FLEETSIM_CHECK(backend != nullptr);
}

OpBench::~OpBench() { delete buffers_; }

const void* OpBench::LastOutputForTest() const { return buffers_->last_output; }

Status OpBench::Gemm(const GemmShape& s, Timing* out) {
  constexpr const char* kOp = "gemm";
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "m", s.m));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "n", s.n));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "k", s.k));
  const size_t es = kernels::DTypeSize(s.dtype);
  int64_t a_elems, b_elems, c_elems, a_bytes, b_bytes, c_bytes;
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.m, s.k}, &a_elems));
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.k, s.n}, &b_elems));
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.m, s.n}, &c_elems));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, a_elems, es, &a_bytes));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, b_elems, es, &b_bytes));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, c_elems, es, &c_bytes));

  Buffers& B = *buffers_;
  FLEETSIM_RETURN_IF_ERROR(B.Reserve(kOp, {{&B.in0, a_bytes}, {&B.in1, b_bytes}, {&B.out, c_bytes}}));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in0, a_elems, s.dtype, false));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in1, b_elems, s.dtype, false));

  kernels::GemmArgs args;
  args.m = s.m;
  args.n = s.n;
  args.k = s.k;
  args.dtype = s.dtype;
  args.a = B.in0.buf.data();
  args.b = B.in1.buf.data();
  args.c = B.out.buf.data();
  args.lda = s.k;
  args.ldb = s.n;
  args.ldc = s.n;
  FLEETSIM_RETURN_IF_ERROR(TimeOp(*backend_, [&] { return backend_->Gemm(args); }, options_, out));
  B.last_output = args.c;
  return Status::Ok();
}

// RmsNorm, SiluMul and ResidualAdd share their shape and buffers: two
// rows×width inputs (RmsNorm's second is a weight of `width`) and a
// rows×width output, all contiguous.
Status OpBench::PrepareRows(const char* op, const RowsShape& s, bool second_is_vector) {
  FLEETSIM_RETURN_IF_ERROR(Positive(op, "rows", s.rows));
  FLEETSIM_RETURN_IF_ERROR(Positive(op, "width", s.width));
  const size_t es = kernels::DTypeSize(s.dtype);
  int64_t elems, bytes, in1_bytes;
  FLEETSIM_RETURN_IF_ERROR(Product(op, {s.rows, s.width}, &elems));
  FLEETSIM_RETURN_IF_ERROR(Bytes(op, elems, es, &bytes));
  const int64_t in1_elems = second_is_vector ? s.width : elems;
  FLEETSIM_RETURN_IF_ERROR(Bytes(op, in1_elems, es, &in1_bytes));
  Buffers& B = *buffers_;
  FLEETSIM_RETURN_IF_ERROR(B.Reserve(op, {{&B.in0, bytes}, {&B.in1, in1_bytes}, {&B.out, bytes}}));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in0, elems, s.dtype, false));
  return B.Fill(B.in1, in1_elems, s.dtype, false);
}

Status OpBench::RmsNorm(const RowsShape& s, Timing* out) {
  FLEETSIM_RETURN_IF_ERROR(PrepareRows("rms_norm", s, /*second_is_vector=*/true));
  Buffers& B = *buffers_;
  kernels::RmsNormArgs args;
  args.rows = s.rows;
  args.hidden = s.width;
  args.dtype = s.dtype;
  args.x = B.in0.buf.data();
  args.weight = B.in1.buf.data();
  args.out = B.out.buf.data();
  args.x_stride = s.width;
  args.out_stride = s.width;
  FLEETSIM_RETURN_IF_ERROR(TimeOp(*backend_, [&] { return backend_->RmsNorm(args); }, options_, out));
  B.last_output = args.out;
  return Status::Ok();
}

Status OpBench::SiluMul(const RowsShape& s, Timing* out) {
  FLEETSIM_RETURN_IF_ERROR(PrepareRows("silu_mul", s, /*second_is_vector=*/false));
  Buffers& B = *buffers_;
  kernels::SiluMulArgs args;
  args.rows = s.rows;
  args.width = s.width;
  args.dtype = s.dtype;
  args.gate = B.in0.buf.data();
  args.up = B.in1.buf.data();
  args.out = B.out.buf.data();
  args.gate_stride = s.width;
  args.up_stride = s.width;
  args.out_stride = s.width;
  FLEETSIM_RETURN_IF_ERROR(TimeOp(*backend_, [&] { return backend_->SiluMul(args); }, options_, out));
  B.last_output = args.out;
  return Status::Ok();
}

Status OpBench::ResidualAdd(const RowsShape& s, Timing* out) {
  FLEETSIM_RETURN_IF_ERROR(PrepareRows("residual_add", s, /*second_is_vector=*/false));
  Buffers& B = *buffers_;
  kernels::ResidualAddArgs args;
  args.rows = s.rows;
  args.width = s.width;
  args.dtype = s.dtype;
  args.a = B.in0.buf.data();
  args.b = B.in1.buf.data();
  args.out = B.out.buf.data();
  args.a_stride = s.width;
  args.b_stride = s.width;
  args.out_stride = s.width;
  FLEETSIM_RETURN_IF_ERROR(TimeOp(*backend_, [&] { return backend_->ResidualAdd(args); }, options_, out));
  B.last_output = args.out;
  return Status::Ok();
}

Status OpBench::Rope(const RopeShape& s, Timing* out) {
  constexpr const char* kOp = "rope";
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "tokens", s.tokens));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "heads", s.heads));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "head_dim", s.head_dim));
  if (s.head_dim % 2 != 0) {
    return Status::Invalid("rope: head_dim=" + std::to_string(s.head_dim) + " must be even");
  }
  FLEETSIM_RETURN_IF_ERROR(FitsInt32(kOp, "tokens", s.tokens));
  int64_t elems, bytes;
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.tokens, s.heads, s.head_dim}, &elems));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, elems, kernels::DTypeSize(s.dtype), &bytes));
  Buffers& B = *buffers_;
  FLEETSIM_RETURN_IF_ERROR(
      B.Reserve(kOp, {{&B.in0, bytes}, {&B.idx0, s.tokens * static_cast<int64_t>(sizeof(int32_t))}}));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in0, elems, s.dtype, /*allow_rotated=*/true));
  std::vector<int32_t> positions(static_cast<size_t>(s.tokens));
  std::iota(positions.begin(), positions.end(), 0);
  FLEETSIM_RETURN_IF_ERROR(B.CopyIndices(B.idx0, positions));

  kernels::RopeArgs args;
  args.num_tokens = s.tokens;
  args.num_heads = s.heads;
  args.head_dim = s.head_dim;
  args.theta = 1e4;
  args.dtype = s.dtype;
  args.positions = static_cast<const int32_t*>(B.idx0.buf.data());
  args.x = B.in0.buf.data();
  args.x_stride = s.heads * s.head_dim;
  // In place: from here on the prefix no longer holds the plain pattern,
  // whether or not the runs succeed.
  B.in0.rotated = std::max(B.in0.rotated, elems);
  B.last_output = nullptr;
  FLEETSIM_RETURN_IF_ERROR(TimeOp(*backend_, [&] { return backend_->Rope(args); }, options_, out));
  B.last_output = args.x;
  return Status::Ok();
}

Status OpBench::Embedding(const EmbeddingShape& s, Timing* out) {
  constexpr const char* kOp = "embedding";
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "tokens", s.tokens));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "vocab", s.vocab));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "hidden", s.hidden));
  FLEETSIM_RETURN_IF_ERROR(FitsInt32(kOp, "tokens", s.tokens));
  const size_t es = kernels::DTypeSize(s.dtype);
  int64_t table_elems, out_elems, table_bytes, out_bytes;
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.vocab, s.hidden}, &table_elems));
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.tokens, s.hidden}, &out_elems));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, table_elems, es, &table_bytes));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, out_elems, es, &out_bytes));
  Buffers& B = *buffers_;
  FLEETSIM_RETURN_IF_ERROR(B.Reserve(kOp, {{&B.in1, table_bytes},
                                           {&B.out, out_bytes},
                                           {&B.idx0, s.tokens * static_cast<int64_t>(sizeof(int32_t))}}));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in1, table_elems, s.dtype, false));
  // t % vocab is below both tokens (<= INT32_MAX, checked) and vocab.
  std::vector<int32_t> ids(static_cast<size_t>(s.tokens));
  for (int64_t t = 0; t < s.tokens; ++t) ids[static_cast<size_t>(t)] = static_cast<int32_t>(t % s.vocab);
  FLEETSIM_RETURN_IF_ERROR(B.CopyIndices(B.idx0, ids));

  kernels::EmbeddingArgs args;
  args.num_tokens = s.tokens;
  args.vocab_size = s.vocab;
  args.hidden = s.hidden;
  args.dtype = s.dtype;
  args.token_ids = static_cast<const int32_t*>(B.idx0.buf.data());
  args.table = B.in1.buf.data();
  args.out = B.out.buf.data();
  args.out_stride = s.hidden;
  FLEETSIM_RETURN_IF_ERROR(TimeOp(*backend_, [&] { return backend_->Embedding(args); }, options_, out));
  B.last_output = args.out;
  return Status::Ok();
}

namespace {

Status CheckHeads(const char* op, int64_t heads, int64_t kv_heads) {
  if (heads % kv_heads == 0) return Status::Ok();
  return Status::Invalid(std::string(op) + ": heads=" + std::to_string(heads) +
                         " is not a multiple of kv_heads=" + std::to_string(kv_heads));
}

}  // namespace

Status OpBench::AttentionPrefill(const PrefillShape& s, Timing* out) {
  constexpr const char* kOp = "attention_prefill";
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "seqs", s.seqs));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "seq_len", s.seq_len));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "heads", s.heads));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "kv_heads", s.kv_heads));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "head_dim", s.head_dim));
  FLEETSIM_RETURN_IF_ERROR(CheckHeads(kOp, s.heads, s.kv_heads));
  int64_t tokens;
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.seqs, s.seq_len}, &tokens));
  FLEETSIM_RETURN_IF_ERROR(FitsInt32(kOp, "seqs·seq_len", tokens));
  const size_t es = kernels::DTypeSize(s.dtype);
  int64_t q_elems, kv_elems, q_bytes, kv_bytes;
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {tokens, s.heads, s.head_dim}, &q_elems));
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {tokens, s.kv_heads, s.head_dim}, &kv_elems));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, q_elems, es, &q_bytes));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, kv_elems, es, &kv_bytes));
  Buffers& B = *buffers_;
  FLEETSIM_RETURN_IF_ERROR(B.Reserve(kOp, {{&B.in0, q_bytes},
                                           {&B.in1, kv_bytes},
                                           {&B.in2, kv_bytes},
                                           {&B.out, q_bytes},
                                           {&B.idx0, (s.seqs + 1) * static_cast<int64_t>(sizeof(int32_t))}}));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in0, q_elems, s.dtype, false));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in1, kv_elems, s.dtype, false));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in2, kv_elems, s.dtype, false));
  std::vector<int32_t> starts(static_cast<size_t>(s.seqs) + 1);
  for (int64_t i = 0; i <= s.seqs; ++i) starts[static_cast<size_t>(i)] = static_cast<int32_t>(i * s.seq_len);
  FLEETSIM_RETURN_IF_ERROR(B.CopyIndices(B.idx0, starts));

  kernels::AttentionPrefillArgs args;
  args.num_seqs = s.seqs;
  args.num_tokens = tokens;
  args.num_heads = s.heads;
  args.num_kv_heads = s.kv_heads;
  args.head_dim = s.head_dim;
  args.dtype = s.dtype;
  args.seq_starts = static_cast<const int32_t*>(B.idx0.buf.data());
  args.q = B.in0.buf.data();
  args.k = B.in1.buf.data();
  args.v = B.in2.buf.data();
  args.out = B.out.buf.data();
  args.q_stride = s.heads * s.head_dim;
  args.k_stride = s.kv_heads * s.head_dim;
  args.v_stride = s.kv_heads * s.head_dim;
  args.out_stride = s.heads * s.head_dim;
  FLEETSIM_RETURN_IF_ERROR(TimeOp(*backend_, [&] { return backend_->AttentionPrefill(args); }, options_, out));
  B.last_output = args.out;
  return Status::Ok();
}

// Entry j is (j·p) mod num_blocks for a stride p coprime to num_blocks
// (hence a permutation), the first such p from num_blocks/φ up: consecutive
// entries land far apart, and no RNG is needed.
std::vector<int32_t> ScatteredBlockTable(int64_t num_blocks) {
  int64_t p = std::max<int64_t>(1, std::llround(static_cast<double>(num_blocks) * 0.6180339887498949));
  FLEETSIM_CHECK(num_blocks > 0 && num_blocks <= std::numeric_limits<int32_t>::max());
  while (std::gcd(p, num_blocks) != 1) ++p;
  std::vector<int32_t> table(static_cast<size_t>(num_blocks));
  for (int64_t j = 0; j < num_blocks; ++j) table[static_cast<size_t>(j)] = static_cast<int32_t>((j * p) % num_blocks);
  return table;
}

Status OpBench::AttentionDecode(const DecodeShape& s, Timing* out) {
  constexpr const char* kOp = "attention_decode";
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "seqs", s.seqs));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "context_len", s.context_len));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "heads", s.heads));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "kv_heads", s.kv_heads));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "head_dim", s.head_dim));
  FLEETSIM_RETURN_IF_ERROR(Positive(kOp, "block_size", s.block_size));
  FLEETSIM_RETURN_IF_ERROR(CheckHeads(kOp, s.heads, s.kv_heads));
  FLEETSIM_RETURN_IF_ERROR(FitsInt32(kOp, "context_len", s.context_len));
  FLEETSIM_RETURN_IF_ERROR(FitsInt32(kOp, "seqs", s.seqs));
  const int64_t blocks_per_seq = (s.context_len + s.block_size - 1) / s.block_size;
  int64_t num_blocks;
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.seqs, blocks_per_seq}, &num_blocks));
  FLEETSIM_RETURN_IF_ERROR(FitsInt32(kOp, "seqs·ceil(context_len/block_size) blocks", num_blocks));
  const size_t es = kernels::DTypeSize(s.dtype);
  int64_t q_elems, cache_elems, q_bytes, cache_bytes;
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {s.seqs, s.heads, s.head_dim}, &q_elems));
  FLEETSIM_RETURN_IF_ERROR(Product(kOp, {num_blocks, s.block_size, s.kv_heads, s.head_dim}, &cache_elems));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, q_elems, es, &q_bytes));
  FLEETSIM_RETURN_IF_ERROR(Bytes(kOp, cache_elems, es, &cache_bytes));
  constexpr int64_t kI32 = sizeof(int32_t);
  Buffers& B = *buffers_;
  FLEETSIM_RETURN_IF_ERROR(B.Reserve(kOp, {{&B.in0, q_bytes},
                                           {&B.in1, cache_bytes},
                                           {&B.in2, cache_bytes},
                                           {&B.out, q_bytes},
                                           {&B.idx0, num_blocks * kI32},
                                           {&B.idx1, s.seqs * kI32}}));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in0, q_elems, s.dtype, false));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in1, cache_elems, s.dtype, false));
  FLEETSIM_RETURN_IF_ERROR(B.Fill(B.in2, cache_elems, s.dtype, false));
  // Row s of the table is entries [s·blocks_per_seq, (s+1)·blocks_per_seq)
  // of the permutation, so the sequences share no block.
  FLEETSIM_RETURN_IF_ERROR(B.CopyIndices(B.idx0, ScatteredBlockTable(num_blocks)));
  FLEETSIM_RETURN_IF_ERROR(
      B.CopyIndices(B.idx1, std::vector<int32_t>(static_cast<size_t>(s.seqs), static_cast<int32_t>(s.context_len))));

  kernels::AttentionDecodeArgs args;
  args.num_seqs = s.seqs;
  args.num_heads = s.heads;
  args.num_kv_heads = s.kv_heads;
  args.head_dim = s.head_dim;
  args.block_size = s.block_size;
  args.num_blocks = num_blocks;
  args.max_blocks_per_seq = blocks_per_seq;
  args.dtype = s.dtype;
  args.q = B.in0.buf.data();
  args.k_cache = B.in1.buf.data();
  args.v_cache = B.in2.buf.data();
  args.block_tables = static_cast<const int32_t*>(B.idx0.buf.data());
  args.context_lens = static_cast<const int32_t*>(B.idx1.buf.data());
  args.out = B.out.buf.data();
  args.q_stride = s.heads * s.head_dim;
  args.out_stride = s.heads * s.head_dim;
  args.block_table_stride = blocks_per_seq;
  FLEETSIM_RETURN_IF_ERROR(TimeOp(*backend_, [&] { return backend_->AttentionDecode(args); }, options_, out));
  B.last_output = args.out;
  return Status::Ok();
}

}  // namespace fleetsim::calibrate
