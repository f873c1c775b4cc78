// GenAI-Perf's profile_export.json, written by perf_analyzer
// (src/profile_data_exporter.cc) and read by GenAI-Perf
// (genai_perf/profile_data_parser/llm_profile_data_parser.py):
//   {"experiments": [{"experiment": {"mode": "concurrency"|"request_rate", "value": N},
//                     "requests": [{"timestamp": ns, "request_inputs": {...},
//                                   "response_timestamps": [ns, ...],
//                                   "response_outputs": [{...}, ...]}],
//                     "window_boundaries": [...]}],
//    "version": "...", "service_kind": "openai", "endpoint": "v1/chat/completions"}
// Times are system_clock ns. GenAI-Perf counts tokens by running a tokenizer
// over the prompt and response texts; fleetsim has none, so it takes counts
// from what the file does hold: an OpenAI response's usage (prompt_tokens,
// completion_tokens; sent when the client asked for include_usage), or
// triton_c_api's input_ids/output_ids. Otherwise output tokens are the
// number of responses carrying text (exact at one token a chunk) and input
// tokens are unknown. As GenAI-Perf does, responses without text (the role
// chunk, [DONE], an empty delta) are not tokens, and TTFT and E2E run from
// the request to the first and last response with text.
#include <algorithm>
#include <filesystem>
#include <limits>

#include "base/json_parse.h"
#include "sim/observe/readers.h"
#include "sim/traffic/text_fields.h"

namespace fleetsim::observe_internal {
namespace {

constexpr int64_t kMaxNs = std::numeric_limits<int64_t>::max();

enum class ServiceKind { kOpenAi, kTritonText, kTritonCApi };

// What one response carried.
struct Chunk {
  bool text = false;   // generated text (or output ids)
  bool error = false;  // an SSE error event
  int32_t ids = 0;     // triton_c_api output ids
  std::optional<int64_t> prompt_tokens, completion_tokens;  // OpenAI usage
};

std::optional<int64_t> CountMember(const Json& obj, const char* key) {
  const Json* v = Member(obj, key);
  if (v == nullptr || !v->is_number_integer() || v->get<int64_t>() < 0) return std::nullopt;
  return v->get<int64_t>();
}

bool NonEmptyString(const Json* v) { return v != nullptr && v->is_string() && !v->get_ref<const std::string&>().empty(); }

// One OpenAI body (a streamed event's data or a whole response) into *c.
void ReadOpenAiBody(const Json& body, Chunk* c) {
  if (!body.is_object()) return;
  if (Member(body, "error") != nullptr) c->error = true;
  if (const Json* choices = Member(body, "choices"); choices != nullptr && choices->is_array() && !choices->empty()) {
    const Json& choice = (*choices)[0];
    const Json* delta = Member(choice, "delta");
    const Json* message = Member(choice, "message");
    if (NonEmptyString(Member(choice, "text")) ||
        (delta != nullptr && (NonEmptyString(Member(*delta, "content")) ||
                              NonEmptyString(Member(*delta, "reasoning_content")))) ||
        (message != nullptr && NonEmptyString(Member(*message, "content")))) {
      c->text = true;
    }
  }
  if (const Json* usage = Member(body, "usage")) {
    if (auto n = CountMember(*usage, "prompt_tokens")) c->prompt_tokens = n;
    if (auto n = CountMember(*usage, "completion_tokens")) c->completion_tokens = n;
  }
}

// An OpenAI response string: server-sent events ("data: {...}" lines, several
// per response when they arrived together) or, unstreamed, one JSON body.
// What the server sent is read leniently: a fragment that is not JSON (an
// event split across two responses) carries no text, as in GenAI-Perf.
void ReadOpenAiResponse(std::string_view response, Chunk* c, int64_t* fragments) {
  bool saw_data = false;
  size_t pos = 0;
  while (pos <= response.size()) {
    size_t end = response.find('\n', pos);
    if (end == std::string_view::npos) end = response.size();
    std::string_view line = TrimSpaces(response.substr(pos, end - pos));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    pos = end + 1;
    if (line.rfind("data:", 0) != 0) continue;
    saw_data = true;
    const std::string_view data = TrimSpaces(line.substr(5));
    if (data.empty() || data == "[DONE]") continue;
    Json body;
    if (!ParseJson(data, &body).ok()) {
      ++*fragments;
      continue;
    }
    ReadOpenAiBody(body, c);
  }
  const std::string_view whole = TrimSpaces(response);
  if (!saw_data && !whole.empty()) {
    Json body;
    if (ParseJson(whole, &body).ok()) {
      ReadOpenAiBody(body, c);
    } else {
      ++*fragments;
    }
  }
}

Status ReadChunk(const Where& w, ServiceKind kind, const Json& output, const std::string& path, Chunk* c,
                 int64_t* fragments) {
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, output, path));
  switch (kind) {
    case ServiceKind::kOpenAi: {
      const Json* response = Member(output, "response");
      if (response == nullptr) return Status::Ok();  // an empty response
      std::string text;
      FLEETSIM_RETURN_IF_ERROR(ReadString(w, *response, Join(path, "response"), &text));
      ReadOpenAiResponse(text, c, fragments);
      return Status::Ok();
    }
    case ServiceKind::kTritonText:
      c->text = NonEmptyString(Member(output, "text_output"));
      return Status::Ok();
    case ServiceKind::kTritonCApi: {
      const Json* ids = Member(output, "output_ids");
      if (ids == nullptr || (ids->is_string() && ids->get_ref<const std::string&>().empty())) return Status::Ok();
      if (ids->is_array()) {
        c->ids = static_cast<int32_t>(std::min<size_t>(ids->size(), std::numeric_limits<int32_t>::max()));
      } else if (ids->is_number_integer()) {
        c->ids = 1;
      } else {
        return w.Error(Join(path, "output_ids"), "expected an integer or an array of them, got " + Shown(*ids));
      }
      c->text = c->ids > 0;
      return Status::Ok();
    }
  }
  return Status::Ok();
}

