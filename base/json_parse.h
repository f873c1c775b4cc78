// Reading JSON from a user's file: the one parse every loader uses (scenario,
// perf profile, catalogue entries, Mooncake JSONL lines), with a nesting
// limit and bounded messages, and the one way a JSON value is shown in an
// error message. Include only from a library's JSON edge (.cc files that link
// fleetsim_json); JSON types never cross into the engine.
#pragma once

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace fleetsim {

// Deepest nesting of arrays and objects accepted. nlohmann's parser keeps its
// own stack on the heap, but dump(), copies and comparisons recurse once per
// level: a document nested 100,000 deep parsed fine and then overflowed the
// stack in the first message that printed it. No file fleetsim reads needs
// more than a handful of levels; 256 keeps any recursion over a parsed value
// a few tens of KB of stack, even under AddressSanitizer.
inline constexpr int kMaxJsonDepth = 256;

// Longest detail (nlohmann's own description of a syntax error, which quotes
// the offending token) kept in a message: a 1 MB unterminated string must not
// become a 1 MB error line.
inline constexpr size_t kMaxJsonDetailChars = 160;

struct JsonParseOptions {
  // Arrays and objects nested deeper than this are refused.
  int max_depth = kMaxJsonDepth;
  // Where an error is: false, "line L, column C" (a document); true,
  // "column C" only (one line of a JSONL file, whose caller names the line).
  bool single_line = false;
  // Python's json module writes a non-finite float as the bare word NaN,
  // Infinity or -Infinity, which is not JSON. True reads each (outside
  // strings) as null, for files written by Python tools; a column in a
  // message after a NaN on the same line is then one further on.
  bool python_non_finite = false;
};

// Parses `text` as one JSON document into *out; never throws. On failure the
// message says what and where, without the origin (callers prefix their file
// or file:line), and is one line of bounded length:
//   invalid JSON at line 4, column 12: syntax error while parsing value - ...
//   invalid JSON at line 1, column 257: nested deeper than 256 levels
//   invalid JSON: number overflow parsing '1E400'
// Columns count bytes from 1, as nlohmann does. Whatever the text, the check
// costs one pass over it and builds nothing deeper than max_depth.
Status ParseJson(std::string_view text, nlohmann::json* out, const JsonParseOptions& options = {});

// `v` as compact JSON for a message, cut to `max_chars` characters (ending in
// "..." when cut). It visits only what it prints, so a value with a million
// elements or a megabyte string costs no more than a short one, and its
// recursion is bounded by max_chars whatever the value's depth. Invalid UTF-8
// is replaced, never thrown about.
std::string DescribeJson(const nlohmann::json& v, size_t max_chars = 40);

}  // namespace fleetsim
