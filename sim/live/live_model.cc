#include "sim/live/live_model.h"

#include "kernels/cpu/half.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace fleetsim::live {
namespace {

using kernels::DeviceBuffer;

std::optional<kernels::DType> KernelDType(fleetsim::DType t) {
  switch (t) {
    case fleetsim::DType::kFp32: return kernels::DType::kFp32;
    case fleetsim::DType::kBf16: return kernels::DType::kBf16;
    case fleetsim::DType::kFp16: return kernels::DType::kFp16;
    default: return std::nullopt;
  }
}

// A splitmix64 step: the weights' random stream.
uint64_t Mix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

std::string LiveUnsupported(const ModelSpec& m) {
  if (m.is_moe()) return "mixture-of-experts models do not run live yet";
  if (m.mla) return "latent-attention (MLA) models do not run live yet";
  if (!KernelDType(m.weight_dtype))
    return "weights in " + std::string(DTypeName(m.weight_dtype)) + " do not run live (the kernels take fp32, fp16 and bf16)";
  if (m.kv_dtype != m.weight_dtype)
    return "a KV cache in " + std::string(DTypeName(m.kv_dtype)) + " beside " + std::string(DTypeName(m.weight_dtype)) +
           " weights does not run live (the kernels take one dtype per op)";
  if (m.embedding_dtype && *m.embedding_dtype != m.weight_dtype) return "embeddings in another dtype do not run live";
  if (m.head_dim % 2 != 0) return "an odd head_dim does not run live (rope rotates pairs)";
  return "";
}

LiveModel::LiveModel(const ModelSpec& model, kernels::Backend& backend, const LiveModelOptions& options)
    : model_(model), backend_(backend), options_(options) {
  dtype_ = KernelDType(model.weight_dtype).value_or(kernels::DType::kBf16);
  elem_ = kernels::DTypeSize(dtype_);
  tp_ = options.group ? options.group->ring.ranks() : 1;
  // As LocalDims (model/shard_dims.h) splits them for the perf model; KV
  // heads fewer than the ranks are replicated.
  heads_ = model.heads / tp_;
  kv_heads_ = (int64_t{model.kv_heads} + tp_ - 1) / tp_;
  intermediate_ = (model.intermediate + tp_ - 1) / tp_;
  const int64_t vocab_slice = (int64_t{model.vocab} + tp_ - 1) / tp_;
  vocab_first_ = std::min<int64_t>(model.vocab, options.rank * vocab_slice);
  vocab_cols_ = std::min<int64_t>(vocab_slice, model.vocab - vocab_first_);
  q_cols_ = heads_ * model.head_dim;
  kv_cols_ = kv_heads_ * model.head_dim;
  qkv_cols_ = q_cols_ + 2 * kv_cols_;
}

Status LiveModel::Create(const ModelSpec& model, kernels::Backend& backend, const LiveModelOptions& options,
                         std::unique_ptr<LiveModel>* out) {
  if (const std::string why = LiveUnsupported(model); !why.empty()) return Status::Invalid(model.name + ": " + why);
  if (options.block_size <= 0 || options.kv_blocks <= 0 || options.max_tokens <= 0 || options.max_seqs <= 0)
    return Status::Invalid("live model: block_size, kv_blocks, max_tokens and max_seqs must be positive");
  if (options.group) {
    const int tp = options.group->ring.ranks();
    if (options.rank < 0 || options.rank >= tp || &options.group->ring.backend(options.rank) != &backend)
      return Status::Invalid("live model: rank " + std::to_string(options.rank) + " is not this backend's in a group of " +
                             std::to_string(tp));
    if (model.heads % tp != 0 || (model.kv_heads % tp != 0 && tp % model.kv_heads != 0))
      return Status::Invalid(model.name + ": " + std::to_string(model.heads) + " query and " +
                             std::to_string(model.kv_heads) + " KV heads do not split over tp " + std::to_string(tp));
    // Every rank needs a slice of the vocabulary: ceil(vocab / tp) columns
    // each leave the last one some.
    const int64_t slice = (int64_t{model.vocab} + tp - 1) / tp;
    if (slice * (tp - 1) >= model.vocab)
      return Status::Invalid(model.name + ": a vocabulary of " + std::to_string(model.vocab) +
                             " leaves a rank no columns of the lm_head at tp " + std::to_string(tp));
  }
  std::unique_ptr<LiveModel> m(new LiveModel(model, backend, options));
  FLEETSIM_RETURN_IF_ERROR(m->AllocateWeights());
  FLEETSIM_RETURN_IF_ERROR(m->Reserve(options.max_tokens, options.max_seqs, options.max_seqs * 64));
  *out = std::move(m);
  return Status::Ok();
}

Status LiveModel::Alloc(size_t bytes, DeviceBuffer* out, const char* what) {
  Status s = backend_.AllocateBuffer(bytes, out);
  if (!s.ok())
    return Status::Invalid("live: cannot allocate " + std::to_string(bytes >> 20) + " MiB for " + what + " of " +
                           model_.name + " on " + std::string(backend_.name()) + ": " + s.message());
  return Status::Ok();
}

Status LiveModel::AllocateWeights() {
  // Element (r, c) of the full (unsharded) weight matrix number w, of N
  // columns, is pattern[(w·7919 + r·977 + c) mod P]: a block of P random
  // values, uniform in ±0.02 (about an initialiser's spread), stands for
  // billions of numbers, and a rank's shard is exactly its slice of the
  // full matrix, so a tensor-parallel forward pass computes what one rank
  // computes (up to the order of the sums). Norm weights are 1.
  constexpr int64_t kPattern = int64_t{1} << 20;  // P, elements
  // Twice over, so that any run of up to P elements is contiguous.
  std::vector<unsigned char> pattern(static_cast<size_t>(2 * kPattern) * elem_);
  uint64_t state = options_.seed ^ 0x6c697665ull;  // "live"
  for (int64_t i = 0; i < kPattern; ++i) {
    const float v = static_cast<float>((static_cast<double>(Mix(&state) >> 11) * 0x1.0p-53 - 0.5) * 0.04);
    for (int64_t copy : {i, i + kPattern}) {
      unsigned char* dst = pattern.data() + static_cast<size_t>(copy) * elem_;
      if (dtype_ == kernels::DType::kFp32) {
        std::memcpy(dst, &v, 4);
      } else {
        const uint16_t h = dtype_ == kernels::DType::kBf16 ? kernels::FloatToBf16(v) : kernels::FloatToHalf(v);
        std::memcpy(dst, &h, 2);
      }
    }
  }
  // `count` columns of the shard from column `first` of the full matrix;
  // those from the full matrix's column `end` on are padding, zeros (the
  // last rank's share of a dimension that does not divide by tp).
  struct Cols {
    int64_t first, count, end;
  };
  // Rows [r0, r0 + rows) of matrix w, the column ranges `cols` side by side:
  // the shard, row-major, staged through the host in pieces of about 16 MiB.
  // Rows from `row_end` on are padding, zeros.
  std::vector<unsigned char> staging;
  auto fill = [&](int64_t w, int64_t r0, int64_t rows, int64_t row_end, const std::vector<Cols>& cols,
                  DeviceBuffer* buf, const char* what) -> Status {
    int64_t width = 0;
    for (const Cols& c : cols) width += c.count;
    const size_t row_bytes = static_cast<size_t>(width) * elem_;
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(rows) * row_bytes, buf, what));
    weight_bytes_ += rows * static_cast<int64_t>(row_bytes);
    const int64_t per_piece = std::max<int64_t>(1, static_cast<int64_t>((size_t{16} << 20) / std::max<size_t>(1, row_bytes)));
    staging.resize(static_cast<size_t>(std::min(rows, per_piece)) * row_bytes);
    for (int64_t done = 0; done < rows;) {
      const int64_t n = std::min(rows - done, per_piece);
      unsigned char* out = staging.data();
      for (int64_t r = r0 + done; r < r0 + done + n; ++r) {
        for (const Cols& c : cols) {
          const int64_t real = r < row_end ? std::clamp<int64_t>(c.end - c.first, 0, c.count) : 0;
          for (int64_t got = 0; got < real;) {
            const int64_t at = (w * 7919 + r * 977 + c.first + got) % kPattern;
            const int64_t run = std::min(real - got, kPattern);
            std::memcpy(out, pattern.data() + static_cast<size_t>(at) * elem_, static_cast<size_t>(run) * elem_);
            out += static_cast<size_t>(run) * elem_;
            got += run;
          }
          std::memset(out, 0, static_cast<size_t>(c.count - real) * elem_);
          out += static_cast<size_t>(c.count - real) * elem_;
        }
      }
      FLEETSIM_RETURN_IF_ERROR(backend_.CopyToDevice(static_cast<unsigned char*>(buf->data()) + static_cast<size_t>(done) * row_bytes,
                                                     staging.data(), static_cast<size_t>(n) * row_bytes));
      done += n;
    }
    return Status::Ok();
  };
  auto fill_ones = [&](int64_t elements, DeviceBuffer* buf, const char* what) -> Status {
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(elements) * elem_, buf, what));
    weight_bytes_ += elements * static_cast<int64_t>(elem_);
    std::vector<unsigned char> one(static_cast<size_t>(elements) * elem_);
    const uint32_t f = 0x3f800000u;  // 1.0f
    for (int64_t i = 0; i < elements; ++i) {
      if (elem_ == 4) {
        std::memcpy(one.data() + i * 4, &f, 4);
      } else {
        const uint16_t h = dtype_ == kernels::DType::kBf16 ? 0x3f80 : 0x3c00;
        std::memcpy(one.data() + i * 2, &h, 2);
      }
    }
    return backend_.CopyToDevice(buf->data(), one.data(), one.size());
  };
  const int64_t H = model_.hidden, I = intermediate_, hd = model_.head_dim;
  const int64_t rank = options_.rank;
  const int64_t full_q = int64_t{model_.heads} * hd, full_kv = int64_t{model_.kv_heads} * hd;
  const int64_t full_i = model_.intermediate;
  // This rank's first KV head: its own slice, or (more ranks than KV heads)
  // the head its query heads read, replicated on tp / kv_heads ranks.
  const int64_t kv_first =
      model_.kv_heads >= tp_ ? rank * kv_heads_ : rank / std::max<int64_t>(1, tp_ / model_.kv_heads);
  layers_.resize(static_cast<size_t>(model_.layers));
  const size_t cache_bytes =
      static_cast<size_t>(options_.kv_blocks) * static_cast<size_t>(options_.block_size) * static_cast<size_t>(kv_cols_) * elem_;
  int64_t w = 0;
  for (Layer& l : layers_) {
    FLEETSIM_RETURN_IF_ERROR(fill_ones(H, &l.attn_norm, "a norm weight"));
    // qkv: columns [Q | K | V] of the full matrix, each this rank's heads.
    FLEETSIM_RETURN_IF_ERROR(fill(w++, 0, H, H,
                                  {{rank * q_cols_, q_cols_, full_q},
                                   {full_q + kv_first * hd, kv_cols_, full_q + full_kv},
                                   {full_q + full_kv + kv_first * hd, kv_cols_, full_q + 2 * full_kv}},
                                  &l.qkv, "the qkv weight"));
    // o and down: this rank's rows (its heads' and its MLP columns' inputs).
    FLEETSIM_RETURN_IF_ERROR(fill(w++, rank * q_cols_, q_cols_, full_q, {{0, H, H}}, &l.o, "the o weight"));
    FLEETSIM_RETURN_IF_ERROR(fill_ones(H, &l.mlp_norm, "a norm weight"));
    FLEETSIM_RETURN_IF_ERROR(fill(w++, 0, H, H, {{rank * I, I, full_i}, {full_i + rank * I, I, 2 * full_i}},
                                  &l.gate_up, "the gate_up weight"));
    FLEETSIM_RETURN_IF_ERROR(fill(w++, rank * I, I, full_i, {{0, H, H}}, &l.down, "the down weight"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(cache_bytes, &l.k_cache, "the K cache"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(cache_bytes, &l.v_cache, "the V cache"));
    kv_bytes_ += 2 * static_cast<int64_t>(cache_bytes);
  }
  FLEETSIM_RETURN_IF_ERROR(fill(w++, 0, model_.vocab, model_.vocab, {{0, H, H}}, &embedding_, "the embedding"));
  if (!model_.tied_embeddings)
    FLEETSIM_RETURN_IF_ERROR(
        fill(w++, 0, H, H, {{vocab_first_, vocab_cols_, model_.vocab}}, &lm_head_, "the lm_head"));
  FLEETSIM_RETURN_IF_ERROR(fill_ones(H, &final_norm_, "the final norm"));
  return backend_.Synchronize();
}

Status LiveModel::Reserve(int64_t tokens, int64_t seqs, int64_t cells) {
  if (tokens > cap_tokens_) {
    const int64_t t = std::max(tokens, cap_tokens_ * 2);
    const size_t e = elem_;
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(t * model_.hidden) * e, &x_, "activations"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(t * model_.hidden) * e, &h_, "activations"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(t * qkv_cols_) * e, &qkv_buf_, "activations"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(t * q_cols_) * e, &attn_, "activations"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(t * 2 * intermediate_) * e, &gate_up_buf_, "activations"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(t * intermediate_) * e, &act_, "activations"));
    cap_tokens_ = t;
  }
  if (seqs > cap_seqs_) {
    const int64_t s = std::max(seqs, cap_seqs_ * 2);
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(s * model_.hidden) * elem_, &gathered_, "activations"));
    // Rank 0 holds every rank's slice (the gather's destination).
    const int64_t cols = options_.rank == 0 ? model_.vocab : vocab_cols_;
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(s * cols) * elem_, &logits_, "logits"));
    cap_seqs_ = s;
  }
  // Index tensors: token ids, positions, slots (3 T), prefill starts (S + 1)
  // and decode rows' lengths (T) and tables (cells), gather rows and
  // samples (2 S).
  const int64_t need = 4 * cap_tokens_ + 3 * cap_seqs_ + 1 + cells;
  if (need > cap_cells_) {
    const int64_t c = std::max(need, cap_cells_ * 2);
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(c) * 4, &index_, "index tensors"));
    cap_cells_ = c;
  }
  return Status::Ok();
}

