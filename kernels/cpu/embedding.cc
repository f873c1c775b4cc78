#include "kernels/cpu/embedding.h"

#include <cstring>

#include "kernels/cpu/elements.h"

namespace fleetsim::kernels {

Status CpuEmbedding(const EmbeddingArgs& a) {
  FLEETSIM_RETURN_IF_ERROR(ValidateEmbeddingArgs(a));
  const size_t elem = DTypeSize(a.dtype);
  const size_t row_bytes = static_cast<size_t>(a.hidden) * elem;
  auto* out = static_cast<unsigned char*>(a.out);
  const auto* table = static_cast<const unsigned char*>(a.table);
  for (int64_t t = 0; t < a.num_tokens; ++t) {
    const int64_t id = a.token_ids[t];
    unsigned char* dst = out + static_cast<size_t>(t * a.out_stride) * elem;
    if (id < 0 || id >= a.vocab_size) {
      std::memset(dst, 0, row_bytes);  // contract: a zero row, as on the GPU
      continue;
    }
    // A copy of the stored bits: no rounding, whatever the dtype.
    std::memcpy(dst, table + static_cast<size_t>(id * a.hidden) * elem, row_bytes);
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels
