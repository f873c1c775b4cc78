// A ring all-reduce (sum) over point-to-point copies between backends: the
// tensor-parallel collective of live mode's sharded replicas, and the one
// calibration times against the alpha-beta model of its links
// (calibrate/links.h). No collective library: every transfer is a
// Backend::CopyPeer from the sender, every reduction the receiver's
// ResidualAdd, and the ranks meet at a barrier after each step.
//
// For p ranks, a buffer of n elements is cut into p chunks of ceil(n / p)
// (the last ones shorter, possibly empty):
//  - reduce-scatter, p-1 steps: in step s rank r copies its chunk
//    (r - s) mod p into rank r+1's receive buffer (two receive buffers,
//    alternating, so a step's copy never lands in the buffer the previous
//    step's addition reads); every rank synchronises its backend and meets
//    the others at the barrier; rank r+1 adds the arrival into its own chunk
//    with the next step's work (so each step needs one barrier). After it
//    rank r holds the full sum of chunk (r + 1) mod p.
//  - all-gather, p-1 steps: in step s rank r copies its chunk
//    (r + 1 - s) mod p into the same place of rank r+1's buffer;
//    synchronise, barrier.
// Each chunk is summed in one order around the ring and then copied, so
// every rank ends with the same bits; the order is a function of p only, so
// a run is deterministic.
//
// One object per group of ranks; each rank's own thread calls Run with its
// own buffer, all ranks together with the same size and dtype. A rank that
// fails calls Abort(): the others' waits return aborted instead of hanging.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

#include "base/status.h"
#include "kernels/backend.h"

namespace fleetsim::kernels {

// A reusable barrier for a fixed number of threads that one of them can
// abort (then every wait, present and future, returns false).
class RankBarrier {
 public:
  explicit RankBarrier(int count) : count_(count) {}
  // Blocks until all `count` threads have arrived in this generation; true
  // then, false if the barrier was aborted.
  bool ArriveAndWait();
  void Abort();
  bool aborted();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int count_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
};

class RingAllReduce {
 public:
  // `ranks`: one backend per rank, all of one kind, distinct, outliving
  // this object. One rank is allowed (Run is then a no-op).
  explicit RingAllReduce(std::vector<Backend*> ranks);
  // Frees the receive buffers on their backends.
  ~RingAllReduce();
  RingAllReduce(const RingAllReduce&) = delete;
  RingAllReduce& operator=(const RingAllReduce&) = delete;

  int ranks() const { return static_cast<int>(ranks_.size()); }
  Backend& backend(int r) const { return *ranks_[static_cast<size_t>(r)]; }

  // Rank r's buffer for the next Runs: `bytes` at `data`, on rank r's
  // backend; sizes rank r's receive buffers to match. Called on rank r's
  // thread. The others copy into both, so every rank must pass a barrier
  // (Arrive) after its own Attach and before the next Run.
  Status Attach(int r, void* data, size_t bytes);

  // Sums the first `elements` values of type `dtype` of every rank's
  // attached buffer over the ranks, in place; returns with rank r's backend
  // synchronised. *aborted is set (and OK returned) when another rank
  // aborted the group; the buffer's contents are then unspecified. On an
  // error the caller must Abort() (after recording why), or the other ranks
  // wait for this one forever.
  // REQUIRES: every rank attached a buffer of >= elements · DTypeSize(dtype)
  // bytes, and passed a barrier since; every rank calls Run with the same
  // elements and dtype.
  Status Run(int r, int64_t elements, DType dtype, bool* aborted);

  // The group's barrier, for callers that must line the ranks up between
  // their own steps (after Attach, around a gather).
  bool Arrive() { return barrier_.ArriveAndWait(); }
  // Releases every rank waiting now or later (a rank failed).
  void Abort() { barrier_.Abort(); }
  bool aborted() { return barrier_.aborted(); }

 private:
  std::vector<Backend*> ranks_;
  RankBarrier barrier_;
  std::vector<DeviceBuffer> recv_[2];  // per rank, alternating
  std::vector<void*> data_;            // per rank: the attached buffer
  std::vector<size_t> bytes_;
};

}  // namespace fleetsim::kernels
