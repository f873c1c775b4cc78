// The contract between kernels' backend factory (factory.cc, in every
// fleetsim program) and the CUDA backend, which is built as a shared object
// of its own, libfleetsim_cuda.so, and loaded only when a program first asks
// for the "cuda" backend (cuda_loader.h). The CUDA runtime and cuBLAS are
// linked into that object, not into fleetsim: a simulation, `fleetsim --help`
// or a CPU calibration never maps them (cuBLAS alone costs about 150 MB of
// resident memory at start-up).
//
// The object exports one C symbol, kCudaModuleSymbol, a function returning
// the table below. Everything else in it is local (cuda/fleetsim_cuda.map).
// C++ types cross the boundary (Status, unique_ptr<Backend>), so loader and
// module must be compiled from the same interface headers by the same
// compiler: the table's first field is the hash of those headers
// (FLEETSIM_CUDA_INTERFACE_HASH, computed by kernels/CMakeLists.txt), and the
// loader refuses a module whose hash differs rather than calling through a
// vtable of another layout.
//
// Plain C++17 (the CUDA sources include it).
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace fleetsim::kernels {

// File name of the module, looked for next to the executable first.
inline constexpr const char* kCudaModuleFile = "libfleetsim_cuda.so";
// The one symbol the module exports: `const CudaModule* fleetsim_cuda_module()`.
inline constexpr const char* kCudaModuleSymbol = "fleetsim_cuda_module";

// What the module offers. Field order is part of the contract: the hash
// stays first, so that any module can be checked before the rest is read.
struct CudaModule {
  // FLEETSIM_CUDA_INTERFACE_HASH of the module's build (never null).
  const char* interface_hash;
  // Number of devices the CUDA runtime sees; a Status naming the runtime's
  // error when it cannot tell (no driver, no device).
  Status (*device_count)(int* count);
  // A backend on device `device_ordinal` (see BackendOptions::cuda_device).
  Status (*create)(int device_ordinal, std::unique_ptr<Backend>* out);
};

using CudaModuleEntry = const CudaModule* (*)();

}  // namespace fleetsim::kernels
