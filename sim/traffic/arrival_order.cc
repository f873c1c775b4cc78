#include "sim/traffic/arrival_order.h"

namespace fleetsim {

Status FindCsvColumns(const LineReader& lines, std::string_view header, const std::vector<std::string_view>& names,
                      const std::vector<size_t>& required, bool refuse_unknown, std::string_view expected,
                      size_t max_columns, CsvHeader* out) {
  std::vector<std::string_view> cols(max_columns + 1);
  const size_t n = SplitCsv(header, cols.data(), cols.size());
  if (n > max_columns) {
    return lines.ErrorAt("too many columns (" + std::to_string(n) + "; at most " + std::to_string(max_columns) +
                         "): " + std::string(expected));
  }
  out->columns = n;
  out->at.assign(names.size(), CsvHeader::kAbsent);
  for (size_t i = 0; i < n; ++i) {
    size_t k = 0;
    while (k < names.size() && cols[i] != names[k]) ++k;
    if (k == names.size()) {
      if (!refuse_unknown) continue;
      std::string known;
      for (std::string_view name : names) known += std::string(known.empty() ? "" : ", ") + std::string(name);
      return lines.ErrorAt("unknown column " + QuoteForMessage(cols[i]) + "; " + std::string(expected) +
                           " (known columns: " + known + ")");
    }
    if (out->at[k] != CsvHeader::kAbsent)
      return lines.ErrorAt("column " + QuoteForMessage(cols[i]) + " appears twice");
    out->at[k] = i;
  }
  for (size_t k : required) {
    if (out->at[k] == CsvHeader::kAbsent) {
      return lines.ErrorAt("missing column \"" + std::string(names[k]) + "\"; " + std::string(expected) + ", got " +
                           QuoteForMessage(header));
    }
  }
  return Status::Ok();
}

}  // namespace fleetsim
