// The kernel backend interface: one object per device that owns everything
// the device needs (CUDA stream, cuBLAS handle, ...) and runs the transformer
// ops on buffers it allocated. The calibrator times ops through it and the
// live executor runs models through it; neither knows which backend it holds.
//
// Backends: "cpu" (Eigen; always built; also the reference every other
// backend is tested against) and "cuda" (cuBLAS and own kernels; built when
// nvcc is found, as libfleetsim_cuda.so, which MakeBackend and DeviceCount
// load on first use (cuda_module.h); usable when a GPU is visible).
//
// Conventions shared by every op:
//  - Matrices are row-major. A leading dimension is the distance, in
//    elements, between the starts of two consecutive rows as stored.
//  - "Device pointers" are pointers the backend returned from Allocate (for
//    "cpu" they are ordinary host memory). Ops never take host pointers; move
//    data with CopyToDevice / CopyToHost.
//  - Ops are enqueued in order on the backend's single stream and may return
//    before they finish; Synchronize() waits. Copies to the host return when
//    the host buffer holds the data.
//  - Storage may be fp32, fp16 or bf16; arithmetic is always fp32.
//  - Errors: a Status names the op, the argument and the bound it broke, or
//    the device API call with file:line and the driver's error string.
//
// Thread safety: a Backend is used by one thread at a time. Distinct Backend
// objects are independent (no global state), so a thread per device works.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace fleetsim::kernels {

// Element formats of kernel buffers. The model zoo has its own, wider
// fleetsim::DType (model/dtype.h); kernels/ does not depend on model/, so the
// calibrator maps between the two.
enum class DType { kFp32, kFp16, kBf16 };

// Bytes per element: 4, 2, 2.
size_t DTypeSize(DType t);
// "fp32", "fp16", "bf16".
std::string_view DTypeName(DType t);

// C = alpha · op(A) · op(B) + beta · C, with op(A) of shape M×K, op(B) K×N
// and C M×N, all row-major (see the conventions above).
//
// A, B and C share `dtype`. Products and sums are formed in fp32 and C is
// rounded to its storage type once, at the end (round to nearest even). fp32
// storage means true fp32 arithmetic (no TF32), so "cpu" and "cuda" agree to
// fp32 rounding.
//
// As in BLAS, beta == 0 means C is written without being read: NaN or
// garbage in C does not leak into the result.
//
// REQUIRES: C does not overlap A or B.
struct GemmArgs {
  int64_t m = 0;  // rows of op(A) and of C
  int64_t n = 0;  // columns of op(B) and of C
  int64_t k = 0;  // columns of op(A), rows of op(B): the reduction length
  DType dtype = DType::kFp32;

  // op(A) = A when false; A^T when true, and A is then stored K×M.
  bool transpose_a = false;
  // op(B) = B when false; B^T when true, and B is then stored N×K.
  bool transpose_b = false;

  float alpha = 1.0f;
  float beta = 0.0f;

  // Device pointers. a and b may be null only when k == 0 or the output is
  // empty; c may be null only when m == 0 or n == 0.
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;

  // Leading dimensions in elements: lda >= columns of A as stored (K, or M
  // when transpose_a), ldb >= columns of B as stored (N, or K when
  // transpose_b), ldc >= N. Larger values address a sub-matrix of a wider
  // buffer.
  int64_t lda = 0;
  int64_t ldb = 0;
  int64_t ldc = 0;
};

// Returns OK or a Status naming the first offending field, e.g.
// `gemm: lda=3 is less than the 4 columns of A as stored (K)`. Every
// backend calls this before touching memory.
Status ValidateGemmArgs(const GemmArgs& args);

