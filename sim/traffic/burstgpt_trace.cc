#include "sim/traffic/burstgpt_trace.h"

#include <limits>
#include <string_view>
#include <utility>

#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

constexpr std::string_view kKnown[] = {"Timestamp",       "Session ID",   "Elapsed time", "Model",
                                       "Request tokens", "Response tokens", "Total tokens", "Log Type"};

std::string KnownList() {
  std::string s;
  for (std::string_view k : kKnown) s += std::string(s.empty() ? "" : ", ") + std::string(k);
  return s;
}

// A token count as BurstGPT writes it: an integer in [0, 2^31 - 1].
bool ParseCount(std::string_view s, int32_t* out) {
  int64_t v;
  if (!ParseInt64(s, &v) || v < 0 || v > std::numeric_limits<int32_t>::max()) return false;
  *out = static_cast<int32_t>(v);
  return true;
}

}  // namespace

Status BurstGptTraceReader::Open(const std::string& path, std::unique_ptr<RequestSource>* out) {
  std::unique_ptr<LineReader> lines;
  FLEETSIM_RETURN_IF_ERROR(LineReader::OpenFile(path, "trace", &lines));
  return Start(std::move(lines), out);
}

Status BurstGptTraceReader::FromStream(std::string name, std::unique_ptr<std::istream> in,
                                       std::unique_ptr<RequestSource>* out) {
  return Start(std::make_unique<LineReader>(std::move(name), std::move(in)), out);
}

Status BurstGptTraceReader::Start(std::unique_ptr<LineReader> lines,
                                  std::unique_ptr<RequestSource>* out) {
  static const std::string kExpected =
      "expected BurstGPT's header \"Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\"";
  std::string_view header;
  if (!lines->Next(&header)) {
    if (!lines->status().ok()) return lines->status();
    return lines->ErrorAtLine(1, "empty file; " + kExpected);
  }
  std::string_view cols[kMaxColumns + 1];
  const size_t n = SplitCsv(header, cols, kMaxColumns + 1);
  if (n > kMaxColumns) {
    return lines->ErrorAt(kExpected + "; got " + std::to_string(n) + " columns: " + QuoteForMessage(header));
  }
  constexpr size_t kNone = kMaxColumns;
  size_t where[std::size(kKnown)];
  for (size_t& w : where) w = kNone;
  for (size_t i = 0; i < n; ++i) {
    size_t k = 0;
    while (k < std::size(kKnown) && cols[i] != kKnown[k]) ++k;
    if (k == std::size(kKnown)) {
      return lines->ErrorAt("unknown column " + QuoteForMessage(cols[i]) + "; " + kExpected +
                            " (known columns: " + KnownList() + ")");
    }
    if (where[k] != kNone) return lines->ErrorAt("column " + QuoteForMessage(cols[i]) + " appears twice");
    where[k] = i;
  }
  for (size_t k : {size_t{0}, size_t{4}, size_t{5}}) {
    if (where[k] == kNone) {
      return lines->ErrorAt("missing column \"" + std::string(kKnown[k]) + "\"; " + kExpected + ", got " +
                            QuoteForMessage(header));
    }
  }
  std::unique_ptr<BurstGptTraceReader> r(new BurstGptTraceReader(std::move(lines)));
  r->num_columns_ = n;
  r->col_time_ = where[0];
  r->col_request_ = where[4];
  r->col_response_ = where[5];
  *out = std::move(r);
  return Status::Ok();
}

bool BurstGptTraceReader::Fail(Status s) {
  status_ = std::move(s);
  failed_ = true;
  return false;
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
    if (started_ && ns < prev_ns_) {
      return Fail(lines_->ErrorAt("Timestamp: " + QuoteForMessage(f[col_time_]) +
                                  " is earlier than the previous row's (line " + std::to_string(prev_line_) +
                                  "); the trace must be sorted by time"));
    }
    started_ = true;
    prev_ns_ = ns;
    prev_line_ = lines_->line_number();
    if (prompt == 0 || output == 0) {  // a failed request (see the header)
      ++skipped_;
      continue;
    }
    if (!emitted_) {
      emitted_ = true;
      first_ns_ = ns;
    }
    out->id = next_id_++;
    out->arrival = ns - first_ns_;
    out->prompt_tokens = prompt;
    out->output_tokens = output;
    out->priority = 0;
    out->session_id = -1;
    out->model.clear();
    out->prefix_blocks.clear();
    out->prefix_block_tokens = 0;
    return true;
  }
}

}  // namespace fleetsim