// How a request's lengths were found, for the run's flags and notes.
struct LengthSources {
  int64_t input_unknown = 0;   // ok requests without a prompt count
  int64_t output_chunks = 0;   // ok requests whose output is counted in chunks
  int64_t fragments = 0;       // response fragments that were not JSON
};

Status ReadRequest(const Where& w, ServiceKind kind, const Json& req, const std::string& path, ObservedRequest* r,
                   int64_t* start_ns, std::string* model, LengthSources* src) {
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, req, path));
  const Json *ts, *stamps, *outputs;
  FLEETSIM_RETURN_IF_ERROR(Required(w, req, path, "timestamp", &ts));
  FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, *ts, Join(path, "timestamp"), 0, kMaxNs, start_ns));
  FLEETSIM_RETURN_IF_ERROR(Required(w, req, path, "response_timestamps", &stamps));
  FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *stamps, Join(path, "response_timestamps")));
  FLEETSIM_RETURN_IF_ERROR(Required(w, req, path, "response_outputs", &outputs));
  FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *outputs, Join(path, "response_outputs")));
  if (outputs->size() != stamps->size()) {
    return w.Error(Join(path, "response_outputs"), "has " + std::to_string(outputs->size()) +
                                                       " entries but response_timestamps has " +
                                                       std::to_string(stamps->size()) + " (one output per response)");
  }
  std::optional<int64_t> prompt_tokens, completion_tokens;
  if (const Json* inputs = Member(req, "request_inputs")) {
    if (kind == ServiceKind::kTritonCApi) {
      if (const Json* ids = Member(*inputs, "input_ids"); ids != nullptr && ids->is_array()) {
        prompt_tokens = static_cast<int64_t>(ids->size());
      }
    } else if (kind == ServiceKind::kOpenAi && model->empty()) {
      // The payload is the request body as a JSON string; its "model" names
      // the model served.
      const Json* payload = Member(*inputs, "payload");
      Json body;
      if (payload != nullptr && payload->is_string() && ParseJson(payload->get<std::string>(), &body).ok() &&
          NonEmptyString(Member(body, "model"))) {
        *model = body["model"].get<std::string>();
      }
    }
  }

  std::vector<int64_t> text_ns;
  int64_t ids = 0;
  bool error = false;
  int64_t prev = *start_ns;
  for (size_t k = 0; k < stamps->size(); ++k) {
    const std::string stamp_path = Index(Join(path, "response_timestamps"), k);
    int64_t t;
    FLEETSIM_RETURN_IF_ERROR(ReadInteger(w, (*stamps)[k], stamp_path, 0, kMaxNs, &t));
    if (t < prev) {
      return w.Error(stamp_path, k == 0 ? "earlier than the request's timestamp" : "earlier than the response before it");
    }
    prev = t;
    Chunk c;
    FLEETSIM_RETURN_IF_ERROR(ReadChunk(w, kind, (*outputs)[k], Index(Join(path, "response_outputs"), k), &c,
                                       &src->fragments));
    error = error || c.error;
    if (c.text) text_ns.push_back(t);
    ids += c.ids;
    if (c.prompt_tokens) prompt_tokens = c.prompt_tokens;
    if (c.completion_tokens) completion_tokens = c.completion_tokens;
  }
  auto clamp = [](int64_t n) { return static_cast<int32_t>(std::min<int64_t>(n, std::numeric_limits<int32_t>::max())); };
  r->input_tokens = clamp(prompt_tokens.value_or(0));
  r->ok = !error && !text_ns.empty();
  if (!r->ok) return Status::Ok();
  if (!prompt_tokens || *prompt_tokens == 0) ++src->input_unknown;
  if (completion_tokens && *completion_tokens > 0) {
    r->output_tokens = clamp(*completion_tokens);
  } else if (kind == ServiceKind::kTritonCApi) {
    r->output_tokens = clamp(ids);
  } else {
    r->output_tokens = clamp(static_cast<int64_t>(text_ns.size()));
    ++src->output_chunks;
  }
  r->ttft_s = static_cast<double>(text_ns.front() - *start_ns) * 1e-9;
  r->e2e_s = static_cast<double>(text_ns.back() - *start_ns) * 1e-9;
  for (size_t k = 1; k < text_ns.size(); ++k) r->itl_s.push_back(static_cast<double>(text_ns[k] - text_ns[k - 1]) * 1e-9);
  return Status::Ok();
}