// ---- Transformer ops besides GEMM -------------------------------------------
//
// Layout shared by the ops below: a tensor of `rows` (tokens or sequences) is
// stored row after row, each row contiguous, with a row stride in elements
// (the distance between the starts of two consecutive rows, >= the row's
// logical width). Strides let an op read or write a slice of a wider buffer,
// e.g. Q, K and V as column ranges of one fused QKV projection. Inside a row,
// attention heads are contiguous: head h occupies [h·head_dim, (h+1)·head_dim).
//
// All floating-point tensors of one call share `dtype`; every element is
// widened to fp32, the op is computed in fp32, and each output is rounded to
// its storage type once (round to nearest even). Index tensors (token ids,
// positions, block tables, lengths, sequence starts) are int32 in device
// memory, as a serving engine keeps them.
//
// Validate<Op>Args checks what can be checked on the host (sizes, strides,
// null pointers, aliasing rules) and returns a Status naming the op and the
// first bad field; every backend calls it before touching memory. The
// contents of index tensors live on the device and are the caller's
// contract (REQUIRES lines below).

// out[r] = x[r] / sqrt(mean_i(x[r][i]²) + eps) ⊙ weight, per row (RMSNorm as
// in Llama). The mean of squares is accumulated in fp32.
// out may equal x (in place); otherwise they must not overlap.
struct RmsNormArgs {
  int64_t rows = 0;    // tokens
  int64_t hidden = 0;  // row width, and the length of weight
  float eps = 1e-5f;   // added to the mean square; > 0 keeps a zero row finite
  DType dtype = DType::kFp32;
  const void* x = nullptr;       // rows × hidden, row stride x_stride
  const void* weight = nullptr;  // hidden elements, contiguous
  void* out = nullptr;           // rows × hidden, row stride out_stride
  int64_t x_stride = 0;          // >= hidden
  int64_t out_stride = 0;        // >= hidden
};
Status ValidateRmsNormArgs(const RmsNormArgs& args);

// out = silu(gate) ⊙ up, silu(g) = g / (1 + e^-g): the gated activation of a
// SwiGLU MLP (Llama, Mistral, Qwen). gate and up are usually the two halves
// of one fused projection, hence separate strides.
// out may equal gate or up (in place, same stride); no other overlap.
struct SiluMulArgs {
  int64_t rows = 0;   // tokens
  int64_t width = 0;  // intermediate size
  DType dtype = DType::kFp32;
  const void* gate = nullptr;  // rows × width, row stride gate_stride
  const void* up = nullptr;    // rows × width, row stride up_stride
  void* out = nullptr;         // rows × width, row stride out_stride
  int64_t gate_stride = 0;     // >= width
  int64_t up_stride = 0;       // >= width
  int64_t out_stride = 0;      // >= width
};
Status ValidateSiluMulArgs(const SiluMulArgs& args);

// out = a + b elementwise (the residual connection), summed in fp32 and
// rounded once. out may equal a or b (in place, same stride).
struct ResidualAddArgs {
  int64_t rows = 0;
  int64_t width = 0;
  DType dtype = DType::kFp32;
  const void* a = nullptr;  // rows × width, row stride a_stride
  const void* b = nullptr;  // rows × width, row stride b_stride
  void* out = nullptr;      // rows × width, row stride out_stride
  int64_t a_stride = 0;     // >= width
  int64_t b_stride = 0;     // >= width
  int64_t out_stride = 0;   // >= width
};
Status ValidateResidualAddArgs(const ResidualAddArgs& args);

// out[t] = table[token_ids[t]]: the token embedding lookup. A copy, so fp16
// and bf16 values pass through bit for bit.
// REQUIRES: every token id is in [0, vocab_size). An id outside writes a row
// of zeros on every backend (a GPU cannot report it without a sync).
struct EmbeddingArgs {
  int64_t num_tokens = 0;
  int64_t vocab_size = 0;  // rows of table
  int64_t hidden = 0;      // row width of table and out
  DType dtype = DType::kFp32;
  const int32_t* token_ids = nullptr;  // num_tokens ids
  const void* table = nullptr;         // vocab_size × hidden, contiguous rows
  void* out = nullptr;                 // num_tokens × hidden, row stride out_stride
  int64_t out_stride = 0;              // >= hidden
};
Status ValidateEmbeddingArgs(const EmbeddingArgs& args);