Status LiveModel::Arrive() {
  if (options_.group->ring.Arrive()) return Status::Ok();
  return Status::Invalid(std::string(kPeerFailed) + " (rank " + std::to_string(options_.rank) + " released)");
}

Status LiveModel::AllReduce(int64_t rows) {
  bool aborted = false;
  FLEETSIM_RETURN_IF_ERROR(options_.group->ring.Run(options_.rank, rows * model_.hidden, dtype_, &aborted));
  if (aborted) return Status::Invalid(std::string(kPeerFailed) + " (rank " + std::to_string(options_.rank) + " released)");
  return Status::Ok();
}

void OpTimes::Add(const OpTimes& o) {
  gemm += o.gemm;
  attention_prefill += o.attention_prefill;
  attention_decode += o.attention_decode;
  elementwise += o.elementwise;
  kv_write += o.kv_write;
  sampling += o.sampling;
  collective += o.collective;
  host += o.host;
  total += o.total;
}

Status LiveModel::Forward(const std::vector<StepSeq>& seqs, std::vector<int32_t>* sampled) {
  Status s = ForwardStep(seqs, sampled);
  if (!s.ok() && tp_ > 1) {
    // Why, then release the others (they would wait for this rank at the
    // next barrier forever).
    if (s.message().find(kPeerFailed) == std::string::npos)
      options_.group->Record(s.WithPrefix("rank " + std::to_string(options_.rank) + ": "));
    options_.group->ring.Abort();
  }
  return s;
}

