#include "sim/traffic/csv_trace.h"

#include <limits>
#include <string_view>
#include <utility>

#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {
constexpr std::string_view kRequired[3] = {"arrival_s", "prompt_tokens", "output_tokens"};
}  // namespace

Status CsvTraceReader::Start(std::unique_ptr<LineReader> lines,
                             std::unique_ptr<RequestSource>* out) {
  static const std::string kExpected =
      "expected the header \"arrival_s,prompt_tokens,output_tokens\" optionally followed by "
      "session_id, model, priority, tenant, location";
  std::string_view header;
  FLEETSIM_RETURN_IF_ERROR(ReadHeader(*lines, kExpected, &header));
  std::string_view cols[kMaxColumns + 1];
  const size_t n = SplitCsv(header, cols, kMaxColumns + 1);
  if (n < 3 || cols[0] != kRequired[0] || cols[1] != kRequired[1] || cols[2] != kRequired[2]) {
    return lines->ErrorAt(kExpected + ", got " + QuoteForMessage(header));
  }
  if (n > kMaxColumns) {
    return lines->ErrorAt("too many columns (" + std::to_string(n) + "); at most " +
                          std::to_string(kMaxColumns) + ", each name once");
  }
  std::unique_ptr<CsvTraceReader> r(new CsvTraceReader(std::move(lines)));
  bool seen[5] = {false, false, false, false, false};
  for (size_t i = 3; i < n; ++i) {
    const std::string_view name = cols[i];
    Column c;
    if (name == "session_id") {
      c = Column::kSession;
    } else if (name == "model") {
      c = Column::kModel;
    } else if (name == "priority") {
      c = Column::kPriority;
    } else if (name == "tenant") {
      c = Column::kTenant;
    } else if (name == "location") {
      c = Column::kLocation;
    } else {
      return r->lines_->ErrorAt("unknown column " + QuoteForMessage(name) +
                                " (known after the first three: session_id, model, priority, tenant, location)");
    }
    const int k = static_cast<int>(c);
    if (seen[k]) return r->lines_->ErrorAt("column " + QuoteForMessage(name) + " appears twice");
    seen[k] = true;
    r->extra_[i - 3] = c;
  }
  r->num_columns_ = n;
  *out = std::move(r);
  return Status::Ok();
}

bool CsvTraceReader::Next(Request* out) {
  if (failed_) return false;
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
  if (!ParseSecondsToTime(f[0], &ns)) {
    return Fail(lines_->ErrorAt("arrival_s: expected a number of seconds, got " +
                                QuoteForMessage(f[0])));
  }
  if (!ParsePositiveInt32(f[1], &out->prompt_tokens)) {
    return Fail(lines_->ErrorAt("prompt_tokens: expected a positive integer, got " +
                                QuoteForMessage(f[1])));
  }
  if (!ParsePositiveInt32(f[2], &out->output_tokens)) {
    return Fail(lines_->ErrorAt("output_tokens: expected a positive integer, got " +
                                QuoteForMessage(f[2])));
  }
  out->session_id = -1;
  out->priority = 0;
  out->model.clear();
  out->tenant.clear();
  out->location.clear();
  for (size_t i = 3; i < n; ++i) {
    const std::string_view v = f[i];
    switch (extra_[i - 3]) {
      case Column::kSession: {
        if (v.empty()) break;
        if (!ParseInt64(v, &out->session_id) || out->session_id < 0) {
          return Fail(lines_->ErrorAt("session_id: expected a non-negative integer or nothing, got " +
                                      QuoteForMessage(v)));
        }
        break;
      }
      case Column::kModel:
      case Column::kTenant:
      case Column::kLocation: {
        const Column c = extra_[i - 3];
        const char* name = c == Column::kModel ? "model" : c == Column::kTenant ? "tenant" : "location";
        if (v.find('"') != std::string_view::npos) {
          return Fail(lines_->ErrorAt(std::string(name) + ": quoted fields are not supported, got " +
                                      QuoteForMessage(v)));
        }
        std::string& field = c == Column::kModel ? out->model : c == Column::kTenant ? out->tenant : out->location;
        field.assign(v.data(), v.size());
        break;
      }
      case Column::kPriority: {
        if (v.empty()) break;
        int64_t p;
        if (!ParseInt64(v, &p) || p < 0 || p > std::numeric_limits<int32_t>::max()) {
          return Fail(lines_->ErrorAt("priority: expected a non-negative integer or nothing, got " +
                                      QuoteForMessage(v)));
        }
        out->priority = static_cast<int32_t>(p);
        break;
      }
    }
  }
  if (Status s = order_.Check(*lines_, "arrival_s", f[0], ns); !s.ok()) return Fail(std::move(s));
  out->id = next_id_++;
  out->arrival = order_.Arrival(ns);
  out->prefix_blocks.clear();
  out->prefix_block_tokens = 0;
  return true;
}

}  // namespace fleetsim
