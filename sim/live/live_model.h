// A dense transformer's forward pass on a kernel backend, for live mode:
// the model's layers at their true shapes (weights random-initialised: live
// mode measures time, not text), over a paged KV cache addressed by block
// tables, ending in greedy sampling of one token id per sampling sequence.
//
// Per step, for T tokens (prefill chunks and decodes) and S sampling
// sequences, each layer runs what calibrate/grid.h times, in the order an
// engine runs them:
//   rms_norm → qkv GEMM → rope (Q, K) → KV cache write → attention →
//   o GEMM → residual add → rms_norm → gate_up GEMM → silu_mul →
//   down GEMM → residual add
// then once: gather the S sampling rows → rms_norm → lm_head GEMM → argmax.
// Attention: chunks that start a prompt (no earlier KV) run the packed
// causal prefill kernel; chunks that continue one, and decodes, run the
// paged decode kernel, a query row per token attending to the cache up to
// and including itself.
//
// Tensor parallel (tp > 1, Megatron-style, as vLLM shards a dense model):
// each rank holds heads / tp query heads and ceil(kv_heads / tp) KV heads
// (their qkv columns and o rows, and their part of the KV cache),
// ceil(intermediate / tp) MLP columns, and ceil(vocab / tp) lm_head
// columns; norms, embedding and residual stream are replicated. The o and
// down GEMMs' partial sums meet in a ring all-reduce over peer copies
// (kernels/ring_all_reduce.h), and the ranks' logits slices are gathered
// into rank 0's with a 2-D peer copy, where the argmax runs. Every rank's
// thread calls Forward with the same sequences; rank 0's gets the tokens.
//
// Llama-style dense models only (no experts, no latent attention), no
// pipeline stages. Not thread-safe: one thread owns a rank's model and its
// backend.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/ring_all_reduce.h"
#include "model/model_spec.h"

namespace fleetsim::live {

// One sequence's part of a step.
struct StepSeq {
  int64_t context = 0;   // tokens in its KV before the step
  int32_t tokens = 0;    // tokens the step feeds (1 for a decode)
  bool decode = false;   // a decode step (else a prompt chunk)
  bool samples = false;  // samples a token (a decode, or the chunk that ends the prompt)
  int32_t last_token = 0;  // the token id a decode feeds (its previous sample)
  // Its KV blocks, in order: enough for context + tokens.
  const std::vector<int32_t>* blocks = nullptr;
};

// What the ranks of one tensor-parallel replica share: the all-reduce over
// their backends (rank r's is ring.backend(r)), and rank 0's logits buffer,
// which the others' vocabulary slices are gathered into (published by rank
// 0 before each step's first barrier).
struct TpGroup {
  explicit TpGroup(std::vector<kernels::Backend*> ranks) : ring(std::move(ranks)) {}
  kernels::RingAllReduce ring;
  void* logits = nullptr;

  // The first error a rank hit, recorded before it aborts the ring: the
  // ranks it releases return kPeerFailed, and this says why.
  void Record(const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (error_.ok()) error_ = s;
  }
  Status error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

