// Reading the CSV files a run writes (requests.csv, timeseries.csv, itl.csv):
// a header line naming the columns, then one record a line. Fields may be
// double-quoted ("" inside for a quote); no field spans lines.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace fleetsim::report {

struct CsvRow {
  int line = 0;                         // 1-based line number in the file
  std::vector<std::string_view> cells;  // the requested columns, in the order asked for
};

// Calls `row` for each record of `path` with the cells of `columns` (each
// must be in the header). Errors name the file, and the line where a record
// is short; `row` may return its own error, which stops the reading.
Status ReadCsv(const std::string& path, const std::vector<std::string>& columns,
               const std::function<Status(const CsvRow&)>& row);

// `cell` as a number, without regard to locale; false when it is not one
// (an empty cell is not).
bool ParseNumber(std::string_view cell, double* out);

// "<path>:<line>: column <name>: expected a number, got "<cell>"".
Status BadCell(const std::string& path, const CsvRow& row, const std::string& column, std::string_view cell);

}  // namespace fleetsim::report
