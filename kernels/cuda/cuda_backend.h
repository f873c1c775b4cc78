// The "cuda" backend: one GPU, one stream, one cuBLAS handle, all owned by
// the object (no global handle), so several backends — one per device, or
// several on one device — live side by side in a process.
//
// Ops and device-to-device copies are enqueued on the backend's stream and
// return before they run. CopyToDevice returns once the host buffer may be
// reused; CopyToHost waits for the stream. Every call first makes the
// backend's device current on the calling thread, so one thread may drive
// backends on different GPUs in turn.
//
// Built into libfleetsim_cuda.so, never into fleetsim itself: programs reach
// the backend through MakeBackend, which loads that object on first use and
// calls the entry point at the end of cuda_backend.cu (see
// kernels/cuda_module.h). The header stays plain C++ (no CUDA headers); the
// CUDA types appear only as the opaque pointers they are.
#pragma once

#include <memory>
#include <set>
#include <string_view>

#include "kernels/backend.h"

struct CUstream_st;    // cudaStream_t is CUstream_st*
struct cublasContext;  // cublasHandle_t is cublasContext*
struct CUevent_st;     // cudaEvent_t is CUevent_st*

namespace fleetsim::kernels {

// Number of CUDA devices the runtime sees; a Status naming the runtime's
// error when it cannot tell (no driver, no device).
Status CudaDeviceCount(int* count);

class CudaBackend final : public Backend {
 public:
  // Creates a backend on device `device_ordinal`: a non-blocking stream and a
  // cuBLAS handle bound to it, and the device's description. Fails with a
  // Status when the ordinal is out of range or the runtime fails.
  static Status Create(int device_ordinal, std::unique_ptr<Backend>* out);
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  const DeviceInfo& device() const override { return info_; }

  Status Allocate(size_t bytes, void** ptr) override;
  void Free(void* ptr) override;
  Status CopyToDevice(void* dst, const void* host_src, size_t bytes) override;
  Status CopyToHost(void* host_dst, const void* src, size_t bytes) override;
  Status CopyOnDevice(void* dst, const void* src, size_t bytes) override;
  Status Synchronize() override;
  // Only to another "cuda" backend (any device, this one included), with
  // cudaMemcpyPeerAsync on this backend's stream. The first copy to a
  // device enables peer access from this one where the hardware allows
  // (cudaDeviceCanAccessPeer), so copies take NVLink or PCIe directly; where
  // it does not, the runtime stages them through the host, and
  // PeerAccessEnabled says which.
  Status CopyPeer(Backend& dst_backend, void* dst, const void* src, size_t bytes) override;
  // One cudaMemcpy3DPeerAsync (a depth of 1), peer access as CopyPeer.
  Status CopyPeer2D(Backend& dst_backend, void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                    size_t width, size_t rows) override;

  Status Gemm(const GemmArgs& args) override;
  Status RmsNorm(const RmsNormArgs& args) override;
  Status SiluMul(const SiluMulArgs& args) override;
  Status ResidualAdd(const ResidualAddArgs& args) override;
  Status Embedding(const EmbeddingArgs& args) override;
  Status Rope(const RopeArgs& args) override;
  Status AttentionPrefill(const AttentionPrefillArgs& args) override;
  Status AttentionDecode(const AttentionDecodeArgs& args) override;
  Status KvCacheWrite(const KvCacheWriteArgs& args) override;
  Status Argmax(const ArgmaxArgs& args) override;

  // CUDA events recorded on the stream around body.
  Status TimeOnce(const std::function<Status()>& body, double* ns) override;
  // Reads a buffer of twice the L2 (a kernel, then a stream sync), so that
  // the next kernel finds nothing of its own in L2 and no dirty lines either:
  // a memset would leave L2 full of written lines whose write-back the timed
  // kernel would pay (about L2 / bandwidth: 12 us on an H200), which a
  // forward pass reading cold weights does not.
  Status FlushCache() override;

  // Whether copies from this device to `dst_device` use peer access (known
  // after the first CopyPeer to it).
  bool PeerAccessEnabled(int dst_device) const { return peer_enabled_.count(dst_device) > 0; }

  // For ops written against the raw stream (future kernels, the calibrator's
  // CUDA-event timing). Owned by this backend.
  CUstream_st* stream() const { return stream_; }

 private:
  explicit CudaBackend(int device_ordinal) : device_(device_ordinal) {}
  Status Init();
  // Makes device_ current on the calling thread.
  Status Activate() const;
  // Checks that dst_backend is "cuda", makes this device current and, on
  // the first copy to its device, enables peer access where it can.
  Status PreparePeer(Backend& dst_backend, const char* op);

  int device_;
  CUstream_st* stream_ = nullptr;
  cublasContext* cublas_ = nullptr;
  CUevent_st* timer_start_ = nullptr;  // created by Init, for TimeOnce
  CUevent_st* timer_stop_ = nullptr;
  DeviceInfo info_;
  DeviceBuffer flush_;  // FlushCache's scratch, allocated (and zeroed) on first use
  DeviceBuffer flush_sink_;  // where the flush kernel would write a sum it never finds
  std::set<int> peer_checked_, peer_enabled_;  // destination devices
};

}  // namespace fleetsim::kernels
