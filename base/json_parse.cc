#include "base/json_parse.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

namespace fleetsim {
namespace {

using nlohmann::json;

// Tells, byte by byte in order, which bytes of a JSON text are structure:
// outside string literals (the quotes themselves count as inside).
class Structure {
 public:
  bool Next(char c) {
    if (in_string_) {
      if (escaped_) {
        escaped_ = false;
      } else if (c == '\\') {
        escaped_ = true;
      } else if (c == '"') {
        in_string_ = false;
      }
      return false;
    }
    if (c == '"') in_string_ = true;
    return !in_string_;
  }

 private:
  bool in_string_ = false, escaped_ = false;
};

// Offset of the first '[' or '{' that opens level max_depth + 1, counting
// brackets outside strings; npos when there is none. For text that the JSON
// lexer accepts up to that offset this is exactly the nesting depth, since
// strings are the only place a bracket is not structure.
size_t FirstTooDeep(std::string_view text, int max_depth) {
  int depth = 0;
  Structure structure;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!structure.Next(c)) continue;
    if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::string_view::npos;
}

// `text` with Python's NaN, Infinity and -Infinity outside strings replaced
// by null (padded with spaces where the word is longer); false when it has
// none, leaving *out untouched.
bool ReplacePythonNonFinite(std::string_view text, std::string* out) {
  static constexpr std::pair<std::string_view, std::string_view> kWords[] = {
      {"-Infinity", "null     "}, {"Infinity", "null    "}, {"NaN", "null"}};
  Structure structure;
  size_t copied = 0;
  bool replaced = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (!structure.Next(c) || (c != '-' && c != 'I' && c != 'N')) continue;
    for (const auto& [word, with] : kWords) {
      if (text.substr(i, word.size()) != word) continue;
      if (!replaced) out->clear();
      replaced = true;
      out->append(text.data() + copied, i - copied);
      *out += with;
      copied = i + word.size();
      i = copied - 1;
      break;
    }
  }
  if (replaced) out->append(text.data() + copied, text.size() - copied);
  return replaced;
}

// "line L, column C" (or "column C") of the byte at `offset`, both from 1.
std::string Where(std::string_view text, size_t offset, bool single_line) {
  if (single_line) return "column " + std::to_string(offset + 1);
  const size_t end = std::min(offset, text.size());
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

// At most kMaxJsonDetailChars of `s`, cut on a UTF-8 character boundary.
std::string Bounded(std::string s) {
  if (s.size() <= kMaxJsonDetailChars) return s;
  size_t cut = kMaxJsonDetailChars - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "...";
}

// nlohmann's what() without its "[json.exception.x.N] " tag and, for a
// syntax error, without its own "parse error at line L, column C: " (the
// caller states the position, counted from the byte offset).
std::string Detail(const json::exception& e) {
  std::string what = e.what();
  const size_t tag = what.find("] ");
  if (tag != std::string::npos) what = what.substr(tag + 2);
  const size_t at = what.find("column ");
  const size_t colon = at == std::string::npos ? at : what.find(": ", at);
  if (what.rfind("parse error", 0) == 0 && colon != std::string::npos) what = what.substr(colon + 2);
  return Bounded(what);
}

// A SAX consumer that builds nothing and keeps the first syntax error: used
// to tell whether text before a too-deep bracket is itself broken (that
// error comes first, as the full parse would report it).
class FirstError : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    failed = true;
    byte = position;
    detail = Detail(ex);
    return false;
  }

  bool failed = false;
  size_t byte = 0;  // as nlohmann counts: characters read, so offset + 1
  std::string detail;
};

void AppendString(const std::string& s, size_t room, std::string* out) {
  // Escaping at most doubles-and-a-bit each byte; room + 1 bytes are enough
  // to know the result will be cut.
  const std::string part = s.size() > room + 1 ? s.substr(0, room + 1) : s;
  *out += json(part).dump(-1, ' ', false, json::error_handler_t::replace);
}

// Appends `v` until `out` is longer than `limit`; never visits more.
void Describe(const json& v, size_t limit, std::string* out) {
  if (out->size() > limit) return;
  if (v.is_object()) {
    *out += '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out->size() <= limit; ++it) {
      if (!first) *out += ',';
      first = false;
      AppendString(it.key(), limit - std::min(limit, out->size()), out);
      *out += ':';
      Describe(it.value(), limit, out);
    }
    *out += '}';
  } else if (v.is_array()) {
    *out += '[';
    bool first = true;
    for (auto it = v.begin(); it != v.end() && out->size() <= limit; ++it) {
      if (!first) *out += ',';
      first = false;
      Describe(*it, limit, out);
    }
    *out += ']';
  } else if (v.is_string()) {
    AppendString(v.get_ref<const std::string&>(), limit - std::min(limit, out->size()), out);
  } else {
    *out += v.dump();  // a number, boolean, null or binary: short
  }
}

}  // namespace

Status ParseJson(std::string_view text, json* out, const JsonParseOptions& options) {
  std::string fixed;
  if (options.python_non_finite && ReplacePythonNonFinite(text, &fixed)) {
    JsonParseOptions plain = options;
    plain.python_non_finite = false;
    return ParseJson(fixed, out, plain);
  }
  const int max_depth = std::max(1, options.max_depth);
  const size_t deep = FirstTooDeep(text, max_depth);
  if (deep != std::string_view::npos) {
    // A syntax error before the deep bracket is the first thing wrong.
    FirstError prefix;
    json::sax_parse(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(deep), &prefix);
    if (prefix.failed && prefix.byte >= 1 && prefix.byte <= deep)
      return Status::Invalid("invalid JSON at " + Where(text, prefix.byte - 1, options.single_line) + ": " +
                             prefix.detail);
    return Status::Invalid("invalid JSON at " + Where(text, deep, options.single_line) + ": nested deeper than " +
                           std::to_string(max_depth) + " levels");
  }
  try {
    *out = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // e.byte counts the characters read: the offending one's offset + 1, or
    // one past the end at end of input.
    const size_t offset = e.byte == 0 ? 0 : e.byte - 1;
    return Status::Invalid("invalid JSON at " + Where(text, offset, options.single_line) + ": " + Detail(e));
  } catch (const json::exception& e) {
    // out_of_range.406: a number literal too large for a double (1E400).
    return Status::Invalid("invalid JSON: " + Detail(e));
  }
  return Status::Ok();
}

std::string DescribeJson(const json& v, size_t max_chars) {
  std::string s;
  Describe(v, max_chars, &s);
  if (s.size() > max_chars) {
    size_t cut = max_chars >= 3 ? max_chars - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    s = s.substr(0, cut) + "...";
  }
  return s;
}

}  // namespace fleetsim
