// CsvTraceReader: fleetsim's own plain trace format, for traces converted
// from elsewhere or written by hand:
//
//   arrival_s,prompt_tokens,output_tokens[,session_id][,model][,priority][,tenant][,location]
//
// The first three columns are required, in that order; the optional ones
// follow in any order, each at most once, identified by header name. An
// empty optional field means "none": session -1, the default model,
// priority 0. arrival_s is decimal seconds (exact to the ns for up to 9
// fractional digits); arrivals are reported relative to the first row.
// Fields are not quoted, so a model name cannot contain a comma.
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

class CsvTraceReader final : public LineTraceReaderOf<CsvTraceReader> {
 public:
  // Opens the file and checks the header. Errors: `cannot open trace "path":
  // <strerror>`; `path:1: ...` for a missing, wrong, duplicated or unknown
  // column name.
  // Open(path), and FromStream(name, stream) for tests and fuzzers, come
  // from LineTraceReaderOf.

  // A row error ends the stream with status `path:line: what`.
  bool Next(Request* out) override;

 private:
  static constexpr size_t kMaxColumns = 8;
  enum class Column { kSession, kModel, kPriority, kTenant, kLocation };

  friend class LineTraceReaderOf<CsvTraceReader>;
  explicit CsvTraceReader(std::unique_ptr<LineReader> lines) : LineTraceReaderOf(std::move(lines)) {}
  static Status Start(std::unique_ptr<LineReader> lines, std::unique_ptr<RequestSource>* out);

  Column extra_[kMaxColumns - 3] = {};  // meaning of columns 3.. in file order
  size_t num_columns_ = 3;
  ArrivalOrder order_;
};

}  // namespace fleetsim
