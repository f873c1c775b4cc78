// GpuSpec: one accelerator type, as data (model/hardware/). Every figure in
// the JSON carries its source; bandwidths are per direction.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "model/dtype.h"

namespace fleetsim {

struct Price {
  double usd_per_gpu_hour = 0;
  std::string provider;  // "Lambda"
  std::string date;      // "2026-05"
  std::string source;
};

struct LinkSpec {
  std::string kind;         // "nvlink", "xgmi", "pcie", "infiniband", ...
  std::string topology;     // "switch" (NVSwitch: any pair at full speed), "mesh" (point-to-point links), "none"
  double gbps_per_direction_per_link = 0;  // GB/s one way, one link
  int links = 0;            // links per GPU
  double latency_us = 0;    // alpha of the alpha-beta model
  // GPUs one fabric joins at this bandwidth ("domain_gpus" in the JSON;
  // default 8: an HGX board's NVSwitch or an 8-GPU xGMI mesh). A GB200
  // NVL72 rack is one NVLink domain of 72. Sets the fleet's gpus_per_node
  // when a scenario does not.
  int domain_gpus = 8;
  // Bandwidth one GPU can drive to one peer, one way (switch: all links;
  // mesh: one link).
  double PeerGbps() const;
  // Bandwidth one GPU can drive, one way, in a collective (ring all-reduce,
  // all-gather) among `gpus` GPUs of this fabric: a switch gives PeerGbps;
  // a fully connected mesh runs one ring per link in parallel, so a GPU
  // uses min(links, gpus - 1) links; "none" gives 0. REQUIRES: gpus >= 2.
  double CollectiveGbps(int gpus) const;
};

// How long a GEMM of M tokens, N outputs and K inputs takes on this GPU,
// fitted to measured GEMMs (tools/fit_gemm_shape.py): real kernels reach
// neither ceiling at mid-sized shapes, where compute and memory time
// overlap only in part, and few output tiles leave SMs idle.
//   compute = 2MNK / (peak x compute_efficiency x MN / (MN + half_output_elements))
//   memory  = bytes / (bandwidth x memory_efficiency)
//   time    = max(compute, memory) + overlap x min(compute, memory) + kernel_us
struct GemmShapeFit {
  double compute_efficiency = 0;
  double memory_efficiency = 0;
  double overlap = 0;              // in [0, 1]
  double kernel_us = 0;            // per GEMM, launch gap included
  double half_output_elements = 0;
  std::string source;
};

// Prefill attention time as a function of its work (roofline.h): a
// FlashAttention-class kernel approaches prefill_compute_efficiency of the
// peak only on large work; for W = query-key pairs x query heads on one GPU,
//   time = prefill_kernel_us + FLOPs / (peak x e) x (1 + (prefill_half_work / W)^prefill_work_exponent).
// Fitted to measured kernels (tools/fit_attention_shape.py).
struct AttentionShapeFit {
  double prefill_compute_efficiency = 0;  // (0, 1]
  double prefill_kernel_us = 0;
  double prefill_half_work = 0;           // pairs x heads
  double prefill_work_exponent = 1;
  std::string source;
};

// Spot (preemptible) capacity of this GPU at one provider ("spot" in the
// JSON): how long the provider warns before reclaiming an instance and how
// often it reclaims one, each optional (absent: no published figure), with
// the source of both.
struct SpotReclamation {
  std::string provider;                      // "AWS"
  std::optional<double> notice_s;            // warning before reclaim, seconds (>= 0)
  std::optional<double> reclaims_per_hour;   // per instance (> 0)
  std::string source;
};

struct GpuSpec {
  std::string name;          // "H100-SXM"
  std::string vendor;        // "nvidia", "amd"
  std::string family;        // "A100", "H100", ... (engine defaults key on it)
  int64_t memory_mib = 0;    // usable memory as the driver reports it
  double bf16_tflops = 0;    // dense
  double fp8_tflops = 0;     // dense; 0 where unsupported
  double fp4_tflops = 0;     // dense FP4 tensor cores (Blackwell); 0 where unsupported
  double fp32_tflops = 0;
  double mem_bandwidth_gbps = 0;  // HBM GB/s
  LinkSpec scale_up;              // NVLink / xGMI within a node
  double pcie_gbps_per_direction = 0;
  double network_gbps_per_direction = 0;  // scale-out NIC bandwidth per GPU
  // Pricing class ("on_demand", "reserved", "spot") -> price, or nullopt
  // where the catalogue knows none.
  std::map<std::string, std::optional<Price>> prices;
  std::map<std::string, std::string> sources;  // figure name -> source
  std::optional<GemmShapeFit> gemm_shape;      // absent: the constant-efficiency roofline
  // Prefill attention efficiency by work (roofline.h); absent: the constant.
  std::optional<AttentionShapeFit> attention_shape;
  // Published hardware interruptions at scale: GPU-hours per unexpected
  // interruption, with its source ("failures" in the JSON); the `gpu`
  // failure model's default rate. Absent: no published figure.
  std::optional<double> gpu_hours_per_interruption;
  std::string interruption_source;
  // Spot reclamation ("spot" in the JSON); absent: none published.
  std::optional<SpotReclamation> spot;

  int64_t memory_bytes() const { return memory_mib * 1024 * 1024; }
  double PeakTflops(DType compute) const;
};

}  // namespace fleetsim
