// GEMM: C = alpha · op(A) · op(B) + beta · C, row-major, fp32/fp16/bf16
// storage with fp32 accumulation (contract: GemmArgs in kernels/backend.h).
//
// Why: the linear layers (QKV, attention output, MLP up/gate/down, LM head)
// are most of a transformer's FLOPs, so their times are the backbone of the
// performance model; the calibrator measures them and the live executor runs
// them. Napkin math: 2·M·N·K FLOPs over (M·K + K·N + M·N)·bytes of traffic;
// at bf16 an H100/H200 is compute-bound once M, N and K are a few hundred.
//
// Kernels: none of our own. cuBLAS (cublasGemmEx with CUBLAS_COMPUTE_32F)
// already reaches ~80% of the bf16 tensor-core peak on Hopper, and a
// hand-written GEMM would be timing our code rather than what serving
// engines run. fp32 storage runs true fp32 (no TF32), matching the CPU
// reference; fp16/bf16 use tensor cores.
//
// Layout: cuBLAS is column-major. A row-major M×N matrix with leading
// dimension ld is, byte for byte, a column-major N×M matrix with the same ld,
// so row-major C = op(A)·op(B) is computed as column-major
// Cᵀ = op(B)ᵀ·op(A)ᵀ: swap the operands and M with N, keep each operand's
// transpose flag and leading dimension. No data moves.
#include "kernels/cuda/gemm.h"

#include <climits>
#include <string>

#include "kernels/cuda/cuda_check.h"

namespace fleetsim::kernels {
namespace {

cudaDataType_t CudaType(DType t) {
  switch (t) {
    case DType::kFp32:
      return CUDA_R_32F;
    case DType::kFp16:
      return CUDA_R_16F;
    case DType::kBf16:
      return CUDA_R_16BF;
  }
  FLEETSIM_CHECK(false && "unknown kernels::DType");
  return CUDA_R_32F;
}

Status CheckFitsInt(const char* field, int64_t v) {
  if (v <= INT_MAX) return Status::Ok();
  return Status::Invalid("gemm: " + std::string(field) + "=" + std::to_string(v) +
                         " exceeds cuBLAS's 32-bit limit " + std::to_string(INT_MAX));
}

}  // namespace

// ---- Launcher ---------------------------------------------------------------

Status LaunchGemm(cublasHandle_t handle, cudaStream_t stream, const GemmArgs& g) {
  FLEETSIM_RETURN_IF_ERROR(ValidateGemmArgs(g));
  FLEETSIM_RETURN_IF_ERROR(CheckFitsInt("m", g.m));
  FLEETSIM_RETURN_IF_ERROR(CheckFitsInt("n", g.n));
  FLEETSIM_RETURN_IF_ERROR(CheckFitsInt("k", g.k));
  FLEETSIM_RETURN_IF_ERROR(CheckFitsInt("lda", g.lda));
  FLEETSIM_RETURN_IF_ERROR(CheckFitsInt("ldb", g.ldb));
  FLEETSIM_RETURN_IF_ERROR(CheckFitsInt("ldc", g.ldc));
  if (g.m == 0 || g.n == 0) return Status::Ok();

  const cudaDataType_t type = CudaType(g.dtype);
  const cublasOperation_t op_a = g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  // alpha and beta are host fp32 values, as CUBLAS_COMPUTE_32F expects under
  // the handle's default CUBLAS_POINTER_MODE_HOST.
  const float alpha = g.alpha;
  const float beta = g.beta;
  FLEETSIM_CUBLAS_RETURN_IF_ERROR(cublasSetStream(handle, stream));
  FLEETSIM_CUBLAS_RETURN_IF_ERROR(cublasGemmEx(
      handle, op_b, op_a, static_cast<int>(g.n), static_cast<int>(g.m), static_cast<int>(g.k), &alpha,
      g.b, type, static_cast<int>(g.ldb), g.a, type, static_cast<int>(g.lda), &beta, g.c, type,
      static_cast<int>(g.ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  return Status::Ok();
}

}  // namespace fleetsim::kernels
