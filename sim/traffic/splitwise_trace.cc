#include "sim/traffic/splitwise_trace.h"

#include <string_view>
#include <utility>
#include <vector>

#include "sim/traffic/arrival_order.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {
constexpr std::string_view kRequired[3] = {"arrived_at", "num_prefill_tokens", "num_decode_tokens"};
}  // namespace

Status SplitwiseTraceReader::Start(std::unique_ptr<LineReader> lines,
                                   std::unique_ptr<RequestSource>* out) {
  static const std::string kExpected =
      "expected a header with the columns arrived_at, num_prefill_tokens, num_decode_tokens";
  std::string_view header;
  FLEETSIM_RETURN_IF_ERROR(ReadHeader(*lines, kExpected, &header));
  CsvHeader h;
  FLEETSIM_RETURN_IF_ERROR(FindCsvColumns(*lines, header, {std::begin(kRequired), std::end(kRequired)}, {0, 1, 2},
                                          /*refuse_unknown=*/false, kExpected, kMaxColumns, &h));
  std::unique_ptr<SplitwiseTraceReader> r(new SplitwiseTraceReader(std::move(lines)));
  r->num_columns_ = h.columns;
  r->col_time_ = h.at[0];
  r->col_prefill_ = h.at[1];
  r->col_decode_ = h.at[2];
  *out = std::move(r);
  return Status::Ok();
}

bool SplitwiseTraceReader::Next(Request* out) {
  if (failed_) return false;
  std::string_view line;
  if (!lines_->NextRecord(&line)) {
    if (!lines_->status().ok()) return Fail(lines_->status());
    return false;
  }
  std::string_view f[kMaxColumns];
  const size_t n = SplitCsv(line, f, kMaxColumns);
  if (n != num_columns_) {
    return Fail(lines_->ErrorAt("expected " + std::to_string(num_columns_) + " columns as in the header, got " +
                                std::to_string(n)));
  }
  int64_t ns;
  if (!ParseSecondsToTime(f[col_time_], &ns)) {
    return Fail(lines_->ErrorAt("arrived_at: expected a number of seconds, got " + QuoteForMessage(f[col_time_])));
  }
  int32_t prompt, output;
  if (!ParsePositiveInt32(f[col_prefill_], &prompt)) {
    return Fail(lines_->ErrorAt("num_prefill_tokens: expected a positive integer, got " +
                                QuoteForMessage(f[col_prefill_])));
  }
  if (!ParsePositiveInt32(f[col_decode_], &output)) {
    return Fail(lines_->ErrorAt("num_decode_tokens: expected a positive integer, got " +
                                QuoteForMessage(f[col_decode_])));
  }
  if (Status s = order_.Check(*lines_, "arrived_at", f[col_time_], ns); !s.ok()) return Fail(std::move(s));
  Emit(out, order_.Arrival(ns), prompt, output);
  return true;
}

}  // namespace fleetsim
