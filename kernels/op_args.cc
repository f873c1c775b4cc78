// Host-side validation of the op arguments declared in kernels/backend.h.
// Every message starts with the op's name and names the field and the bound
// it broke, e.g. `rms_norm: x_stride=3 is less than hidden=4`.
#include <cstdint>
#include <string>

#include "kernels/backend.h"

namespace fleetsim::kernels {
namespace {

std::string Num(int64_t v) { return std::to_string(v); }

Status CheckNonNegative(const char* op, const char* field, int64_t v) {
  if (v >= 0) return Status::Ok();
  return Status::Invalid(std::string(op) + ": " + field + "=" + Num(v) + " is negative");
}

Status CheckPositive(const char* op, const char* field, int64_t v) {
  if (v > 0) return Status::Ok();
  return Status::Invalid(std::string(op) + ": " + field + "=" + Num(v) + " must be positive");
}

Status CheckDType(const char* op, DType t) {
  switch (t) {
    case DType::kFp32:
    case DType::kFp16:
    case DType::kBf16:
      return Status::Ok();
  }
  return Status::Invalid(std::string(op) + ": dtype " + Num(static_cast<int>(t)) +
                         " is not one of fp32, fp16, bf16");
}

// A row stride must cover the row; `width_desc` says what the row is made of.
Status CheckStride(const char* op, const char* field, int64_t stride, int64_t width,
                   const std::string& width_desc) {
  if (stride >= width) return Status::Ok();
  return Status::Invalid(std::string(op) + ": " + field + "=" + Num(stride) + " is less than " +
                         width_desc + "=" + Num(width));
}

Status CheckPointer(const char* op, const char* field, const void* p) {
  if (p != nullptr) return Status::Ok();
  return Status::Invalid(std::string(op) + ": " + field + " is null");
}

// In-place use is allowed only row for row: the same pointer with the same
// stride.
Status CheckInPlace(const char* op, const char* out_field, const void* out, int64_t out_stride,
                    const char* in_field, const void* in, int64_t in_stride) {
  if (out != in || out_stride == in_stride) return Status::Ok();
  return Status::Invalid(std::string(op) + ": " + out_field + " equals " + in_field +
                         " (in place) but their strides differ (" + Num(out_stride) + " vs " +
                         Num(in_stride) + ")");
}

Status CheckHeads(const char* op, int64_t num_heads, int64_t num_kv_heads) {
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "num_heads", num_heads));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "num_kv_heads", num_kv_heads));
  if (num_heads % num_kv_heads == 0) return Status::Ok();
  return Status::Invalid(std::string(op) + ": num_kv_heads=" + Num(num_kv_heads) +
                         " does not divide num_heads=" + Num(num_heads) +
                         " (each K/V head serves a whole group of query heads)");
}

}  // namespace

Status ValidateRmsNormArgs(const RmsNormArgs& a) {
  const char* op = "rms_norm";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "rows", a.rows));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "hidden", a.hidden));
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  if (!(a.eps >= 0.0f)) {
    return Status::Invalid("rms_norm: eps=" + std::to_string(a.eps) + " must be >= 0");
  }
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "x_stride", a.x_stride, a.hidden, "hidden"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "out_stride", a.out_stride, a.hidden, "hidden"));
  FLEETSIM_RETURN_IF_ERROR(CheckInPlace(op, "out", a.out, a.out_stride, "x", a.x, a.x_stride));
  if (a.rows == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "x", a.x));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "weight", a.weight));
  return CheckPointer(op, "out", a.out);
}

Status ValidateSiluMulArgs(const SiluMulArgs& a) {
  const char* op = "silu_mul";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "rows", a.rows));
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "width", a.width));
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "gate_stride", a.gate_stride, a.width, "width"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "up_stride", a.up_stride, a.width, "width"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "out_stride", a.out_stride, a.width, "width"));
  FLEETSIM_RETURN_IF_ERROR(CheckInPlace(op, "out", a.out, a.out_stride, "gate", a.gate, a.gate_stride));
  FLEETSIM_RETURN_IF_ERROR(CheckInPlace(op, "out", a.out, a.out_stride, "up", a.up, a.up_stride));
  if (a.rows == 0 || a.width == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "gate", a.gate));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "up", a.up));
  return CheckPointer(op, "out", a.out);
}

Status ValidateResidualAddArgs(const ResidualAddArgs& a) {
  const char* op = "residual_add";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "rows", a.rows));
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "width", a.width));
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "a_stride", a.a_stride, a.width, "width"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "b_stride", a.b_stride, a.width, "width"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "out_stride", a.out_stride, a.width, "width"));
  FLEETSIM_RETURN_IF_ERROR(CheckInPlace(op, "out", a.out, a.out_stride, "a", a.a, a.a_stride));
  FLEETSIM_RETURN_IF_ERROR(CheckInPlace(op, "out", a.out, a.out_stride, "b", a.b, a.b_stride));
  if (a.rows == 0 || a.width == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "a", a.a));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "b", a.b));
  return CheckPointer(op, "out", a.out);
}

Status ValidateEmbeddingArgs(const EmbeddingArgs& a) {
  const char* op = "embedding";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "num_tokens", a.num_tokens));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "vocab_size", a.vocab_size));
  if (a.vocab_size > INT32_MAX) {
    return Status::Invalid("embedding: vocab_size=" + Num(a.vocab_size) +
                           " exceeds what int32 token ids can address");
  }
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "hidden", a.hidden));
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "out_stride", a.out_stride, a.hidden, "hidden"));
  if (a.num_tokens == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "token_ids", a.token_ids));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "table", a.table));
  return CheckPointer(op, "out", a.out);
}

