// libFuzzer target: the ServeGen source must answer any client file (and
// any length dataset) with arrivals and a Status, never a crash, hang or
// sanitizer report. The input is the client's trace CSV, optionally followed
// by a NUL byte and a chunk-N-dataset.json for it; without a dataset the
// lengths are fixed. Windows are capped at 10,000 arrivals so that a huge
// rate is an error, not a slow run.
#include <cstring>
#include <memory>
#include <sstream>
#include <string>

#include "sim/traffic/servegen_dataset.h"
#include "sim/traffic/servegen_trace.h"
#include "tests/fuzz/trace_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetsim;
  const char* text = reinterpret_cast<const char*>(data);
  const void* nul = std::memchr(text, '\0', size);
  if (nul == nullptr) {
    fuzz::FuzzReader<ServeGenTraceSource>(data, size, "chunk-0-trace.csv");
    return 0;
  }
  const size_t split = static_cast<size_t>(static_cast<const char*>(nul) - text);
  std::unique_ptr<ServeGenDataset> dataset;
  Status s = ServeGenDataset::FromText("chunk-0-dataset.json", std::string(text + split + 1, size - split - 1),
                                       &dataset);
  if (!s.ok()) {
    if (s.message().empty() || dataset != nullptr) __builtin_trap();
    return 0;
  }
  ServeGenOptions o;
  o.max_window_requests = 10'000;
  std::unique_ptr<RequestSource> src;
  s = ServeGenTraceSource::FromStream("chunk-0-trace.csv", std::make_unique<std::istringstream>(std::string(text, split)),
                                      std::move(dataset), o, Rng(1), &src);
  if (!s.ok()) {
    if (s.message().empty()) __builtin_trap();
    return 0;
  }
  fuzz::DrainAndCheck(*src);
  return 0;
}
