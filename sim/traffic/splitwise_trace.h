// SplitwiseTraceReader: the processed Splitwise traces as Vidur and
// Sarathi-Serve replay them (microsoft/vidur, data/processed_traces/
// splitwise_conv.csv and splitwise_code.csv: the Azure 2023 traces converted
// to seconds), CSV with a header naming at least
//
//   arrived_at,num_prefill_tokens,num_decode_tokens
//
// Columns are found by header name in any order; further columns (Vidur's
// length files add num_total_tokens and pd_ratio) are allowed and ignored,
// but every row must have as many fields as the header. arrived_at is
// decimal seconds (as pandas writes them, exponents included); arrivals are
// reported relative to the first row. num_prefill_tokens -> prompt_tokens,
// num_decode_tokens -> output_tokens; both must be positive integers.
//
// Only trace files are read this way; Splitwise's perf_model.csv is not a
// trace and is not read by fleetsim.
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

class SplitwiseTraceReader final : public LineTraceReaderOf<SplitwiseTraceReader> {
 public:
  // Opens the file and checks the header. Errors: `cannot open trace "path":
  // <strerror>`, or `path:1: ...` for a missing or repeated column.
  // Open(path), and FromStream(name, stream) for tests and fuzzers, come
  // from LineTraceReaderOf.

  // A row error ends the stream with status `path:line: what`.
  bool Next(Request* out) override;

 private:
  // Columns a row may have; a header with more is refused (a wrong file).
  static constexpr size_t kMaxColumns = 64;

  friend class LineTraceReaderOf<SplitwiseTraceReader>;
  explicit SplitwiseTraceReader(std::unique_ptr<LineReader> lines) : LineTraceReaderOf(std::move(lines)) {}
  static Status Start(std::unique_ptr<LineReader> lines, std::unique_ptr<RequestSource>* out);

  size_t num_columns_ = 0;
  size_t col_time_ = 0, col_prefill_ = 0, col_decode_ = 0;
  ArrivalOrder order_;
};

}  // namespace fleetsim
