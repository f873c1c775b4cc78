#include "calibrate/links.h"

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include "kernels/ring_all_reduce.h"
#include "model/collectives.h"

namespace fleetsim::calibrate {
namespace {

std::string FormatDouble(double v, const char* fmt) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

Status ValidateTimingOptions(const TimingOptions& t, const std::string& who) {
  if (t.warmup < 0) return Status::Invalid(who + ": timing.warmup=" + std::to_string(t.warmup) + " is negative");
  if (t.repetitions < 1) {
    return Status::Invalid(who + ": timing.repetitions=" + std::to_string(t.repetitions) + " must be >= 1");
  }
  return Status::Ok();
}

// Backends that must be driven together (peer copies, one thread each):
// non-empty, non-null, distinct objects, one kind.
Status ValidateBackends(const std::vector<kernels::Backend*>& backends, const std::string& who,
                        const std::string& noun) {
  if (backends.empty()) return Status::Invalid(who + ": no " + noun + " given");
  std::set<const kernels::Backend*> seen;
  for (size_t i = 0; i < backends.size(); ++i) {
    if (backends[i] == nullptr) return Status::Invalid(who + ": " + noun + "[" + std::to_string(i) + "] is null");
    if (!seen.insert(backends[i]).second) {
      return Status::Invalid(who + ": " + noun + "[" + std::to_string(i) +
                             "] repeats an earlier backend object (one backend per " + noun +
                             ": a backend is used by one thread at a time)");
    }
    if (backends[i]->name() != backends[0]->name()) {
      return Status::Invalid(who + ": " + noun + "[" + std::to_string(i) + "] is a \"" +
                             std::string(backends[i]->name()) + "\" backend but " + noun + "[0] is \"" +
                             std::string(backends[0]->name()) +
                             "\"; peer copies join backends of one kind");
    }
  }
  return Status::Ok();
}

// Deterministic, non-constant bytes, distinct per `seed`: a copy that moved
// the wrong range or nothing at all shows up when read back.
void FillPattern(unsigned char* p, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    p[i] = static_cast<unsigned char>(x >> 24);
  }
}

std::string DeviceName(size_t i) { return "device" + std::to_string(i); }

}  // namespace

// ---- Fit ------------------------------------------------------------------

Status FitAlphaBeta(const std::vector<std::pair<double, double>>& bytes_ns, AlphaBeta* out) {
  *out = AlphaBeta();
  std::set<double> sizes;
  for (size_t i = 0; i < bytes_ns.size(); ++i) {
    const auto& [bytes, ns] = bytes_ns[i];
    if (!(std::isfinite(bytes) && bytes > 0) || !(std::isfinite(ns) && ns > 0)) {
      return Status::Invalid("alpha-beta fit: point " + std::to_string(i) + " (bytes=" + FormatDouble(bytes, "%g") +
                             ", ns=" + FormatDouble(ns, "%g") + ") is not positive and finite");
    }
    sizes.insert(bytes);
  }
  if (sizes.size() < 2) {
    return Status::Invalid("alpha-beta fit: needs at least 2 distinct sizes, got " + std::to_string(sizes.size()));
  }

  // Unknowns (alpha, 1/B); row i is weighted by 1/ns_i, so the residuals are
  // relative errors. Bytes are scaled to MiB for conditioning.
  constexpr double kScale = 1.0 / (1024.0 * 1024.0);
  const Eigen::Index n = static_cast<Eigen::Index>(bytes_ns.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double w = 1.0 / bytes_ns[i].second;
    a(i, 0) = w;
    a(i, 1) = w * bytes_ns[i].first * kScale;
    b(i) = 1.0;  // w · ns
  }
  Eigen::Vector2d x = a.colPivHouseholderQr().solve(b);
  double alpha = x(0);
  double ns_per_mib = x(1);
  if (!(alpha >= 0)) {
    // A negative intercept: refit the slope alone through the origin.
    alpha = 0;
    const Eigen::VectorXd col = a.col(1);
    ns_per_mib = col.dot(b) / col.squaredNorm();
  }
  if (!(std::isfinite(ns_per_mib) && ns_per_mib > 0)) {
    return Status::Invalid("alpha-beta fit: time does not grow with size (slope " + FormatDouble(ns_per_mib, "%g") +
                           " ns/MiB); measure larger sizes");
  }
  out->alpha_ns = alpha;
  out->gbps = 1.0 / (ns_per_mib * kScale);
  double worst = 0;
  for (const auto& [bytes, ns] : bytes_ns) {
    const double model = out->alpha_ns + bytes / out->gbps;
    worst = std::max(worst, std::abs(model - ns) / ns);
  }
  out->max_rel_error = worst;
  return Status::Ok();
}

// ---- Link sweep -------------------------------------------------------------

namespace {

// Sends a deterministic pattern of `n` bytes along the link with
// `prepare_and_copy` (which writes the source and copies, finished when it
// returns), reads the destination back with `read_back` and compares.
Status ValidateCopy(const std::string& link, size_t n, uint32_t seed,
                    const std::function<Status(const unsigned char* src_pattern)>& prepare_and_copy,
                    const std::function<Status(unsigned char* dst_host)>& read_back) {
  std::vector<unsigned char> sent(n), got(n, 0);
  FillPattern(sent.data(), n, seed);
  FLEETSIM_RETURN_IF_ERROR(prepare_and_copy(sent.data()).WithPrefix(link + ": validation copy: "));
  FLEETSIM_RETURN_IF_ERROR(read_back(got.data()).WithPrefix(link + ": validation read-back: "));
  if (std::memcmp(sent.data(), got.data(), n) != 0) {
    size_t i = 0;
    while (sent[i] == got[i]) ++i;
    return Status::Invalid(link + ": validation copy of " + std::to_string(n) + " bytes arrived wrong (byte " +
                           std::to_string(i) + " is " + std::to_string(got[i]) + ", sent " +
                           std::to_string(sent[i]) + ")");
  }
  return Status::Ok();
}

Status SweepLink(kernels::Backend& timer, const LinkOptions& options, const std::string& link,
                 const std::function<Status(size_t bytes)>& copy, LinkMeasurement* m) {
  std::vector<std::pair<double, double>> pts;
  for (double size : options.sizes_bytes) {
    const size_t bytes = static_cast<size_t>(size);
    LinkPoint p;
    p.bytes = size;
    FLEETSIM_RETURN_IF_ERROR(
        TimeOp(timer, [&] { return copy(bytes); }, options.timing, &p.timing)
            .WithPrefix(link + " at " + std::to_string(bytes) + " bytes: "));
    pts.emplace_back(size, p.timing.median_ns);
    m->points.push_back(p);
  }
  return FitAlphaBeta(pts, &m->fit).WithPrefix(link + ": ");
}

std::string Describe(const LinkMeasurement& m) {
  return "link " + m.src + " -> " + m.dst + " (" + m.kind + "): " + std::to_string(m.points.size()) +
         " sizes, " + FormatDouble(m.fit.gbps, "%.3g") + " GB/s, alpha " + FormatDouble(m.fit.alpha_ns / 1e3, "%.3g") +
         " us, worst point off the fit by " + FormatDouble(100 * m.fit.max_rel_error, "%.1f") + "%";
}

}  // namespace

