#include "calibrate/calibrate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <set>

#include "calibrate/fit.h"
#include "calibrate/links.h"
#include "kernels/backend.h"

namespace fleetsim::calibrate {
namespace {

using Clock = std::chrono::steady_clock;

std::string TodayUtc() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// One operator's measurements as they accumulate: the profile's table, the
// fitter's samples, and a curve over tokens per shape family for the
// per-layer sums.
struct Series {
  std::string op;        // "gemm", "rms_norm", ...
  std::string size_var;  // FittedCurve::size_var
  std::string scale_var;
  std::string count_var;  // FitOptions::count_var: "" unless the form has a per-count term
  MeasurementTable table;
  std::vector<FitSample> samples;
  std::map<std::string, int> groups;         // family label -> group id
  std::map<int, std::string> group_names;    // group id -> label
  std::map<std::string, ProfileCurve> curves;  // family label -> (tokens, ns)

  Series(std::string op_name, std::vector<std::string> fields, std::string size, std::string scale)
      : op(std::move(op_name)), size_var(std::move(size)), scale_var(std::move(scale)) {
    table.fields = std::move(fields);
    table.fields.push_back("median_ns");
    table.fields.push_back("spread");
  }

  // Records one timed shape: `columns` (the table's leading fields), the
  // fitter's size and scale, the family it belongs to and its x on that
  // family's curve; `count` is the per-count term's (0 when it has none).
  void Add(std::vector<double> columns, const Timing& t, double size, double scale, const std::string& family, double x,
           double count = 0) {
    columns.push_back(t.median_ns);
    columns.push_back(t.spread);
    table.rows.push_back(std::move(columns));
    auto [it, inserted] = groups.emplace(family, static_cast<int>(groups.size()));
    if (inserted) group_names[it->second] = family;
    samples.push_back({size, scale, std::max(t.median_ns, 1e-3), it->second, count});
    ProfileCurve& c = curves[family];
    c.x.push_back(x);
    c.ns.push_back(t.median_ns);
  }
};

class Calibration {
 public:
  Calibration(const CalibrateOptions& options, const ModelSpec& model, const Catalog& catalog,
              const ProgressFn& progress)
      : options_(options), model_(model), catalog_(catalog), progress_(progress) {}

  Status Run(CalibrationResult* out);

 private:
  void Tick(const std::string& what) {
    if (progress_) progress_(done_, total_, what);
    ++done_;
  }
  // Times one shape; a failure (out of memory, say) skips the shape and is
  // noted, unless every shape so far failed, which is returned.
  Status Measure(const std::string& what, const std::function<Status(Timing*)>& op, Timing* t, bool* ok);

  // The distinct shape families of the grid, measured by the steps below
  // and counted for the progress total.
  void CollectFamilies();
  Status MeasureCopy();
  Status MeasureGemms();
  Status MeasureElementwise();
  Status MeasureAttention();
  void BuildCurves();
  Status Fit();
  void DecideAttention();
  Status MeasureLinksAndRing();
  Status MeasureRingCurves(const std::vector<kernels::Backend*>& devices, const std::vector<LinkMeasurement>& links,
                           double max_bytes);
  void AddRankLinksAndTopology();
  void BuildReport(CalibrationResult* out);

