#include "tools/report/csv.h"

#include <charconv>
#include <cmath>

#include "base/file.h"

namespace fleetsim::report {
namespace {

// Splits one line into fields; quoted fields keep their content between the
// quotes (a doubled quote stays doubled: no field fleetsim writes has one).
void SplitLine(std::string_view line, std::vector<std::string_view>* fields) {
  fields->clear();
  size_t i = 0;
  while (true) {
    if (i < line.size() && line[i] == '"') {
      size_t j = i + 1;
      while (j < line.size() && !(line[j] == '"' && (j + 1 >= line.size() || line[j + 1] != '"')))
        j += line[j] == '"' ? 2 : 1;
      fields->push_back(line.substr(i + 1, std::min(j, line.size()) - i - 1));
      i = line.find(',', j);
    } else {
      const size_t j = line.find(',', i);
      fields->push_back(line.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
      i = j;
    }
    if (i == std::string_view::npos) return;
    ++i;
  }
}

}  // namespace

bool ParseNumber(std::string_view cell, double* out) {
  while (!cell.empty() && cell.front() == ' ') cell.remove_prefix(1);
  while (!cell.empty() && cell.back() == ' ') cell.remove_suffix(1);
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  if (cell.empty()) return false;
  const auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), *out);
  return ec == std::errc() && end == cell.data() + cell.size() && std::isfinite(*out);
}

Status BadCell(const std::string& path, const CsvRow& row, const std::string& column, std::string_view cell) {
  std::string shown(cell.substr(0, 40));
  return Status::Invalid(path + ":" + std::to_string(row.line) + ": column " + column + ": expected a number, got \"" +
                         shown + "\"");
}

Status ReadCsv(const std::string& path, const std::vector<std::string>& columns,
               const std::function<Status(const CsvRow&)>& row) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "CSV", &text));
  std::string_view rest(text);
  std::vector<std::string_view> fields;
  std::vector<size_t> index;  // column i of `columns` is field index[i]
  size_t needed = 0;
  bool have_header = false;
  CsvRow r;
  for (int line = 1; !rest.empty(); ++line) {
    const size_t nl = rest.find('\n');
    std::string_view l = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (l.empty()) continue;
    SplitLine(l, &fields);
    if (!have_header) {
      have_header = true;
      for (const std::string& c : columns) {
        size_t k = 0;
        while (k < fields.size() && fields[k] != c) ++k;
        if (k == fields.size()) return Status::Invalid(path + ": no column \"" + c + "\" in its header line");
        index.push_back(k);
        needed = std::max(needed, k + 1);
      }
      continue;
    }
    if (fields.size() < needed) {
      return Status::Invalid(path + ":" + std::to_string(line) + ": " + std::to_string(fields.size()) +
                             " fields, fewer than the header's columns");
    }
    r.line = line;
    r.cells.clear();
    for (size_t k : index) r.cells.push_back(fields[k]);
    FLEETSIM_RETURN_IF_ERROR(row(r));
  }
  if (!have_header) return Status::Invalid(path + ": empty (no header line)");
  return Status::Ok();
}

}  // namespace fleetsim::report
