// Numeric formats of weights, KV cache and compute.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fleetsim {

// kFp4: 4-bit floating point (E2M1) elements; NVFP4 and MXFP4 differ in
// their block scales (an e4m3 byte per 16 values; an e8m0 byte per 32),
// which a model's quant_group_size / quant_group_bytes add.
enum class DType { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4, kFp4 };

// Bytes per element (0.5 for int4 and fp4).
double DTypeBytes(DType t);
std::string_view DTypeName(DType t);  // "bf16", "fp8", ...
std::optional<DType> ParseDType(std::string_view name);

}  // namespace fleetsim
