// The backend factory (backend.h): "cpu" is compiled in; "cuda" lives in
// libfleetsim_cuda.so, loaded on the first call that needs it
// (cuda_loader.h), so programs that never ask for it never map the CUDA
// runtime or cuBLAS.
#include <memory>
#include <string>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda_loader.h"

namespace fleetsim::kernels {
namespace {

enum class CudaState { kNotBuilt, kNotLoaded, kNoDevice, kReady };

// Where "cuda" stands on this machine. *why says what is missing unless the
// state is kReady; then *module is loaded and *count > 0.
CudaState ProbeCuda(const CudaModule** module, int* count, std::string* why) {
  *module = nullptr;
  *count = 0;
  if (!CudaBuilt()) {
    *why = "this fleetsim was built without CUDA (reconfigure with -DFLEETSIM_CUDA=ON where nvcc is installed)";
    return CudaState::kNotBuilt;
  }
  Status s = LoadCudaModule(module);
  if (!s.ok()) {
    *why = s.message();
    return CudaState::kNotLoaded;
  }
  s = (*module)->device_count(count);
  if (!s.ok()) {
    *why = s.message();
    return CudaState::kNoDevice;
  }
  if (*count == 0) {
    *why = "the CUDA runtime sees 0 devices";
    return CudaState::kNoDevice;
  }
  return CudaState::kReady;
}

Status CudaUnavailable(CudaState state, const std::string& why, const std::string& suffix) {
  return Status::Invalid("backend \"cuda\" is not available: " +
                         std::string(state == CudaState::kNoDevice ? "no CUDA device: " : "") + why + suffix);
}

}  // namespace

std::vector<BackendDescription> KnownBackends() {
  return {
      {"cpu", "host CPU: Eigen, single-threaded; always available; the reference implementation"},
      {"cuda", CudaBuilt() ? "NVIDIA GPU: cuBLAS and fleetsim's CUDA kernels (libfleetsim_cuda.so, loaded on use)"
                           : "NVIDIA GPU: cuBLAS and fleetsim's CUDA kernels (not in this build)"},
  };
}

bool CudaBuilt() {
#if defined(FLEETSIM_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

bool CudaDeviceAvailable(std::string* why_not) {
  const CudaModule* module = nullptr;
  int count = 0;
  std::string why;
  if (ProbeCuda(&module, &count, &why) == CudaState::kReady) return true;
  if (why_not != nullptr) *why_not = why;
  return false;
}

Status DeviceCount(std::string_view name, int* count) {
  *count = 0;
  if (name == "cpu") {
    *count = 1;
    return Status::Ok();
  }
  if (name == "cuda") {
    const CudaModule* module = nullptr;
    std::string why;
    const CudaState state = ProbeCuda(&module, count, &why);
    if (state != CudaState::kReady) return CudaUnavailable(state, why, "");
    return Status::Ok();
  }
  return Status::Invalid("unknown backend \"" + std::string(name) + "\"");
}

Status MakeBackend(std::string_view name, std::unique_ptr<Backend>* out) {
  return MakeBackend(name, BackendOptions(), out);
}

Status MakeBackend(std::string_view name, const BackendOptions& options, std::unique_ptr<Backend>* out) {
  out->reset();
  if (name == "cpu") {
    *out = std::make_unique<CpuBackend>();
    return Status::Ok();
  }
  if (name == "cuda") {
    const CudaModule* module = nullptr;
    int count = 0;
    std::string why;
    const CudaState state = ProbeCuda(&module, &count, &why);
    if (state != CudaState::kReady) return CudaUnavailable(state, why, "; the \"cpu\" backend works everywhere");
    return module->create(options.cuda_device, out);
  }
  std::string known;
  for (const BackendDescription& b : KnownBackends()) {
    if (!known.empty()) known += ", ";
    known += b.name;
  }
  return Status::Invalid("unknown backend \"" + std::string(name) + "\" (known: " + known + ")");
}

}  // namespace fleetsim::kernels
