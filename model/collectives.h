// Alpha-beta costs of collectives over p ranks joined by links of latency
// alpha (ns) and bandwidth B (bytes per ns = GB/s, one direction), as
// ring algorithms run them (NCCL's ring, and fleetsim's own ring built from
// peer copies, calibrate/links.h):
//   ring all-reduce:  2(p-1)·alpha + 2(p-1)/p · S/B   (S: bytes per rank)
//   all-gather:       (p-1)·alpha + (p-1)/p · S/B     (S: bytes gathered)
//   all-to-all:       (p-1)·alpha + (p-1)/p · S/B     (S: bytes each rank holds;
//                                                      pairwise exchange)
// Each step moves 1/p of the buffer over every ring link at once, so the
// slowest link of the ring sets B. p <= 1 costs nothing.
#pragma once

namespace fleetsim {

inline double RingAllReduceNs(double alpha_ns, double gbps, int p, double bytes) {
  if (p <= 1) return 0;
  return 2.0 * (p - 1) * alpha_ns + 2.0 * (p - 1) / p * bytes / gbps;
}

inline double AllGatherNs(double alpha_ns, double gbps, int p, double bytes) {
  if (p <= 1) return 0;
  return (p - 1) * alpha_ns + static_cast<double>(p - 1) / p * bytes / gbps;
}

// vLLM's custom all-reduce (csrc/custom_all_reduce.cuh and
// vllm/distributed/device_communicators/custom_all_reduce.py): each GPU
// reads its peers' buffers over NVLink directly.
//   one-shot: every GPU reads every peer's whole buffer and reduces:
//             L + (p-1)·S/B
//   two-shot: reduce-scatter, then all-gather; one more synchronisation:
//             1.5·L + 2(p-1)/p · S/B
// L is the measured time of a small one-shot all-reduce (two
// synchronisation barriers); the two-shot's three barriers cost 1.5 L.
// Where the engine uses it (custom_all_reduce.py, should_custom_ar and
// __init__): world sizes 2, 4, 6 and 8 only, within one node, on NVLink, or
// on PCIe for 2 GPUs only; and buffers under max_size, 8 MiB. The kernel
// choice (custom_all_reduce.cuh, allreduce): one-shot on 2 GPUs, or on
// NVLink below 512 KiB for up to 4 GPUs and below 256 KiB for up to 8;
// two-shot otherwise. Above 8 MiB, and where it does not apply, NCCL's ring.
struct VllmCustomAllReduce {
  static constexpr double kMaxBytes = 8.0 * 1024 * 1024;
  // Whether the engine enables it for `p` GPUs of one node; `nvlink`: the
  // GPUs are fully connected by NVLink (else PCIe).
  static bool Enabled(int p, bool nvlink) {
    if (p != 2 && p != 4 && p != 6 && p != 8) return false;
    return nvlink || p == 2;
  }
  static bool OneShot(int p, double bytes) {
    return p == 2 || (p <= 4 && bytes < 512.0 * 1024) || (p <= 8 && bytes < 256.0 * 1024);
  }
  // REQUIRES: Enabled(p, ...) and bytes < kMaxBytes.
  static double Ns(double latency_ns, double gbps, int p, double bytes) {
    if (OneShot(p, bytes)) return latency_ns + (p - 1) * bytes / gbps;
    return 1.5 * latency_ns + 2.0 * (p - 1) / p * bytes / gbps;
  }
};

inline double AllToAllNs(double alpha_ns, double gbps, int p, double bytes) {
  return AllGatherNs(alpha_ns, gbps, p, bytes);
}

}  // namespace fleetsim