// Rotary position embedding, Llama style ("rotate half"), in place on x of
// shape num_tokens × num_heads × head_dim. Token t at position p = positions[t]
// has, for i in [0, head_dim/2), the angle p·θ^(-2i/head_dim) applied to the
// pair (x[i], x[i + head_dim/2]):
//   x'[i]              = x[i]·cos − x[i + head_dim/2]·sin
//   x'[i + head_dim/2] = x[i + head_dim/2]·cos + x[i]·sin
// Angles are formed in double so that long positions keep their phase; the
// rotation itself is fp32. Call once for Q and once for K.
// REQUIRES: positions are >= 0.
struct RopeArgs {
  int64_t num_tokens = 0;
  int64_t num_heads = 0;  // heads in each row of x
  int64_t head_dim = 0;   // even, > 0
  double theta = 10000.0; // base of the frequencies (Llama 2: 1e4, Llama 3: 5e5); > 0
  DType dtype = DType::kFp32;
  const int32_t* positions = nullptr;  // num_tokens positions
  void* x = nullptr;                   // rotated in place
  int64_t x_stride = 0;                // row stride, >= num_heads·head_dim
};
Status ValidateRopeArgs(const RopeArgs& args);

// Causal, grouped-query self-attention over the prompt tokens of a batch of
// sequences packed one after another ("varlen" prefill). Sequence s owns the
// tokens [seq_starts[s], seq_starts[s+1]); its query i attends to its keys
// 0..i. Query head h reads K/V head h / (num_heads / num_kv_heads), so
// consecutive query heads share a K/V head (GQA; MHA when num_kv_heads ==
// num_heads, MQA when it is 1). Scores are q·k / sqrt(head_dim); softmax in
// fp32 with the running maximum subtracted.
// REQUIRES: seq_starts[0] == 0, non-decreasing, seq_starts[num_seqs] ==
// num_tokens. out must not overlap q, k or v.
struct AttentionPrefillArgs {
  int64_t num_seqs = 0;
  int64_t num_tokens = 0;  // total over the batch
  int64_t num_heads = 0;   // query heads
  int64_t num_kv_heads = 0;  // K/V heads; divides num_heads
  int64_t head_dim = 0;
  DType dtype = DType::kFp32;
  const int32_t* seq_starts = nullptr;  // num_seqs + 1 token offsets
  const void* q = nullptr;  // num_tokens × num_heads × head_dim, row stride q_stride
  const void* k = nullptr;  // num_tokens × num_kv_heads × head_dim, row stride k_stride
  const void* v = nullptr;  // num_tokens × num_kv_heads × head_dim, row stride v_stride
  void* out = nullptr;      // num_tokens × num_heads × head_dim, row stride out_stride
  int64_t q_stride = 0;     // >= num_heads·head_dim
  int64_t k_stride = 0;     // >= num_kv_heads·head_dim
  int64_t v_stride = 0;     // >= num_kv_heads·head_dim
  int64_t out_stride = 0;   // >= num_heads·head_dim
};
Status ValidateAttentionPrefillArgs(const AttentionPrefillArgs& args);

