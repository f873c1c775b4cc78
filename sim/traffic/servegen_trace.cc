#include "sim/traffic/servegen_trace.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>

#include "base/file.h"
#include "sim/traffic/length_sampler.h"
#include "sim/traffic/length_table.h"
#include "sim/traffic/line_reader.h"
#include "sim/traffic/servegen_dataset.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

constexpr double kDefaultWindowS = 600;  // ServeGen's window

enum class Dist { kNone, kGamma, kWeibull };

struct Row {
  SimTime start = 0;
  double rate = 0;
  Dist dist = Dist::kNone;
  double shape = 0;
  int64_t line = 0;
};

// "chunk-12-trace.csv" -> 12; -1 for any other name.
int64_t ChunkNumber(const std::string& name) {
  constexpr std::string_view kPrefix = "chunk-", kSuffix = "-trace.csv";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.rfind(kPrefix, 0) != 0 ||
      name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return -1;
  }
  int64_t n;
  const std::string_view digits =
      std::string_view(name).substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  return ParseInt64(digits, &n) && n >= 0 && digits.find_first_not_of("0123456789") == std::string_view::npos ? n
                                                                                                               : -1;
}

// The dataset file that belongs beside a trace file: "<stem>-trace.csv" ->
// "<stem>-dataset.json"; empty when the name does not end in -trace.csv.
std::string DatasetPathFor(const std::string& trace_path) {
  constexpr std::string_view kSuffix = "-trace.csv";
  if (trace_path.size() < kSuffix.size() ||
      trace_path.compare(trace_path.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
    return "";
  }
  return trace_path.substr(0, trace_path.size() - kSuffix.size()) + "-dataset.json";
}

// The dataset beside `trace_path`, checked as it will be opened; an error
// says how else lengths can be given.
Status DatasetFor(const std::string& trace_path, std::string* dataset_path) {
  *dataset_path = DatasetPathFor(trace_path);
  std::error_code ec;
  if (dataset_path->empty() || !std::filesystem::exists(*dataset_path, ec)) {
    return Status::Invalid("traffic.trace: no lengths for ServeGen client \"" + trace_path + "\": " +
                           (dataset_path->empty() ? std::string("its name does not end in -trace.csv")
                                                  : "\"" + *dataset_path + "\" does not exist") +
                           "; put the dataset file beside it, or set traffic.trace.lengths_csv or "
                           "prompt_tokens and output_tokens");
  }
  return CheckRegularFile(*dataset_path, "length dataset");
}

}  // namespace

// Lengths shared by every client when the scenario gives them.
struct ServeGenTraceSource::Shared {
  std::unique_ptr<LengthTable> table;
  std::unique_ptr<LengthSampler> prompt, output;
};

// One client: its rows, read one at a time, turned into arrivals.
class ServeGenTraceSource::Client {
 public:
  Client(std::unique_ptr<LineReader> lines, std::unique_ptr<ServeGenDataset> dataset, const Shared* shared,
         int64_t max_window_requests, Rng gaps, Rng lengths)
      : lines_(std::move(lines)),
        dataset_(std::move(dataset)),
        shared_(shared),
        max_window_requests_(max_window_requests),
        gaps_(gaps),
        lengths_(lengths) {}

  // The client's next arrival (raw trace time) with its lengths; false at
  // the end of its file or on an error (status()).
  bool Next(Request* out) {
    while (k_ >= n_) {
      if (!NextWindow()) return false;
    }
    const double g = Gap();
    cum_ += g;
    SimTime t = start_ + static_cast<SimTime>(std::llround(cum_ * scale_ns_));
    // Rounding (or a last gap of 0) may land on the window's end; the
    // arrival stays inside its window, so windows never interleave.
    if (t >= end_) t = end_ - 1;
    if (t < last_) t = last_;
    last_ = t;
    ++k_;
    if (k_ == n_) Gap();  // the (n+1)-th gap: leaves gaps_ as pass one did
    out->arrival = t;
    if (dataset_) {
      dataset_->Sample(entry_, lengths_, &out->prompt_tokens, &out->output_tokens);
    } else if (shared_->table) {
      const LengthTable::Row& r = shared_->table->Sample(lengths_);
      out->prompt_tokens = r.prompt_tokens;
      out->output_tokens = r.output_tokens;
    } else {
      out->prompt_tokens = shared_->prompt->Sample(lengths_);
      out->output_tokens = shared_->output->Sample(lengths_);
    }
    return true;
  }

  const Status& status() const { return status_; }

 private:
  bool Fail(Status s) {
    status_ = std::move(s);
    done_ = true;
    return false;
  }

