// fleetsim's per-request CSV (format in read_observed.h):
//   start_s,input_tokens,output_tokens,ttft_s,e2e_s[,itl_s]
#include <iterator>
#include <limits>
#include <sstream>

#include "sim/observe/readers.h"
#include "sim/traffic/line_reader.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim::observe_internal {
namespace {

constexpr std::string_view kColumns[] = {"start_s", "input_tokens", "output_tokens", "ttft_s", "e2e_s", "itl_s"};
constexpr const char* kExpected =
    "expected the header \"start_s,input_tokens,output_tokens,ttft_s,e2e_s\" optionally followed by itl_s";

bool ParseSeconds(std::string_view s, double* out) { return ParseFiniteDouble(s, out) && *out >= 0; }

Status ReadRow(const LineReader& lines, std::string_view* f, size_t columns, ObservedRequest* r) {
  if (!ParseSeconds(f[0], &r->start_s)) {
    return lines.ErrorAt("start_s: expected seconds >= 0, got " + QuoteForMessage(f[0]));
  }
  if (!ParsePositiveInt32(f[1], &r->input_tokens)) {
    return lines.ErrorAt("input_tokens: expected a positive integer, got " + QuoteForMessage(f[1]));
  }
  int64_t out;
  if (!ParseInt64(f[2], &out) || out < 0 || out > std::numeric_limits<int32_t>::max()) {
    return lines.ErrorAt("output_tokens: expected an integer >= 0, got " + QuoteForMessage(f[2]));
  }
  r->output_tokens = static_cast<int32_t>(out);
  double v;
  if (!f[3].empty()) {
    if (!ParseSeconds(f[3], &v)) {
      return lines.ErrorAt("ttft_s: expected seconds >= 0 or nothing, got " + QuoteForMessage(f[3]));
    }
    r->ttft_s = v;
  }
  if (!f[4].empty()) {
    if (!ParseSeconds(f[4], &v)) {
      return lines.ErrorAt("e2e_s: expected seconds >= 0 or nothing (a failed request), got " + QuoteForMessage(f[4]));
    }
    r->e2e_s = v;
  }
  if (columns == 6 && !f[5].empty()) {
    std::string_view rest = f[5];
    for (;;) {
      const size_t semi = rest.find(';');
      const std::string_view gap = TrimSpaces(rest.substr(0, semi));
      if (!ParseSeconds(gap, &v)) {
        return lines.ErrorAt("itl_s: expected seconds >= 0 separated by ';', got " + QuoteForMessage(gap));
      }
      r->itl_s.push_back(v);
      if (semi == std::string_view::npos) break;
      rest.remove_prefix(semi + 1);
    }
  }
  r->ok = r->e2e_s.has_value();
  if (!r->ok) {
    if (r->ttft_s || !r->itl_s.empty()) {
      return lines.ErrorAt("e2e_s: empty (a failed request) but ttft_s or itl_s given");
    }
    r->output_tokens = 0;
    return Status::Ok();
  }
  if (r->output_tokens < 1) return lines.ErrorAt("output_tokens: 0 for a request with an e2e_s (not failed)");
  if (r->ttft_s && !TtftWithinE2e(*r->ttft_s, *r->e2e_s)) return lines.ErrorAt("ttft_s: greater than e2e_s");
  return Status::Ok();
}

}  // namespace

Status ReadObservedCsv(const ReadContext& ctx, std::string_view text, std::vector<ObservedRun>* out) {
  LineReader lines(ctx.path, std::make_unique<std::istringstream>(std::string(text)));
  std::string_view header;
  if (!lines.Next(&header)) {
    FLEETSIM_RETURN_IF_ERROR(lines.status());
    return lines.ErrorAtLine(1, std::string("empty file; ") + kExpected);
  }
  std::string_view f[std::size(kColumns) + 1];
  const size_t columns = SplitCsv(header, f, std::size(kColumns) + 1);
  bool good = columns == 5 || columns == 6;
  for (size_t i = 0; good && i < columns; ++i) good = f[i] == kColumns[i];
  if (!good) return lines.ErrorAt(std::string(kExpected) + ", got " + QuoteForMessage(header));

  ObservedRun run;
  run.format = ObservedFormat::kCsv;
  run.tool = "csv";
  std::string_view line;
  while (lines.NextRecord(&line)) {
    const size_t n = SplitCsv(line, f, std::size(kColumns) + 1);
    if (n != columns) {
      return lines.ErrorAt("expected " + std::to_string(columns) + " columns as in the header, got " +
                           std::to_string(n));
    }
    ObservedRequest r;
    FLEETSIM_RETURN_IF_ERROR(ReadRow(lines, f, columns, &r));
    run.requests.push_back(std::move(r));
  }
  FLEETSIM_RETURN_IF_ERROR(lines.status());
  out->push_back(std::move(run));
  return Status::Ok();
}

}  // namespace fleetsim::observe_internal
