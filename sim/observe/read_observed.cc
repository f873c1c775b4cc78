// Picking a reader: the format named, or guessed from the extension and the
// top-level keys; then the shared finish (sort by start, rebase to the
// first request, no empty runs).
#include "sim/observe/read_observed.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <sstream>

#include "base/file.h"
#include "sim/observe/readers.h"
#include "sim/traffic/line_reader.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim {

using observe_internal::Json;
using observe_internal::ReadContext;
using observe_internal::Where;

namespace {

constexpr ObservedFormat kFormats[] = {ObservedFormat::kVllm, ObservedFormat::kAiperf, ObservedFormat::kGenaiPerf,
                                       ObservedFormat::kGuidellm, ObservedFormat::kCsv};

std::string FormatList() {
  std::string s;
  for (ObservedFormat f : kFormats) s += (s.empty() ? "" : ", ") + std::string(ObservedFormatName(f));
  return s;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// The first line of `text` that is not blank, without its line ending (and
// a byte order mark); empty when there is none.
std::string_view FirstLine(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!TrimSpaces(line).empty()) return line;
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return {};
}

// The format a JSON object's top-level keys say; the aggregate files of
// AIPerf and GenAI-Perf are refused with the file to pass instead.
Status FormatFromKeys(const Where& w, const Json& doc, ObservedFormat* out) {
  using observe_internal::Member;
  if (!doc.is_object()) return w.Error("", "expected a JSON object at the top, got " + observe_internal::Shown(doc));
  auto has = [&](const char* key) { return doc.contains(key); };
  if (has("experiments")) {
    *out = ObservedFormat::kGenaiPerf;
  } else if (has("benchmarks")) {
    *out = ObservedFormat::kGuidellm;
  } else if (has("metadata") && has("metrics")) {
    *out = ObservedFormat::kAiperf;
  } else if (const Json* config = Member(doc, "input_config")) {
    // GenAI-Perf's configuration names models at its top; AIPerf's under
    // endpoint.
    if (Member(*config, "model_names") == nullptr) {
      return w.Error("", "this is AIPerf's aggregate file (profile_export_aiperf.json); pass the per-request "
                         "profile_export.jsonl beside it");
    }
    return w.Error("", "this is GenAI-Perf's aggregate file (*_genai_perf.json); pass the per-request "
                       "profile_export.json beside it");
  } else if (has("start_times") || has("ttfts") || has("input_lens") || has("request_throughput") ||
             has("median_ttft_ms") || has("mean_ttft_ms")) {
    *out = ObservedFormat::kVllm;
  } else {
    std::string keys;
    int shown = 0;
    for (auto it = doc.begin(); it != doc.end() && shown < 6; ++it, ++shown)
      keys += (keys.empty() ? "" : ", ") + QuoteForMessage(it.key(), 30);
    if (doc.size() > 6) keys += ", ...";
    return w.Error("", "cannot tell which benchmark client wrote this (top-level keys: " +
                           (keys.empty() ? std::string("none") : keys) + "); pass the format (" + FormatList() + ")");
  }
  return Status::Ok();
}

// What the file is and, for a whole JSON document, its parsed value.
struct Sniffed {
  ObservedFormat format = ObservedFormat::kCsv;
  bool json_lines = false;  // one JSON object a line (AIPerf; vLLM with --append-result)
  Json doc;                 // the document, when not json_lines and not csv
};

Status Sniff(const std::string& path, std::string_view text, const std::string& format_name, Sniffed* out) {
  const Where w(path + ": ");
  bool named = !format_name.empty();
  if (named) FLEETSIM_RETURN_IF_ERROR(ParseObservedFormat(format_name, &out->format));
  if (named ? out->format == ObservedFormat::kCsv : EndsWith(path, ".csv")) {
    out->format = ObservedFormat::kCsv;
    return Status::Ok();
  }
  if (named && out->format == ObservedFormat::kAiperf) {
    out->json_lines = true;
    return Status::Ok();
  }
  const std::string_view first = FirstLine(text);
  const std::string_view start = TrimSpaces(first);
  if (start.empty()) return w.Error("", "empty file");
  if (!named && start.front() != '{' && start.front() != '[') {
    if (start.rfind("start_s,", 0) == 0) {
      out->format = ObservedFormat::kCsv;
      return Status::Ok();
    }
    return w.Error("", "cannot tell the format: neither JSON nor a .csv file; pass the format (" + FormatList() + ")");
  }
  const Status whole = observe_internal::ParsePythonJson(text, &out->doc);
  if (whole.ok()) {
    if (named) return Status::Ok();
    FLEETSIM_RETURN_IF_ERROR(FormatFromKeys(w, out->doc, &out->format));
    if (out->format == ObservedFormat::kAiperf) {
      out->doc = Json();  // a file of one record: read it as lines
      out->json_lines = true;
    }
    return Status::Ok();
  }
  // Not one document: JSON lines if its first line is a complete object.
  Json line;
  if (observe_internal::ParsePythonJson(first, &line, /*single_line=*/true).ok() && line.is_object()) {
    if (!named) FLEETSIM_RETURN_IF_ERROR(FormatFromKeys(Where(path + ":1: "), line, &out->format));
    if (out->format == ObservedFormat::kAiperf || out->format == ObservedFormat::kVllm) {
      out->json_lines = true;
      return Status::Ok();
    }
  }
  return whole.WithPrefix(path + ": ");
}

// vLLM with --append-result: one result object a line.
Status ReadVllmLines(const ReadContext& ctx, std::string_view text, std::vector<ObservedRun>* out) {
  LineReader lines(ctx.path, std::make_unique<std::istringstream>(std::string(text)));
  std::string_view line;
  while (lines.NextRecord(&line)) {
    Json doc;
    const Status parsed = observe_internal::ParsePythonJson(line, &doc, /*single_line=*/true);
    if (!parsed.ok()) return lines.ErrorAt(parsed.message());
    ObservedRun run;
    run.run_label = "line " + std::to_string(lines.line_number());
    const Where w(ctx.path + ":" + std::to_string(lines.line_number()) + ": ");
    FLEETSIM_RETURN_IF_ERROR(ReadVllmResult(ctx, w, doc, &run));
    out->push_back(std::move(run));
  }
  return lines.status();
}

// Sorts by start (stable: ties keep file order) and rebases so the first
// request starts at 0.
Status FinishRun(const std::string& path, ObservedRun* run) {
  run->source_file = path;
  if (!run->per_request_timing) return Status::Ok();
  if (run->requests.empty()) {
    return Status::Invalid(path + ": " + (run->run_label.empty() ? "" : run->run_label + ": ") +
                           "no requests to read");
  }
  std::stable_sort(run->requests.begin(), run->requests.end(),
                   [](const ObservedRequest& a, const ObservedRequest& b) { return a.start_s < b.start_s; });
  const double first = run->requests.front().start_s;
  for (ObservedRequest& r : run->requests) r.start_s -= first;
  return Status::Ok();
}

}  // namespace