Status LiveModel::ForwardStep(const std::vector<StepSeq>& seqs, std::vector<int32_t>* sampled) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point step_start = Clock::now();
  times_ = OpTimes();
  // Runs `op`, adding its time to *bucket when ops are timed.
  auto timed = [&](double* bucket, auto&& op) -> Status {
    if (!time_ops_) return op();
    const Clock::time_point t = Clock::now();
    Status st = op();
    *bucket += static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
    return st;
  };
  sampled->clear();
  const int64_t bs = options_.block_size;
  // Packed order: chunks that start a prompt (the prefill kernel), chunks
  // that continue one (the paged kernel, a query row per token), decodes
  // (the paged kernel, a row each).
  auto group = [](const StepSeq& s) { return s.decode ? 2 : s.context == 0 ? 0 : 1; };
  int64_t rows_in[3] = {0, 0, 0};
  int64_t na = 0, samples = 0, max_blocks = 1;
  for (const StepSeq& s : seqs) {
    const int g = group(s);
    rows_in[g] += s.tokens;
    if (g == 0 && s.tokens > 0) ++na;
    if (s.samples) ++samples;
    max_blocks = std::max<int64_t>(max_blocks, static_cast<int64_t>(s.blocks->size()));
    if (static_cast<int64_t>(s.blocks->size()) * bs < s.context + s.tokens)
      return Status::Invalid("live: a sequence's blocks do not hold its context");
  }
  const int64_t ta = rows_in[0], tb1 = rows_in[1], tb2 = rows_in[2], tb = tb1 + tb2;
  const int64_t T = ta + tb;
  if (T == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(Reserve(T, samples, tb * max_blocks));
  if (tp_ > 1) {
    // The buffers the others copy into may have moved: attach them again,
    // and line the ranks up before the first copy.
    FLEETSIM_RETURN_IF_ERROR(options_.group->ring.Attach(options_.rank, h_.data(), h_.bytes()));
    if (options_.rank == 0) options_.group->logits = logits_.data();
    FLEETSIM_RETURN_IF_ERROR(Arrive());
  }
  const Clock::time_point host_start = Clock::now();
  // Host copies of the index tensors, laid out as in Reserve.
  host_index_.assign(static_cast<size_t>(4 * T + 3 * samples + na + 1 + tb * max_blocks), 0);
  int32_t* ids = host_index_.data();
  int32_t* pos = ids + T;
  int32_t* slots = pos + T;
  int32_t* starts = slots + T;                 // na + 1
  int32_t* lens = starts + na + 1;             // tb
  int32_t* tables = lens + tb;                 // tb × max_blocks
  int32_t* gather = tables + tb * max_blocks;  // samples, in the order of seqs
  int64_t next_row[3] = {0, ta, ta + tb1};
  int64_t seq_a = 0, sample_i = 0;
  starts[0] = 0;
  for (const StepSeq& s : seqs) {
    const int g = group(s);
    int64_t row = next_row[g];
    for (int32_t i = 0; i < s.tokens; ++i, ++row) {
      const int64_t p = s.context + i;
      ids[row] = g == 2 ? s.last_token
                        : static_cast<int32_t>((static_cast<uint64_t>(p) * 2654435761u + 12345u) %
                                               static_cast<uint64_t>(model_.vocab));
      pos[row] = static_cast<int32_t>(p);
      slots[row] = (*s.blocks)[static_cast<size_t>(p / bs)] * static_cast<int32_t>(bs) + static_cast<int32_t>(p % bs);
      if (g != 0) {
        const int64_t r = row - ta;
        lens[r] = static_cast<int32_t>(p + 1);
        std::copy(s.blocks->begin(), s.blocks->end(), tables + r * max_blocks);
      }
    }
    next_row[g] = row;
    if (g == 0) starts[++seq_a] = static_cast<int32_t>(row);
    if (s.samples) gather[sample_i++] = static_cast<int32_t>(row - 1);
  }
  FLEETSIM_RETURN_IF_ERROR(backend_.CopyToDevice(index_.data(), host_index_.data(), host_index_.size() * 4));
  if (time_ops_)
    times_.host += static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - host_start).count());
  auto* dev = static_cast<int32_t*>(index_.data());
  const int32_t* d_ids = dev;
  const int32_t* d_pos = d_ids + T;
  const int32_t* d_slots = d_pos + T;
  const int32_t* d_starts = d_slots + T;
  const int32_t* d_lens = d_starts + na + 1;
  const int32_t* d_tables = d_lens + tb;
  const int32_t* d_gather = d_tables + tb * max_blocks;
  int32_t* d_out = dev + (d_gather - dev) + samples;

  const int64_t H = model_.hidden, I = intermediate_;
  auto at = [&](const DeviceBuffer& b, int64_t elements) {
    return static_cast<unsigned char*>(b.data()) + static_cast<size_t>(elements) * elem_;
  };
  // c (m × n) = a (m × k) · w (k × n), all packed.
  auto gemm_args = [&](const void* a, const void* w, void* c, int64_t m, int64_t n, int64_t k) {
    kernels::GemmArgs g;
    g.m = m;
    g.n = n;
    g.k = k;
    g.dtype = dtype_;
    g.a = a;
    g.b = w;
    g.c = c;
    g.lda = k;
    g.ldb = n;
    g.ldc = n;
    return g;
  };
  auto run_gemm = [&](const kernels::GemmArgs& g) { return timed(&times_.gemm, [&] { return backend_.Gemm(g); }); };
  auto gemm = [&](const void* a, const void* w, void* c, int64_t m, int64_t n, int64_t k) {
    return run_gemm(gemm_args(a, w, c, m, n, k));
  };
  auto norm = [&](const void* x, const DeviceBuffer& w, void* out, int64_t rows) {
    kernels::RmsNormArgs r;
    r.rows = rows;
    r.hidden = H;
    r.dtype = dtype_;
    r.x = x;
    r.weight = w.data();
    r.out = out;
    r.x_stride = H;
    r.out_stride = H;
    return timed(&times_.elementwise, [&] { return backend_.RmsNorm(r); });
  };
  auto residual = [&](void* x, const void* y, int64_t rows) {
    kernels::ResidualAddArgs r;
    r.rows = rows;
    r.width = H;
    r.dtype = dtype_;
    r.a = x;
    r.b = y;
    r.out = x;
    r.a_stride = H;
    r.b_stride = H;
    r.out_stride = H;
    return timed(&times_.elementwise, [&] { return backend_.ResidualAdd(r); });
  };
  // Paged attention for `rows` query rows from packed row `first`.
  auto paged = [&](Layer& l, int64_t first, int64_t rows, double* bucket) {
    kernels::AttentionDecodeArgs d;
    d.num_seqs = rows;
    d.num_heads = heads_;
    d.num_kv_heads = kv_heads_;
    d.head_dim = model_.head_dim;
    d.block_size = bs;
    d.num_blocks = options_.kv_blocks;
    d.max_blocks_per_seq = max_blocks;
    d.dtype = dtype_;
    d.q = at(qkv_buf_, first * qkv_cols_);
    d.k_cache = l.k_cache.data();
    d.v_cache = l.v_cache.data();
    d.block_tables = d_tables + (first - ta) * max_blocks;
    d.context_lens = d_lens + (first - ta);
    d.out = at(attn_, first * q_cols_);
    d.q_stride = qkv_cols_;
    d.out_stride = q_cols_;
    d.block_table_stride = max_blocks;
    return timed(bucket, [&] { return backend_.AttentionDecode(d); });
  };
  {
    kernels::EmbeddingArgs e;
    e.num_tokens = T;
    e.vocab_size = model_.vocab;
    e.hidden = H;
    e.dtype = dtype_;
    e.token_ids = d_ids;
    e.table = embedding_.data();
    e.out = x_.data();
    e.out_stride = H;
    FLEETSIM_RETURN_IF_ERROR(timed(&times_.elementwise, [&] { return backend_.Embedding(e); }));
  }
  const int64_t hd = model_.head_dim;
  const int64_t num_slots = options_.kv_blocks * bs;
  for (Layer& l : layers_) {
    FLEETSIM_RETURN_IF_ERROR(norm(x_.data(), l.attn_norm, h_.data(), T));
    FLEETSIM_RETURN_IF_ERROR(gemm(h_.data(), l.qkv.data(), qkv_buf_.data(), T, qkv_cols_, H));
    for (int part = 0; part < 2; ++part) {
      kernels::RopeArgs r;
      r.num_tokens = T;
      r.num_heads = part == 0 ? heads_ : kv_heads_;
      r.head_dim = hd;
      r.theta = options_.rope_theta;
      r.dtype = dtype_;
      r.positions = d_pos;
      r.x = at(qkv_buf_, part == 0 ? 0 : q_cols_);
      r.x_stride = qkv_cols_;
      FLEETSIM_RETURN_IF_ERROR(timed(&times_.elementwise, [&] { return backend_.Rope(r); }));
    }
    {
      kernels::KvCacheWriteArgs w;
      w.num_tokens = T;
      w.num_kv_heads = kv_heads_;
      w.head_dim = hd;
      w.num_slots = num_slots;
      w.dtype = dtype_;
      w.k = at(qkv_buf_, q_cols_);
      w.v = at(qkv_buf_, q_cols_ + kv_cols_);
      w.k_stride = qkv_cols_;
      w.v_stride = qkv_cols_;
      w.k_cache = l.k_cache.data();
      w.v_cache = l.v_cache.data();
      w.slots = d_slots;
      FLEETSIM_RETURN_IF_ERROR(timed(&times_.kv_write, [&] { return backend_.KvCacheWrite(w); }));
    }
    if (ta > 0) {
      kernels::AttentionPrefillArgs p;
      p.num_seqs = na;
      p.num_tokens = ta;
      p.num_heads = heads_;
      p.num_kv_heads = kv_heads_;
      p.head_dim = hd;
      p.dtype = dtype_;
      p.seq_starts = d_starts;
      p.q = qkv_buf_.data();
      p.k = at(qkv_buf_, q_cols_);
      p.v = at(qkv_buf_, q_cols_ + kv_cols_);
      p.out = attn_.data();
      p.q_stride = qkv_cols_;
      p.k_stride = qkv_cols_;
      p.v_stride = qkv_cols_;
      p.out_stride = q_cols_;
      FLEETSIM_RETURN_IF_ERROR(timed(&times_.attention_prefill, [&] { return backend_.AttentionPrefill(p); }));
    }
    if (tb1 > 0) FLEETSIM_RETURN_IF_ERROR(paged(l, ta, tb1, &times_.attention_prefill));
    if (tb2 > 0) FLEETSIM_RETURN_IF_ERROR(paged(l, ta + tb1, tb2, &times_.attention_decode));
    FLEETSIM_RETURN_IF_ERROR(gemm(attn_.data(), l.o.data(), h_.data(), T, H, q_cols_));
    if (tp_ > 1) FLEETSIM_RETURN_IF_ERROR(timed(&times_.collective, [&] { return AllReduce(T); }));
    FLEETSIM_RETURN_IF_ERROR(residual(x_.data(), h_.data(), T));
    FLEETSIM_RETURN_IF_ERROR(norm(x_.data(), l.mlp_norm, h_.data(), T));
    FLEETSIM_RETURN_IF_ERROR(gemm(h_.data(), l.gate_up.data(), gate_up_buf_.data(), T, 2 * I, H));
    {
      kernels::SiluMulArgs s;
      s.rows = T;
      s.width = I;
      s.dtype = dtype_;
      s.gate = gate_up_buf_.data();
      s.up = at(gate_up_buf_, I);
      s.out = act_.data();
      s.gate_stride = 2 * I;
      s.up_stride = 2 * I;
      s.out_stride = I;
      FLEETSIM_RETURN_IF_ERROR(timed(&times_.elementwise, [&] { return backend_.SiluMul(s); }));
    }
    FLEETSIM_RETURN_IF_ERROR(gemm(act_.data(), l.down.data(), h_.data(), T, H, I));
    if (tp_ > 1) FLEETSIM_RETURN_IF_ERROR(timed(&times_.collective, [&] { return AllReduce(T); }));
    FLEETSIM_RETURN_IF_ERROR(residual(x_.data(), h_.data(), T));
  }
  if (samples > 0) {
    // The sampling rows: an embedding lookup is a row gather.
    kernels::EmbeddingArgs g;
    g.num_tokens = samples;
    g.vocab_size = T;
    g.hidden = H;
    g.dtype = dtype_;
    g.token_ids = d_gather;
    g.table = x_.data();
    g.out = h_.data();
    g.out_stride = H;
    FLEETSIM_RETURN_IF_ERROR(timed(&times_.elementwise, [&] { return backend_.Embedding(g); }));
    FLEETSIM_RETURN_IF_ERROR(norm(h_.data(), final_norm_, gathered_.data(), samples));
    // This rank's vocabulary columns; rank 0 writes its own straight into
    // the full logits (row stride vocab), the others theirs packed, then
    // copy them into rank 0's at their column offset.
    kernels::GemmArgs lm = gemm_args(gathered_.data(), lm_head_.data(), logits_.data(), samples, vocab_cols_, H);
    lm.ldc = options_.rank == 0 ? model_.vocab : vocab_cols_;
    if (model_.tied_embeddings) {
      lm.transpose_b = true;
      lm.b = at(embedding_, vocab_first_ * H);
      lm.ldb = H;
    }
    FLEETSIM_RETURN_IF_ERROR(run_gemm(lm));
    if (tp_ > 1) {
      FLEETSIM_RETURN_IF_ERROR(timed(&times_.collective, [&]() -> Status {
        if (options_.rank != 0) {
          kernels::RingAllReduce& ring = options_.group->ring;
          FLEETSIM_RETURN_IF_ERROR(backend_.CopyPeer2D(
              ring.backend(0), static_cast<unsigned char*>(options_.group->logits) + static_cast<size_t>(vocab_first_) * elem_,
              static_cast<size_t>(model_.vocab) * elem_, logits_.data(), static_cast<size_t>(vocab_cols_) * elem_,
              static_cast<size_t>(vocab_cols_) * elem_, static_cast<size_t>(samples)));
          FLEETSIM_RETURN_IF_ERROR(backend_.Synchronize());
        }
        return Arrive();
      }));
      if (options_.rank != 0) {
        times_.total = static_cast<double>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - step_start).count());
        return Status::Ok();
      }
    }
    kernels::ArgmaxArgs am;
    am.rows = samples;
    am.width = model_.vocab;
    am.dtype = dtype_;
    am.x = logits_.data();
    am.x_stride = model_.vocab;
    am.out = d_out;
    sampled->resize(static_cast<size_t>(samples));
    FLEETSIM_RETURN_IF_ERROR(timed(&times_.sampling, [&] {
      FLEETSIM_RETURN_IF_ERROR(backend_.Argmax(am));
      return backend_.CopyToHost(sampled->data(), d_out, static_cast<size_t>(samples) * 4);
    }));
  }
  FLEETSIM_RETURN_IF_ERROR(backend_.Synchronize());
  times_.total =
      static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - step_start).count());
  return Status::Ok();
}

}  // namespace fleetsim::live
