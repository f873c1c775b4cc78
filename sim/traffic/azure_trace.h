// AzureTraceReader: the Azure LLM inference traces (Azure/AzurePublicDataset),
// CSV with header TIMESTAMP,ContextTokens,GeneratedTokens. Both the 2023
// files ("2023-11-16 18:17:03.9799600", naive) and the 2024 week-long files
// ("2024-05-10 00:00:00.009930+00:00") are read; see ParseTimestamp.
//
// Streamed: one row per Next. Arrival = row timestamp - first row timestamp,
// exact to the nanosecond. ContextTokens -> prompt_tokens, GeneratedTokens ->
// output_tokens; ids count data rows from 0.
#pragma once

#include <istream>
#include <memory>
#include <string>

#include "base/status.h"
#include "sim/traffic/arrival_order.h"
#include "sim/traffic/line_reader.h"
#include "sim/traffic/line_trace_reader.h"
#include "sim/traffic/source.h"

namespace fleetsim {

class AzureTraceReader final : public LineTraceReaderOf<AzureTraceReader> {
 public:
  // Opens the file and checks the header. Errors: `cannot open trace "path":
  // <strerror>`, or `path:1: ...` for a missing or wrong header.
  // Open(path), and FromStream(name, stream) for tests and fuzzers, come
  // from LineTraceReaderOf.

  // A row error (column count, token counts, timestamp, time going
  // backwards, blank line) ends the stream with status `path:line: what`.
  bool Next(Request* out) override;

 private:
  friend class LineTraceReaderOf<AzureTraceReader>;
  explicit AzureTraceReader(std::unique_ptr<LineReader> lines) : LineTraceReaderOf(std::move(lines)) {}
  static Status Start(std::unique_ptr<LineReader> lines, std::unique_ptr<RequestSource>* out);

  ArrivalOrder order_;  // epoch ns, arrivals from the first row
};

}  // namespace fleetsim
