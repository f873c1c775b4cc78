// The interface's own code: element sizes, GEMM argument checks, the device
// description and the owning buffer. Every backend needs it, the CUDA module
// (libfleetsim_cuda.so) included, so it names no backend: the factory that
// does is factory.cc.
#include "kernels/backend.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>

namespace fleetsim::kernels {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kFp32:
      return 4;
    case DType::kFp16:
    case DType::kBf16:
      return 2;
  }
  FLEETSIM_CHECK(false && "unknown kernels::DType");
  return 0;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kFp32:
      return "fp32";
    case DType::kFp16:
      return "fp16";
    case DType::kBf16:
      return "bf16";
  }
  FLEETSIM_CHECK(false && "unknown kernels::DType");
  return "";
}

namespace {

// ld must cover the stored columns; BLAS also asks for at least 1 so that an
// empty matrix still has a valid stride.
Status CheckLeadingDim(const char* ld_name, int64_t ld, const char* matrix, int64_t cols,
                       const char* cols_name) {
  if (ld >= std::max<int64_t>(1, cols)) return Status::Ok();
  return Status::Invalid("gemm: " + std::string(ld_name) + "=" + std::to_string(ld) +
                         " is less than the " + std::to_string(cols) + " columns of " + matrix +
                         " as stored (" + cols_name + ")" + (cols == 0 ? "; the minimum is 1" : ""));
}

}  // namespace

Status ValidateGemmArgs(const GemmArgs& g) {
  if (g.m < 0) return Status::Invalid("gemm: m=" + std::to_string(g.m) + " is negative");
  if (g.n < 0) return Status::Invalid("gemm: n=" + std::to_string(g.n) + " is negative");
  if (g.k < 0) return Status::Invalid("gemm: k=" + std::to_string(g.k) + " is negative");
  switch (g.dtype) {
    case DType::kFp32:
    case DType::kFp16:
    case DType::kBf16:
      break;
    default:
      return Status::Invalid("gemm: dtype " + std::to_string(static_cast<int>(g.dtype)) +
                             " is not one of fp32, fp16, bf16");
  }
  FLEETSIM_RETURN_IF_ERROR(g.transpose_a ? CheckLeadingDim("lda", g.lda, "A", g.m, "M, since transpose_a")
                                         : CheckLeadingDim("lda", g.lda, "A", g.k, "K"));
  FLEETSIM_RETURN_IF_ERROR(g.transpose_b ? CheckLeadingDim("ldb", g.ldb, "B", g.k, "K, since transpose_b")
                                         : CheckLeadingDim("ldb", g.ldb, "B", g.n, "N"));
  FLEETSIM_RETURN_IF_ERROR(CheckLeadingDim("ldc", g.ldc, "C", g.n, "N"));
  const bool output_empty = g.m == 0 || g.n == 0;
  if (!output_empty && g.c == nullptr) return Status::Invalid("gemm: c is null for a non-empty C");
  if (!output_empty && g.k > 0) {
    if (g.a == nullptr) return Status::Invalid("gemm: a is null with k > 0");
    if (g.b == nullptr) return Status::Invalid("gemm: b is null with k > 0");
  }
  return Status::Ok();
}

std::string DeviceInfo::ToString() const {
  std::string s = backend + " device " + std::to_string(device_ordinal) + ": " + name;
  std::string details;
  auto add = [&details](const std::string& part) {
    if (!details.empty()) details += ", ";
    details += part;
  };
  if (compute_capability > 0) {
    add("sm_" + std::to_string(compute_capability));
  }
  if (compute_units > 0) {
    add(std::to_string(compute_units) + (backend == "cuda" ? " SMs" : " threads"));
  }
  if (memory_bytes > 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(memory_bytes) / (1 << 30));
    add(buf);
  }
  if (sm_clock_khz > 0) add("SM clock " + std::to_string(sm_clock_khz / 1000) + " MHz");
  if (memory_clock_khz > 0) {
    std::string mem = "memory clock " + std::to_string(memory_clock_khz / 1000) + " MHz";
    if (memory_bus_width_bits > 0) mem += " x " + std::to_string(memory_bus_width_bits) + "-bit";
    add(mem);
  }
  if (l2_cache_bytes > 0) add("L2 " + std::to_string(l2_cache_bytes >> 20) + " MiB");
  if (!software.empty()) add(software);
  if (!details.empty()) s += " (" + details + ")";
  return s;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : backend_(std::exchange(other.backend_, nullptr)),
      ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    backend_ = std::exchange(other.backend_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::Reset() {
  if (backend_ != nullptr) backend_->Free(ptr_);
  backend_ = nullptr;
  ptr_ = nullptr;
  bytes_ = 0;
}

Status Backend::KvCacheWrite(const KvCacheWriteArgs&) {
  return Status::Invalid("kv_cache_write: the \"" + std::string(name()) + "\" backend does not implement it");
}

Status Backend::Argmax(const ArgmaxArgs&) {
  return Status::Invalid("argmax: the \"" + std::string(name()) + "\" backend does not implement it");
}

Status Backend::CopyPeer2D(Backend& dst_backend, void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                           size_t width, size_t rows) {
  if (width > dst_pitch || width > src_pitch)
    return Status::Invalid("copy_peer_2d: rows of " + std::to_string(width) + " bytes do not fit pitches of " +
                           std::to_string(src_pitch) + " (source) and " + std::to_string(dst_pitch) + " (destination)");
  for (size_t i = 0; i < rows; ++i)
    FLEETSIM_RETURN_IF_ERROR(CopyPeer(dst_backend, static_cast<unsigned char*>(dst) + i * dst_pitch,
                                      static_cast<const unsigned char*>(src) + i * src_pitch, width));
  return Status::Ok();
}

Status Backend::AllocateBuffer(size_t bytes, DeviceBuffer* out) {
  out->Reset();
  void* p = nullptr;
  FLEETSIM_RETURN_IF_ERROR(Allocate(bytes, &p));
  out->backend_ = this;
  out->ptr_ = p;
  out->bytes_ = bytes;
  return Status::Ok();
}

}  // namespace fleetsim::kernels