Status MeasureLinks(const std::vector<kernels::Backend*>& devices, const LinkOptions& options,
                    const std::function<void(const std::string&)>& progress,
                    std::vector<LinkMeasurement>* out) {
  const std::string who = "measure links";
  FLEETSIM_RETURN_IF_ERROR(ValidateBackends(devices, who, "devices"));
  FLEETSIM_RETURN_IF_ERROR(ValidateTimingOptions(options.timing, who));
  std::set<double> distinct;
  for (size_t i = 0; i < options.sizes_bytes.size(); ++i) {
    const double s = options.sizes_bytes[i];
    if (!(std::isfinite(s) && s >= 1 && s == std::floor(s) && s <= 1e15)) {
      return Status::Invalid(who + ": sizes_bytes[" + std::to_string(i) + "]=" + FormatDouble(s, "%g") +
                             " is not a positive whole number of bytes");
    }
    distinct.insert(s);
  }
  if (distinct.size() < 2) {
    return Status::Invalid(who + ": sizes_bytes needs at least 2 distinct sizes to fit alpha and bandwidth, got " +
                           std::to_string(distinct.size()));
  }
  const size_t max_bytes = static_cast<size_t>(*distinct.rbegin());
  const size_t check_bytes = static_cast<size_t>(*distinct.begin());

  // One buffer of the largest size per device, and one on the host, filled
  // so that no page is an untouched zero page (which reads faster than
  // memory).
  std::vector<unsigned char> host(max_bytes);
  FillPattern(host.data(), host.size(), 1);
  std::vector<kernels::DeviceBuffer> bufs(devices.size());
  for (size_t d = 0; d < devices.size(); ++d) {
    FLEETSIM_RETURN_IF_ERROR(devices[d]->AllocateBuffer(max_bytes, &bufs[d])
                                 .WithPrefix(who + ": " + DeviceName(d) + ": allocating " +
                                             std::to_string(max_bytes) + " bytes: "));
    FLEETSIM_RETURN_IF_ERROR(devices[d]->CopyToDevice(bufs[d].data(), host.data(), max_bytes)
                                 .WithPrefix(who + ": " + DeviceName(d) + ": "));
  }

  uint32_t seed = 100;
  auto emit = [&](LinkMeasurement m) {
    if (progress) progress(Describe(m));
    out->push_back(std::move(m));
  };

  for (size_t d = 0; d < devices.size(); ++d) {
    kernels::Backend& dev = *devices[d];
    void* buf = bufs[d].data();
    {
      LinkMeasurement m{"host", DeviceName(d), "h2d", {}, {}};
      const std::string link = who + ": host -> " + m.dst + " (h2d)";
      FLEETSIM_RETURN_IF_ERROR(ValidateCopy(
          link, check_bytes, seed++, [&](const unsigned char* src) { return dev.CopyToDevice(buf, src, check_bytes); },
          [&](unsigned char* dst) { return dev.CopyToHost(dst, buf, check_bytes); }));
      FLEETSIM_RETURN_IF_ERROR(SweepLink(
          dev, options, link, [&](size_t n) { return dev.CopyToDevice(buf, host.data(), n); }, &m));
      emit(std::move(m));
    }
    {
      LinkMeasurement m{DeviceName(d), "host", "d2h", {}, {}};
      const std::string link = who + ": " + m.src + " -> host (d2h)";
      FLEETSIM_RETURN_IF_ERROR(ValidateCopy(
          link, check_bytes, seed++, [&](const unsigned char* src) { return dev.CopyToDevice(buf, src, check_bytes); },
          [&](unsigned char* dst) { return dev.CopyToHost(dst, buf, check_bytes); }));
      FLEETSIM_RETURN_IF_ERROR(SweepLink(
          dev, options, link, [&](size_t n) { return dev.CopyToHost(host.data(), buf, n); }, &m));
      emit(std::move(m));
    }
  }

  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < devices.size(); ++j) {
      if (i == j) continue;
      kernels::Backend& src = *devices[i];
      kernels::Backend& dst = *devices[j];
      void* sbuf = bufs[i].data();
      void* dbuf = bufs[j].data();
      LinkMeasurement m{DeviceName(i), DeviceName(j), "peer", {}, {}};
      const std::string link = who + ": " + m.src + " -> " + m.dst + " (peer)";
      auto send = [&](const unsigned char* pattern) {
        FLEETSIM_RETURN_IF_ERROR(src.CopyToDevice(sbuf, pattern, check_bytes));
        FLEETSIM_RETURN_IF_ERROR(dst.Synchronize());
        FLEETSIM_RETURN_IF_ERROR(src.CopyPeer(dst, dbuf, sbuf, check_bytes));
        return src.Synchronize();
      };
      FLEETSIM_RETURN_IF_ERROR(ValidateCopy(link, check_bytes, seed++, send, [&](unsigned char* got) {
        return dst.CopyToHost(got, dbuf, check_bytes);
      }));
      // The copy is enqueued on the source and timed there; the destination
      // must be idle so that its own work neither delays nor overlaps it.
      FLEETSIM_RETURN_IF_ERROR(dst.Synchronize().WithPrefix(link + ": "));
      FLEETSIM_RETURN_IF_ERROR(SweepLink(
          src, options, link, [&](size_t n) { return src.CopyPeer(dst, dbuf, sbuf, n); }, &m));
      emit(std::move(m));
    }
  }
  return Status::Ok();
}

// ---- Collective predictions ---------------------------------------------------

