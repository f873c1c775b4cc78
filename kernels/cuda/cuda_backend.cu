// The "cuda" backend object: device selection, stream, cuBLAS handle, memory
// and copies. Ops live one per file (gemm.cu, ...) as launchers taking a
// cudaStream_t; this file only forwards to them with the backend's stream.
#include "kernels/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda_interface_hash.h"
#include "kernels/cuda_module.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/launchers.h"

namespace fleetsim::kernels {
namespace {

// "13.0" from the 13000 the runtime and driver report.
std::string VersionString(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

}  // namespace

Status CudaDeviceCount(int* count) {
  *count = 0;
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(count));
  return Status::Ok();
}

Status CudaBackend::Create(int device_ordinal, std::unique_ptr<Backend>* out) {
  out->reset();
  int count = 0;
  FLEETSIM_RETURN_IF_ERROR(CudaDeviceCount(&count));
  if (device_ordinal < 0 || device_ordinal >= count) {
    return Status::Invalid("backend \"cuda\": device " + std::to_string(device_ordinal) +
                           " requested but the runtime sees " + std::to_string(count) +
                           " device(s) (valid: 0.." + std::to_string(count - 1) + ")");
  }
  std::unique_ptr<CudaBackend> backend(new CudaBackend(device_ordinal));
  FLEETSIM_RETURN_IF_ERROR(backend->Init());
  *out = std::move(backend);
  return Status::Ok();
}

Status CudaBackend::Init() {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  // Non-blocking: our work must not serialise with the legacy default stream
  // that other libraries in the process may use.
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  FLEETSIM_CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas_));
  FLEETSIM_CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas_, stream_));
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&timer_start_));
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&timer_stop_));

  cudaDeviceProp prop{};
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, device_));
  info_.backend = "cuda";
  info_.name = prop.name;
  info_.device_ordinal = device_;
  info_.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  info_.compute_units = prop.multiProcessorCount;
  info_.compute_capability = prop.major * 10 + prop.minor;
  info_.l2_cache_bytes = prop.l2CacheSize;
  // CUDA 13 removed the clock fields from cudaDeviceProp; attributes remain.
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaDeviceGetAttribute(&info_.sm_clock_khz, cudaDevAttrClockRate, device_));
  FLEETSIM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&info_.memory_clock_khz, cudaDevAttrMemoryClockRate, device_));
  FLEETSIM_CUDA_RETURN_IF_ERROR(
      cudaDeviceGetAttribute(&info_.memory_bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, device_));
  int runtime = 0, driver = 0, cublas = 0;
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaRuntimeGetVersion(&runtime));
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaDriverGetVersion(&driver));
  FLEETSIM_CUBLAS_RETURN_IF_ERROR(cublasGetVersion(cublas_, &cublas));
  // cuBLAS encodes major·10000 + minor·100 + patch.
  info_.software = "CUDA runtime " + VersionString(runtime) + ", driver " + VersionString(driver) +
                   ", cuBLAS " + std::to_string(cublas / 10000) + "." + std::to_string((cublas / 100) % 100) +
                   "." + std::to_string(cublas % 100);
  return Status::Ok();
}

CudaBackend::~CudaBackend() {
  if (cudaSetDevice(device_) != cudaSuccess) return;  // nothing we own can be released
  if (stream_ != nullptr) FLEETSIM_CUDA_WARN_IF_ERROR(cudaStreamSynchronize(stream_));
  flush_.Reset();
  if (timer_start_ != nullptr) FLEETSIM_CUDA_WARN_IF_ERROR(cudaEventDestroy(timer_start_));
  if (timer_stop_ != nullptr) FLEETSIM_CUDA_WARN_IF_ERROR(cudaEventDestroy(timer_stop_));
  if (cublas_ != nullptr) {
    const cublasStatus_t s = cublasDestroy(cublas_);
    if (s != CUBLAS_STATUS_SUCCESS) {
      std::fprintf(stderr, "fleetsim: %s\n",
                   CublasErrorStatus(s, "cublasDestroy", __FILE__, __LINE__).message().c_str());
    }
  }
  if (stream_ != nullptr) FLEETSIM_CUDA_WARN_IF_ERROR(cudaStreamDestroy(stream_));
}

