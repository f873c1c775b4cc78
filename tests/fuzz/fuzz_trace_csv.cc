// libFuzzer target: the plain CSV trace reader, and the length-CSV loader
// that shares its field parsing, must answer any input with requests and a
// Status, never a crash, hang or sanitizer report.
#include <sstream>

#include "sim/traffic/csv_trace.h"
#include "sim/traffic/length_table.h"
#include "tests/fuzz/trace_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fleetsim::fuzz::FuzzReader<fleetsim::CsvTraceReader>(data, size, "fuzz.csv");

  std::string text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<fleetsim::LengthTable> table;
  fleetsim::Status s =
      fleetsim::LengthTable::FromStream("fuzz.csv", std::make_unique<std::istringstream>(text), &table);
  if (s.ok()) {
    if (table == nullptr || table->rows().empty()) __builtin_trap();
    for (const auto& row : table->rows())
      if (row.prompt_tokens < 1 || row.output_tokens < 1) __builtin_trap();
  } else if (s.message().empty()) {
    __builtin_trap();
  }
  return 0;
}
