#include "sim/traffic/azure_trace.h"

#include <string_view>
#include <utility>

#include "sim/traffic/text_fields.h"
#include "sim/traffic/timestamp.h"

namespace fleetsim {
namespace {
constexpr std::string_view kHeader = "TIMESTAMP,ContextTokens,GeneratedTokens";
}  // namespace

Status AzureTraceReader::Start(std::unique_ptr<LineReader> lines,
                               std::unique_ptr<RequestSource>* out) {
  std::string_view header;
  FLEETSIM_RETURN_IF_ERROR(ReadHeader(*lines, "expected the header \"" + std::string(kHeader) + "\"", &header));
  std::string_view cols[4];
  const size_t n = SplitCsv(header, cols, 4);
  if (n != 3 || cols[0] != "TIMESTAMP" || cols[1] != "ContextTokens" ||
      cols[2] != "GeneratedTokens") {
    return lines->ErrorAt("expected the header \"" + std::string(kHeader) + "\", got " +
                          QuoteForMessage(header));
  }
  out->reset(new AzureTraceReader(std::move(lines)));
  return Status::Ok();
}

bool AzureTraceReader::Next(Request* out) {
  if (failed_) return false;
  std::string_view line;
  if (!lines_->NextRecord(&line)) {
    if (!lines_->status().ok()) return Fail(lines_->status());
    return false;
  }
  std::string_view f[3];
  const size_t n = SplitCsv(line, f, 3);
  if (n != 3) {
    return Fail(lines_->ErrorAt("expected 3 columns (TIMESTAMP,ContextTokens,GeneratedTokens), got " +
                                std::to_string(n)));
  }
  int64_t ns;
  const char* why = nullptr;
  if (!ParseTimestamp(f[0], &ns, &why)) {
    return Fail(lines_->ErrorAt("TIMESTAMP: bad timestamp " + QuoteForMessage(f[0]) + ": " + why));
  }
  int32_t prompt, output;
  if (!ParsePositiveInt32(f[1], &prompt)) {
    return Fail(lines_->ErrorAt("ContextTokens: expected a positive integer, got " +
                                QuoteForMessage(f[1])));
  }
  if (!ParsePositiveInt32(f[2], &output)) {
    return Fail(lines_->ErrorAt("GeneratedTokens: expected a positive integer, got " +
                                QuoteForMessage(f[2])));
  }
  if (Status s = order_.Check(*lines_, "TIMESTAMP", f[0], ns); !s.ok()) return Fail(std::move(s));
  Emit(out, order_.Arrival(ns), prompt, output);
  return true;
}

}  // namespace fleetsim
