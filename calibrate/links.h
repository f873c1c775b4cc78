// Links without NCCL: what `fleetsim calibrate` measures about the wires
// between the host and its devices and between every pair of devices, the
// alpha-beta model it fits to each, the collective times that model predicts,
// and a ring all-reduce built from the same point-to-point copies that
// checks the prediction.
//
// Method. Every link is measured one direction at a time with the Backend's
// own copies (kernels/backend.h): host → device with CopyToDevice from a
// pageable host buffer, device → host with CopyToHost, and device i → device
// j with CopyPeer enqueued on i. Each size is timed with TimeOp
// (calibrate/measure.h: warm-up, optional cache flush, TimeOnce, median).
// A link's cost is then modelled as
//
//     t(S) = alpha + S / B          (ns, S in bytes, B in bytes per ns = GB/s)
//
// alpha being the fixed cost of one transfer (launch, driver, DMA set-up,
// wire latency) and B the per-direction bandwidth. That is the model
// DOMAIN.md's collective formulas take, and the one the topology's links
// carry.
//
// Not NCCL. No collective library is involved: the predictions below assume
// a ring of plain copies, one chunk in flight per link, each step ending at
// the slowest rank. NCCL's pipelined, multi-channel rings (and NVLink
// SHARP) reach more than this model's bandwidth on large messages; the
// measured ring here is what copies through the Backend reach.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "calibrate/measure.h"
#include "kernels/backend.h"