  const CalibrateOptions& options_;
  const ModelSpec& model_;
  const Catalog& catalog_;
  const ProgressFn& progress_;
  std::unique_ptr<kernels::Backend> backend_;
  std::unique_ptr<OpBench> bench_;
  Grid grid_;
  std::map<std::pair<int64_t, int64_t>, std::string> weights_;  // GEMM (n, k) -> the layers using it
  std::set<int64_t> silu_widths_, rope_heads_;
  Profile profile_;
  std::vector<Series> series_;  // in measurement order
  std::map<std::string, std::vector<HeldOut>> held_out_;
  int done_ = 0, total_ = 0, measured_ = 0, failed_ = 0;
  std::vector<std::string> skipped_;
  std::vector<std::string> warnings_;
};

Series* FindSeries(std::vector<Series>& all, const std::string& op) {
  for (Series& s : all)
    if (s.op == op) return &s;
  return nullptr;
}

Status Calibration::Measure(const std::string& what, const std::function<Status(Timing*)>& op, Timing* t,
                            bool* ok) {
  Tick(what);
  const Status s = op(t);
  *ok = s.ok();
  if (s.ok()) {
    ++measured_;
    return Status::Ok();
  }
  ++failed_;
  if (measured_ == 0 && failed_ >= 3) return s.WithPrefix(what + ": ");
  skipped_.push_back(what + ": " + s.message());
  return Status::Ok();
}

Status Calibration::MeasureCopy() {
  // A device-to-device copy several times the last-level cache: the memory
  // ceiling the roofline of a device without a datasheet uses.
  const size_t bytes = options_.backend == "cpu" ? size_t{64} << 20 : size_t{1} << 30;
  kernels::DeviceBuffer src, dst;
  FLEETSIM_RETURN_IF_ERROR(backend_->AllocateBuffer(bytes, &src));
  FLEETSIM_RETURN_IF_ERROR(backend_->AllocateBuffer(bytes, &dst));
  // Both buffers written first, so no timed run pays first-touch faults.
  const std::vector<unsigned char> ones(bytes, 1);
  FLEETSIM_RETURN_IF_ERROR(backend_->CopyToDevice(src.data(), ones.data(), bytes));
  FLEETSIM_RETURN_IF_ERROR(backend_->CopyToDevice(dst.data(), ones.data(), bytes));
  Tick("device copy " + std::to_string(bytes >> 20) + " MiB");
  Timing t;
  FLEETSIM_RETURN_IF_ERROR(
      TimeOp(*backend_, [&] { return backend_->CopyOnDevice(dst.data(), src.data(), bytes); }, options_.timing, &t));
  if (t.median_ns > 0) profile_.device_info->copy_gbps = 2.0 * static_cast<double>(bytes) / t.median_ns;
  return Status::Ok();
}

void Calibration::CollectFamilies() {
  auto label = [&](int64_t n, int64_t k, const std::string& what) {
    std::string& l = weights_[{n, k}];
    if (l.find(what) == std::string::npos) l += (l.empty() ? "" : ",") + what;
  };
  for (const ShardShapes& s : grid_.shards) {
    for (const LayerGemm& g : s.gemms) label(g.n, g.k, g.name + "@tp" + std::to_string(s.tp));
    label(s.lm_head.n, s.lm_head.k, "lm_head@tp" + std::to_string(s.tp));
    silu_widths_.insert(s.intermediate);
    rope_heads_.insert(s.heads + s.kv_heads);
  }
  for (const auto& [n, k] : grid_.extra_gemms) label(n, k, "generic");
}

Status Calibration::MeasureGemms() {
  Series gemm("gemm", {"m", "n", "k"}, "m", "n*k");
  double best_tflops = 0;
  for (const auto& [nk, what] : weights_) {
    const auto [n, k] = nk;
    const std::string family = std::to_string(n) + "x" + std::to_string(k);
    for (int64_t m : grid_.tokens) {
      const GemmShape shape{m, n, k, grid_.dtype};
      Timing t;
      bool ok = false;
      FLEETSIM_RETURN_IF_ERROR(Measure("gemm " + std::to_string(m) + "x" + family + " (" + what + ")",
                                       [&](Timing* tt) { return bench_->Gemm(shape, tt); }, &t, &ok));
      if (!ok) continue;
      gemm.Add({double(m), double(n), double(k)}, t, double(m), double(n) * double(k), family, double(m));
      if (t.median_ns > 0) best_tflops = std::max(best_tflops, 2.0 * m * n * k / t.median_ns / 1e3);
    }
  }
  profile_.device_info->gemm_tflops[std::string(kernels::DTypeName(grid_.dtype))] = best_tflops;
  series_.push_back(std::move(gemm));
  return Status::Ok();
}

Status Calibration::MeasureElementwise() {
  Series rms("rms_norm", {"tokens", "width"}, "tokens", "width");
  Series res("residual_add", {"tokens", "width"}, "tokens", "width");
  Series silu("silu_mul", {"tokens", "width"}, "tokens", "width");
  Series rope("rope", {"tokens", "heads", "head_dim"}, "tokens", "heads*head_dim");
  Series emb("embedding", {"tokens", "vocab", "hidden"}, "tokens", "hidden");
  const kernels::DType dt = grid_.dtype;
  const int64_t hidden = model_.hidden, hd = model_.head_dim;
  for (int64_t t : grid_.tokens) {
    const std::string tok = std::to_string(t);
    Timing tm;
    bool ok = false;
    FLEETSIM_RETURN_IF_ERROR(Measure("rms_norm " + tok + "x" + std::to_string(hidden),
                                     [&](Timing* x) { return bench_->RmsNorm({t, hidden, dt}, x); }, &tm, &ok));
    if (ok) rms.Add({double(t), double(hidden)}, tm, t, hidden, std::to_string(hidden), t);
    FLEETSIM_RETURN_IF_ERROR(Measure("residual_add " + tok + "x" + std::to_string(hidden),
                                     [&](Timing* x) { return bench_->ResidualAdd({t, hidden, dt}, x); }, &tm, &ok));
    if (ok) res.Add({double(t), double(hidden)}, tm, t, hidden, std::to_string(hidden), t);
    for (int64_t w : silu_widths_) {
      FLEETSIM_RETURN_IF_ERROR(Measure("silu_mul " + tok + "x" + std::to_string(w),
                                       [&](Timing* x) { return bench_->SiluMul({t, w, dt}, x); }, &tm, &ok));
      if (ok) silu.Add({double(t), double(w)}, tm, t, w, std::to_string(w), t);
    }
    for (int64_t h : rope_heads_) {
      FLEETSIM_RETURN_IF_ERROR(Measure("rope " + tok + "x" + std::to_string(h) + "x" + std::to_string(hd),
                                       [&](Timing* x) { return bench_->Rope({t, h, hd, dt}, x); }, &tm, &ok));
      if (ok) rope.Add({double(t), double(h), double(hd)}, tm, t, double(h * hd), std::to_string(h), t);
    }
    FLEETSIM_RETURN_IF_ERROR(
        Measure("embedding " + tok + "x" + std::to_string(hidden),
                [&](Timing* x) { return bench_->Embedding({t, model_.vocab, hidden, dt}, x); }, &tm, &ok));
    if (ok) emb.Add({double(t), double(model_.vocab), double(hidden)}, tm, t, hidden, std::to_string(hidden), t);
  }
  for (Series* s : {&rms, &res, &silu, &rope, &emb}) series_.push_back(std::move(*s));
  return Status::Ok();
}

Status Calibration::MeasureAttention() {
  Series pre("attention_prefill", {"seqs", "seq_len", "heads", "kv_heads", "head_dim"}, "pairs",
             "heads*head_dim");
  for (const PrefillShape& p : grid_.prefill) {
    Timing t;
    bool ok = false;
    FLEETSIM_RETURN_IF_ERROR(Measure(
        "attention_prefill " + std::to_string(p.seqs) + "x" + std::to_string(p.seq_len),
        [&](Timing* x) { return bench_->AttentionPrefill(p, x); }, &t, &ok));
    if (!ok) continue;
    // Query-key pairs of causal attention: L(L+1)/2 per sequence, the
    // BatchShape's prefill_attn_pairs.
    const double pairs = double(p.seqs) * double(p.seq_len) * double(p.seq_len + 1) / 2;
    pre.Add({double(p.seqs), double(p.seq_len), double(p.heads), double(p.kv_heads), double(p.head_dim)}, t, pairs,
            double(p.heads * p.head_dim), std::to_string(p.seqs) + " seqs", double(p.seq_len));
  }
  // Decode keeps the batch apart from the context: KV tokens (size) and a
  // per-sequence term (count), fitted jointly (fit.h).
  Series dec("attention_decode", {"seqs", "context_len", "heads", "kv_heads", "head_dim"}, "kv_tokens",
             "kv_heads*head_dim");
  dec.count_var = "seqs";
  for (const DecodeShape& d : grid_.decode) {
    Timing t;
    bool ok = false;
    FLEETSIM_RETURN_IF_ERROR(Measure(
        "attention_decode " + std::to_string(d.seqs) + "x" + std::to_string(d.context_len),
        [&](Timing* x) { return bench_->AttentionDecode(d, x); }, &t, &ok));
    if (!ok) continue;
    dec.Add({double(d.seqs), double(d.context_len), double(d.heads), double(d.kv_heads), double(d.head_dim)}, t,
            double(d.seqs * d.context_len), double(d.kv_heads * d.head_dim), std::to_string(d.seqs) + " seqs",
            double(d.context_len), double(d.seqs));
  }
  series_.push_back(std::move(pre));
  series_.push_back(std::move(dec));
  return Status::Ok();
}

// Per tp, the per-layer sums of the model's own shapes at every measured
// token count: the "profile" source, comparable with an imported profile.
void Calibration::BuildCurves() {
  const Series* gemm = FindSeries(series_, "gemm");
  auto curve = [](const Series* s, const std::string& family) -> const ProfileCurve* {
    if (s == nullptr) return nullptr;
    auto it = s->curves.find(family);
    return it == s->curves.end() || it->second.empty() ? nullptr : &it->second;
  };
  const Series* rms = FindSeries(series_, "rms_norm");
  const Series* res = FindSeries(series_, "residual_add");
  const Series* silu = FindSeries(series_, "silu_mul");
  const Series* rope = FindSeries(series_, "rope");
  const Series* emb = FindSeries(series_, "embedding");
  const double top_k = model_.experts_top_k;
  for (const ShardShapes& s : grid_.shards) {
    ProfileCurve g, e, m;
    bool gemm_ok = true, elem_ok = true;
    std::vector<std::pair<const ProfileCurve*, bool>> gemms;
    for (const LayerGemm& lg : s.gemms) {
      const ProfileCurve* c = curve(gemm, std::to_string(lg.n) + "x" + std::to_string(lg.k));
      gemm_ok = gemm_ok && c != nullptr;
      gemms.emplace_back(c, lg.expert);
    }
    const ProfileCurve* cr = curve(rms, std::to_string(s.hidden));
    const ProfileCurve* ca = curve(res, std::to_string(s.hidden));
    const ProfileCurve* cs = curve(silu, std::to_string(s.intermediate));
    const ProfileCurve* cp = curve(rope, std::to_string(s.heads + s.kv_heads));
    const ProfileCurve* ce = curve(emb, std::to_string(s.hidden));
    elem_ok = cr && ca && cs && cp && ce;
    for (int64_t t : grid_.tokens) {
      const double tok = double(t);
      if (gemm_ok) {
        double ns = 0;
        for (const auto& [c, expert] : gemms) {
          if (!expert) {
            ns += c->At(tok);
            continue;
          }
          const ModelSpec::ExpertLoad load = model_.ExpectedExpertLoad(tok);
          ns += load.touched * c->At(load.rows_each);
        }
        g.x.push_back(tok);
        g.ns.push_back(ns);
      }
      if (elem_ok) {
        e.x.push_back(tok);
        // MoE: SiLU·up runs on the k routed copies of each token.
        const double silu = model_.is_moe() ? cs->At(tok * top_k) : cs->At(tok);
        e.ns.push_back(ElementwiseLayerNs(cr->At(tok), ca->At(tok), cp->At(tok), silu));
        m.x.push_back(tok);
        m.ns.push_back(ce->At(tok));
      }
    }
    if (gemm_ok && !g.empty()) profile_.gemm[s.tp] = std::move(g);
    if (elem_ok && !e.empty()) {
      profile_.elementwise[s.tp] = std::move(e);
      profile_.embedding[s.tp] = std::move(m);
    }
  }
}

Status Calibration::Fit() {
  const std::string dtype(kernels::DTypeName(grid_.dtype));
  for (const Series& s : series_) {
    if (s.table.rows.empty()) continue;
    FitOptions fo;
    fo.count_var = s.count_var;
    const std::string key = s.op + "." + dtype;
    profile_.measurements[key] = s.table;
    FittedCurve f;
    FLEETSIM_RETURN_IF_ERROR(FitScaled(s.samples, fo, s.size_var, s.scale_var, &f).WithPrefix("fitting " + key + ": "));
    std::vector<HeldOut> held;
    std::string method;
    FLEETSIM_RETURN_IF_ERROR(CrossValidate(s.samples, fo, &held, &method).WithPrefix("fitting " + key + ": "));
    profile_.fits[key] = std::move(f);
    held_out_[key] = std::move(held);
  }
  return Status::Ok();
}

void Calibration::DecideAttention() {
  // Ceilings: the datasheet when the device is in the catalogue, else what
  // this calibration measured (best GEMM, device copy).
  const GpuSpec* gpu = catalog_.FindGpu(profile_.device);
  const std::string dtype(kernels::DTypeName(grid_.dtype));
  double flops_per_ns = 0, bytes_per_ns = 0;
  std::string ceiling;
  if (gpu != nullptr) {
    // The peak of the dtype the kernels ran in (8-bit models are timed in
    // bf16, so their fp8 peak would misjudge the kernel).
    const DType timed = grid_.dtype == kernels::DType::kFp32   ? DType::kFp32
                        : grid_.dtype == kernels::DType::kFp16 ? DType::kFp16
                                                                : DType::kBf16;
    flops_per_ns = gpu->PeakTflops(timed) * 1e3;
    bytes_per_ns = gpu->mem_bandwidth_gbps;
    ceiling = "datasheet " + gpu->name + ": " + Fmt("%.0f", flops_per_ns / 1e3) + " TFLOP/s " + dtype + ", " +
              Fmt("%.0f", bytes_per_ns) + " GB/s";
  } else {
    const auto it = profile_.device_info->gemm_tflops.find(dtype);
    flops_per_ns = it == profile_.device_info->gemm_tflops.end() ? 0 : it->second * 1e3;
    bytes_per_ns = profile_.device_info->copy_gbps;
    ceiling = "measured here (no datasheet for \"" + profile_.device + "\"): best GEMM " +
              Fmt("%.3g", flops_per_ns / 1e3) + " TFLOP/s " + dtype + ", device copy " + Fmt("%.3g", bytes_per_ns) +
              " GB/s";
  }
  const double cb = static_cast<double>(kernels::DTypeSize(grid_.dtype));
  for (const char* op : {"attention_prefill", "attention_decode"}) {
    const Series* s = FindSeries(series_, op);
    if (s == nullptr || s->table.rows.empty() || flops_per_ns <= 0 || bytes_per_ns <= 0) continue;
    const bool prefill = std::string(op) == "attention_prefill";
    // (roofline ns, achieved fraction) per shape.
    std::vector<std::pair<double, double>> shapes;
    for (const std::vector<double>& r : s->table.rows) {
      const double seqs = r[0], len = r[1], h = r[2], g = r[3], d = r[4], measured = r[5];
      double flops, bytes;
      if (prefill) {
        flops = 4 * seqs * len * (len + 1) / 2 * h * d;
        bytes = seqs * len * (2 * h + 2 * g) * d * cb;
      } else {
        flops = 4 * seqs * len * h * d;
        bytes = seqs * len * 2 * g * d * cb + seqs * 2 * h * d * cb;
      }
      const double roof = std::max(flops / flops_per_ns, bytes / bytes_per_ns);
      if (measured > 0) shapes.emplace_back(roof, roof / measured);
    }
    if (shapes.empty()) continue;
    // Judge the kernel on the larger half of the grid, where launch costs
    // do not dominate.
    std::sort(shapes.begin(), shapes.end());
    std::vector<double> fractions;
    for (size_t i = shapes.size() / 2; i < shapes.size(); ++i) fractions.push_back(shapes[i].second);
    std::sort(fractions.begin(), fractions.end());
    AttentionDecision a;
    a.achieved_fraction = fractions[fractions.size() / 2];
    a.threshold = prefill ? kPrefillThreshold : kDecodeThreshold;
    a.ceiling = ceiling + (prefill ? " (prefill judged against FLOP/s)" : " (decode judged against bandwidth)");
    a.use_measured = options_.attention_as_measured || a.achieved_fraction >= a.threshold;
    if (!a.use_measured) {
      // The roofline's defaults (model/roofline.h) and where they come from.
      if (prefill) {
        a.published_efficiency = 0.60;
        a.published_source =
            "FlashAttention-2 reaches about 35% and FlashAttention-3 up to 75% of H100 bf16 peak (Shah et al. "
            "2024, arXiv:2407.08608); 0.60 of peak FLOP/s, fleetsim's roofline default";
      } else {
        a.published_efficiency = 0.85;
        a.published_source =
            "memory-bound attention kernels reach about 3.0 of 3.35 TB/s on H100-class HBM3 (FlashMLA's published "
            "figure); 0.85 of bandwidth, fleetsim's roofline default";
      }
    }
    profile_.attention[op] = a;
  }
}

// A measured link as the profile keeps it: its fit and its medians, sizes
// increasing (a repeated size keeps its first median).
ProfileLink ToProfileLink(const LinkMeasurement& l) {
  ProfileLink p;
  p.src = l.src;
  p.dst = l.dst;
  p.kind = l.kind;
  p.alpha_ns = l.fit.alpha_ns;
  p.gbps = l.fit.gbps;
  for (const LinkPoint& pt : l.points) {
    if (!p.points.x.empty() && pt.bytes <= p.points.x.back()) continue;
    p.points.x.push_back(pt.bytes);
    p.points.ns.push_back(pt.timing.median_ns);
  }
  return p;
}

Status Calibration::MeasureLinksAndRing() {
  std::vector<std::unique_ptr<kernels::Backend>> owned;
  std::vector<kernels::Backend*> devices;
  LinkOptions lo;
  lo.timing = options_.timing;
  double ring_bytes = 64.0 * 1024 * 1024;
  if (options_.backend == "cpu") {
    for (int i = 0; i < options_.cpu_ranks; ++i) {
      std::unique_ptr<kernels::Backend> b;
      FLEETSIM_RETURN_IF_ERROR(kernels::MakeBackend("cpu", &b));
      devices.push_back(b.get());
      owned.push_back(std::move(b));
    }
    // Host memory: 4 KiB to 16 MiB covers latency and bandwidth in seconds.
    lo.sizes_bytes = {4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0, 16777216.0};
    ring_bytes = 16.0 * 1024 * 1024;
  } else {
    int count = 0;
    FLEETSIM_RETURN_IF_ERROR(kernels::DeviceCount("cuda", &count));
    for (int i = 0; i < count; ++i) {
      if (i == options_.cuda_device) {
        devices.push_back(backend_.get());
        continue;
      }
      std::unique_ptr<kernels::Backend> b;
      kernels::BackendOptions bo;
      bo.cuda_device = i;
      FLEETSIM_RETURN_IF_ERROR(kernels::MakeBackend("cuda", bo, &b));
      devices.push_back(b.get());
      owned.push_back(std::move(b));
    }
  }
  std::vector<LinkMeasurement> links;
  FLEETSIM_RETURN_IF_ERROR(MeasureLinks(
      devices, lo, [&](const std::string& what) { if (progress_) progress_(done_, total_, what); }, &links));
  for (const LinkMeasurement& l : links) {
    ProfileLink p = ToProfileLink(l);
    const std::string first = options_.backend == "cpu" ? "device0" : "device" + std::to_string(options_.cuda_device);
    if (l.kind == "h2d" && l.dst == first) profile_.device_info->h2d_gbps = l.fit.gbps;
    if (l.kind == "d2h" && l.src == first) profile_.device_info->d2h_gbps = l.fit.gbps;
    profile_.links.push_back(std::move(p));
  }
  if (devices.size() >= 2) {
    AlphaBeta slowest;
    FLEETSIM_RETURN_IF_ERROR(SlowestRingLink(links, static_cast<int>(devices.size()), &slowest));
    if (progress_) progress_(done_, total_, "ring all-reduce over " + std::to_string(devices.size()) + " ranks");
    RingCheck rc;
    FLEETSIM_RETURN_IF_ERROR(RunRingAllReduce(devices, ring_bytes, options_.timing, slowest, &rc));
    if (rc.max_abs_error != 0)
      return Status::Invalid("ring all-reduce check: the reduced values are wrong (max error " +
                             Fmt("%g", rc.max_abs_error) + "): the peer copies of this backend are broken");
    CollectiveCheck check{"ring_all_reduce", rc.ranks, rc.bytes, rc.measured_ns, rc.predicted_ns, 0};
    // Each rank adds p-1 received chunks of bytes/p (fp32, as the ring
    // runs them): time one such add on this device.
    const int64_t chunk = static_cast<int64_t>(rc.bytes / 4) / rc.ranks;
    Timing add;
    if (chunk > 0 && bench_->ResidualAdd({1, chunk, kernels::DType::kFp32}, &add).ok())
      check.predicted_with_reduce_ns = rc.predicted_ns + (rc.ranks - 1) * add.median_ns;
    profile_.collective_checks.push_back(check);
    // The curve is extra: a failure drops it, not the links and the check.
    const Status cs = MeasureRingCurves(devices, links, ring_bytes);
    if (!cs.ok()) {
      profile_.all_reduce_intra_node.clear();
      warnings_.push_back("ring all-reduce curve not measured: " + cs.message());
    }
  }
  return Status::Ok();
}

// The ring all-reduce as it runs (kernels/ring_all_reduce.h, the collective
// of live mode's tensor-parallel replicas), timed at sizes from a decode's
// few tokens to ring_bytes over the first p devices, p = 2, 4, 8 and every
// device: collectives.all_reduce.intra_node[p], which ProfilePerfModel
// prices a tp = p all-reduce with. The alpha-beta model of single copies
// leaves out what each of the ring's 2(p-1) steps costs beyond its copy
// (the stream synchronisation, the ranks' barrier, the addition): on this
// project's 2-core VM it priced a 16 MiB ring at 0.64 ms that ran in 4.3.
Status Calibration::MeasureRingCurves(const std::vector<kernels::Backend*>& devices,
                                      const std::vector<LinkMeasurement>& links, double max_bytes) {
  std::vector<int> groups;
  for (int p : {2, 4, 8, static_cast<int>(devices.size())})
    if (p <= static_cast<int>(devices.size()) && std::find(groups.begin(), groups.end(), p) == groups.end())
      groups.push_back(p);
  for (int p : groups) {
    const std::vector<kernels::Backend*> ranks(devices.begin(), devices.begin() + p);
    AlphaBeta slowest;
    FLEETSIM_RETURN_IF_ERROR(SlowestRingLink(links, p, &slowest));
    if (progress_) progress_(done_, total_, "ring all-reduce curve over " + std::to_string(p) + " ranks");
    // Timed as the other ops (caches flushed before each run, by default).
    // On this project's 2-core VM, curves timed with warm caches priced the
    // tiny model's collectives at 0.13 ms per step against 0.32-0.37
    // measured live (two runs); flushed, 0.19-0.48 against 0.35-0.51 (four
    // runs; the small sizes, barrier wake-ups mostly, vary between
    // calibrations). Those flushed runs were timed with the CPU flush that
    // wrote its buffer; it now reads it (kernels/backend.h): two tp 2 runs
    // since, 0.36 and 0.24 priced against 0.36 and 0.35 measured.
    const TimingOptions& timing = options_.timing;
    ProfileCurve curve;
    for (double bytes = 1024; bytes <= max_bytes * 1.0001; bytes *= 4) {
      RingCheck rc;
      FLEETSIM_RETURN_IF_ERROR(RunRingAllReduce(ranks, bytes, timing, slowest, &rc));
      if (rc.max_abs_error != 0)
        return Status::Invalid("ring all-reduce over " + std::to_string(p) + " ranks: the reduced values are wrong");
      if (!curve.x.empty() && rc.bytes <= curve.x.back()) continue;
      curve.x.push_back(rc.bytes);
      curve.ns.push_back(rc.measured_ns);
    }
    profile_.all_reduce_intra_node[p] = std::move(curve);
  }
  profile_.notes.push_back(
      "collectives.all_reduce.intra_node: fleetsim's own ring all-reduce over peer copies (no NCCL), the one live "
      "mode's tensor-parallel replicas run, timed in fp32 as the other ops (median wall time from a barrier before "
      "its first step to one after its last)");
  return Status::Ok();
}

// The links between ranks (measured under mpirun), and the topology
// section: which of a fleet's link classes this profile measured, and which
// a simulation of it takes from the datasheet.
void Calibration::AddRankLinksAndTopology() {
  ProfileTopology topo;
  bool host = false, peer = false;
  for (const ProfileLink& l : profile_.links) {
    host = host || l.kind == "h2d" || l.kind == "d2h";
    peer = peer || l.kind == "peer";
  }
  (host ? topo.measured : topo.datasheet)
      .push_back(host ? "host <-> device (h2d, d2h): copies timed" : "host <-> device (PCIe): the catalogue's host link");
  (peer ? topo.measured : topo.datasheet)
      .push_back(peer ? "device <-> device within a node (peer): copies timed"
                      : "device <-> device within a node: the catalogue's scale-up fabric (one device measured)");
  if (options_.rank_links) {
    const RankLinks& r = *options_.rank_links;
    topo.ranks = r.ranks;
    bool direct = false;
    for (const LinkMeasurement& l : r.links) {
      direct = direct || l.kind == "rank_direct";
      profile_.links.push_back(ToProfileLink(l));
    }
    profile_.collective_checks.push_back(
        {"ring_all_reduce_ranks", r.ring.ranks, r.ring.bytes, r.ring.measured_ns, r.ring.predicted_ns,
         r.ring.predicted_ns + r.ring_local_ns});
    topo.measured.push_back("between nodes, host-staged (rank_staged): MPI ping-pong over " +
                            std::to_string(r.ranks) + " ranks (" + r.transport + ")");
    if (direct) {
      topo.measured.push_back("between nodes, device to device (rank_direct): MPI on device memory" +
                              std::string(options_.backend == "cpu" ? " (the CPU backend's device memory is host memory)"
                                                                    : " (CUDA-aware MPI)"));
    } else {
      topo.datasheet.push_back(
          "between nodes, device to device (GPUDirect RDMA): the MPI is not CUDA-aware; the catalogue's NIC figures");
    }
    profile_.notes.push_back("links between ranks: half a ping-pong's round trip per size (both directions' mean), "
                             "one rank per node; collective_checks ring_all_reduce_ranks: a ring all-reduce across "
                             "the ranks over " + r.ring_path + " against the alpha-beta prediction of its slowest link");
  } else {
    topo.datasheet.push_back(
        "between nodes (NIC, network): the catalogue's network_gbps_per_direction and fleet.network.latency_us "
        "(run fleetsim calibrate under mpirun, one rank per node, to measure them)");
  }
  topo.datasheet.push_back("the simulator's topology prices links from the catalogue and fleet.network; these "
                           "measurements are for comparison and are not read back by `fleetsim run` yet");
  profile_.topology = std::move(topo);
}

void Calibration::BuildReport(CalibrationResult* out) {
  const ProfileDeviceInfo& d = *profile_.device_info;
  ReportInput& r = out->report;
  r.title = "fleetsim calibration: " + model_.name + " on " + profile_.device + " (" + d.backend + ")";
  r.facts = {{"device", d.name},
             {"profile device", profile_.device},
             {"software", d.software},
             {"memory", Fmt("%.1f GiB", d.memory_bytes / 1073741824.0)},
             {"compute units", std::to_string(d.compute_units)},
             {"SM / memory clock", Fmt("%.0f MHz", d.sm_clock_khz / 1e3) + " / " +
                                       Fmt("%.0f MHz", d.memory_clock_khz / 1e3)},
             {"date", profile_.date},
             {"model, tp", model_.name + ", tp " + [&] {
                std::string s;
                for (int tp : options_.tp) s += (s.empty() ? "" : ",") + std::to_string(tp);
                return s;
              }()},
             {"grid", std::string(GridSizeName(options_.grid)) + ", " + std::to_string(measured_) + " shapes timed"},
             {"method", std::to_string(options_.timing.warmup) + " warm-up, median of " +
                            std::to_string(options_.timing.repetitions) + " runs" +
                            (options_.timing.flush_cache ? ", cache flushed before each" : "")},
             {"wall time", Fmt("%.1f s", profile_.calibration->wall_seconds)}};
  for (const auto& [dtype, tf] : d.gemm_tflops) r.facts.emplace_back("best GEMM " + dtype, Fmt("%.3g TFLOP/s", tf));
  r.facts.emplace_back("device copy", Fmt("%.3g GB/s (read + write)", d.copy_gbps));
  for (const auto& [key, fit] : profile_.fits) {
    ReportSection sec;
    sec.op = key;
    sec.fit = fit;
    sec.held_out = held_out_[key];
    sec.svg_file = key;
    std::replace(sec.svg_file.begin(), sec.svg_file.end(), '.', '_');
    sec.svg_file += ".svg";
    const std::string op = key.substr(0, key.find('.'));
    if (const Series* s = FindSeries(series_, op)) sec.group_names = s->group_names;
    out->svgs.emplace_back(sec.svg_file, PredictedVsMeasuredSvg(sec));
    r.sections.push_back(std::move(sec));
  }
  std::vector<double> errors;
  for (const auto& [key, held] : held_out_)
    for (const HeldOut& h : held)
      if (h.measured_ns > 0) errors.push_back(std::abs(h.predicted_ns - h.measured_ns) / h.measured_ns);
  std::sort(errors.begin(), errors.end());
  if (!errors.empty()) {
    out->held_out_count = static_cast<int>(errors.size());
    out->held_out_median = errors[errors.size() / 2];
    out->held_out_p90 = errors[std::min(errors.size() - 1, errors.size() * 9 / 10)];
    r.facts.emplace_back("held-out error, all operators", Fmt("median %.1f%%", 100 * out->held_out_median) +
                                                              Fmt(", p90 %.1f%%", 100 * out->held_out_p90) + " over " +
                                                              std::to_string(errors.size()) + " predictions");
  }
  r.notes = profile_.notes;
  out->report_markdown = ReportMarkdown(r);
}

Status Calibration::Run(CalibrationResult* out) {
  const auto start = Clock::now();
  kernels::BackendOptions bo;
  bo.cuda_device = options_.cuda_device;
  FLEETSIM_RETURN_IF_ERROR(kernels::MakeBackend(options_.backend, bo, &backend_));
  const kernels::DeviceInfo& info = backend_->device();

  profile_.device = options_.device;
  if (profile_.device.empty()) {
    profile_.device = options_.backend == "cpu" ? "cpu-host" : CatalogueNameForDevice(info.name, catalog_);
    if (profile_.device.empty())
      return Status::Invalid("the hardware catalogue has no entry for CUDA device \"" + info.name +
                             "\"; pass --device NAME (a catalogue name, or a new name whose figures scenarios "
                             "then take from this profile)");
  }
  profile_.model = model_.name;
  profile_.date = options_.date.empty() ? TodayUtc() : options_.date;
  profile_.source = "fleetsim calibrate --backend " + options_.backend + " on " + info.name;
  ProfileDeviceInfo& d = profile_.device_info.emplace();
  d.backend = info.backend;
  d.name = info.name;
  d.software = info.software;
  d.memory_bytes = info.memory_bytes;
  d.compute_units = info.compute_units;
  d.compute_capability = info.compute_capability;
  d.sm_clock_khz = info.sm_clock_khz;
  d.memory_clock_khz = info.memory_clock_khz;
  d.memory_bus_width_bits = info.memory_bus_width_bits;
  d.l2_cache_bytes = info.l2_cache_bytes;
  ProfileCalibration& c = profile_.calibration.emplace();
  c.backend = options_.backend;
  c.grid = GridSizeName(options_.grid);
  c.tp = options_.tp;
  c.warmup = options_.timing.warmup;
  c.repetitions = options_.timing.repetitions;
  c.flush_cache = options_.timing.flush_cache;

  FLEETSIM_RETURN_IF_ERROR(MakeGrid(model_, options_.tp, options_.grid, DefaultLimits(options_.backend), &grid_));
  bench_ = std::make_unique<OpBench>(backend_.get(), options_.timing);

  CollectFamilies();
  // The progress total: every timed shape (links report without counting).
  const int tokens = static_cast<int>(grid_.tokens.size());
  total_ = 1 + tokens * static_cast<int>(weights_.size() + 3 + silu_widths_.size() + rope_heads_.size()) +
           static_cast<int>(grid_.prefill.size() + grid_.decode.size());

  FLEETSIM_RETURN_IF_ERROR(MeasureCopy());
  FLEETSIM_RETURN_IF_ERROR(MeasureGemms());
  FLEETSIM_RETURN_IF_ERROR(MeasureElementwise());
  FLEETSIM_RETURN_IF_ERROR(MeasureAttention());
  BuildCurves();
  FLEETSIM_RETURN_IF_ERROR(Fit());
  DecideAttention();
  if (options_.links) {
    // Runs last; its failure (a peer link that does not behave, a second
    // GPU that will not initialise) must not throw away the operators.
    const Status ls = MeasureLinksAndRing();
    if (!ls.ok()) {
      warnings_.push_back("links not measured: " + ls.message());
      profile_.links.clear();
      profile_.collective_checks.clear();
      profile_.all_reduce_intra_node.clear();
      profile_.device_info->h2d_gbps = profile_.device_info->d2h_gbps = 0;
    }
  }

  AddRankLinksAndTopology();

  // Notes: what a reader of the profile must know.
  std::vector<std::string>& notes = profile_.notes;
  if (model_.compute_dtype != DType::kBf16 && model_.compute_dtype != DType::kFp16 &&
      model_.compute_dtype != DType::kFp32)
    notes.push_back("the model computes in " + std::string(DTypeName(model_.compute_dtype)) +
                    ", which fleetsim's kernels do not implement: it was timed in bf16");
  notes.push_back("ops.*: the model's own shapes summed per layer and per tp (the \"profile\" source); fits.*: "
                  "every shape of an operator fitted as fixed_ns + scale * g(size) (the \"fitted\" source, used for "
                  "shapes and models not measured)");
  notes.push_back("elementwise per layer = 2 RMSNorm + 2 residual add + RoPE on Q and K + SiLU*up, fleetsim's "
                  "own unfused kernels" +
                  std::string(model_.is_moe() ? "; MoE token permutation and combine are not measured" : ""));
  for (const auto& [kind, a] : profile_.attention) {
    notes.push_back(kind + ": the measured kernel reached " + Fmt("%.1f%%", 100 * a.achieved_fraction) +
                    " of its roofline (" + a.ceiling + "); threshold " + Fmt("%.0f%%", 100 * a.threshold) + ": " +
                    (a.use_measured ? (a.achieved_fraction < a.threshold
                                           ? "the measured times are used all the same (--measured-attention: the "
                                             "profile is for fleetsim live, which runs these kernels)"
                                           : "the measured times are used")
                                    : "the roofline with a published efficiency of " +
                                          Fmt("%.2f", a.published_efficiency) + " is used instead"));
  }
  for (const CollectiveCheck& rc : profile_.collective_checks) {
    notes.push_back(std::string(rc.collective == "ring_all_reduce_ranks" ? "ring all-reduce across MPI ranks"
                                                                         : "ring all-reduce from peer copies") +
                    " over " + std::to_string(rc.ranks) + " ranks, " +
                    Fmt("%.0f", rc.bytes / 1048576.0) + " MiB per rank: measured " +
                    Fmt("%.1f us", rc.measured_ns / 1e3) + ", alpha-beta prediction " +
                    Fmt("%.1f us", rc.predicted_ns / 1e3) + " (ratio " +
                    Fmt("%.2f", rc.predicted_ns > 0 ? rc.measured_ns / rc.predicted_ns : 0) + ")" +
                    (rc.predicted_with_reduce_ns > 0
                         ? "; with the reduction's adds timed on the device " +
                               Fmt("%.1f us", rc.predicted_with_reduce_ns / 1e3) + " (ratio " +
                               Fmt("%.2f", rc.measured_ns / rc.predicted_with_reduce_ns) + ")"
                         : std::string()));
  }
  if (!skipped_.empty()) {
    warnings_.push_back(std::to_string(skipped_.size()) + " shape(s) skipped; first: " + skipped_.front());
  }
  for (const std::string& w : warnings_) notes.push_back(w);
  out->warnings = warnings_;
  c.wall_seconds = std::round(std::chrono::duration<double>(Clock::now() - start).count() * 10) / 10;
  BuildReport(out);
  out->profile = std::move(profile_);
  return Status::Ok();
}

}  // namespace

std::string CatalogueNameForDevice(const std::string& cuda_name, const Catalog& catalog) {
  std::string n;
  for (char ch : cuda_name) n += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  std::string guess;
  // Superchips and NVL boards share their GPU's name but not its figures.
  if (has("GH200") || has("GB200") || has("GB300") || has("NVL")) return "";
  if (has("H200")) {
    guess = "H200";
  } else if (has("H100")) {
    guess = has("PCIE") ? "" : "H100-SXM";
  } else if (has("A100")) {
    guess = has("40GB") ? "A100-40G" : "A100-80G";
  } else if (has("B200")) {
    guess = "B200";
  } else if (has("L40S")) {
    guess = "L40S";
  } else if (has("MI300X")) {
    guess = "MI300X";
  }
  return !guess.empty() && catalog.FindGpu(guess) != nullptr ? guess : std::string();
}

Status CheckCalibrateOptions(const CalibrateOptions& options, const Catalog& catalog) {
  const ModelSpec* model = catalog.FindModel(options.model);
  if (model == nullptr)
    return Status::Invalid("unknown model \"" + options.model + "\" (valid: " + JoinNames(catalog.ModelNames()) + ")");
  if (options.timing.repetitions < 1 || options.timing.warmup < 0)
    return Status::Invalid("--reps must be at least 1 and --warmup at least 0");
  if (options.backend == "cpu" && options.cpu_ranks < 2) return Status::Invalid("--cpu-ranks must be at least 2");
  Grid grid;
  FLEETSIM_RETURN_IF_ERROR(MakeGrid(*model, options.tp, options.grid, DefaultLimits(options.backend), &grid));
  if (!options.device.empty() && options.device.find_first_of(" \t\n\"") != std::string::npos)
    return Status::Invalid("--device \"" + options.device + "\": a device name has no spaces or quotes");
  int devices = 0;
  FLEETSIM_RETURN_IF_ERROR(kernels::DeviceCount(options.backend, &devices));
  if (options.backend == "cuda" && (options.cuda_device < 0 || options.cuda_device >= devices))
    return Status::Invalid("--cuda-device " + std::to_string(options.cuda_device) + ": the runtime sees " +
                           std::to_string(devices) + " device(s)");
  return Status::Ok();
}

Status Calibrate(const CalibrateOptions& options, const Catalog& catalog, const ProgressFn& progress,
                 CalibrationResult* out) {
  FLEETSIM_RETURN_IF_ERROR(CheckCalibrateOptions(options, catalog));
  Calibration c(options, *catalog.FindModel(options.model), catalog, progress);
  return c.Run(out);
}

Status BenchGemms(const std::string& backend, int cuda_device, const std::vector<GemmShape>& shapes,
                  const TimingOptions& timing, std::vector<GemmBenchResult>* out, std::string* device_name) {
  kernels::BackendOptions bo;
  bo.cuda_device = cuda_device;
  std::unique_ptr<kernels::Backend> b;
  FLEETSIM_RETURN_IF_ERROR(kernels::MakeBackend(backend, bo, &b));
  *device_name = b->device().name;
  OpBench bench(b.get(), timing);
  out->clear();
  for (const GemmShape& s : shapes) {
    GemmBenchResult r;
    r.shape = s;
    FLEETSIM_RETURN_IF_ERROR(bench.Gemm(s, &r.timing));
    r.tflops = 2.0 * s.m * s.n * s.k / r.timing.median_ns / 1e3;
    out->push_back(r);
  }
  return Status::Ok();
}

}  // namespace fleetsim::calibrate