namespace {

// The formulas live in model/collectives.h, shared with ProfilePerfModel;
// here they are guarded against arguments that would make them meaningless.
void CheckRing(const AlphaBeta& link, int p, double bytes) {
  FLEETSIM_CHECK(p >= 1);
  FLEETSIM_CHECK(bytes >= 0);
  FLEETSIM_CHECK(p == 1 || link.gbps > 0);
}

}  // namespace

double RingAllReduceNs(const AlphaBeta& link, int p, double bytes) {
  CheckRing(link, p, bytes);
  return fleetsim::RingAllReduceNs(link.alpha_ns, link.gbps, p, bytes);
}

double AllGatherNs(const AlphaBeta& link, int p, double bytes) {
  CheckRing(link, p, bytes);
  return fleetsim::AllGatherNs(link.alpha_ns, link.gbps, p, bytes);
}

double AllToAllNs(const AlphaBeta& link, int p, double bytes) {
  CheckRing(link, p, bytes);
  return fleetsim::AllToAllNs(link.alpha_ns, link.gbps, p, bytes);
}

Status SlowestRingLink(const std::vector<LinkMeasurement>& links, int ranks, AlphaBeta* out) {
  if (ranks < 2) {
    return Status::Invalid("slowest ring link: a ring needs at least 2 ranks, got " + std::to_string(ranks));
  }
  bool found_any = false;
  double worst_ns = 0;
  for (int r = 0; r < ranks; ++r) {
    const std::string src = DeviceName(r);
    const std::string dst = DeviceName((r + 1) % ranks);
    const LinkMeasurement* hit = nullptr;
    for (const LinkMeasurement& m : links) {
      if (m.kind == "peer" && m.src == src && m.dst == dst) {
        hit = &m;
        break;
      }
    }
    if (hit == nullptr) {
      return Status::Invalid("slowest ring link: no measured peer link " + src + " -> " + dst + " for a ring of " +
                             std::to_string(ranks) + " ranks");
    }
    if (!(hit->fit.gbps > 0)) {
      return Status::Invalid("slowest ring link: peer link " + src + " -> " + dst + " has no fitted bandwidth");
    }
    const double ns = hit->fit.alpha_ns + kRingReferenceBytes / hit->fit.gbps;
    if (!found_any || ns > worst_ns) {
      found_any = true;
      worst_ns = ns;
      *out = hit->fit;
    }
  }
  return Status::Ok();
}

// ---- The ring all-reduce --------------------------------------------------------

namespace {

// State shared by the rank threads of one RunRingAllReduce.
struct Ring {
  std::vector<kernels::Backend*> ranks;
  int64_t chunk = 0;     // elements per chunk
  int64_t elements = 0;  // chunk · p
  TimingOptions timing;
  kernels::RingAllReduce all_reduce;
  std::vector<kernels::DeviceBuffer> data;  // per rank: `elements` floats
  std::vector<Status> status;               // per rank
  std::vector<double> max_abs_error;        // per rank
  std::vector<double> samples_ns;           // written by rank 0 only

  Ring(const std::vector<kernels::Backend*>& r, int64_t chunk_elems, const TimingOptions& t)
      : ranks(r),
        chunk(chunk_elems),
        elements(chunk_elems * static_cast<int64_t>(r.size())),
        timing(t),
        all_reduce(r),
        data(r.size()),
        status(r.size()),
        max_abs_error(r.size(), 0.0) {}

