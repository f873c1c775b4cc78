// CompletionServer: live mode's OpenAI-compatible endpoint (`fleetsim live
// --serve`), so that the benchmark clients that drive real servers (vllm
// bench serve, AIPerf, GuideLLM) can drive live mode the same way.
//
//   GET  /health, /v1/models
//   POST /v1/completions, /v1/chat/completions   (stream true or false)
//
// Each completion becomes one Request of the run: its prompt length is the
// prompt's token count (a list of token ids: exact; text: its UTF-8 bytes / 4,
// rounded up, for want of the model's tokenizer), its output length
// max_tokens (or max_completion_tokens; 16 when absent), and end-of-sequence
// is ignored: every completed request returns exactly max_tokens tokens, one
// streamed chunk per token as the replica's step that sampled it ends. A
// token's text is a common English word chosen by the token id the model's
// argmax sampled, with a leading space (one token in the usual tokenizers).
//
// Bounds: it binds loopback only (127.0.0.1); it accepts at most
// max_requests completions and none after max_seconds; at most
// max_connections connections at once (more are answered 503 and closed);
// a request body is at most 1 MiB; a connection idle for idle_timeout_s is
// closed. Refused requests get an OpenAI-style error object: 400 bad
// request, 404 unknown model or path, 429 rejected by the fleet (queue
// full), 503 past the bounds, failed or unfinished when the run ended.
//
// Threads: one I/O thread of its own. submit is called on it (once per
// accepted completion, in id order); OnTokens and OnFinished are called on
// the driving thread and hand their work to the I/O thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "sim/cluster/observer.h"
#include "sim/traffic/request.h"

namespace fleetsim::live {

struct ServeOptions {
  int port = 8000;  // 0: a free port (port() says which)
  int64_t max_requests = 10000;
  double max_seconds = 600;
  int max_connections = 1024;
  double idle_timeout_s = 60;
  int32_t default_max_tokens = 16;
};

class CompletionServer {
 public:
  // A completion accepted: id (0, 1, 2, ... in acceptance order), model (""
  // for the default), prompt and output lengths. I/O thread.
  using Submit = std::function<void(Request)>;

  // Binds 127.0.0.1:port and starts serving. models: the names served, the
  // first the default. Errors: the port cannot be bound.
  static Status Open(const ServeOptions& options, std::vector<std::string> models, Submit submit,
                     std::unique_ptr<CompletionServer>* out);
  // Close().
  ~CompletionServer();
  CompletionServer(const CompletionServer&) = delete;
  CompletionServer& operator=(const CompletionServer&) = delete;

  int port() const;
  // Completions can still be accepted (within the bounds, not stopped).
  bool accepting() const;
  // Accepted and not yet finished.
  int64_t open_requests() const;

  // Driving thread: tokens sampled, (request id, token id) each, in order.
  void OnTokens(const std::vector<std::pair<uint64_t, int32_t>>& tokens);
  // Driving thread: the request ended (completed, rejected, failed or
  // unfinished); its response ends.
  void OnFinished(const RequestRecord& rec);
  // Stops accepting, lets responses in progress finish writing for up to
  // `drain_s`, closes every connection and joins the I/O thread.
  void Close(double drain_s = 2.0);

  class Impl;

 private:
  explicit CompletionServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The text of a sampled token (see above).
std::string_view TokenText(int32_t token_id);

// A prompt's length in tokens, as the server counts it: a JSON array of
// token ids (integers) counts them; a string counts ceil(bytes / 4), at
// least 1. Exposed for tests.
int64_t PromptTokensOfText(size_t bytes);

}  // namespace fleetsim::live
