#include "kernels/cpu/cpu_backend.h"

#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <new>
#include <string>
#include <thread>

#include "kernels/cpu/attention_decode.h"
#include "kernels/cpu/attention_prefill.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/residual_add.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cpu/sampling.h"
#include "kernels/cpu/silu_mul.h"

namespace fleetsim::kernels {
namespace {

constexpr std::align_val_t kAlignment{256};

// The "model name" line of /proc/cpuinfo (Linux); "unknown CPU" elsewhere.
std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? std::string("unknown CPU") : line.substr(start);
  }
  return "unknown CPU";
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return static_cast<int64_t>(pages) * page_size;
}

// The last-level data cache in bytes as the C library reports it; 0 when it
// does not.
int64_t LastLevelCacheBytes() {
  long bytes = 0;
#ifdef _SC_LEVEL3_CACHE_SIZE
  bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (bytes <= 0) bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
  return bytes > 0 ? bytes : 0;
}

}  // namespace

CpuBackend::CpuBackend() {
  info_.backend = "cpu";
  info_.name = CpuModelName();
  info_.memory_bytes = PhysicalMemoryBytes();
  info_.compute_units = static_cast<int>(std::thread::hardware_concurrency());
  info_.l2_cache_bytes = LastLevelCacheBytes();
  // Eigen's GEMM here is single-threaded (no OpenMP), whatever compute_units
  // says; the profile should know which SIMD paths it used.
  info_.software = "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
                   std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) +
                   " (" + Eigen::SimdInstructionSetsInUse() + ", 1 thread)";
}

Status CpuBackend::Allocate(size_t bytes, void** ptr) {
  *ptr = nullptr;
  if (bytes == 0) return Status::Ok();
  void* p = ::operator new(bytes, kAlignment, std::nothrow);
  if (p == nullptr) {
    return Status::Invalid("cpu backend: out of host memory allocating " + std::to_string(bytes) +
                           " bytes");
  }
  *ptr = p;
  return Status::Ok();
}

void CpuBackend::Free(void* ptr) {
  if (ptr != nullptr) ::operator delete(ptr, kAlignment);
}

Status CpuBackend::CopyToDevice(void* dst, const void* host_src, size_t bytes) {
  if (bytes != 0) std::memcpy(dst, host_src, bytes);
  return Status::Ok();
}

Status CpuBackend::CopyToHost(void* host_dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memcpy(host_dst, src, bytes);
  return Status::Ok();
}

Status CpuBackend::CopyOnDevice(void* dst, const void* src, size_t bytes) {
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status CpuBackend::CopyPeer(Backend& dst_backend, void* dst, const void* src, size_t bytes) {
  if (dst_backend.name() != name()) {
    return Status::Invalid("copy_peer: from a \"cpu\" backend to a \"" + std::string(dst_backend.name()) +
                           "\" one; peer copies join backends of the same kind (use CopyToDevice "
                           "on the destination for host to device)");
  }
  if (bytes != 0) std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status CpuBackend::Gemm(const GemmArgs& args) { return CpuGemm(args, &gemm_scratch_); }
Status CpuBackend::RmsNorm(const RmsNormArgs& args) { return CpuRmsNorm(args); }
Status CpuBackend::SiluMul(const SiluMulArgs& args) { return CpuSiluMul(args); }
Status CpuBackend::ResidualAdd(const ResidualAddArgs& args) { return CpuResidualAdd(args); }
Status CpuBackend::Embedding(const EmbeddingArgs& args) { return CpuEmbedding(args); }
Status CpuBackend::Rope(const RopeArgs& args) { return CpuRope(args); }
Status CpuBackend::AttentionPrefill(const AttentionPrefillArgs& args) { return CpuAttentionPrefill(args); }
Status CpuBackend::AttentionDecode(const AttentionDecodeArgs& args) { return CpuAttentionDecode(args); }

Status CpuBackend::KvCacheWrite(const KvCacheWriteArgs& args) { return CpuKvCacheWrite(args); }

Status CpuBackend::Argmax(const ArgmaxArgs& args) { return CpuArgmax(args); }

Status CpuBackend::TimeOnce(const std::function<Status()>& body, double* ns) {
  *ns = 0;
  const auto start = std::chrono::steady_clock::now();
  FLEETSIM_RETURN_IF_ERROR(body());
  const auto stop = std::chrono::steady_clock::now();
  *ns = static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count());
  return Status::Ok();
}

Status CpuBackend::FlushCache() {
  // Twice the last-level cache, capped: virtual machines often report the
  // host's whole L3 (hundreds of MiB), and a calibration flushes before
  // every timed run. 32 MiB evicts the per-core caches and the share of L3
  // one core sees on current server parts.
  constexpr size_t kMaxBytes = size_t{32} << 20;
  if (flush_.data() == nullptr) {
    const size_t llc = static_cast<size_t>(info_.l2_cache_bytes);
    FLEETSIM_RETURN_IF_ERROR(AllocateBuffer(llc > 0 ? std::min(2 * llc, kMaxBytes) : kMaxBytes, &flush_));
    // Written once, so that its pages are its own: untouched, every page
    // would read the kernel's one shared zero page, which caches in 4 KiB.
    std::memset(flush_.data(), 1, flush_.bytes());
  }
  // Read, not written, so that the lines it leaves are clean: written, the
  // flush left the caches full of dirty lines whose write-backs the timed
  // op then paid for. A volatile sum keeps the reads.
  const volatile unsigned char* p = static_cast<const unsigned char*>(flush_.data());
  unsigned sum = 0;
  for (size_t i = 0; i < flush_.bytes(); i += 64) sum += p[i];
  flush_sink_ = sum;
  return Status::Ok();
}

}  // namespace fleetsim::kernels
