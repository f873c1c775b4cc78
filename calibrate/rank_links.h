// Links between nodes without NCCL: `fleetsim calibrate` run as MPI ranks,
// one per node, times transfers between the ranks' devices, fits the
// alpha-beta model to each link (calibrate/links.h), and checks a ring
// all-reduce across the ranks against the prediction, as the single-node
// check does between a node's devices.
//
// Method. The ring's links (rank r to rank r+1 mod p) are measured one at a
// time, every other rank waiting at a barrier. Each size is a ping-pong:
// rank r sends S bytes to r+1, which sends them back; half the round trip is
// one transfer, timed on rank r with the wall clock (warm-up runs, then the
// median). Two paths:
//   - "rank_staged": device -> host copy on the sender, the host buffer over
//     MPI, host -> device on the receiver (what any MPI can do);
//   - "rank_direct": MPI on device memory (GPUDirect RDMA through a
//     CUDA-aware MPI; on the CPU backend device memory is host memory, so
//     this is MPI alone). Measured only where the transport says it can.
// A ping-pong measures both directions at once: the fit is of their mean,
// and the profile records it for r -> r+1 (the direction the ring uses).
//
// The ring check. An all-reduce of one fp32 buffer per rank: reduce-scatter
// then all-gather, p-1 steps each, every step one exchange with the ring's
// neighbours (send to r+1, receive from r-1) over the direct path when the
// transport has one (else staged), the receiver adding the chunk on its
// device (ResidualAdd). The inputs make every partial sum exact, so the
// result is checked exactly; the time is compared with RingAllReduceNs of
// the slowest measured ring link of that path.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "base/status.h"
#include "calibrate/links.h"
#include "calibrate/measure.h"
#include "kernels/backend.h"

namespace fleetsim::calibrate {

// Point-to-point messages between ranks: MPI's (calibrate/mpi_transport.cc)
// or, in tests, threads'. Blocking; every call names its peer.
class RankTransport {
 public:
  virtual ~RankTransport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Whether Send and Recv may be given device memory of this rank's
  // backend (a CUDA-aware MPI, or the CPU backend whose device memory is
  // host memory).
  virtual bool device_memory(const kernels::Backend& backend) const = 0;
  virtual Status Send(int to, const void* buf, size_t bytes) = 0;
  virtual Status Recv(int from, void* buf, size_t bytes) = 0;
  // Sends to `to` and receives from `from` at once (no deadlock in a ring).
  virtual Status SendRecv(int to, const void* send, int from, void* recv, size_t bytes) = 0;
  virtual Status Barrier() = 0;
  // A human name for the transport ("Open MPI 4.1.4, CUDA-aware: no").
  virtual std::string description() const = 0;
};

struct RankLinkOptions {
  // Sizes of one transfer, bytes: at least 2 distinct, each a whole number.
  std::vector<double> sizes_bytes = {4096.0, 65536.0, 1048576.0, 4194304.0, 16777216.0};
  TimingOptions timing = {/*warmup=*/2, /*repetitions=*/5, /*flush_cache=*/false};
  double ring_bytes = 16.0 * 1024 * 1024;  // per rank, the check's buffer
};

// What rank 0 learns; on other ranks only ranks, direct and transport are set.
struct RankLinks {
  int ranks = 0;
  bool direct = false;                // the rank_direct path was measured
  std::string transport;              // RankTransport::description()
  std::vector<LinkMeasurement> links; // per ring link, staged then direct; src/dst "rank<i>"
  RingCheck ring;                     // across the ranks (ranks < 2: none)
  std::string ring_path;              // "rank_direct" or "rank_staged"
  // Rank 0's median time per all-reduce in its device work (the p-1 adds
  // of the reduce-scatter, the p-1 copies of the all-gather): the links'
  // prediction leaves it out; on a CPU it is most of the time.
  double ring_local_ns = 0;
};

// Every rank calls it, with its own backend; all must pass equal options.
// Rank 0's *out holds every link and the ring check. Errors: fewer than 2
// ranks, bad sizes or timing, a failed allocation, copy or message (each
// naming the link), a ring whose sums are wrong.
Status MeasureRankLinks(kernels::Backend& device, RankTransport& transport, const RankLinkOptions& options,
                        RankLinks* out);

}  // namespace fleetsim::calibrate
