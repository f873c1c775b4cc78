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
  q_cols_ = int64_t{model.heads} * model.head_dim;
  kv_cols_ = int64_t{model.kv_heads} * model.head_dim;
  qkv_cols_ = q_cols_ + 2 * kv_cols_;
}

Status LiveModel::Create(const ModelSpec& model, kernels::Backend& backend, const LiveModelOptions& options,
                         std::unique_ptr<LiveModel>* out) {
  if (const std::string why = LiveUnsupported(model); !why.empty()) return Status::Invalid(model.name + ": " + why);
  if (options.block_size <= 0 || options.kv_blocks <= 0 || options.max_tokens <= 0 || options.max_seqs <= 0)
    return Status::Invalid("live model: block_size, kv_blocks, max_tokens and max_seqs must be positive");
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
  // One block of random values, copied over every weight at a shifting
  // offset: weights at their true shapes without generating billions of
  // numbers. Uniform in ±0.02 (about an initialiser's spread); norm weights 1.
  constexpr size_t kPattern = size_t{1} << 20;  // elements
  std::vector<unsigned char> pattern((kPattern + 4096) * elem_);
  uint64_t state = options_.seed ^ 0x6c697665ull;  // "live"
  std::vector<float> values(kPattern + 4096);
  for (float& v : values) v = static_cast<float>((static_cast<double>(Mix(&state) >> 11) * 0x1.0p-53 - 0.5) * 0.04);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype_ == kernels::DType::kFp32) {
      std::memcpy(pattern.data() + i * 4, &values[i], 4);
    } else {
      const uint16_t h =
          dtype_ == kernels::DType::kBf16 ? kernels::FloatToBf16(values[i]) : kernels::FloatToHalf(values[i]);
      std::memcpy(pattern.data() + i * 2, &h, 2);
    }
  }
  size_t shift = 0;
  auto fill = [&](int64_t elements, DeviceBuffer* buf, const char* what) -> Status {
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(elements) * elem_, buf, what));
    weight_bytes_ += elements * static_cast<int64_t>(elem_);
    auto* dst = static_cast<unsigned char*>(buf->data());
    for (int64_t done = 0; done < elements;) {
      const int64_t n = std::min<int64_t>(elements - done, kPattern);
      FLEETSIM_RETURN_IF_ERROR(backend_.CopyToDevice(dst + static_cast<size_t>(done) * elem_,
                                                     pattern.data() + (shift % 4096) * elem_,
                                                     static_cast<size_t>(n) * elem_));
      done += n;
      shift += 977;
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
  const int64_t H = model_.hidden, I = model_.intermediate;
  layers_.resize(static_cast<size_t>(model_.layers));
  const size_t cache_bytes =
      static_cast<size_t>(options_.kv_blocks) * static_cast<size_t>(options_.block_size) * static_cast<size_t>(kv_cols_) * elem_;
  for (Layer& l : layers_) {
    FLEETSIM_RETURN_IF_ERROR(fill_ones(H, &l.attn_norm, "a norm weight"));
    FLEETSIM_RETURN_IF_ERROR(fill(H * qkv_cols_, &l.qkv, "the qkv weight"));
    FLEETSIM_RETURN_IF_ERROR(fill(q_cols_ * H, &l.o, "the o weight"));
    FLEETSIM_RETURN_IF_ERROR(fill_ones(H, &l.mlp_norm, "a norm weight"));
    FLEETSIM_RETURN_IF_ERROR(fill(H * 2 * I, &l.gate_up, "the gate_up weight"));
    FLEETSIM_RETURN_IF_ERROR(fill(I * H, &l.down, "the down weight"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(cache_bytes, &l.k_cache, "the K cache"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(cache_bytes, &l.v_cache, "the V cache"));
    kv_bytes_ += 2 * static_cast<int64_t>(cache_bytes);
  }
  FLEETSIM_RETURN_IF_ERROR(fill(int64_t{model_.vocab} * H, &embedding_, "the embedding"));
  if (!model_.tied_embeddings) FLEETSIM_RETURN_IF_ERROR(fill(H * model_.vocab, &lm_head_, "the lm_head"));
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
    FLEETSIM_RETURN_IF_ERROR(
        Alloc(static_cast<size_t>(t * 2 * model_.intermediate) * e, &gate_up_buf_, "activations"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(t * model_.intermediate) * e, &act_, "activations"));
    cap_tokens_ = t;
  }
  if (seqs > cap_seqs_) {
    const int64_t s = std::max(seqs, cap_seqs_ * 2);
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(s * model_.hidden) * elem_, &gathered_, "activations"));
    FLEETSIM_RETURN_IF_ERROR(Alloc(static_cast<size_t>(s * model_.vocab) * elem_, &logits_, "logits"));
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

void OpTimes::Add(const OpTimes& o) {
  gemm += o.gemm;
  attention_prefill += o.attention_prefill;
  attention_decode += o.attention_decode;
  elementwise += o.elementwise;
  kv_write += o.kv_write;
  sampling += o.sampling;
  host += o.host;
  total += o.total;
}

Status LiveModel::Forward(const std::vector<StepSeq>& seqs, std::vector<int32_t>* sampled) {
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

  const int64_t H = model_.hidden, I = model_.intermediate;
  auto at = [&](const DeviceBuffer& b, int64_t elements) {
    return static_cast<unsigned char*>(b.data()) + static_cast<size_t>(elements) * elem_;
  };
  auto gemm = [&](const void* a, const void* w, void* c, int64_t m, int64_t n, int64_t k) {
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
    return timed(&times_.gemm, [&] { return backend_.Gemm(g); });
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
    d.num_heads = model_.heads;
    d.num_kv_heads = model_.kv_heads;
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
      r.num_heads = part == 0 ? model_.heads : model_.kv_heads;
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
      w.num_kv_heads = model_.kv_heads;
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
      p.num_heads = model_.heads;
      p.num_kv_heads = model_.kv_heads;
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
    if (model_.tied_embeddings) {
      kernels::GemmArgs g2;
      g2.m = samples;
      g2.n = model_.vocab;
      g2.k = H;
      g2.dtype = dtype_;
      g2.transpose_b = true;
      g2.a = gathered_.data();
      g2.b = embedding_.data();
      g2.c = logits_.data();
      g2.lda = H;
      g2.ldb = H;
      g2.ldc = model_.vocab;
      FLEETSIM_RETURN_IF_ERROR(timed(&times_.gemm, [&] { return backend_.Gemm(g2); }));
    } else {
      FLEETSIM_RETURN_IF_ERROR(gemm(gathered_.data(), lm_head_.data(), logits_.data(), samples, model_.vocab, H));
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