// One decode step of grouped-query attention for a batch of sequences whose
// K/V live in a paged cache (vLLM's PagedAttention layout, simplified). The
// cache is num_blocks blocks of block_size token slots; a slot holds
// num_kv_heads × head_dim contiguous elements, so token slot j of block b
// starts at element (b·block_size + j)·num_kv_heads·head_dim of k_cache (and
// of v_cache). Sequence s has context_lens[s] tokens; its token t lives in
// block block_tables[s·block_table_stride + t / block_size], slot
// t % block_size. The one query row of sequence s attends to all of them
// (the new token's K/V must already be in the cache). Scale, GQA mapping and
// softmax as in AttentionPrefillArgs. A sequence with context length 0 gets
// a zero output row.
// REQUIRES: 0 <= context_lens[s] <= max_blocks_per_seq·block_size; the first
// ceil(context_lens[s] / block_size) block ids of each row are in
// [0, num_blocks). out must not overlap q or the caches.
struct AttentionDecodeArgs {
  int64_t num_seqs = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;  // divides num_heads
  int64_t head_dim = 0;
  int64_t block_size = 0;          // token slots per KV block, > 0
  int64_t num_blocks = 0;          // blocks in each of k_cache, v_cache
  int64_t max_blocks_per_seq = 0;  // used columns of the block table
  DType dtype = DType::kFp32;
  const void* q = nullptr;        // num_seqs × num_heads × head_dim, row stride q_stride
  const void* k_cache = nullptr;  // num_blocks × block_size × num_kv_heads × head_dim
  const void* v_cache = nullptr;  // same shape as k_cache
  const int32_t* block_tables = nullptr;  // num_seqs rows, row stride block_table_stride
  const int32_t* context_lens = nullptr;  // num_seqs lengths in tokens
  void* out = nullptr;            // num_seqs × num_heads × head_dim, row stride out_stride
  int64_t q_stride = 0;            // >= num_heads·head_dim
  int64_t out_stride = 0;          // >= num_heads·head_dim
  int64_t block_table_stride = 0;  // >= max_blocks_per_seq
};
Status ValidateAttentionDecodeArgs(const AttentionDecodeArgs& args);

// Writes the K and V rows of a batch's new tokens into a paged cache (vLLM's
// reshape_and_cache): token t's K row (num_kv_heads × head_dim elements)
// goes to token slot slots[t] of k_cache, that is to element
// slots[t]·num_kv_heads·head_dim, and its V row to the same slot of v_cache
// (the layout of AttentionDecodeArgs: slot = block·block_size + offset). A
// copy of the stored bits. A slot of -1 is skipped (a padding token).
// REQUIRES: slots are -1 or in [0, num_slots) and no two tokens share one.
// The caches must not overlap k or v.
struct KvCacheWriteArgs {
  int64_t num_tokens = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t num_slots = 0;  // num_blocks · block_size of each cache
  DType dtype = DType::kFp32;
  const void* k = nullptr;      // num_tokens × num_kv_heads × head_dim, row stride k_stride
  const void* v = nullptr;      // same, row stride v_stride
  int64_t k_stride = 0;         // >= num_kv_heads·head_dim
  int64_t v_stride = 0;         // >= num_kv_heads·head_dim
  void* k_cache = nullptr;      // num_slots × num_kv_heads × head_dim, contiguous
  void* v_cache = nullptr;      // same shape
  const int32_t* slots = nullptr;  // num_tokens slot ids
};
Status ValidateKvCacheWriteArgs(const KvCacheWriteArgs& args);

// out[r] = the column of the largest of row r's `width` values, the first
// such column on ties (greedy sampling of a token id from logits). NaNs
// are never chosen; a row of NaNs gives 0. Compared in fp32.
struct ArgmaxArgs {
  int64_t rows = 0;
  int64_t width = 0;     // > 0; at most INT32_MAX
  DType dtype = DType::kFp32;
  const void* x = nullptr;  // rows × width, row stride x_stride
  int64_t x_stride = 0;     // >= width
  int32_t* out = nullptr;   // rows ids, in device memory
};
Status ValidateArgmaxArgs(const ArgmaxArgs& args);

