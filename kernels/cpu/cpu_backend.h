// The "cpu" backend: host memory and Eigen. Always built; runs everywhere.
//
// Every call is synchronous: ops finish before they return, so Synchronize()
// has nothing to wait for. "Device" memory is host memory aligned to 256
// bytes, so callers can also read it directly, though portable code uses
// CopyToHost.
#pragma once

#include <string_view>

#include "kernels/backend.h"
#include "kernels/cpu/gemm.h"

namespace fleetsim::kernels {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override = default;

  std::string_view name() const override { return "cpu"; }
  const DeviceInfo& device() const override { return info_; }

  Status Allocate(size_t bytes, void** ptr) override;
  void Free(void* ptr) override;
  Status CopyToDevice(void* dst, const void* host_src, size_t bytes) override;
  Status CopyToHost(void* host_dst, const void* src, size_t bytes) override;
  Status CopyOnDevice(void* dst, const void* src, size_t bytes) override;
  Status Synchronize() override { return Status::Ok(); }
  // Only to another "cpu" backend: a memcpy.
  Status CopyPeer(Backend& dst_backend, void* dst, const void* src, size_t bytes) override;

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

  // steady_clock around body (ops are synchronous here).
  Status TimeOnce(const std::function<Status()>& body, double* ns) override;
  // Writes a buffer of twice the last-level cache (sysconf's L3, or L2 when
  // there is no L3), at most 32 MiB (see cpu_backend.cc).
  Status FlushCache() override;

 private:
  DeviceInfo info_;
  DeviceBuffer flush_;
  volatile unsigned flush_sink_ = 0;  // FlushCache's sum, so its reads are kept
  GemmScratch gemm_scratch_;  // 16-bit GEMMs' fp32 working copies, reused
};

}  // namespace fleetsim::kernels
