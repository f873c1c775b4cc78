#include "kernels/ring_all_reduce.h"

#include <algorithm>
#include <string>

namespace fleetsim::kernels {

bool RankBarrier::ArriveAndWait() {
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_) return false;
  const uint64_t gen = generation_;
  if (++arrived_ == count_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return true;
  }
  cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
  // Released by the last arrival: true, even if a rank has aborted since.
  return generation_ != gen;
}

void RankBarrier::Abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  cv_.notify_all();
}

bool RankBarrier::aborted() {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

RingAllReduce::RingAllReduce(std::vector<Backend*> ranks)
    : ranks_(std::move(ranks)), barrier_(static_cast<int>(ranks_.size())) {
  recv_[0].resize(ranks_.size());
  recv_[1].resize(ranks_.size());
  data_.resize(ranks_.size(), nullptr);
  bytes_.resize(ranks_.size(), 0);
}

RingAllReduce::~RingAllReduce() = default;

Status RingAllReduce::Attach(int r, void* data, size_t bytes) {
  const size_t p = ranks_.size();
  data_[static_cast<size_t>(r)] = data;
  bytes_[static_cast<size_t>(r)] = bytes;
  if (p < 2) return Status::Ok();
  // A chunk of ceil(elements / p) elements fits in ceil(bytes / p) + one
  // element's bytes (at most 8).
  const size_t chunk = (bytes + p - 1) / p + 8;
  for (std::vector<DeviceBuffer>& slot : recv_) {
    DeviceBuffer& b = slot[static_cast<size_t>(r)];
    if (b.bytes() >= chunk) continue;
    FLEETSIM_RETURN_IF_ERROR(ranks_[static_cast<size_t>(r)]->AllocateBuffer(std::max(chunk, b.bytes() * 2), &b));
  }
  return Status::Ok();
}

Status RingAllReduce::Run(int r, int64_t elements, DType dtype, bool* aborted) {
  *aborted = false;
  const int p = ranks();
  if (p < 2 || elements <= 0) return Status::Ok();
  const size_t elem = DTypeSize(dtype);
  void* data = data_[static_cast<size_t>(r)];
  const int next = (r + 1) % p;
  void* peer_data = data_[static_cast<size_t>(next)];
  if (static_cast<size_t>(elements) * elem > std::min(bytes_[static_cast<size_t>(r)], bytes_[static_cast<size_t>(next)]))
    return Status::Invalid("ring all-reduce: " + std::to_string(static_cast<size_t>(elements) * elem) +
                           " bytes per rank, more than the buffers attached (Attach first)");
  const int64_t chunk = (elements + p - 1) / p;
  auto mod = [p](int a) { return ((a % p) + p) % p; };
  auto len = [&](int c) { return std::clamp<int64_t>(elements - int64_t{c} * chunk, 0, chunk); };
  auto at = [&](void* base, int c) { return static_cast<unsigned char*>(base) + static_cast<size_t>(c * chunk) * elem; };
  Backend& me = *ranks_[static_cast<size_t>(r)];
  Backend& peer = *ranks_[static_cast<size_t>(next)];
  for (int slot = 0; slot < 2; ++slot) {
    if (recv_[slot][static_cast<size_t>(next)].bytes() < static_cast<size_t>(chunk) * elem)
      return Status::Invalid("ring all-reduce: rank " + std::to_string(next) + "'s receive buffers hold " +
                             std::to_string(recv_[slot][static_cast<size_t>(next)].bytes()) + " bytes, a chunk is " +
                             std::to_string(static_cast<size_t>(chunk) * elem) + " (Attach first)");
  }
  // Rank r's chunk c += its receive buffer `slot`.
  auto add = [&](int c, int slot) -> Status {
    const int64_t n = len(c);
    if (n == 0) return Status::Ok();
    ResidualAddArgs a;
    a.rows = 1;
    a.width = n;
    a.dtype = dtype;
    a.a = at(data, c);
    a.b = recv_[slot][static_cast<size_t>(r)].data();
    a.out = at(data, c);
    a.a_stride = a.b_stride = a.out_stride = n;
    return me.ResidualAdd(a);
  };
  for (int s = 0; s < p - 1; ++s) {
    // The previous step's arrival, chunk (r - s) mod p, is added before this
    // step sends it on.
    if (s > 0) FLEETSIM_RETURN_IF_ERROR(add(mod(r - s), (s - 1) % 2));
    const int c = mod(r - s);
    if (len(c) > 0)
      FLEETSIM_RETURN_IF_ERROR(me.CopyPeer(peer, recv_[s % 2][static_cast<size_t>(next)].data(), at(data, c),
                                           static_cast<size_t>(len(c)) * elem));
    FLEETSIM_RETURN_IF_ERROR(me.Synchronize());
    if (!barrier_.ArriveAndWait()) {
      *aborted = true;
      return Status::Ok();
    }
  }
  // The last reduce-scatter arrival: chunk (r + 1) mod p is now complete.
  FLEETSIM_RETURN_IF_ERROR(add(mod(r + 1), (p - 2) % 2));
  for (int s = 0; s < p - 1; ++s) {
    const int c = mod(r + 1 - s);
    if (len(c) > 0)
      FLEETSIM_RETURN_IF_ERROR(me.CopyPeer(peer, at(peer_data, c), at(data, c), static_cast<size_t>(len(c)) * elem));
    FLEETSIM_RETURN_IF_ERROR(me.Synchronize());
    if (!barrier_.ArriveAndWait()) {
      *aborted = true;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

}  // namespace fleetsim::kernels