// What a backend runs on, for logs and for calibration profiles (which must
// record the device, its clocks and the tool versions they were measured
// with). Fields a backend cannot know are left at their zero value.
struct DeviceInfo {
  std::string backend;  // "cpu" or "cuda"
  std::string name;     // "NVIDIA H200", or the CPU model name
  int device_ordinal = 0;         // CUDA device index; 0 for "cpu"
  int64_t memory_bytes = 0;       // total device memory (host RAM for "cpu")
  int compute_units = 0;          // streaming multiprocessors, or hardware threads
  int compute_capability = 0;     // 10·major + minor (90 for sm_90); 0 for "cpu"
  int sm_clock_khz = 0;           // peak SM clock
  int memory_clock_khz = 0;       // peak memory clock
  int memory_bus_width_bits = 0;  // global memory bus width
  int64_t l2_cache_bytes = 0;     // L2 size: what a timing loop must flush
  // Library and driver versions, e.g. "CUDA runtime 13.0, driver 13.0,
  // cuBLAS 13.1.0" or "Eigen 3.4.0 (SSE, SSE2)".
  std::string software;

  // One line for logs: name, capability, memory, clocks, versions.
  std::string ToString() const;
};

class Backend;

// Owns one allocation of a backend and frees it on destruction. Move-only.
// REQUIRES: the backend outlives every buffer it allocated.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer() { Reset(); }
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  // Frees the allocation now; the buffer becomes empty.
  void Reset();

 private:
  friend class Backend;
  Backend* backend_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

class Backend {
 public:
  Backend() = default;
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  // The registered name: "cpu" or "cuda".
  virtual std::string_view name() const = 0;
  virtual const DeviceInfo& device() const = 0;

  // ---- Memory ---------------------------------------------------------
  // Allocates `bytes` of device memory, aligned to at least 256 bytes
  // (enough for any vector load). *ptr is null when bytes == 0. Fails with
  // a Status (not an abort) when the device is out of memory, so a
  // calibration sweep can skip shapes that do not fit.
  virtual Status Allocate(size_t bytes, void** ptr) = 0;
  // Frees memory from Allocate; null is a no-op. Waits for pending work
  // that may use it.
  virtual void Free(void* ptr) = 0;
  // Host → device. Ordered after previously enqueued ops; the host buffer
  // may be reused as soon as the call returns.
  virtual Status CopyToDevice(void* dst, const void* host_src, size_t bytes) = 0;
  // Device → host. Waits for previously enqueued ops, so the host sees
  // their results.
  virtual Status CopyToHost(void* host_dst, const void* src, size_t bytes) = 0;
  // Device → device on this backend, enqueued like an op.
  // REQUIRES: the ranges do not overlap.
  virtual Status CopyOnDevice(void* dst, const void* src, size_t bytes) = 0;
  // Waits until every enqueued op and copy has finished, and reports any
  // error an asynchronous op hit.
  virtual Status Synchronize() = 0;
  // Device → device across backends of the same kind (GPU → GPU over
  // NVLink/PCIe, the tensor- and pipeline-parallel transfers): copies
  // `bytes` from src on this backend to dst on `dst_backend`. Enqueued on
  // this (the source) backend's stream, so it is ordered after this
  // backend's ops but not after the destination's: Synchronize()
  // `dst_backend` first if it may still use dst, and Synchronize() this
  // backend before the destination reads dst. A backend of another kind is
  // answered with a Status. dst_backend may be this backend (then it is
  // CopyOnDevice).
  // REQUIRES: the ranges do not overlap.
  virtual Status CopyPeer(Backend& dst_backend, void* dst, const void* src, size_t bytes) = 0;
  // CopyPeer of `rows` rows of `width` bytes: row i from src + i·src_pitch
  // to dst + i·dst_pitch (a column block of a row-major matrix: live mode
  // gathers the tensor-parallel ranks' vocabulary slices of the logits so).
  // Ordered and synchronised as CopyPeer. The default is a CopyPeer per row;
  // "cuda" makes it one cudaMemcpy3DPeerAsync.
  // REQUIRES: width <= each pitch; the ranges do not overlap.
  virtual Status CopyPeer2D(Backend& dst_backend, void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                            size_t width, size_t rows);