  // Reads and checks one row into *row; false at the end or on an error.
  bool ReadRow(Row* row) {
    std::string_view line;
    if (!lines_->NextRecord(&line)) {
      if (!lines_->status().ok()) return Fail(lines_->status());
      return false;
    }
    std::string_view f[7];
    const size_t n = SplitCsv(line, f, 7);
    if (n != 6) {
      return Fail(lines_->ErrorAt("expected 6 columns (window_start_s,rate,cv,arrival_dist,p1,p2), got " +
                                  std::to_string(n)));
    }
    row->line = lines_->line_number();
    if (!ParseSecondsToTime(f[0], &row->start) || row->start < 0) {
      return Fail(lines_->ErrorAt("window_start_s: expected seconds >= 0, got " + QuoteForMessage(f[0])));
    }
    double cv, p1, p2;
    if (!ParseFiniteDouble(f[1], &row->rate) || row->rate < 0) {
      return Fail(lines_->ErrorAt("rate: expected requests per second >= 0, got " + QuoteForMessage(f[1])));
    }
    if (!ParseFiniteDouble(f[2], &cv) || cv < 0) {
      return Fail(lines_->ErrorAt("cv: expected a number >= 0, got " + QuoteForMessage(f[2])));
    }
    if (f[3].empty()) {
      row->dist = Dist::kNone;
    } else if (f[3] == "Gamma") {
      row->dist = Dist::kGamma;
    } else if (f[3] == "Weibull") {
      row->dist = Dist::kWeibull;
    } else {
      return Fail(lines_->ErrorAt("arrival_dist: expected Gamma, Weibull or nothing, got " + QuoteForMessage(f[3])));
    }
    const bool used = row->dist != Dist::kNone;
    if (!ParseFiniteDouble(f[4], &p1) || (used ? !(p1 > 0) : false)) {
      return Fail(lines_->ErrorAt(std::string("p1: expected ") + (used ? "a shape > 0" : "a number") + ", got " +
                                  QuoteForMessage(f[4])));
    }
    if (!ParseFiniteDouble(f[5], &p2) || (used ? !(p2 > 0) : false)) {
      return Fail(lines_->ErrorAt(std::string("p2: expected ") + (used ? "a scale > 0" : "a number") + ", got " +
                                  QuoteForMessage(f[5])));
    }
    row->shape = p1;
    return true;
  }

  // Moves to the next window with arrivals to give; false at the end.
  bool NextWindow() {
    if (done_) return false;
    if (!have_cur_) {
      if (!ReadRow(&cur_)) {
        done_ = true;  // no rows, or a bad first row (status_ says)
        return false;
      }
      have_cur_ = true;
      have_next_ = ReadRow(&next_);
      if (!status_.ok()) return false;
    } else {
      if (!have_next_) {
        done_ = true;
        return false;
      }
      cur_ = next_;
      have_next_ = ReadRow(&next_);
      if (!status_.ok()) return false;
    }
    if (have_next_ && next_.start <= cur_.start) {
      return Fail(lines_->ErrorAtLine(next_.line, "window_start_s: " + FormatNumber(TimeToSeconds(next_.start)) +
                                                      " does not come after the previous row's (" +
                                                      FormatNumber(TimeToSeconds(cur_.start)) + ")"));
    }
    SimTime len = have_next_ ? next_.start - cur_.start
                             : (prev_len_ > 0 ? prev_len_ : SecondsToTime(kDefaultWindowS));
    prev_len_ = len;
    start_ = cur_.start;
    end_ = start_ + len;
    last_ = start_;
    k_ = 0;
    n_ = 0;
    cum_ = 0;
    if (cur_.dist == Dist::kNone || cur_.rate == 0) return true;
    // The published rates are counts / 600, so rate * length is an integer
    // up to rounding (0.12666666666666668 * 600 = 76.00000000000001); such
    // a product counts as that integer rather than being rounded up.
    const double exact = cur_.rate * TimeToSeconds(len);
    const double nearest = std::round(exact);
    const double want = std::fabs(exact - nearest) <= 1e-9 * std::max(1.0, exact) ? nearest : std::ceil(exact);
    if (!(want <= static_cast<double>(max_window_requests_))) {
      return Fail(lines_->ErrorAtLine(cur_.line, "rate: " + FormatNumber(cur_.rate) + " per s over a " +
                                                     FormatNumber(TimeToSeconds(len)) + " s window is more than " +
                                                     std::to_string(max_window_requests_) + " requests"));
    }
    n_ = static_cast<int64_t>(want);
    if (dataset_) {
      entry_ = dataset_->Find(start_);
      if (entry_ < 0) {
        return Fail(lines_->ErrorAtLine(cur_.line, "no length distribution in " + dataset_->name() +
                                                       " at or before this window's start (" +
                                                       FormatNumber(TimeToSeconds(start_)) + " s)"));
      }
    }
    // Pass one: sum the n + 1 gaps from a saved state; pass two (Next)
    // draws the same gaps again from that state.
    cap_ = 1e300 / static_cast<double>(n_ + 1);
    const Rng saved = gaps_;
    double sum = 0;
    for (int64_t i = 0; i <= n_; ++i) sum += Gap();
    gaps_ = saved;
    // All gaps underflowing to 0 (a tiny Gamma shape) is the extreme burst:
    // every arrival at the window's start.
    scale_ns_ = sum > 0 ? static_cast<double>(len) / sum : 0;
    return true;
  }

