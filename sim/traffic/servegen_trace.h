// ServeGenTraceSource: arrivals generated from ServeGen's per-client arrival
// descriptions (alibaba/ServeGen, data/<category>/<model>/chunk-N-trace.csv),
// headerless CSV rows of
//
//   window_start_s,rate,cv,arrival_dist,p1,p2
//
// Each row describes one window of that client's traffic, from its start to
// the next row's start (600 s in the published data; the last row's window
// is as long as the one before it, or 600 s in a one-row file). A row is not
// a request: this source turns it into arrivals the way ServeGen's
// generate_workload does (servegen/construct.py, read for this, not copied):
//   - arrival_dist empty, or rate 0: no arrivals in the window;
//   - otherwise n = ceil(rate * window length) arrivals (rate is requests
//     per second; a product within 1e-9 relative of an integer counts as
//     that integer, since the published rates are counts / 600); their gaps are drawn from Gamma(shape p1, scale p2) or
//     Weibull(shape p1, scale p2) and then rescaled together so that they
//     fill the window exactly. The rescaling makes p2 irrelevant (only the
//     shape shapes the gaps), and cv, which the shape already implies, is
//     checked (>= 0) but not used.
//   One deliberate difference: ServeGen draws n gaps and keeps the arrivals
//   strictly inside the window, so its last one, landing on the window's
//   end, is dropped and a window has n - 1 arrivals. Here n + 1 gaps are
//   drawn and rescaled, and the first n arrival instants kept, so a window
//   has exactly ceil(rate * length) arrivals, the count its rate states.
//
// Lengths: when the scenario gives lengths for the trace (prompt_tokens and
// output_tokens, or lengths_csv), every request draws from them. Otherwise
// each client needs its chunk-N-dataset.json beside chunk-N-trace.csv (see
// ServeGenDataset); a request draws its input and output token counts from
// its window's distributions, independently. (ServeGen's generator draws
// every field from ONE uniform, which ties input and output perfectly by
// rank; the data gives only the marginals, so independent draws are used.)
//
// Several clients: `path` may name one trace file or a folder, in which case
// every chunk-N-trace.csv in it is a client (ordered by N); their arrivals
// are merged in time order (ties by client order). Times are reported from
// the first arrival of the merged stream, like every trace, so leading idle
// windows vanish. Each client draws from its own random streams, named after
// its file name and derived from the Rng given to Open: a seed gives the same
// stream, and adding a client to the folder leaves the others' draws as they
// were.
//
// Streaming: one row per client is held at a time (plus one row of
// look-ahead for the window length); a window's gaps are drawn twice from a
// saved generator state (once to sum them, once to emit), so no window's
// arrivals are buffered. Dataset files are loaded whole.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/traffic/request.h"
#include "sim/traffic/source.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

class ServeGenDataset;
class LengthSampler;
class LengthTable;

struct ServeGenOptions {
  // Lengths when no dataset is used (ServeGenTraceSource::Open sets these
  // from the TrafficSpec; FromStream callers fill them in).
  LengthSpec prompt;
  LengthSpec output;
  // Most arrivals one client may have in one window; a row asking for more
  // is an error rather than an endless loop (the published data peaks far
  // below: a few thousand per window).
  int64_t max_window_requests = 10'000'000;
};

class ServeGenTraceSource final : public RequestSource {
 public:
  // The client trace files `path` names: itself if it is a file, or every
  // chunk-N-trace.csv in it if it is a folder (sorted by N). Each is checked
  // as base/file.h's CheckRegularFile does. Errors: `cannot open trace
  // "path": ...`; `trace folder "path": no chunk-N-trace.csv files`.
  static Status ListClients(const std::string& path, std::vector<std::string>* files);

  // Checks without reading them that ListClients finds the clients and,
  // when the spec gives no lengths, that each has its dataset file (what
  // `validate` can know before a run). Messages start with the scenario key.
  static Status CheckInputs(const TrafficSpec& spec);

  // Opens every client of spec.path. Lengths from spec (lengths_csv, or
  // prompt and output when spec.trace_lengths) or from each client's
  // dataset file. `rng` seeds the per-client streams.
  static Status Open(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out);

  // One client read from `in` (tests, fuzzers); `name` stands for the path.
  // `dataset` may be null: lengths then come from options.prompt/output.
  static Status FromStream(std::string name, std::unique_ptr<std::istream> in,
                           std::unique_ptr<ServeGenDataset> dataset, const ServeGenOptions& options, Rng rng,
                           std::unique_ptr<RequestSource>* out);
  // The same with fixed lengths (100 prompt, 10 output tokens) and seed 1:
  // the signature the reader fuzz harness expects.
  static Status FromStream(std::string name, std::unique_ptr<std::istream> in, std::unique_ptr<RequestSource>* out);

  ~ServeGenTraceSource() override;

  // A bad row (`path:line: what`) or a window without a length distribution
  // ends the stream.
  bool Next(Request* out) override;
  const Status& status() const override { return status_; }

 private:
  class Client;
  struct Shared;
  ServeGenTraceSource();
  bool Fail(Status s);

  std::unique_ptr<Shared> shared_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<Request> pending_;  // each client's next arrival (raw trace time)
  std::vector<int> heap_;         // live clients, min-heap on (pending arrival, index)
  Status status_;
  Status error_;  // a client's error, reported after the arrivals before it
  bool failed_ = false;
  bool started_ = false;
  bool have_first_ = false;
  SimTime first_ = 0;
  uint64_t next_id_ = 0;
};

}  // namespace fleetsim
