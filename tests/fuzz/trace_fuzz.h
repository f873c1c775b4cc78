// Shared by the trace-reader fuzz targets: feed the input to a reader
// through an istringstream (the same code path as a file), drain it, and
// trap on any broken RequestSource contract so libFuzzer reports it like a
// crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <sstream>
#include <string>

#include "sim/traffic/source.h"

namespace fleetsim::fuzz {

inline void DrainAndCheck(RequestSource& src) {
  Request r;
  SimTime prev = 0;
  uint64_t n = 0;
  while (src.Next(&r)) {
    if (r.id != n) __builtin_trap();
    if (r.arrival < prev || (n == 0 && r.arrival != 0)) __builtin_trap();
    if (r.prompt_tokens < 1 || r.output_tokens < 1) __builtin_trap();
    prev = r.arrival;
    ++n;
  }
  // An error must say where and what, on one line; a stream that ended
  // stays ended.
  if (!src.status().ok() && src.status().message().empty()) __builtin_trap();
  if (src.status().message().find('\n') != std::string::npos) __builtin_trap();
  if (src.Next(&r)) __builtin_trap();
}

// Runs Reader::FromStream over the input and checks the outcome.
template <typename Reader>
void FuzzReader(const uint8_t* data, size_t size, const char* name) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<RequestSource> src;
  Status s = Reader::FromStream(name, std::make_unique<std::istringstream>(text), &src);
  if (!s.ok()) {
    if (s.message().empty() || src != nullptr) __builtin_trap();
    return;
  }
  DrainAndCheck(*src);
}

}  // namespace fleetsim::fuzz
