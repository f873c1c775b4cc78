// Numeric formats of weights, KV cache and compute.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace fleetsim {

enum class DType { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4 };

// Bytes per element (0.5 for int4).
double DTypeBytes(DType t);
std::string_view DTypeName(DType t);  // "bf16", "fp8", ...
std::optional<DType> ParseDType(std::string_view name);

}  // namespace fleetsim