Status ReadMode(const Where& w, const Json& exp, const std::string& path, ObservedRun* run) {
  const Json *e, *mode, *value;
  FLEETSIM_RETURN_IF_ERROR(Required(w, exp, path, "experiment", &e));
  const std::string epath = Join(path, "experiment");
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, *e, epath));
  FLEETSIM_RETURN_IF_ERROR(Required(w, *e, epath, "mode", &mode));
  FLEETSIM_RETURN_IF_ERROR(Required(w, *e, epath, "value", &value));
  std::string m;
  FLEETSIM_RETURN_IF_ERROR(ReadString(w, *mode, Join(epath, "mode"), &m));
  if (m == "concurrency") {
    int64_t n;
    FLEETSIM_RETURN_IF_ERROR(
        ReadInteger(w, *value, Join(epath, "value"), 1, std::numeric_limits<int32_t>::max(), &n));
    run->mode = LoadMode::kClosed;
    run->max_concurrency = static_cast<int32_t>(n);
  } else if (m == "request_rate") {
    double rate;
    FLEETSIM_RETURN_IF_ERROR(ReadNumber(w, *value, Join(epath, "value"), &rate));
    if (!(rate > 0)) return w.Error(Join(epath, "value"), "expected a rate > 0, got " + Shown(*value));
    run->mode = LoadMode::kOpen;
    run->request_rate_per_s = rate;
  } else {
    return w.Error(Join(epath, "mode"), "unknown mode " + Shown(*mode) + " (known: concurrency, request_rate)");
  }
  return Status::Ok();
}

}  // namespace