  int p() const { return static_cast<int>(ranks.size()); }
};

// The value element i of rank r starts with; see the header.
float InitialValue(int r, int64_t i) { return static_cast<float>((r + 1) * (i % 97)) / 64.0f; }

Status RankBody(Ring& ring, int r) {
  kernels::Backend& me = *ring.ranks[r];
  const std::string who = "ring all-reduce: rank " + std::to_string(r) + ": ";
  const size_t data_bytes = static_cast<size_t>(ring.elements) * sizeof(float);
  FLEETSIM_RETURN_IF_ERROR(me.AllocateBuffer(data_bytes, &ring.data[r]).WithPrefix(who));
  FLEETSIM_RETURN_IF_ERROR(ring.all_reduce.Attach(r, ring.data[r].data(), data_bytes).WithPrefix(who));
  std::vector<float> init(static_cast<size_t>(ring.elements));
  for (int64_t i = 0; i < ring.elements; ++i) init[static_cast<size_t>(i)] = InitialValue(r, i);

  const int runs = ring.timing.warmup + ring.timing.repetitions;
  for (int run = 0; run < runs; ++run) {
    FLEETSIM_RETURN_IF_ERROR(me.CopyToDevice(ring.data[r].data(), init.data(), data_bytes).WithPrefix(who));
    if (ring.timing.flush_cache) FLEETSIM_RETURN_IF_ERROR(me.FlushCache().WithPrefix(who));
    FLEETSIM_RETURN_IF_ERROR(me.Synchronize().WithPrefix(who));
    if (!ring.all_reduce.Arrive()) return Status::Ok();
    const auto start = std::chrono::steady_clock::now();
    bool aborted = false;
    FLEETSIM_RETURN_IF_ERROR(
        ring.all_reduce.Run(r, ring.elements, kernels::DType::kFp32, &aborted).WithPrefix(who));
    if (aborted || !ring.all_reduce.Arrive()) return Status::Ok();
    const auto stop = std::chrono::steady_clock::now();
    if (r == 0 && run >= ring.timing.warmup) {
      ring.samples_ns.push_back(std::chrono::duration<double, std::nano>(stop - start).count());
    }
  }

  // Every rank must now hold the exact sum.
  std::vector<float> got(static_cast<size_t>(ring.elements));
  FLEETSIM_RETURN_IF_ERROR(me.CopyToHost(got.data(), ring.data[r].data(), data_bytes).WithPrefix(who));
  const int p = ring.p();
  double worst = 0;
  for (int64_t i = 0; i < ring.elements; ++i) {
    double want = 0;
    for (int q = 0; q < p; ++q) want += InitialValue(q, i);
    const double err = std::abs(static_cast<double>(got[static_cast<size_t>(i)]) - want);
    // NaN compares false: count it as infinitely wrong.
    if (!(err <= worst)) worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : err;
  }
  ring.max_abs_error[r] = worst;
  return Status::Ok();
}

}  // namespace

Status RunRingAllReduce(const std::vector<kernels::Backend*>& ranks, double bytes, const TimingOptions& timing,
                        const AlphaBeta& link, RingCheck* out) {
  const std::string who = "ring all-reduce";
  *out = RingCheck();
  FLEETSIM_RETURN_IF_ERROR(ValidateBackends(ranks, who, "ranks"));
  FLEETSIM_RETURN_IF_ERROR(ValidateTimingOptions(timing, who));
  if (!(std::isfinite(bytes) && bytes > 0 && bytes <= 1e15)) {
    return Status::Invalid(who + ": bytes=" + FormatDouble(bytes, "%g") + " must be positive and finite");
  }
  const int p = static_cast<int>(ranks.size());
  if (p > 1 && !(link.gbps > 0 && std::isfinite(link.gbps) && link.alpha_ns >= 0)) {
    return Status::Invalid(who + ": the link model to compare against has no positive bandwidth (gbps=" +
                           FormatDouble(link.gbps, "%g") + ")");
  }
  const int64_t want_elems = static_cast<int64_t>(std::ceil(bytes / sizeof(float)));
  const int64_t chunk = (want_elems + p - 1) / p;

  Ring ring(ranks, chunk, timing);
  std::vector<std::thread> threads;
  threads.reserve(ranks.size());
  for (int r = 0; r < p; ++r) {
    threads.emplace_back([&ring, r] {
      ring.status[r] = RankBody(ring, r);
      // Release the others: they would wait for this rank forever.
      if (!ring.status[r].ok()) ring.all_reduce.Abort();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Status& s : ring.status) FLEETSIM_RETURN_IF_ERROR(s);
  FLEETSIM_CHECK(static_cast<int>(ring.samples_ns.size()) == timing.repetitions);

  out->ranks = p;
  out->bytes = static_cast<double>(ring.elements) * sizeof(float);
  out->measured_ns = Summarize(ring.samples_ns).median_ns;
  out->predicted_ns = RingAllReduceNs(link, p, out->bytes);
  out->ratio = out->predicted_ns > 0 ? out->measured_ns / out->predicted_ns : 0;
  out->max_abs_error = *std::max_element(ring.max_abs_error.begin(), ring.max_abs_error.end());
  return Status::Ok();
}

}  // namespace fleetsim::calibrate