  double Gap() {
    double g;
    if (cur_.dist == Dist::kGamma) {
      g = gaps_.Gamma(cur_.shape, 1.0);
    } else {
      g = std::pow(-std::log(gaps_.UniformOpenZero()), 1.0 / cur_.shape);
    }
    return std::isfinite(g) ? std::min(g, cap_) : cap_;
  }

  std::unique_ptr<LineReader> lines_;
  std::unique_ptr<ServeGenDataset> dataset_;
  const Shared* shared_;
  int64_t max_window_requests_;
  Rng gaps_, lengths_;
  Status status_;
  bool done_ = false;
  Row cur_, next_;
  bool have_cur_ = false, have_next_ = false;
  SimTime prev_len_ = 0;
  // The current window.
  SimTime start_ = 0, end_ = 0, last_ = 0;
  int64_t n_ = 0, k_ = 0;
  double cum_ = 0, scale_ns_ = 0, cap_ = 1e300;
  int entry_ = -1;
};

ServeGenTraceSource::ServeGenTraceSource() : shared_(std::make_unique<Shared>()) {}
ServeGenTraceSource::~ServeGenTraceSource() = default;

Status ServeGenTraceSource::ListClients(const std::string& path, std::vector<std::string>* files) {
  files->clear();
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    FLEETSIM_RETURN_IF_ERROR(CheckRegularFile(path, "trace"));
    files->push_back(path);
    return Status::Ok();
  }
  std::vector<std::pair<int64_t, std::string>> found;
  for (std::filesystem::directory_iterator it(path, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const int64_t n = ChunkNumber(name);
    if (n >= 0) found.emplace_back(n, it->path().string());
  }
  if (ec) return Status::Invalid("cannot read trace folder \"" + path + "\": " + ec.message());
  if (found.empty()) return Status::Invalid("trace folder \"" + path + "\": no chunk-N-trace.csv files");
  std::sort(found.begin(), found.end());
  for (auto& [n, p] : found) {
    FLEETSIM_RETURN_IF_ERROR(CheckRegularFile(p, "trace"));
    files->push_back(std::move(p));
  }
  return Status::Ok();
}

Status ServeGenTraceSource::CheckInputs(const TrafficSpec& spec) {
  std::vector<std::string> files;
  FLEETSIM_RETURN_IF_ERROR(ListClients(spec.path, &files).WithPrefix("traffic.trace.path: "));
  if (!spec.lengths_csv.empty() || spec.trace_lengths) return Status::Ok();
  for (const std::string& file : files) {
    std::string dpath;
    FLEETSIM_RETURN_IF_ERROR(DatasetFor(file, &dpath));
  }
  return Status::Ok();
}

Status ServeGenTraceSource::Open(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out) {
  std::vector<std::string> files;
  FLEETSIM_RETURN_IF_ERROR(ListClients(spec.path, &files));
  std::unique_ptr<ServeGenTraceSource> src(new ServeGenTraceSource());
  if (!spec.lengths_csv.empty()) {
    FLEETSIM_RETURN_IF_ERROR(LengthTable::Load(spec.lengths_csv, &src->shared_->table));
  } else if (spec.trace_lengths) {
    FLEETSIM_RETURN_IF_ERROR(LengthSampler::Validate(spec.prompt, "traffic.trace.prompt_tokens"));
    FLEETSIM_RETURN_IF_ERROR(LengthSampler::Validate(spec.output, "traffic.trace.output_tokens"));
    src->shared_->prompt = std::make_unique<LengthSampler>(spec.prompt);
    src->shared_->output = std::make_unique<LengthSampler>(spec.output);
  }
  const bool use_datasets = spec.lengths_csv.empty() && !spec.trace_lengths;
  const uint64_t base = rng.NextU64();
  ServeGenOptions defaults;
  LineReaderOptions lo;
  lo.buffer_bytes = 4096;  // rows are short; many clients may be open
  for (const std::string& file : files) {
    std::unique_ptr<ServeGenDataset> dataset;
    if (use_datasets) {
      std::string dpath;
      FLEETSIM_RETURN_IF_ERROR(DatasetFor(file, &dpath));
      FLEETSIM_RETURN_IF_ERROR(ServeGenDataset::Load(dpath, &dataset));
    }
    std::unique_ptr<LineReader> lines;
    FLEETSIM_RETURN_IF_ERROR(LineReader::OpenFile(file, "trace", &lines, lo));
    const std::string name = std::filesystem::path(file).filename().string();
    src->clients_.push_back(std::make_unique<Client>(std::move(lines), std::move(dataset), src->shared_.get(),
                                                     defaults.max_window_requests,
                                                     Rng(base ^ Fnv1a64(name + "/gaps")),
                                                     Rng(base ^ Fnv1a64(name + "/lengths"))));
  }
  *out = std::move(src);
  return Status::Ok();
}

