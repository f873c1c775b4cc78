#include "model/dtype.h"

#include <array>
#include <utility>

#include "base/status.h"

namespace fleetsim {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  double bytes;
};

constexpr std::array<DTypeInfo, 7> kDTypes = {{
    {DType::kFp32, "fp32", 4.0},
    {DType::kBf16, "bf16", 2.0},
    {DType::kFp16, "fp16", 2.0},
    {DType::kFp8, "fp8", 1.0},
    {DType::kInt8, "int8", 1.0},
    {DType::kInt4, "int4", 0.5},
    {DType::kFp4, "fp4", 0.5},
}};

const DTypeInfo& Info(DType t) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.type == t) return info;
  }
  // Every enumerator has a row; a new one added to dtype.h needs one too.
  FLEETSIM_CHECK(false);
  return kDTypes[0];
}

}  // namespace

double DTypeBytes(DType t) { return Info(t).bytes; }

std::string_view DTypeName(DType t) { return Info(t).name; }

std::optional<DType> ParseDType(std::string_view name) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

}  // namespace fleetsim