Status CudaBackend::Activate() const {
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaSetDevice(device_));
  return Status::Ok();
}

Status CudaBackend::Allocate(size_t bytes, void** ptr) {
  *ptr = nullptr;
  if (bytes == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(Activate());
  // cudaMalloc aligns to at least 256 bytes, as Backend promises.
  const cudaError_t e = cudaMalloc(ptr, bytes);
  if (e != cudaSuccess) {
    *ptr = nullptr;
    // Clear the (non-sticky) error so the next call does not report it.
    (void)cudaGetLastError();
    return CudaErrorStatus(e, ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str(), __FILE__,
                           __LINE__);
  }
  return Status::Ok();
}

void CudaBackend::Free(void* ptr) {
  if (ptr == nullptr) return;
  if (cudaSetDevice(device_) != cudaSuccess) return;
  // cudaFree waits for work on the device, so pending ops using ptr finish.
  FLEETSIM_CUDA_WARN_IF_ERROR(cudaFree(ptr));
}

Status CudaBackend::CopyToDevice(void* dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(Activate());
  // From pageable memory the copy is staged, but the host buffer is only
  // guaranteed reusable after the stream reaches it: wait, as promised.
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Status CudaBackend::CopyToHost(void* host_dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(Activate());
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Status CudaBackend::CopyOnDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(Activate());
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  return Status::Ok();
}

Status CudaBackend::Synchronize() {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Status CudaBackend::TimeOnce(const std::function<Status()>& body, double* ns) {
  *ns = 0;
  FLEETSIM_RETURN_IF_ERROR(Activate());
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaEventRecord(timer_start_, stream_));
  const Status s = body();
  if (!s.ok()) {
    // Record and wait anyway, so no event is left pending, but report the
    // body's error, not what it left behind.
    FLEETSIM_CUDA_WARN_IF_ERROR(cudaEventRecord(timer_stop_, stream_));
    FLEETSIM_CUDA_WARN_IF_ERROR(cudaEventSynchronize(timer_stop_));
    return s;
  }
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaEventRecord(timer_stop_, stream_));
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(timer_stop_));
  float ms = 0;
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, timer_start_, timer_stop_));
  *ns = static_cast<double>(ms) * 1e6;
  return Status::Ok();
}

namespace {

// Reads every 16 bytes of `words` once; the buffer is zeroed, so the
// xor of its words is 0 and the sink is never written (the compare keeps
// the loads).
__global__ void FlushReadKernel(const uint4* words, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const uint4 w = words[i];
    acc ^= w.x ^ w.y ^ w.z ^ w.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

}  // namespace

Status CudaBackend::FlushCache() {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  if (flush_.data() == nullptr) {
    const size_t l2 = info_.l2_cache_bytes > 0 ? static_cast<size_t>(info_.l2_cache_bytes) : size_t{64} << 20;
    FLEETSIM_RETURN_IF_ERROR(AllocateBuffer(2 * l2, &flush_));
    FLEETSIM_RETURN_IF_ERROR(AllocateBuffer(sizeof(unsigned), &flush_sink_));
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(flush_.data(), 0, flush_.bytes(), stream_));
  }
  const size_t n = flush_.bytes() / sizeof(uint4);
  FlushReadKernel<<<1024, 256, 0, stream_>>>(static_cast<const uint4*>(flush_.data()), n,
                                             static_cast<unsigned*>(flush_sink_.data()));
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return Status::Ok();
}

Status CudaBackend::Gemm(const GemmArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchGemm(cublas_, stream_, args);
}

