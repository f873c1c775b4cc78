// Error checking for CUDA runtime and cuBLAS calls (CUDA sources only).
//
// A failed call becomes a Status naming the call, file:line, the error's name
// and the runtime's own description, plus a hint for the errors people
// actually meet:
//   kernels/cuda/gemm.cu:88: cublasGemmEx(...) failed: CUBLAS_STATUS_NOT_SUPPORTED
//   (the functionality requested is not supported)
// Statuses rather than aborts, because the caller is usually the calibrator
// sweeping shapes: running out of memory on one shape must not end the sweep.
// Errors from asynchronous work surface at the next call that checks, often
// Synchronize(); run with CUDA_LAUNCH_BLOCKING=1 to pin them to their op.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "base/status.h"

namespace fleetsim::kernels {

// The part of `file` from "kernels/" on, so messages do not carry the build
// machine's absolute paths.
inline const char* ShortSourcePath(const char* file) {
  std::string_view f(file);
  const size_t pos = f.rfind("kernels/");
  return pos == std::string_view::npos ? file : file + pos;
}

inline Status CudaErrorStatus(cudaError_t e, const char* call, const char* file, int line) {
  std::string msg = std::string(ShortSourcePath(file)) + ":" + std::to_string(line) + ": " + call +
                    " failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  if (e == cudaErrorMemoryAllocation) {
    msg += "; hint: the request needs more device memory than is free";
  } else if (e == cudaErrorInsufficientDriver) {
    msg += "; hint: no NVIDIA driver, or one older than this CUDA runtime";
  }
  return Status::Invalid(std::move(msg));
}

inline Status CublasErrorStatus(cublasStatus_t e, const char* call, const char* file, int line) {
  std::string msg = std::string(ShortSourcePath(file)) + ":" + std::to_string(line) + ": " + call +
                    " failed: " + cublasGetStatusName(e) + " (" + cublasGetStatusString(e) + ")";
  if (e == CUBLAS_STATUS_ALLOC_FAILED) msg += "; hint: cuBLAS could not allocate its workspace";
  return Status::Invalid(std::move(msg));
}

}  // namespace fleetsim::kernels

// Returns a Status from the enclosing function when a CUDA runtime call fails.
#define FLEETSIM_CUDA_RETURN_IF_ERROR(call)                                          \
  do {                                                                               \
    const cudaError_t _fleetsim_cuda_err = (call);                                   \
    if (_fleetsim_cuda_err != cudaSuccess) {                                         \
      return ::fleetsim::kernels::CudaErrorStatus(_fleetsim_cuda_err, #call, __FILE__, \
                                                  __LINE__);                         \
    }                                                                                \
  } while (0)

// Returns a Status from the enclosing function when a cuBLAS call fails.
#define FLEETSIM_CUBLAS_RETURN_IF_ERROR(call)                                            \
  do {                                                                                   \
    const cublasStatus_t _fleetsim_cublas_err = (call);                                  \
    if (_fleetsim_cublas_err != CUBLAS_STATUS_SUCCESS) {                                 \
      return ::fleetsim::kernels::CublasErrorStatus(_fleetsim_cublas_err, #call, __FILE__, \
                                                    __LINE__);                           \
    }                                                                                    \
  } while (0)

// For calls whose failure leaves nothing to return to (destructors, Free):
// prints file:line and the error to stderr and carries on.
#define FLEETSIM_CUDA_WARN_IF_ERROR(call)                                              \
  do {                                                                                 \
    const cudaError_t _fleetsim_cuda_err = (call);                                     \
    if (_fleetsim_cuda_err != cudaSuccess) {                                           \
      std::fprintf(stderr, "fleetsim: %s\n",                                           \
                   ::fleetsim::kernels::CudaErrorStatus(_fleetsim_cuda_err, #call,     \
                                                        __FILE__, __LINE__)            \
                       .message()                                                      \
                       .c_str());                                                      \
    }                                                                                  \
  } while (0)
