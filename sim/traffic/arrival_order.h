// ArrivalOrder: the one rule every trace reader applies to its rows' times.
// Rows must come in time order (equal times are fine); arrivals are reported
// relative to the first request the reader emits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/traffic/line_reader.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim {

class ArrivalOrder {
 public:
  // Checks the time `ns` of the row `lines` is on, written `text` in column
  // `column`, against the previous row's. Error: `path:line: <column>:
  // "<text>" is earlier than the previous row's (line N); the trace must be
  // sorted by time`.
  Status Check(const LineReader& lines, std::string_view column, std::string_view text, int64_t ns) {
    if (started_ && ns < prev_ns_) {
      return lines.ErrorAt(std::string(column) + ": " + QuoteForMessage(text) +
                           " is earlier than the previous row's (line " + std::to_string(prev_line_) +
                           "); the trace must be sorted by time");
    }
    started_ = true;
    prev_ns_ = ns;
    prev_line_ = lines.line_number();
    return Status::Ok();
  }

  // The arrival of a request emitted at time `ns`: from the first one emitted.
  int64_t Arrival(int64_t ns) {
    if (!has_origin_) {
      has_origin_ = true;
      origin_ns_ = ns;
    }
    return ns - origin_ns_;
  }

 private:
  bool started_ = false;
  int64_t prev_ns_ = 0;
  int64_t prev_line_ = 0;
  bool has_origin_ = false;
  int64_t origin_ns_ = 0;
};

// Finds columns by name in a CSV header that `lines` has just returned.
// names[i] is looked for; its column index lands in (*at)[i], or kAbsent.
// Columns named `required` must be present, and none may appear twice;
// other columns are refused with `unknown` set (listing `names`), else
// ignored. Errors name the header's line and say `expected`.
struct CsvHeader {
  static constexpr size_t kAbsent = static_cast<size_t>(-1);
  size_t columns = 0;
  std::vector<size_t> at;
};
Status FindCsvColumns(const LineReader& lines, std::string_view header, const std::vector<std::string_view>& names,
                      const std::vector<size_t>& required, bool refuse_unknown, std::string_view expected,
                      size_t max_columns, CsvHeader* out);

}  // namespace fleetsim
