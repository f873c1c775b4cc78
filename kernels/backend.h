// The kernel backend interface: one object per device that owns everything
// the device needs (CUDA stream, cuBLAS handle, ...) and runs the transformer
// ops on buffers it allocated. The calibrator times ops through it and the
// live executor runs models through it; neither knows which backend it holds.
//
// Backends: "cpu" (Eigen; always built; also the reference every other
// backend is tested against) and "cuda" (cuBLAS and own kernels; built when
// nvcc is found, usable when a GPU is visible).
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

  // ---- Ops ---------------------------------------------------------------
  virtual Status Gemm(const GemmArgs& args) = 0;

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

// True when this library was compiled with the CUDA backend.
bool CudaBuilt();

// True when "cuda" can be created: the CUDA backend is built and the runtime
// sees at least one device. Otherwise *why_not (if non-null) says which,
// e.g. "this fleetsim was built without CUDA" or
// "cudaGetDeviceCount: cudaErrorNoDevice: no CUDA-capable device is detected".
bool CudaDeviceAvailable(std::string* why_not);

// Creates the backend registered under `name` ("cpu" or "cuda"). An unknown
// name is answered with the known ones; "cuda" in a build without CUDA or on
// a machine without a GPU is answered with which of the two it is.
Status MakeBackend(std::string_view name, std::unique_ptr<Backend>* out);
Status MakeBackend(std::string_view name, const BackendOptions& options,
                   std::unique_ptr<Backend>* out);

}  // namespace fleetsim::kernels