  // ---- Ops ---------------------------------------------------------------
  // Each op validates its arguments (Validate<Op>Args above) and then runs
  // or enqueues the op; see the Args struct for the contract.
  virtual Status Gemm(const GemmArgs& args) = 0;
  virtual Status RmsNorm(const RmsNormArgs& args) = 0;
  virtual Status SiluMul(const SiluMulArgs& args) = 0;
  virtual Status ResidualAdd(const ResidualAddArgs& args) = 0;
  virtual Status Embedding(const EmbeddingArgs& args) = 0;
  virtual Status Rope(const RopeArgs& args) = 0;
  virtual Status AttentionPrefill(const AttentionPrefillArgs& args) = 0;
  virtual Status AttentionDecode(const AttentionDecodeArgs& args) = 0;
  // Ops live mode needs and calibration does not time. A backend without
  // them answers with a Status naming itself and the op.
  virtual Status KvCacheWrite(const KvCacheWriteArgs& args);
  virtual Status Argmax(const ArgmaxArgs& args);

  // ---- Timing (the calibrator's primitives) ---------------------------
  // Runs `body` once (it enqueues ops on this backend) and sets *ns to the
  // time the device spent from the start of the first op to the end of the
  // last: "cuda" records CUDA events on the stream around body and reads
  // their elapsed time; "cpu" reads steady_clock around body and a
  // Synchronize. Work enqueued before the call is finished first, so it is
  // not counted. A body's error is returned as is (and *ns is 0).
  virtual Status TimeOnce(const std::function<Status()>& body, double* ns) = 0;
  // Evicts this device's caches so that the next op reads its operands from
  // memory, as a serving engine's kernels mostly do (weights are far larger
  // than any cache): passes over a scratch buffer of at least twice the
  // last-level cache (DeviceInfo::l2_cache_bytes; the CPU's L3) and waits.
  // Both backends read it, leaving only clean lines, so the timed op pays
  // no write-backs of the flush's own (see CudaBackend::FlushCache). The
  // buffer is allocated on first use and kept.
  virtual Status FlushCache() = 0;

  // Allocate wrapped in an owning buffer (previous contents of *out freed).
  Status AllocateBuffer(size_t bytes, DeviceBuffer* out);
};

// Options of MakeBackend; the defaults suit a one-GPU machine.
struct BackendOptions {
  // CUDA device index as the runtime counts them (after CUDA_VISIBLE_DEVICES).
  // Ignored by "cpu".
  int cuda_device = 0;
};

struct BackendDescription {
  std::string_view name;
  std::string_view description;
};

// Every backend name this library knows, built or not, in a fixed order.
std::vector<BackendDescription> KnownBackends();

// True when this build has the CUDA backend (libfleetsim_cuda.so was built
// with it). Compile-time knowledge: loads nothing.
bool CudaBuilt();

// True when "cuda" can be created: the CUDA backend is built, its module
// loads, and the runtime sees at least one device. Otherwise *why_not (if
// non-null) says which, e.g. "this fleetsim was built without CUDA",
// "cannot load libfleetsim_cuda.so (...)" or
// "cudaGetDeviceCount: cudaErrorNoDevice: no CUDA-capable device is detected".
// Loads the module (and with it the CUDA runtime and cuBLAS) when built.
bool CudaDeviceAvailable(std::string* why_not);

// How many devices backend `name` can create: the CUDA runtime's device
// count for "cuda" (a Status when CUDA is not built, its module does not
// load, or the runtime fails);
// 1 for "cpu" (the host; tests create several to stand for ranks).
Status DeviceCount(std::string_view name, int* count);

// Creates the backend registered under `name` ("cpu" or "cuda"). An unknown
// name is answered with the known ones; "cuda" in a build without CUDA,
// without its loadable module, or on a machine without a GPU is answered
// with which of the three it is.
Status MakeBackend(std::string_view name, std::unique_ptr<Backend>* out);
Status MakeBackend(std::string_view name, const BackendOptions& options,
                   std::unique_ptr<Backend>* out);

}  // namespace fleetsim::kernels
