#include "sim/traffic/splitwise_trace.h"

#include <string_view>
#include <utility>
#include <vector>

#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {
constexpr std::string_view kRequired[3] = {"arrived_at", "num_prefill_tokens", "num_decode_tokens"};
}  // namespace

Status SplitwiseTraceReader::Open(const std::string& path, std::unique_ptr<RequestSource>* out) {
  std::unique_ptr<LineReader> lines;
  FLEETSIM_RETURN_IF_ERROR(LineReader::OpenFile(path, "trace", &lines));
  return Start(std::move(lines), out);
}

Status SplitwiseTraceReader::FromStream(std::string name, std::unique_ptr<std::istream> in,
                                        std::unique_ptr<RequestSource>* out) {
  return Start(std::make_unique<LineReader>(std::move(name), std::move(in)), out);
}

Status SplitwiseTraceReader::Start(std::unique_ptr<LineReader> lines,
                                   std::unique_ptr<RequestSource>* out) {
  static const std::string kExpected =
      "expected a header with the columns arrived_at, num_prefill_tokens, num_decode_tokens";
  std::string_view header;
  if (!lines->Next(&header)) {
    if (!lines->status().ok()) return lines->status();
    return lines->ErrorAtLine(1, "empty file; " + kExpected);
  }
  std::vector<std::string_view> cols(kMaxColumns + 1);
  const size_t n = SplitCsv(header, cols.data(), cols.size());
  if (n > kMaxColumns) {
    return lines->ErrorAt("too many columns (" + std::to_string(n) + "); at most " +
                          std::to_string(kMaxColumns));
  }
  constexpr size_t kNone = kMaxColumns;
  size_t where[3] = {kNone, kNone, kNone};
  for (size_t i = 0; i < n; ++i) {
    for (size_t k = 0; k < 3; ++k) {
      if (cols[i] != kRequired[k]) continue;
      if (where[k] != kNone) return lines->ErrorAt("column \"" + std::string(kRequired[k]) + "\" appears twice");
      where[k] = i;
    }
  }
  for (size_t k = 0; k < 3; ++k) {
    if (where[k] == kNone) {
      return lines->ErrorAt("missing column \"" + std::string(kRequired[k]) + "\"; " + kExpected + ", got " +
                            QuoteForMessage(header));
    }
  }
  std::unique_ptr<SplitwiseTraceReader> r(new SplitwiseTraceReader(std::move(lines)));
  r->num_columns_ = n;
  r->col_time_ = where[0];
  r->col_prefill_ = where[1];
  r->col_decode_ = where[2];
  *out = std::move(r);
  return Status::Ok();
}

bool SplitwiseTraceReader::Fail(Status s) {
  status_ = std::move(s);
  failed_ = true;
  return false;
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
  if (!ParsePositiveInt32(f[col_prefill_], &out->prompt_tokens)) {
    return Fail(lines_->ErrorAt("num_prefill_tokens: expected a positive integer, got " +
                                QuoteForMessage(f[col_prefill_])));
  }
  if (!ParsePositiveInt32(f[col_decode_], &out->output_tokens)) {
    return Fail(lines_->ErrorAt("num_decode_tokens: expected a positive integer, got " +
                                QuoteForMessage(f[col_decode_])));
  }
  if (!started_) {
    started_ = true;
    first_ns_ = ns;
  } else if (ns < prev_ns_) {
    return Fail(lines_->ErrorAt("arrived_at: " + QuoteForMessage(f[col_time_]) +
                                " is earlier than the previous row's (line " + std::to_string(prev_line_) +
                                "); the trace must be sorted by time"));
  }
  prev_ns_ = ns;
  prev_line_ = lines_->line_number();
  out->id = next_id_++;
  out->arrival = ns - first_ns_;
  out->priority = 0;
  out->session_id = -1;
  out->model.clear();
  out->prefix_blocks.clear();
  out->prefix_block_tokens = 0;
  return true;
}

}  // namespace fleetsim