Status ServeGenTraceSource::FromStream(std::string name, std::unique_ptr<std::istream> in,
                                       std::unique_ptr<ServeGenDataset> dataset, const ServeGenOptions& options,
                                       Rng rng, std::unique_ptr<RequestSource>* out) {
  std::unique_ptr<ServeGenTraceSource> src(new ServeGenTraceSource());
  if (!dataset) {
    FLEETSIM_RETURN_IF_ERROR(LengthSampler::Validate(options.prompt, "prompt_tokens"));
    FLEETSIM_RETURN_IF_ERROR(LengthSampler::Validate(options.output, "output_tokens"));
    src->shared_->prompt = std::make_unique<LengthSampler>(options.prompt);
    src->shared_->output = std::make_unique<LengthSampler>(options.output);
  }
  const uint64_t base = rng.NextU64();
  const std::string file = std::filesystem::path(name).filename().string();
  auto lines = std::make_unique<LineReader>(std::move(name), std::move(in));
  src->clients_.push_back(std::make_unique<Client>(std::move(lines), std::move(dataset), src->shared_.get(),
                                                   options.max_window_requests,
                                                   Rng(base ^ Fnv1a64(file + "/gaps")),
                                                   Rng(base ^ Fnv1a64(file + "/lengths"))));
  *out = std::move(src);
  return Status::Ok();
}

Status ServeGenTraceSource::FromStream(std::string name, std::unique_ptr<std::istream> in,
                                       std::unique_ptr<RequestSource>* out) {
  ServeGenOptions o;
  o.prompt.value = 100;
  o.output.value = 10;
  o.max_window_requests = 10'000;
  return FromStream(std::move(name), std::move(in), nullptr, o, Rng(1), out);
}

bool ServeGenTraceSource::Fail(Status s) {
  status_ = std::move(s);
  failed_ = true;
  return false;
}

bool ServeGenTraceSource::Next(Request* out) {
  if (failed_) return false;
  // The heap holds each live client's next arrival in pending_.
  auto later = [this](int a, int b) {
    const SimTime ta = pending_[static_cast<size_t>(a)].arrival, tb = pending_[static_cast<size_t>(b)].arrival;
    return ta != tb ? ta > tb : a > b;
  };
  if (!started_) {
    started_ = true;
    pending_.resize(clients_.size());
    for (size_t i = 0; i < clients_.size(); ++i) {
      if (clients_[i]->Next(&pending_[i])) {
        heap_.push_back(static_cast<int>(i));
      } else if (!clients_[i]->status().ok()) {
        return Fail(clients_[i]->status());
      }
    }
    std::make_heap(heap_.begin(), heap_.end(), later);
  }
  if (!error_.ok()) return Fail(error_);
  if (heap_.empty()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), later);
  const int c = heap_.back();
  heap_.pop_back();
  Request& r = pending_[static_cast<size_t>(c)];
  if (!have_first_) {
    have_first_ = true;
    first_ = r.arrival;
  }
  out->id = next_id_++;
  out->arrival = r.arrival - first_;
  out->prompt_tokens = r.prompt_tokens;
  out->output_tokens = r.output_tokens;
  out->priority = 0;
  out->session_id = -1;
  out->model.clear();
  out->prefix_blocks.clear();
  out->prefix_block_tokens = 0;
  // Refill after copying out: a client's error surfaces on the next call,
  // after the arrivals before it.
  if (clients_[static_cast<size_t>(c)]->Next(&r)) {
    heap_.push_back(c);
    std::push_heap(heap_.begin(), heap_.end(), later);
  } else if (!clients_[static_cast<size_t>(c)]->status().ok()) {
    error_ = clients_[static_cast<size_t>(c)]->status();
  }
  return true;
}

}  // namespace fleetsim