Status CudaBackend::PreparePeer(Backend& dst_backend, const char* op) {
  if (dst_backend.name() != name()) {
    return Status::Invalid(std::string(op) + ": from a \"cuda\" backend to a \"" + std::string(dst_backend.name()) +
                           "\" one; peer copies join backends of the same kind (use CopyToHost "
                           "for device to host)");
  }
  FLEETSIM_RETURN_IF_ERROR(Activate());
  const int dst_device = dst_backend.device().device_ordinal;
  if (dst_device != device_ && !peer_checked_.count(dst_device)) {
    // Without peer access the runtime stages the copy through host memory,
    // which is not the NVLink/PCIe path a serving engine's collectives
    // take: enable it once per destination where the hardware allows.
    // The destination counts as checked only once that has succeeded.
    int can = 0;
    FLEETSIM_CUDA_RETURN_IF_ERROR(cudaDeviceCanAccessPeer(&can, device_, dst_device));
    if (can) {
      const cudaError_t e = cudaDeviceEnablePeerAccess(dst_device, 0);
      // Not sticky: cleared, so that a later launch's cudaGetLastError does
      // not report it as its own.
      if (e != cudaSuccess) (void)cudaGetLastError();
      if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
        return CudaErrorStatus(e, "cudaDeviceEnablePeerAccess", __FILE__, __LINE__);
      peer_enabled_.insert(dst_device);
    }
    peer_checked_.insert(dst_device);
  }
  return Status::Ok();
}

Status CudaBackend::CopyPeer(Backend& dst_backend, void* dst, const void* src, size_t bytes) {
  FLEETSIM_RETURN_IF_ERROR(PreparePeer(dst_backend, "copy_peer"));
  if (bytes == 0) return Status::Ok();
  const int dst_device = dst_backend.device().device_ordinal;
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaMemcpyPeerAsync(dst, dst_device, src, device_, bytes, stream_));
  return Status::Ok();
}

Status CudaBackend::CopyPeer2D(Backend& dst_backend, void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                               size_t width, size_t rows) {
  FLEETSIM_RETURN_IF_ERROR(PreparePeer(dst_backend, "copy_peer_2d"));
  if (width > dst_pitch || width > src_pitch)
    return Status::Invalid("copy_peer_2d: rows of " + std::to_string(width) + " bytes do not fit pitches of " +
                           std::to_string(src_pitch) + " (source) and " + std::to_string(dst_pitch) + " (destination)");
  if (width == 0 || rows == 0) return Status::Ok();
  cudaMemcpy3DPeerParms p = {};
  p.srcPtr = make_cudaPitchedPtr(const_cast<void*>(src), src_pitch, width, rows);
  p.srcDevice = device_;
  p.dstPtr = make_cudaPitchedPtr(dst, dst_pitch, width, rows);
  p.dstDevice = dst_backend.device().device_ordinal;
  p.extent = make_cudaExtent(width, rows, 1);
  FLEETSIM_CUDA_RETURN_IF_ERROR(cudaMemcpy3DPeerAsync(&p, stream_));
  return Status::Ok();
}

Status CudaBackend::RmsNorm(const RmsNormArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchRmsNorm(stream_, args);
}

Status CudaBackend::SiluMul(const SiluMulArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchSiluMul(stream_, args);
}

Status CudaBackend::ResidualAdd(const ResidualAddArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchResidualAdd(stream_, args);
}

Status CudaBackend::Embedding(const EmbeddingArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchEmbedding(stream_, args);
}

Status CudaBackend::Rope(const RopeArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchRope(stream_, args);
}

Status CudaBackend::AttentionPrefill(const AttentionPrefillArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchAttentionPrefill(stream_, args);
}

Status CudaBackend::AttentionDecode(const AttentionDecodeArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchAttentionDecode(stream_, args);
}

Status CudaBackend::KvCacheWrite(const KvCacheWriteArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchKvCacheWrite(stream_, args);
}

Status CudaBackend::Argmax(const ArgmaxArgs& args) {
  FLEETSIM_RETURN_IF_ERROR(Activate());
  return LaunchArgmax(stream_, args);
}

}  // namespace fleetsim::kernels

// The module's one exported symbol (kCudaModuleSymbol; cuda/fleetsim_cuda.map
// keeps every other symbol local). The table is constant: nothing in the
// module is process-global state.
extern "C" const fleetsim::kernels::CudaModule* fleetsim_cuda_module() {
  static constexpr fleetsim::kernels::CudaModule kModule = {
      FLEETSIM_CUDA_INTERFACE_HASH, &fleetsim::kernels::CudaDeviceCount, &fleetsim::kernels::CudaBackend::Create};
  return &kModule;
}