 private:
  std::mutex mu_;
  Status error_;
};

struct LiveModelOptions {
  int64_t block_size = 16;
  int64_t kv_blocks = 0;   // physical blocks of the cache (per layer, K and V each)
  int64_t max_tokens = 0;  // tokens per step the buffers are first sized for (they grow)
  int64_t max_seqs = 0;
  double rope_theta = 5e5;
  uint64_t seed = 0;       // of the random weights
  // Tensor parallel: this model is rank `rank` of group->ring.ranks() ranks
  // (its backend is group->ring.backend(rank)). Null: one rank.
  TpGroup* group = nullptr;
  int rank = 0;
};

// Why `model` cannot run live ("" when it can): MoE, latent attention,
// quantised weights (the kernels run fp32, fp16 and bf16).
std::string LiveUnsupported(const ModelSpec& model);

// Time spent in each kind of op, in ns, summed over steps: measured per op
// where the backend runs ops synchronously (cpu); else only `total`.
struct OpTimes {
  double gemm = 0;               // layers' products and the lm_head
  double attention_prefill = 0;  // chunks: the prefill kernel, or the paged one for a continued prompt
  double attention_decode = 0;
  double elementwise = 0;        // norms, rotary, activation, residuals, embedding, row gather
  double kv_write = 0;           // new tokens' K/V into the cache (no perf-model term)
  double sampling = 0;           // argmax and the copy of the ids to the host (no term)
  double collective = 0;         // tensor parallel: all-reduces and the logits gather (the all-reduce term)
  double host = 0;               // index tensors built and copied
  double total = 0;              // the whole step, to the device's end
  void Add(const OpTimes& o);
};

// The error a rank's Forward returns when another rank of its group failed
// (its own error is that rank's): a consequence, never the cause.
inline constexpr const char* kPeerFailed = "another tensor-parallel rank failed";

class LiveModel {
 public:
  // Allocates the weights (random, deterministic in options.seed), the KV
  // cache and the step buffers on `backend`, which must outlive it. Out of
  // device memory is a Status saying how much was asked.
  static Status Create(const ModelSpec& model, kernels::Backend& backend, const LiveModelOptions& options,
                       std::unique_ptr<LiveModel>* out);

  // Runs one step; `sampled` gets one token id per sampling sequence, in
  // order (rank 0 only). Returns when the device has finished. Tensor
  // parallel: every rank's thread calls it with the same sequences; a rank
  // that fails aborts the group, so the others return kPeerFailed.
  Status Forward(const std::vector<StepSeq>& seqs, std::vector<int32_t>* sampled);

  // Times each op (the backend must run them synchronously, as "cpu" does).
  void set_time_ops(bool on) { time_ops_ = on; }
  // What the last Forward spent.
  const OpTimes& last_times() const { return times_; }

  int64_t kv_blocks() const { return options_.kv_blocks; }
  int64_t block_size() const { return options_.block_size; }
  int64_t weight_bytes() const { return weight_bytes_; }
  int64_t kv_bytes() const { return kv_bytes_; }
  kernels::Backend& backend() { return backend_; }

 private:
  LiveModel(const ModelSpec& model, kernels::Backend& backend, const LiveModelOptions& options);
  Status AllocateWeights();
  Status ForwardStep(const std::vector<StepSeq>& seqs, std::vector<int32_t>* sampled);
  Status Reserve(int64_t tokens, int64_t seqs, int64_t table_cells);
  Status Alloc(size_t bytes, kernels::DeviceBuffer* out, const char* what);
  // Tensor parallel: sums h_'s first `rows` rows over the ranks.
  Status AllReduce(int64_t rows);
  // Every rank at the group's barrier (an error when a rank failed).
  Status Arrive();

  struct Layer {
    kernels::DeviceBuffer attn_norm, qkv, o, mlp_norm, gate_up, down;
    kernels::DeviceBuffer k_cache, v_cache;
  };

  const ModelSpec model_;
  kernels::Backend& backend_;
  const LiveModelOptions options_;
  kernels::DType dtype_;
  size_t elem_ = 2;
  int tp_ = 1;
  // This rank's shard: query and KV heads, MLP columns, vocabulary columns
  // (vocab_cols_ of them from column vocab_first_ of the full logits).
  int64_t heads_ = 0, kv_heads_ = 0, intermediate_ = 0, vocab_first_ = 0, vocab_cols_ = 0;
  int64_t q_cols_ = 0, kv_cols_ = 0, qkv_cols_ = 0;
  std::vector<Layer> layers_;
  kernels::DeviceBuffer embedding_, lm_head_, final_norm_;
  int64_t weight_bytes_ = 0, kv_bytes_ = 0;

  // Step buffers, sized for cap_tokens_ tokens and cap_seqs_ sampling rows.
  int64_t cap_tokens_ = 0, cap_seqs_ = 0, cap_cells_ = 0;
  kernels::DeviceBuffer x_, h_, qkv_buf_, attn_, gate_up_buf_, act_, gathered_, logits_;
  kernels::DeviceBuffer index_;  // int32: token ids, positions, slots, starts, lens, tables, gather rows, samples
  std::vector<int32_t> host_index_;
  bool time_ops_ = false;
  OpTimes times_;
};

}  // namespace fleetsim::live