namespace fleetsim::calibrate {

// One measured size of one link.
struct LinkPoint {
  double bytes = 0;  // bytes moved by one copy
  Timing timing;     // its time (ns); timing.median_ns is what the fit uses
};

// t(S) = alpha_ns + S / gbps, the alpha-beta model of one link direction.
struct AlphaBeta {
  double alpha_ns = 0;  // fixed cost of one transfer, ns, >= 0
  // Bandwidth in bytes per ns, which is also GB/s (1e9 bytes/s): S / gbps is
  // ns. Per direction of one link.
  double gbps = 0;
  // max over the fitted points of |model - measured| / measured: how far the
  // straight line is from the worst point (0.05 = 5%). Large values mean the
  // link is not affine in size over the measured range (e.g. a protocol
  // switch between small and large copies).
  double max_rel_error = 0;
};

// Fits t = alpha + bytes / gbps to (bytes, ns) points by least squares
// (Eigen), each row weighted by 1/ns so that the fit minimises relative, not
// absolute, error: small copies count as much as large ones. A negative
// intercept (no physical meaning) is clamped: the slope is refitted with
// alpha = 0. Points need not be sorted; repeated sizes are allowed.
// Errors (Status): fewer than 2 distinct sizes, a non-positive or non-finite
// value, or a fitted slope <= 0 (time does not grow with size: measure larger
// sizes).
Status FitAlphaBeta(const std::vector<std::pair<double, double>>& bytes_ns, AlphaBeta* out);

// One direction of one link.
struct LinkMeasurement {
  std::string src;   // "host", "device0", "device1", ... (index in the devices list)
  std::string dst;   // same naming
  std::string kind;  // "h2d" (host → device), "d2h" (device → host), "peer" (device → device)
  std::vector<LinkPoint> points;  // one per size, in LinkOptions::sizes_bytes order
  AlphaBeta fit;                  // FitAlphaBeta over points' medians
};

struct LinkOptions {
  // Copy sizes in bytes, each > 0 and a whole number; at least 2 distinct.
  // Default: 4 KiB to 256 MiB in powers of 4 (9 sizes): the small end
  // measures alpha, the large end bandwidth. The largest size is allocated
  // once per device plus once on the host. The sweep for 2 CPU "devices"
  // takes seconds; tests and quick runs pass a shorter list.
  std::vector<double> sizes_bytes = {4096.0,        16384.0,        65536.0,
                                     262144.0,      1048576.0,      4194304.0,
                                     16777216.0,    67108864.0,     268435456.0};
  // Per-size timing (calibrate/measure.h). No cache flush by default: the
  // data a collective sends was usually just written by the kernel before
  // it, and on a CPU "device" a flush writes twice the last-level cache
  // (1 GiB on a server part) per repetition, turning a seconds-long sweep
  // into minutes. Set flush_cache to measure copies from cold memory.
  TimingOptions timing = {/*warmup=*/2, /*repetitions=*/5, /*flush_cache=*/false};
};

// Measures, for every device d (named "device<d>" by its index in
// `devices`): host → device and device → host; and for every ordered pair
// (i, j), i != j: device i → device j with CopyPeer on i (each direction
// separately, timed with i's TimeOnce after synchronising j). Every link is
// first validated with one small copy whose bytes are read back and
// compared. Appends one LinkMeasurement per link to *out in this order:
// for each device, h2d then d2h; then peers in (i, j) lexicographic order.
// `progress`, when set, receives one line per measured link.
// Errors: no devices, a null device, devices of different kinds (peer copies
// join backends of one kind), bad sizes or timing options, a failed
// allocation, copy or validation, a failed fit; each names the link.
// REQUIRES: no other thread uses the devices during the call.
Status MeasureLinks(const std::vector<kernels::Backend*>& devices, const LinkOptions& options,
                    const std::function<void(const std::string&)>& progress,
                    std::vector<LinkMeasurement>* out);

// ---- Collective predictions (alpha-beta) ----------------------------------
//
// p ranks in a ring, each step moving one chunk over every ring link at
// once; `link` is the slowest link of the ring (SlowestRingLink), so every
// step is as slow as that link. Assumptions: links are full duplex and
// independent (a rank sends and receives at once at full per-direction
// speed), one step's copies do not share a wire, the reduction's arithmetic
// and the synchronisation between steps cost nothing beyond alpha, and the
// message divides evenly into p chunks. p == 1 costs 0. All results in ns.
// REQUIRES (checked): p >= 1; bytes >= 0; link.gbps > 0 when p > 1.

// All-reduce of S = `bytes` per rank (each rank holds S and ends with the
// sum): reduce-scatter then all-gather, 2(p-1) steps of S/p bytes:
//     2(p-1)·alpha + 2(p-1)/p · S/B
double RingAllReduceNs(const AlphaBeta& link, int p, double bytes);

// All-gather whose result is S = `bytes` in total (each rank contributes
// S/p): (p-1) ring steps of S/p bytes:
//     (p-1)·alpha + (p-1)/p · S/B
double AllGatherNs(const AlphaBeta& link, int p, double bytes);

// All-to-all by pairwise exchange, S = `bytes` held by each rank (S/p for
// each destination, the own share staying): p-1 rounds, in round k rank r
// sends S/p to rank r+k. Each round's copy crosses one link, taken here as
// `link` (on a switched fabric or a full mesh every pair has its own):
//     (p-1)·alpha + (p-1)/p · S/B
double AllToAllNs(const AlphaBeta& link, int p, double bytes);

// The bytes at which SlowestRingLink compares links: large enough that the
// bandwidth term dominates, as it does for the tensor-parallel all-reduces
// of a prefill.
constexpr double kRingReferenceBytes = 64.0 * 1024 * 1024;

// The slowest "peer" link of the ring device0 → device1 → … → device(p-1)
// → device0, p = `ranks`: the one with the largest alpha + S/B at S =
// kRingReferenceBytes (ties: the first in ring order). Errors: ranks < 2, or
// a ring link missing from `links`.
Status SlowestRingLink(const std::vector<LinkMeasurement>& links, int ranks, AlphaBeta* out);

// ---- The check: a real ring all-reduce from point-to-point copies ---------

struct RingCheck {
  int ranks = 0;  // p
  // Per-rank buffer in bytes as run: the requested size rounded up to whole
  // fp32 elements and to a multiple of p elements (p equal chunks).
  double bytes = 0;
  double measured_ns = 0;   // median wall time of one all-reduce, ns
  double predicted_ns = 0;  // RingAllReduceNs(link, ranks, bytes), ns
  // measured_ns / predicted_ns; 0 when predicted_ns is 0 (one rank).
  double ratio = 0;
  // max |result - exact sum| over every element of every rank after the last
  // repetition; 0 is expected (the inputs make every partial sum exact).
  double max_abs_error = 0;
};

// Runs a ring all-reduce (sum) over one fp32 buffer per rank, one thread per
// rank: kernels::RingAllReduce (kernels/ring_all_reduce.h), the collective
// live mode's tensor-parallel replicas run, every transfer a CopyPeer from
// the sender's backend and every reduction the receiver's ResidualAdd.
// Element i of rank r starts as (r+1)·(i mod 97) / 64: multiples of 1/64
// small enough that every partial sum is exact in fp32, so any difference
// from the host's sum is a bug, not rounding. Buffers are re-initialised
// before every repetition (untimed). A repetition's time is the wall clock
// from a barrier before its first step to a barrier after its last
// (backends synchronised): `timing.warmup` untimed runs, then the median of
// `timing.repetitions`; timing.flush_cache flushes every rank's caches
// before each run.
// `link` is the model to compare against (SlowestRingLink of MeasureLinks'
// output for these devices).
// Errors: no ranks, a null or repeated backend, backends of different
// kinds, bytes not positive and finite, bad timing options, or any failed
// allocation or op (the other ranks are released, nothing deadlocks).
Status RunRingAllReduce(const std::vector<kernels::Backend*>& ranks, double bytes,
                        const TimingOptions& timing, const AlphaBeta& link, RingCheck* out);

}  // namespace fleetsim::calibrate
