// Finds and loads the CUDA backend's shared object (cuda_module.h). Private
// to kernels/: callers use MakeBackend and DeviceCount (backend.h).
#pragma once

#include "base/status.h"
#include "kernels/cuda_module.h"

namespace fleetsim::kernels {

// Loads libfleetsim_cuda.so and sets *out to its table. Looks in the folder
// of the running executable (/proc/self/exe) first, then on the dynamic
// linker's search path (LD_LIBRARY_PATH, the executable's RUNPATH, the
// ld.so cache). Returns a Status naming the file and what went wrong when it
// is nowhere to be found, cannot be loaded (a library it needs, such as
// cuBLAS, is missing), is not a fleetsim CUDA module, or was built from other
// interface headers than this program.
//
// The module is opened with RTLD_NODELETE and stays mapped until the process
// ends, so *out and every backend it creates remain valid; a second call
// finds it already loaded. No state of its own: the dynamic linker keeps the
// one copy, so calls from several threads are safe.
Status LoadCudaModule(const CudaModule** out);

}  // namespace fleetsim::kernels
