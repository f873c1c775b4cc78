#include "sim/traffic/burstgpt_trace.h"

#include <limits>
#include <string_view>
#include <utility>

#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

constexpr std::string_view kKnown[] = {"Timestamp",       "Session ID",   "Elapsed time", "Model",
                                       "Request tokens", "Response tokens", "Total tokens", "Log Type"};

// A token count as BurstGPT writes it: an integer in [0, 2^31 - 1].
bool ParseCount(std::string_view s, int32_t* out) {
  int64_t v;
  if (!ParseInt64(s, &v) || v < 0 || v > std::numeric_limits<int32_t>::max()) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

}  // namespace

Status BurstGptTraceReader::Start(std::unique_ptr<LineReader> lines,
                                  std::unique_ptr<RequestSource>* out) {
  static const std::string kExpected =
      "expected BurstGPT's header \"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\"";
  std::string_view header;
  FLEETSIM_RETURN_IF_ERROR(ReadHeader(*lines, kExpected, &header));
  CsvHeader h;
  FLEETSIM_RETURN_IF_ERROR(FindCsvColumns(*lines, header, {std::begin(kKnown), std::end(kKnown)}, {0, 4, 5},
                                          /*refuse_unknown=*/true, kExpected, kMaxColumns, &h));
  std::unique_ptr<BurstGptTraceReader> r(new BurstGptTraceReader(std::move(lines)));
  r->num_columns_ = h.columns;
  r->col_time_ = h.at[0];
  r->col_request_ = h.at[4];
  r->col_response_ = h.at[5];
  *out = std::move(r);
  return Status::Ok();
}

bool BurstGptTraceReader::Next(Request* out) {
  if (failed_) return false;
  for (;;) {
    std::string_view line;
    if (!lines_->NextRecord(&line)) {
      if (!lines_->status().ok()) return Fail(lines_->status());
      return false;
    }
    std::string_view f[kMaxColumns];
    const size_t n = SplitCsv(line, f, kMaxColumns);
    if (n != num_columns_) {
      return Fail(lines_->ErrorAt("expected " + std::to_string(num_columns_) +
                                  " columns as in the header, got " + std::to_string(n)));
    }
    int64_t ns;
    if (!ParseSecondsToTime(f[col_time_], &ns)) {
      return Fail(lines_->ErrorAt("Timestamp: expected a number of seconds, got " +
                                  QuoteForMessage(f[col_time_])));
    }
    int32_t prompt, output;
    if (!ParseCount(f[col_request_], &prompt)) {
      return Fail(lines_->ErrorAt("Request tokens: expected a non-negative integer, got " +
                                  QuoteForMessage(f[col_request_])));
    }
    if (!ParseCount(f[col_response_], &output)) {
      return Fail(lines_->ErrorAt("Response tokens: expected a non-negative integer, got " +
                                  QuoteForMessage(f[col_response_])));
    }
    // Failed rows are checked for order too: a file sorted except for its
    // failures would still be a corrupt file.
    if (Status s = order_.Check(*lines_, "Timestamp", f[col_time_], ns); !s.ok()) return Fail(std::move(s));
    if (prompt == 0 || output == 0) {  // a failed request (see the header)
      ++skipped_;
      continue;
    }
    Emit(out, order_.Arrival(ns), prompt, output);
    return true;
  }
}

}  // namespace fleetsim
