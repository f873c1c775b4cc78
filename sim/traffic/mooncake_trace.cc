// nlohmann::json is used here only, to parse one line at a time; nothing of
// it leaks into the header.
#include "sim/traffic/mooncake_trace.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string_view>
#include <utility>

#include "base/json_parse.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim {
namespace {

using Json = nlohmann::json;

// |timestamp| bound in ms (about 126 years): differences stay within SimTime.
constexpr double kMaxAbsMillis = 4e12;

// A value in a message, quoted; bounded whatever its size (DescribeJson
// visits only what it prints).
std::string Shown(const Json& v) { return QuoteForMessage(DescribeJson(v, 64)); }

}  // namespace

MooncakeTraceReader::MooncakeTraceReader(std::unique_ptr<LineReader> lines)
    : LineTraceReaderOf(std::move(lines)) {}
MooncakeTraceReader::~MooncakeTraceReader() = default;

Status MooncakeTraceReader::Start(std::unique_ptr<LineReader> lines,
                                  std::unique_ptr<RequestSource>* out) {
  // JSONL has no header; the first line is checked by the first Next.
  out->reset(new MooncakeTraceReader(std::move(lines)));
  return Status::Ok();
}

bool MooncakeTraceReader::ParseLine(std::string_view line, Request* out, int64_t* raw_ns) {
  Json j;
  JsonParseOptions options;
  options.single_line = true;  // ErrorAt names the line; the message gives the column
  const Status parsed = ParseJson(line, &j, options);
  if (!parsed.ok()) return Fail(lines_->ErrorAt(parsed.message()));
  if (!j.is_object()) return Fail(lines_->ErrorAt("expected a JSON object, got " + Shown(j)));

  auto field = [&](const char* key, const Json** v) {
    auto it = j.find(key);
    if (it == j.end()) {
      Fail(lines_->ErrorAt(std::string("missing \"") + key + "\""));
      return false;
    }
    *v = &*it;
    return true;
  };
  const Json* ts;
  if (!field("timestamp", &ts)) return false;
  if (ts->is_number_integer()) {
    // Signed and unsigned both land here; compare in the type they hold.
    constexpr int64_t kMax = static_cast<int64_t>(kMaxAbsMillis);
    int64_t ms;
    if (ts->is_number_unsigned()) {
      const uint64_t u = ts->get<uint64_t>();
      ms = u < static_cast<uint64_t>(kMax) ? static_cast<int64_t>(u) : kMax;
    } else {
      ms = ts->get<int64_t>();
    }
    if (!(ms > -kMax && ms < kMax)) {
      return Fail(lines_->ErrorAt("timestamp: out of range, got " + Shown(*ts)));
    }
    *raw_ns = ms * kMillisecond;
  } else if (ts->is_number_float()) {
    const double ms = ts->get<double>();
    if (!std::isfinite(ms) || !(std::fabs(ms) < kMaxAbsMillis)) {
      return Fail(lines_->ErrorAt("timestamp: out of range, got " + Shown(*ts)));
    }
    *raw_ns = MillisToTime(ms);
  } else {
    return Fail(lines_->ErrorAt("timestamp: expected a number of milliseconds, got " + Shown(*ts)));
  }

  auto tokens = [&](const char* key, int32_t* n) {
    const Json* v;
    if (!field(key, &v)) return false;
    int64_t val = 0;
    bool ok = v->is_number_integer();
    if (ok && v->is_number_unsigned()) {
      const uint64_t u = v->get<uint64_t>();
      ok = u <= static_cast<uint64_t>(std::numeric_limits<int32_t>::max());
      val = static_cast<int64_t>(u);
    } else if (ok) {
      val = v->get<int64_t>();
    }
    if (!ok || val < 1 || val > std::numeric_limits<int32_t>::max()) {
      Fail(lines_->ErrorAt(std::string(key) + ": expected a positive integer, got " + Shown(*v)));
      return false;
    }
    *n = static_cast<int32_t>(val);
    return true;
  };
  if (!tokens("input_length", &out->prompt_tokens)) return false;
  if (!tokens("output_length", &out->output_tokens)) return false;

  out->prefix_blocks.clear();
  auto ids = j.find("hash_ids");
  if (ids != j.end()) {
    if (!ids->is_array()) {
      return Fail(lines_->ErrorAt("hash_ids: expected an array of non-negative integers, got " +
                                  Shown(*ids)));
    }
    out->prefix_blocks.reserve(ids->size());
    for (size_t k = 0; k < ids->size(); ++k) {
      const Json& id = (*ids)[k];
      if (!id.is_number_unsigned()) {
        return Fail(lines_->ErrorAt("hash_ids[" + std::to_string(k) +
                                    "]: expected a non-negative integer, got " + Shown(id)));
      }
      out->prefix_blocks.push_back(id.get<uint64_t>());
    }
  }
  return true;
}

bool MooncakeTraceReader::Next(Request* out) {
  if (failed_) return false;
  std::string_view line;
  if (!lines_->NextRecord(&line)) {
    if (!lines_->status().ok()) return Fail(lines_->status());
    if (!started_) return Fail(lines_->ErrorAtLine(1, "empty file; expected JSON lines"));
    return false;
  }
  int64_t ns;
  if (!ParseLine(line, out, &ns)) return false;
  if (!started_) {
    started_ = true;
    first_ns_ = ns;
  } else if (ns < prev_ns_) {
    return Fail(lines_->ErrorAt("timestamp: earlier than the previous line's (line " +
                                std::to_string(prev_line_) + "); the trace must be sorted by time"));
  }
  prev_ns_ = ns;
  prev_line_ = lines_->line_number();

  out->id = next_id_++;
  out->arrival = ns - first_ns_;
  out->priority = 0;
  out->session_id = -1;
  out->model.clear();
  out->prefix_block_tokens = kMooncakeBlockTokens;
  return true;
}

}  // namespace fleetsim