Status ValidateRopeArgs(const RopeArgs& a) {
  const char* op = "rope";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "num_tokens", a.num_tokens));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "num_heads", a.num_heads));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "head_dim", a.head_dim));
  if (a.head_dim % 2 != 0) {
    return Status::Invalid("rope: head_dim=" + Num(a.head_dim) +
                           " is odd; rotate-half pairs element i with i + head_dim/2");
  }
  if (!(a.theta > 0.0)) {
    return Status::Invalid("rope: theta=" + std::to_string(a.theta) + " must be positive");
  }
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  FLEETSIM_RETURN_IF_ERROR(
      CheckStride(op, "x_stride", a.x_stride, a.num_heads * a.head_dim, "num_heads*head_dim"));
  if (a.num_tokens == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "positions", a.positions));
  return CheckPointer(op, "x", a.x);
}

Status ValidateAttentionPrefillArgs(const AttentionPrefillArgs& a) {
  const char* op = "attention_prefill";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "num_seqs", a.num_seqs));
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "num_tokens", a.num_tokens));
  if (a.num_tokens > INT32_MAX) {
    return Status::Invalid("attention_prefill: num_tokens=" + Num(a.num_tokens) +
                           " exceeds what int32 seq_starts can address");
  }
  FLEETSIM_RETURN_IF_ERROR(CheckHeads(op, a.num_heads, a.num_kv_heads));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "head_dim", a.head_dim));
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  const int64_t q_width = a.num_heads * a.head_dim;
  const int64_t kv_width = a.num_kv_heads * a.head_dim;
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "q_stride", a.q_stride, q_width, "num_heads*head_dim"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "k_stride", a.k_stride, kv_width, "num_kv_heads*head_dim"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "v_stride", a.v_stride, kv_width, "num_kv_heads*head_dim"));
  FLEETSIM_RETURN_IF_ERROR(
      CheckStride(op, "out_stride", a.out_stride, q_width, "num_heads*head_dim"));
  if (a.num_tokens > 0 && a.num_seqs == 0) {
    return Status::Invalid("attention_prefill: num_tokens=" + Num(a.num_tokens) +
                           " tokens but num_seqs=0 sequences to hold them");
  }
  if (a.num_seqs == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "seq_starts", a.seq_starts));
  if (a.num_tokens == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "q", a.q));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "k", a.k));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "v", a.v));
  return CheckPointer(op, "out", a.out);
}

Status ValidateAttentionDecodeArgs(const AttentionDecodeArgs& a) {
  const char* op = "attention_decode";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "num_seqs", a.num_seqs));
  FLEETSIM_RETURN_IF_ERROR(CheckHeads(op, a.num_heads, a.num_kv_heads));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "head_dim", a.head_dim));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "block_size", a.block_size));
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "num_blocks", a.num_blocks));
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "max_blocks_per_seq", a.max_blocks_per_seq));
  if (a.max_blocks_per_seq * a.block_size > INT32_MAX) {
    return Status::Invalid("attention_decode: max_blocks_per_seq*block_size=" +
                           Num(a.max_blocks_per_seq * a.block_size) +
                           " exceeds what int32 context_lens can hold");
  }
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  const int64_t q_width = a.num_heads * a.head_dim;
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "q_stride", a.q_stride, q_width, "num_heads*head_dim"));
  FLEETSIM_RETURN_IF_ERROR(
      CheckStride(op, "out_stride", a.out_stride, q_width, "num_heads*head_dim"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "block_table_stride", a.block_table_stride,
                                       a.max_blocks_per_seq, "max_blocks_per_seq"));
  if (a.num_seqs == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "q", a.q));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "context_lens", a.context_lens));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "out", a.out));
  if (a.max_blocks_per_seq == 0) return Status::Ok();  // every context is empty
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "block_tables", a.block_tables));
  if (a.num_blocks == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "k_cache", a.k_cache));
  return CheckPointer(op, "v_cache", a.v_cache);
}

Status ValidateKvCacheWriteArgs(const KvCacheWriteArgs& a) {
  const char* op = "kv_cache_write";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "num_tokens", a.num_tokens));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "num_kv_heads", a.num_kv_heads));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "head_dim", a.head_dim));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "num_slots", a.num_slots));
  if (a.num_slots > INT32_MAX)
    return Status::Invalid("kv_cache_write: num_slots=" + Num(a.num_slots) + " exceeds what int32 slot ids can address");
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  const int64_t row = a.num_kv_heads * a.head_dim;
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "k_stride", a.k_stride, row, "num_kv_heads*head_dim"));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "v_stride", a.v_stride, row, "num_kv_heads*head_dim"));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "k_cache", a.k_cache));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "v_cache", a.v_cache));
  if (a.k_cache == a.v_cache) return Status::Invalid("kv_cache_write: k_cache equals v_cache");
  if (a.num_tokens == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "k", a.k));
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "v", a.v));
  return CheckPointer(op, "slots", a.slots);
}

Status ValidateArgmaxArgs(const ArgmaxArgs& a) {
  const char* op = "argmax";
  FLEETSIM_RETURN_IF_ERROR(CheckNonNegative(op, "rows", a.rows));
  FLEETSIM_RETURN_IF_ERROR(CheckPositive(op, "width", a.width));
  if (a.width > INT32_MAX) return Status::Invalid("argmax: width=" + Num(a.width) + " exceeds int32 ids");
  FLEETSIM_RETURN_IF_ERROR(CheckDType(op, a.dtype));
  FLEETSIM_RETURN_IF_ERROR(CheckStride(op, "x_stride", a.x_stride, a.width, "width"));
  if (a.rows == 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(CheckPointer(op, "x", a.x));
  return CheckPointer(op, "out", a.out);
}

}  // namespace fleetsim::kernels
