// BurstGPTTraceReader: the BurstGPT traces (HPMLL/BurstGPT; Azure OpenAI
// GPT-3.5 and GPT-4 traffic), CSV with the header
//
//   Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
//
// (BurstGPT_3 adds "Session ID" and "Elapsed time"). Columns are found by
// header name, in any order; Timestamp, Request tokens and Response tokens
// are required, and the other BurstGPT columns are accepted and not used:
//   - Model ("ChatGPT", "GPT-4") names the service that answered, not a
//     model of this simulator's catalogue, so it does not become the
//     request's model (every request goes to the scenario's default model;
//     a request naming an unserved model would only be rejected);
//   - Total tokens is Request + Response; Log Type, Session ID (a UUID) and
//     Elapsed time (the production service's latency) describe the original
//     run, not the request.
// An unknown column name is an error (it usually means the wrong format).
//
// Timestamp is seconds from the start of the trace's first day, a number
// (integer in the published files; decimals accepted); arrivals are reported
// relative to the first request kept, like the other readers.
//
// Failed requests: BurstGPT's README says the files without "without_fails"
// in their name hold failures, marked by Response tokens = 0 (often with
// Request tokens 0 too). Such a row did not produce a request the simulator
// could replay, so it is SKIPPED and counted (skipped_rows()), not an error;
// a row with Request tokens 0 is skipped the same way (nothing to prefill).
// Negative or non-integer counts are errors.
#pragma once

#include <istream>
#include <memory>
#include <string>

#include "base/status.h"
#include "sim/traffic/arrival_order.h"
#include "sim/traffic/line_reader.h"
#include "sim/traffic/line_trace_reader.h"
#include "sim/traffic/source.h"

namespace fleetsim {

class BurstGptTraceReader final : public LineTraceReaderOf<BurstGptTraceReader> {
 public:
  // Opens the file and checks the header. Errors: `cannot open trace "path":
  // <strerror>`, or `path:1: ...` for a missing, unknown or repeated column.
  // Open(path), and FromStream(name, stream) for tests and fuzzers, come
  // from LineTraceReaderOf.

  // A row error (column count, a count that is not a non-negative integer,
  // a bad timestamp, time going backwards, a blank line) ends the stream
  // with status `path:line: what`.
  bool Next(Request* out) override;
  int64_t skipped_rows() const override { return skipped_; }

 private:
  static constexpr size_t kMaxColumns = 8;  // BurstGPT_3's header

  friend class LineTraceReaderOf<BurstGptTraceReader>;
  explicit BurstGptTraceReader(std::unique_ptr<LineReader> lines) : LineTraceReaderOf(std::move(lines)) {}
  static Status Start(std::unique_ptr<LineReader> lines, std::unique_ptr<RequestSource>* out);

  size_t num_columns_ = 0;
  size_t col_time_ = 0, col_request_ = 0, col_response_ = 0;
  ArrivalOrder order_;  // every row, failed ones too; arrivals from the first emitted
  int64_t skipped_ = 0;
};

}  // namespace fleetsim
