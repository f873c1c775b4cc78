#include "kernels/cuda_loader.h"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

// kernels/CMakeLists.txt hashes the interface headers into this header, for
// this file and for the module's entry point alike.
#include "kernels/cuda_interface_hash.h"

namespace fleetsim::kernels {
namespace {

// The folder holding the running executable, or "" where /proc is missing.
std::string ExecutableDir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string LastDlError() {
  const char* e = dlerror();
  return e != nullptr ? e : "unknown dynamic linker error";
}

// The file the dynamic linker actually opened for `handle`.
std::string LoadedPath(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

}  // namespace

Status LoadCudaModule(const CudaModule** out) {
  *out = nullptr;
  // NODELETE: backends the module creates, and the CUDA runtime's exit
  // handlers inside it, must outlive the handle closed below.
  constexpr int kFlags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
  const std::string dir = ExecutableDir();
  const std::string beside = dir.empty() ? std::string() : dir + "/" + kCudaModuleFile;
  std::error_code ec;
  // Next to the executable first (a build folder, a GPU bundle), so that a
  // module elsewhere on the search path cannot shadow the matching one.
  const bool use_beside = !beside.empty() && std::filesystem::exists(beside, ec);
  const std::string requested = use_beside ? beside : std::string(kCudaModuleFile);
  void* handle = dlopen(requested.c_str(), kFlags);
  if (handle == nullptr) {
    const std::string why = LastDlError();
    std::string hint;
    if (!use_beside && why.find(kCudaModuleFile) != std::string::npos) {
      hint = "; build the fleetsim_cuda target (make build does) to get it beside fleetsim";
    } else if (why.find("libcublas") != std::string::npos) {
      hint = "; cuBLAS comes with the CUDA Toolkit: add its lib64 folder to LD_LIBRARY_PATH";
    }
    return Status::Invalid("cannot load " + requested + " (the CUDA backend; looked in " +
                           (dir.empty() ? std::string("the executable's folder") : dir) +
                           ", then on the library search path): " + why + hint);
  }
  const std::string path = LoadedPath(handle, requested);
  dlerror();  // clear, so that a null from dlsym is told apart from an error
  const auto entry = reinterpret_cast<CudaModuleEntry>(dlsym(handle, kCudaModuleSymbol));
  if (entry == nullptr) {
    const std::string why = LastDlError();
    dlclose(handle);
    return Status::Invalid(path + " is not a fleetsim CUDA module (no " + kCudaModuleSymbol + "): " + why);
  }
  const CudaModule* module = entry();
  constexpr std::string_view kHash = FLEETSIM_CUDA_INTERFACE_HASH;
  if (module == nullptr || module->interface_hash == nullptr || kHash != module->interface_hash) {
    const std::string theirs = module != nullptr && module->interface_hash != nullptr ? module->interface_hash : "none";
    dlclose(handle);
    return Status::Invalid(path + " was built from other kernels/ interface headers than this program (interface " +
                           theirs + ", expected " + std::string(kHash) +
                           "): rebuild both from the same sources (the fleetsim_cuda target)");
  }
  dlclose(handle);  // the module stays mapped (RTLD_NODELETE)
  *out = module;
  return Status::Ok();
}

}  // namespace fleetsim::kernels
