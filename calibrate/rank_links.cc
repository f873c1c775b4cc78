#include "calibrate/rank_links.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <set>
#include <utility>

namespace fleetsim::calibrate {

namespace {

constexpr char kWho[] = "links between ranks";

double NowNs() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

std::string RankName(int r) { return "rank" + std::to_string(r); }

// Device and host buffers of one size, freed on scope exit.
struct Buffers {
  kernels::Backend& device;
  void* dev = nullptr;
  std::vector<unsigned char> host;
  explicit Buffers(kernels::Backend& d) : device(d) {}
  ~Buffers() {
    if (dev) device.Free(dev);
  }
  Status Allocate(size_t bytes) {
    host.assign(bytes, 0);
    return device.Allocate(bytes, &dev);
  }
};

// One transfer of `bytes` from this rank to `peer` on `path`, or its receipt.
Status SendOne(kernels::Backend& dev, RankTransport& t, bool direct, int peer, Buffers& b, size_t bytes) {
  if (direct) return t.Send(peer, b.dev, bytes);
  FLEETSIM_RETURN_IF_ERROR(dev.CopyToHost(b.host.data(), b.dev, bytes));
  FLEETSIM_RETURN_IF_ERROR(dev.Synchronize());
  return t.Send(peer, b.host.data(), bytes);
}
Status RecvOne(kernels::Backend& dev, RankTransport& t, bool direct, int peer, Buffers& b, size_t bytes) {
  if (direct) return t.Recv(peer, b.dev, bytes);
  FLEETSIM_RETURN_IF_ERROR(t.Recv(peer, b.host.data(), bytes));
  FLEETSIM_RETURN_IF_ERROR(dev.CopyToDevice(b.dev, b.host.data(), bytes));
  return dev.Synchronize();
}

// Ping-pongs between ranks a and b over `path`; on rank a, the median
// one-way time of each size.
Status PingPong(kernels::Backend& dev, RankTransport& t, bool direct, int a, int b, const RankLinkOptions& o,
                Buffers& buf, std::vector<LinkPoint>* points) {
  const int me = t.rank();
  for (double size : o.sizes_bytes) {
    const size_t bytes = static_cast<size_t>(size);
    std::vector<double> samples;
    for (int i = 0; i < o.timing.warmup + o.timing.repetitions; ++i) {
      if (me == a) {
        const double t0 = NowNs();
        FLEETSIM_RETURN_IF_ERROR(SendOne(dev, t, direct, b, buf, bytes));
        FLEETSIM_RETURN_IF_ERROR(RecvOne(dev, t, direct, b, buf, bytes));
        if (i >= o.timing.warmup) samples.push_back((NowNs() - t0) / 2);
      } else {
        FLEETSIM_RETURN_IF_ERROR(RecvOne(dev, t, direct, a, buf, bytes));
        FLEETSIM_RETURN_IF_ERROR(SendOne(dev, t, direct, a, buf, bytes));
      }
    }
    if (me == a) points->push_back({size, Summarize(samples)});
  }
  return Status::Ok();
}

// Rank 0 gathers what rank `from` measured: the medians of its points.
Status GatherPoints(RankTransport& t, int from, std::vector<LinkPoint>* points, size_t count) {
  std::vector<double> wire(count * 2);
  if (t.rank() == from) {
    for (size_t i = 0; i < count; ++i) {
      wire[2 * i] = (*points)[i].bytes;
      wire[2 * i + 1] = (*points)[i].timing.median_ns;
    }
    return t.Send(0, wire.data(), wire.size() * sizeof(double));
  }
  if (t.rank() != 0) return Status::Ok();
  FLEETSIM_RETURN_IF_ERROR(t.Recv(from, wire.data(), wire.size() * sizeof(double)));
  points->clear();
  for (size_t i = 0; i < count; ++i) {
    LinkPoint p;
    p.bytes = wire[2 * i];
    p.timing.median_ns = p.timing.min_ns = p.timing.max_ns = wire[2 * i + 1];
    p.timing.repetitions = 1;
    points->push_back(p);
  }
  return Status::Ok();
}

float RingInput(int rank, int64_t i) { return static_cast<float>((rank + 1) * (i % 97)) / 64.0f; }

// The ring all-reduce across the ranks (see the header); on every rank the
// median wall time and the largest error of its own result.
Status RingAcrossRanks(kernels::Backend& dev, RankTransport& t, bool direct, const RankLinkOptions& o,
                       double* median_ns, double* local_ns, double* max_abs_error, double* bytes_run) {
  const int p = t.size(), r = t.rank();
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  // Whole fp32 elements, a multiple of p of them.
  int64_t elems = static_cast<int64_t>(std::ceil(o.ring_bytes / 4));
  elems = (elems + p - 1) / p * p;
  const int64_t chunk = elems / p;
  const size_t chunk_bytes = static_cast<size_t>(chunk) * 4;
  *bytes_run = static_cast<double>(elems) * 4;
  Buffers data(dev), recv(dev);
  FLEETSIM_RETURN_IF_ERROR(data.Allocate(static_cast<size_t>(elems) * 4));
  FLEETSIM_RETURN_IF_ERROR(recv.Allocate(chunk_bytes));
  std::vector<float> init(static_cast<size_t>(elems));
  for (int64_t i = 0; i < elems; ++i) init[static_cast<size_t>(i)] = RingInput(r, i);
  std::vector<unsigned char> send_host(chunk_bytes);
  auto at = [&](int c) { return static_cast<unsigned char*>(data.dev) + static_cast<size_t>(c) * chunk_bytes; };
  // One exchange: this rank's chunk `send_c` to next, prev's into `recv`.
  auto exchange = [&](int send_c) -> Status {
    if (direct) return t.SendRecv(next, at(send_c), prev, recv.dev, chunk_bytes);
    FLEETSIM_RETURN_IF_ERROR(dev.CopyToHost(send_host.data(), at(send_c), chunk_bytes));
    FLEETSIM_RETURN_IF_ERROR(dev.Synchronize());
    FLEETSIM_RETURN_IF_ERROR(t.SendRecv(next, send_host.data(), prev, recv.host.data(), chunk_bytes));
    return dev.CopyToDevice(recv.dev, recv.host.data(), chunk_bytes);
  };
  double local = 0;  // this repetition's adds and copies on the device
  auto timed = [&](const std::function<Status()>& op) -> Status {
    const double t0 = NowNs();
    FLEETSIM_RETURN_IF_ERROR(op());
    FLEETSIM_RETURN_IF_ERROR(dev.Synchronize());
    local += NowNs() - t0;
    return Status::Ok();
  };
  auto once = [&]() -> Status {
    // Reduce-scatter: step s sends chunk (r - s) mod p, adds the received
    // chunk (r - s - 1) mod p into its own.
    for (int s = 0; s < p - 1; ++s) {
      FLEETSIM_RETURN_IF_ERROR(exchange(((r - s) % p + p) % p));
      const int c = ((r - s - 1) % p + p) % p;
      kernels::ResidualAddArgs add;
      add.rows = 1;
      add.width = chunk;
      add.dtype = kernels::DType::kFp32;
      add.a = at(c);
      add.b = recv.dev;
      add.out = at(c);
      add.a_stride = add.b_stride = add.out_stride = chunk;
      FLEETSIM_RETURN_IF_ERROR(timed([&] { return dev.ResidualAdd(add); }));
    }
    // All-gather: rank r holds the sum of chunk (r + 1) mod p; step s sends
    // chunk (r + 1 - s) mod p and stores the received (r - s) mod p.
    for (int s = 0; s < p - 1; ++s) {
      FLEETSIM_RETURN_IF_ERROR(exchange(((r + 1 - s) % p + p) % p));
      const int c = ((r - s) % p + p) % p;
      FLEETSIM_RETURN_IF_ERROR(timed([&] { return dev.CopyOnDevice(at(c), recv.dev, chunk_bytes); }));
    }
    return Status::Ok();
  };
  std::vector<double> samples, locals;
  for (int i = 0; i < o.timing.warmup + o.timing.repetitions; ++i) {
    FLEETSIM_RETURN_IF_ERROR(dev.CopyToDevice(data.dev, init.data(), static_cast<size_t>(elems) * 4));
    FLEETSIM_RETURN_IF_ERROR(dev.Synchronize());
    FLEETSIM_RETURN_IF_ERROR(t.Barrier());
    local = 0;
    const double t0 = NowNs();
    FLEETSIM_RETURN_IF_ERROR(once());
    FLEETSIM_RETURN_IF_ERROR(t.Barrier());
    if (i >= o.timing.warmup) {
      samples.push_back(NowNs() - t0);
      locals.push_back(local);
    }
  }
  *local_ns = Summarize(locals).median_ns;
  std::vector<float> got(static_cast<size_t>(elems));
  FLEETSIM_RETURN_IF_ERROR(dev.CopyToHost(got.data(), data.dev, static_cast<size_t>(elems) * 4));
  FLEETSIM_RETURN_IF_ERROR(dev.Synchronize());
  // sum over ranks q of (q+1)(i mod 97)/64 = p(p+1)/2 (i mod 97)/64, exact.
  double worst = 0;
  for (int64_t i = 0; i < elems; ++i) {
    const double want = static_cast<double>(p) * (p + 1) / 2 * static_cast<double>(i % 97) / 64.0;
    worst = std::max(worst, std::fabs(static_cast<double>(got[static_cast<size_t>(i)]) - want));
  }
  *max_abs_error = worst;
  *median_ns = Summarize(samples).median_ns;
  return Status::Ok();
}

}  // namespace

Status MeasureRankLinks(kernels::Backend& device, RankTransport& t, const RankLinkOptions& o, RankLinks* out) {
  const std::string who = kWho;
  const int p = t.size();
  if (p < 2) return Status::Invalid(who + ": needs at least 2 ranks (mpirun -np N, one rank per node), got " +
                                    std::to_string(p));
  FLEETSIM_RETURN_IF_ERROR(ValidateTimingOptions(o.timing).WithPrefix(who + ": "));
  std::set<double> distinct;
  for (double s : o.sizes_bytes) {
    if (!(s >= 1) || s != std::floor(s) || s > 1e10)
      return Status::Invalid(who + ": transfer sizes must be whole numbers of bytes from 1 to 1e10");
    distinct.insert(s);
  }
  if (distinct.size() < 2) return Status::Invalid(who + ": needs at least 2 distinct transfer sizes");
  if (!(o.ring_bytes >= 4 && o.ring_bytes <= 1e10))
    return Status::Invalid(who + ": the ring check's buffer must be 4 bytes to 1e10");

  RankLinks res;
  res.ranks = p;
  res.transport = t.description();
  // Every rank must agree on the direct path: the ring uses it only when
  // all can.
  const unsigned char mine = t.device_memory(device) ? 1 : 0;
  unsigned char all = mine;
  if (t.rank() == 0) {
    for (int q = 1; q < p; ++q) {
      unsigned char v = 0;
      FLEETSIM_RETURN_IF_ERROR(t.Recv(q, &v, 1));
      all = static_cast<unsigned char>(all & v);
    }
    for (int q = 1; q < p; ++q) FLEETSIM_RETURN_IF_ERROR(t.Send(q, &all, 1));
  } else {
    FLEETSIM_RETURN_IF_ERROR(t.Send(0, &mine, 1));
    FLEETSIM_RETURN_IF_ERROR(t.Recv(0, &all, 1));
  }
  res.direct = all != 0;

  const double largest = *std::max_element(o.sizes_bytes.begin(), o.sizes_bytes.end());
  Buffers buf(device);
  FLEETSIM_RETURN_IF_ERROR(buf.Allocate(static_cast<size_t>(largest)).WithPrefix(who + ": "));
  // The ring's links; with two ranks the one pair once.
  const int links = p == 2 ? 1 : p;
  for (int path = 0; path < (res.direct ? 2 : 1); ++path) {
    const bool direct = path == 1;
    for (int a = 0; a < links; ++a) {
      const int b = (a + 1) % p;
      LinkMeasurement m;
      m.src = RankName(a);
      m.dst = RankName(b);
      m.kind = direct ? "rank_direct" : "rank_staged";
      FLEETSIM_RETURN_IF_ERROR(t.Barrier());
      if (t.rank() == a || t.rank() == b) {
        FLEETSIM_RETURN_IF_ERROR(
            PingPong(device, t, direct, a, b, o, buf, &m.points).WithPrefix(who + ": " + m.src + " -> " + m.dst + " (" + m.kind + "): "));
      }
      if (a != 0) FLEETSIM_RETURN_IF_ERROR(GatherPoints(t, a, &m.points, o.sizes_bytes.size()));
      if (t.rank() == 0) {
        std::vector<std::pair<double, double>> xy;
        for (const LinkPoint& pt : m.points) xy.emplace_back(pt.bytes, pt.timing.median_ns);
        FLEETSIM_RETURN_IF_ERROR(
            FitAlphaBeta(xy, &m.fit).WithPrefix(who + ": " + m.src + " -> " + m.dst + " (" + m.kind + "): "));
        res.links.push_back(std::move(m));
      }
    }
  }

  // The ring, over the direct path where every rank has it.
  res.ring_path = res.direct ? "rank_direct" : "rank_staged";
  double median = 0, local = 0, err = 0, bytes = 0;
  FLEETSIM_RETURN_IF_ERROR(RingAcrossRanks(device, t, res.direct, o, &median, &local, &err, &bytes)
                               .WithPrefix(who + ": ring all-reduce: "));
  // The worst rank's error reaches rank 0.
  if (t.rank() == 0) {
    for (int q = 1; q < p; ++q) {
      double e = 0;
      FLEETSIM_RETURN_IF_ERROR(t.Recv(q, &e, sizeof e));
      err = std::max(err, e);
    }
  } else {
    FLEETSIM_RETURN_IF_ERROR(t.Send(0, &err, sizeof err));
  }
  if (t.rank() == 0) {
    AlphaBeta slowest;
    double worst = -1;
    for (const LinkMeasurement& l : res.links) {
      if (l.kind != res.ring_path) continue;
      const double cost = l.fit.alpha_ns + kRingReferenceBytes / l.fit.gbps;
      if (cost > worst) {
        worst = cost;
        slowest = l.fit;
      }
    }
    res.ring.ranks = p;
    res.ring.bytes = bytes;
    res.ring.measured_ns = median;
    res.ring.predicted_ns = RingAllReduceNs(slowest, p, bytes);
    res.ring.ratio = res.ring.predicted_ns > 0 ? median / res.ring.predicted_ns : 0;
    res.ring.max_abs_error = err;
    res.ring_local_ns = local;
  }
  FLEETSIM_RETURN_IF_ERROR(t.Barrier());
  if (err != 0)
    return Status::Invalid(who + ": ring all-reduce: the reduced values are wrong (max error " + std::to_string(err) +
                           "): the transfers between ranks are broken");
  *out = std::move(res);
  return Status::Ok();
}

}  // namespace fleetsim::calibrate
