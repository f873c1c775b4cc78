#include "model/hardware.h"

#include <algorithm>

namespace fleetsim {

// A switch (NVSwitch) lets one GPU drive all of its links towards any single
// peer. A mesh wires one link to each peer, so a pairwise transfer (and each
// step of a ring) gets one link. "none" has no peer fabric at all: 0, and
// callers fall back to PCIe.
double LinkSpec::PeerGbps() const {
  if (topology == "switch") return gbps_per_direction_per_link * links;
  if (topology == "mesh") return gbps_per_direction_per_link;
  return 0.0;
}

double LinkSpec::CollectiveGbps(int gpus) const {
  if (topology == "switch") return PeerGbps();
  if (topology == "mesh") {
    return gbps_per_direction_per_link * std::min(links, std::max(gpus - 1, 1));
  }
  return 0.0;
}

// FP8 math runs on FP8 tensor cores where the GPU has them; a GPU without
// (A100) upcasts to bf16, as weight-only FP8 kernels do. int8 uses the FP8
// rate (same tensor-core throughput on Hopper and later); int4 is a
// weight-only format whose math runs in bf16.
double GpuSpec::PeakTflops(DType compute) const {
  switch (compute) {
    case DType::kFp8:
    case DType::kInt8:
      return fp8_tflops > 0 ? fp8_tflops : bf16_tflops;
    case DType::kFp4:
      // Without FP4 tensor cores (before Blackwell) FP4 weights are
      // dequantised and multiplied in bf16 (vLLM's Marlin MXFP4 path).
      return fp4_tflops > 0 ? fp4_tflops : bf16_tflops;
    case DType::kFp32:
      return fp32_tflops;
    case DType::kBf16:
    case DType::kFp16:
    case DType::kInt4:
      return bf16_tflops;
  }
  return bf16_tflops;
}

}  // namespace fleetsim