const char* LoadModeName(LoadMode m) {
  switch (m) {
    case LoadMode::kUnknown: return "unknown";
    case LoadMode::kOpen: return "open loop";
    case LoadMode::kClosed: return "closed loop";
    case LoadMode::kTrace: return "trace replay";
  }
  return "unknown";
}

const char* ObservedFormatName(ObservedFormat f) {
  switch (f) {
    case ObservedFormat::kVllm: return "vllm";
    case ObservedFormat::kAiperf: return "aiperf";
    case ObservedFormat::kGenaiPerf: return "genaiperf";
    case ObservedFormat::kGuidellm: return "guidellm";
    case ObservedFormat::kCsv: return "csv";
  }
  return "csv";
}

Status ParseObservedFormat(std::string_view name, ObservedFormat* out) {
  for (ObservedFormat f : kFormats) {
    if (name == ObservedFormatName(f)) {
      *out = f;
      return Status::Ok();
    }
  }
  return Status::Invalid("unknown format " + QuoteForMessage(name) + " (known: " + FormatList() + ")");
}

Status DetectObservedFormat(const std::string& path, ObservedFormat* out) {
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "benchmark file", &text));
  Sniffed s;
  FLEETSIM_RETURN_IF_ERROR(Sniff(path, text, "", &s));
  *out = s.format;
  return Status::Ok();
}

Status ReadObservedText(const std::string& path, std::string_view text, const ReadObservedOptions& options,
                        std::vector<ObservedRun>* out) {
  out->clear();
  Sniffed s;
  FLEETSIM_RETURN_IF_ERROR(Sniff(path, text, options.format, &s));
  const ReadContext ctx{path, options};
  std::vector<ObservedRun> runs;
  Status st;
  switch (s.format) {
    case ObservedFormat::kVllm:
      if (s.json_lines) {
        st = ReadVllmLines(ctx, text, &runs);
      } else {
        runs.emplace_back();
        st = ReadVllmResult(ctx, Where(path + ": "), s.doc, &runs.back());
      }
      break;
    case ObservedFormat::kAiperf: st = ReadAiperfExport(ctx, text, &runs); break;
    case ObservedFormat::kGenaiPerf: st = ReadGenaiPerfExport(ctx, s.doc, &runs); break;
    case ObservedFormat::kGuidellm: st = ReadGuidellmReport(ctx, s.doc, &runs); break;
    case ObservedFormat::kCsv: st = ReadObservedCsv(ctx, text, &runs); break;
  }
  FLEETSIM_RETURN_IF_ERROR(st);
  for (ObservedRun& run : runs) FLEETSIM_RETURN_IF_ERROR(FinishRun(path, &run));
  *out = std::move(runs);
  return Status::Ok();
}

Status ReadObservedFile(const std::string& path, const ReadObservedOptions& options, std::vector<ObservedRun>* out) {
  out->clear();
  std::string text;
  FLEETSIM_RETURN_IF_ERROR(ReadWholeFile(path, "benchmark file", &text));
  return ReadObservedText(path, text, options, out);
}

namespace observe_internal {

Status WithoutPerRequestTiming(const ReadContext& ctx, const std::string& why, const std::string& fix,
                               ObservedRun* run) {
  if (!ctx.options.allow_aggregates) {
    return Status::Invalid(ctx.path + ": " + (run->run_label.empty() ? "" : run->run_label + ": ") + why + "; " +
                           fix + ", or read its aggregates alone with --allow-aggregates");
  }
  run->per_request_timing = false;
  run->requests.clear();
  run->notes.push_back(why + ": aggregates only");
  return Status::Ok();
}

}  // namespace observe_internal
}  // namespace fleetsim
