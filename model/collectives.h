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

inline double AllToAllNs(double alpha_ns, double gbps, int p, double bytes) {
  return AllGatherNs(alpha_ns, gbps, p, bytes);
}

}  // namespace fleetsim