Status ReadGenaiPerfExport(const ReadContext& ctx, const Json& doc, std::vector<ObservedRun>* out) {
  const Where w(ctx.path + ": ");
  FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, doc, ""));
  const Json* kind_json;
  FLEETSIM_RETURN_IF_ERROR(Required(w, doc, "", "service_kind", &kind_json));
  std::string kind_name, endpoint, version;
  FLEETSIM_RETURN_IF_ERROR(ReadString(w, *kind_json, "service_kind", &kind_name));
  ServiceKind kind;
  if (kind_name == "openai") {
    kind = ServiceKind::kOpenAi;
  } else if (kind_name == "triton" || kind_name == "dynamic_grpc") {
    kind = ServiceKind::kTritonText;
  } else if (kind_name == "triton_c_api") {
    kind = ServiceKind::kTritonCApi;
  } else {
    return w.Error("service_kind", "not read: " + Shown(*kind_json) +
                                       " (known: openai, triton, dynamic_grpc, triton_c_api)");
  }
  FLEETSIM_RETURN_IF_ERROR(OptionalString(w, doc, "", "endpoint", &endpoint));
  FLEETSIM_RETURN_IF_ERROR(OptionalString(w, doc, "", "version", &version));
  const Json* experiments;
  FLEETSIM_RETURN_IF_ERROR(Required(w, doc, "", "experiments", &experiments));
  FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *experiments, "experiments"));
  if (experiments->empty()) return w.Error("experiments", "empty");

  for (size_t i = 0; i < experiments->size(); ++i) {
    const std::string path = Index("experiments", i);
    const Json& exp = (*experiments)[i];
    FLEETSIM_RETURN_IF_ERROR(ExpectObject(w, exp, path));
    ObservedRun run;
    run.format = ObservedFormat::kGenaiPerf;
    run.tool = "genai-perf";
    run.tool_version = version.empty() ? "" : "perf_analyzer " + version;
    run.backend = endpoint.empty() ? kind_name : kind_name + " " + endpoint;
    if (experiments->size() > 1) run.run_label = path;
    FLEETSIM_RETURN_IF_ERROR(ReadMode(w, exp, path, &run));
    const Json* requests;
    FLEETSIM_RETURN_IF_ERROR(Required(w, exp, path, "requests", &requests));
    FLEETSIM_RETURN_IF_ERROR(ExpectArray(w, *requests, Join(path, "requests")));
    std::vector<int64_t> starts_ns(requests->size());
    run.requests.resize(requests->size());
    LengthSources src;
    for (size_t j = 0; j < requests->size(); ++j) {
      FLEETSIM_RETURN_IF_ERROR(ReadRequest(w, kind, (*requests)[j], Index(Join(path, "requests"), j),
                                           &run.requests[j], &starts_ns[j], &run.model, &src));
    }
    if (!starts_ns.empty()) {
      const int64_t first = *std::min_element(starts_ns.begin(), starts_ns.end());
      for (size_t j = 0; j < starts_ns.size(); ++j)
        run.requests[j].start_s = static_cast<double>(starts_ns[j] - first) * 1e-9;
    }
    if (src.input_unknown > 0) {
      run.input_tokens_recorded = false;
      run.notes.push_back(std::to_string(src.input_unknown) +
                          " requests without a prompt length (no usage in the responses; GenAI-Perf tokenizes "
                          "the prompt itself): input tokens 0");
    }
    if (src.output_chunks > 0) {
      run.output_tokens_exact = false;
      run.notes.push_back(std::to_string(src.output_chunks) +
                          " requests' output lengths counted as responses with text (no usage): exact only at one "
                          "token a chunk");
    }
    if (src.fragments > 0) {
      run.notes.push_back(std::to_string(src.fragments) + " response fragments that were not JSON, taken as no text");
    }
    if (ctx.options.read_companion && experiments->size() == 1) {
      const std::filesystem::path p(ctx.path);
      FLEETSIM_RETURN_IF_ERROR(
          ReadCompanionSummary((p.parent_path() / (p.stem().string() + "_genai_perf.json")).string(), &run));
    }
    out->push_back(std::move(run));
  }
  return Status::Ok();
}

}  // namespace fleetsim::observe_internal
