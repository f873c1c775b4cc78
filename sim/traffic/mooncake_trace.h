// MooncakeTraceReader: the Mooncake traces (kvcache-ai/Mooncake,
// FAST25-release/traces), JSON Lines of
//   {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}
// Each hash id names one 512-token block of the prompt; requests share a
// prefix exactly as long as their leading common ids.
//
// Streamed: one line per Next. Arrival = timestamp - first timestamp (ms to
// ns exactly for integer ms). input_length -> prompt_tokens, output_length ->
// output_tokens, hash_ids -> prefix_blocks with prefix_block_tokens = 512
// (hash_ids may be absent: no prefix information). Other keys are ignored.
#pragma once

#include <istream>
#include <memory>
#include <string>

#include "base/status.h"
#include "sim/traffic/line_reader.h"
#include "sim/traffic/line_trace_reader.h"
#include "sim/traffic/source.h"

namespace fleetsim {

// Tokens per Mooncake hash id.
inline constexpr int32_t kMooncakeBlockTokens = 512;

class MooncakeTraceReader final : public LineTraceReaderOf<MooncakeTraceReader> {
 public:
  // Opens the file. Error: `cannot open trace "path": <strerror>`. JSONL has
  // no header, so an empty file shows at the first Next (`path:1: empty file`).
  // Open(path), and FromStream(name, stream) for tests and fuzzers, come
  // from LineTraceReaderOf.
  ~MooncakeTraceReader() override;

  // A bad line (not JSON, missing or mistyped key, non-positive length,
  // time going backwards, blank line) ends the stream with `path:line: what`.
  bool Next(Request* out) override;

 private:
  friend class LineTraceReaderOf<MooncakeTraceReader>;
  explicit MooncakeTraceReader(std::unique_ptr<LineReader> lines);
  static Status Start(std::unique_ptr<LineReader> lines, std::unique_ptr<RequestSource>* out);
  // Parses one line into *out (arrival in raw trace ns); false with status_
  // set on error.
  bool ParseLine(std::string_view line, Request* out, int64_t* raw_ns);

  bool started_ = false;
  int64_t first_ns_ = 0;
  int64_t prev_ns_ = 0;
  int64_t prev_line_ = 0;
};

}  // namespace fleetsim
