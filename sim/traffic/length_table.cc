#include "sim/traffic/length_table.h"

#include <string_view>
#include <utility>

#include "sim/traffic/line_reader.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

Status ReadTable(LineReader& lines, std::vector<LengthTable::Row>* rows) {
  static const std::string kExpected =
      "expected a header starting \"num_prefill_tokens,num_decode_tokens\"";
  std::string_view line;
  if (!lines.Next(&line)) {
    if (!lines.status().ok()) return lines.status();
    return lines.ErrorAtLine(1, "empty file; " + kExpected);
  }
  std::string_view f[2];
  const size_t columns = SplitCsv(line, f, 2);
  if (columns < 2 || f[0] != "num_prefill_tokens" || f[1] != "num_decode_tokens") {
    return lines.ErrorAt(kExpected + ", got " + QuoteForMessage(line));
  }
  while (lines.NextRecord(&line)) {
    const size_t n = SplitCsv(line, f, 2);
    if (n != columns) {
      return lines.ErrorAt("expected " + std::to_string(columns) +
                           " columns as in the header, got " + std::to_string(n));
    }
    LengthTable::Row r;
    if (!ParsePositiveInt32(f[0], &r.prompt_tokens)) {
      return lines.ErrorAt("num_prefill_tokens: expected a positive integer, got " +
                           QuoteForMessage(f[0]));
    }
    if (!ParsePositiveInt32(f[1], &r.output_tokens)) {
      return lines.ErrorAt("num_decode_tokens: expected a positive integer, got " +
                           QuoteForMessage(f[1]));
    }
    rows->push_back(r);
  }
  if (!lines.status().ok()) return lines.status();
  if (rows->empty()) return Status::Invalid(lines.name() + ": no rows");
  return Status::Ok();
}

}  // namespace

Status LengthTable::Load(const std::string& path, std::unique_ptr<LengthTable>* out) {
  std::unique_ptr<LineReader> lines;
  FLEETSIM_RETURN_IF_ERROR(LineReader::OpenFile(path, "length CSV", &lines));
  std::unique_ptr<LengthTable> t(new LengthTable());
  FLEETSIM_RETURN_IF_ERROR(ReadTable(*lines, &t->rows_));
  *out = std::move(t);
  return Status::Ok();
}

Status LengthTable::FromStream(std::string name, std::unique_ptr<std::istream> in,
                               std::unique_ptr<LengthTable>* out) {
  LineReader lines(std::move(name), std::move(in));
  std::unique_ptr<LengthTable> t(new LengthTable());
  FLEETSIM_RETURN_IF_ERROR(ReadTable(lines, &t->rows_));
  *out = std::move(t);
  return Status::Ok();
}

}  // namespace fleetsim
