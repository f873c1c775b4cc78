#include "sim/live/serve.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <sys/resource.h>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace fleetsim::live {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

constexpr size_t kBodyLimit = size_t{1} << 20;
constexpr double kWriteTimeoutS = 30;

// Common English words, each one token (with its leading space) in the
// GPT-2, Llama and Qwen vocabularies.
constexpr std::string_view kWords[] = {
    " the",   " of",   " and",  " to",    " a",     " in",   " is",    " it",   " that",  " for",  " on",
    " was",   " with", " as",   " at",    " by",    " be",   " this",  " from", " or",    " are",  " not",
    " but",   " have", " an",   " they",  " which", " one",  " you",   " were", " all",   " we",   " can",
    " her",   " has",  " there", " been", " if",    " more", " when",  " will", " would", " who",  " so",
    " no",    " out",  " up",   " into",  " do",    " any",  " time",  " only", " new",   " some", " could",
    " these", " two",  " may",  " first", " then",  " other", " its",  " over", " like"};

std::string ErrorBody(int code, const std::string& message) {
  nlohmann::json j;
  const char* type = code == 429                 ? "rate_limit_error"
                     : code >= 400 && code < 500 ? "invalid_request_error"
                                                 : "server_error";
  j["error"] = {{"message", message}, {"type", type}, {"code", code}};
  return j.dump();
}

const char* Reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

std::string Response(int code, const std::string& content_type, const std::string& body, bool keep_alive) {
  std::string r = "HTTP/1.1 " + std::to_string(code) + " " + Reason(code) + "\r\n";
  r += "Content-Type: " + content_type + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  r += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  r += body;
  return r;
}

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

std::string Chunk(const std::string& data) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", data.size());
  return size + data + "\r\n";
}

}  // namespace

std::string_view TokenText(int32_t token_id) {
  constexpr size_t n = sizeof kWords / sizeof kWords[0];
  return kWords[static_cast<size_t>(token_id < 0 ? -(token_id + 1) : token_id) % n];
}

int64_t PromptTokensOfText(size_t bytes) { return std::max<int64_t>(1, static_cast<int64_t>((bytes + 3) / 4)); }

class Session;

class CompletionServer::Impl {
 public:
  Impl(const ServeOptions& o, std::vector<std::string> models, Submit submit)
      : options(o), models(std::move(models)), submit(std::move(submit)), acceptor(ioc),
        guard(net::make_work_guard(ioc)),
        deadline(std::chrono::steady_clock::now() + Seconds(std::max(0.0, o.max_seconds))),
        created(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                    .count()) {}

  bool accepting() const {
    return !stopped.load() && accepted.load() < options.max_requests && std::chrono::steady_clock::now() < deadline;
  }
  // I/O thread (the only one that claims): an id for a completion, or none
  // past the bounds.
  std::optional<uint64_t> Claim() {
    open.fetch_add(1);  // before the claim: open_requests() never reads 0 while one is being accepted
    if (!accepting()) {
      open.fetch_sub(1);
      return std::nullopt;
    }
    return static_cast<uint64_t>(accepted.fetch_add(1));
  }

  void Accept();
  void Drop(Session* s);

  ServeOptions options;
  std::vector<std::string> models;
  Submit submit;
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::executor_work_guard<net::io_context::executor_type> guard;
  std::thread thread;
  std::chrono::steady_clock::time_point deadline;
  int64_t created;  // "created" of every response (Unix seconds)
  std::atomic<bool> stopped{false};
  std::atomic<int64_t> accepted{0};
  std::atomic<int64_t> open{0};
  // I/O thread only.
  bool closing = false;
  std::unordered_map<Session*, std::shared_ptr<Session>> sessions;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> by_request;
  std::mutex mu;
  std::condition_variable cv;
  size_t session_count = 0;  // under mu, for Close's drain
};

// One connection: reads requests one after another (keep-alive), answers
// each, a completion's answer streamed as its tokens come.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(CompletionServer::Impl& server, tcp::socket socket) : server_(server), stream_(std::move(socket)) {}

  void Start() { Read(); }
  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }
  bool idle() const { return reading_ && !waiting_; }

  // The request's events, on the I/O thread.
  void OnToken(int32_t token) {
    if (!waiting_ || done_) return;
    if (sent_ >= max_tokens_) return;
    ++sent_;
    const std::string_view text = TokenText(token);
    if (!stream_mode_) {
      text_ += text;
      return;
    }
    BeginStream();
    Queue(Chunk("data: " + ChunkJson(std::string(text)) + "\n\n"));
  }
  void OnFinished(RequestStatus status, std::string reason, int32_t generated) {
    if (!waiting_ || done_) return;
    done_ = true;
    waiting_ = false;
    const bool ok = status == RequestStatus::kCompleted;
    if (ok) {
      // Tokens the stream did not see (a retry's replica sampled them
      // before this one's were counted): the request still returns its length.
      const int32_t n = std::min<int32_t>(std::max(generated, sent_), max_tokens_);
      while (sent_ < n) OnTokenText();
    }
    const int code = status == RequestStatus::kRejected ? 429 : 503;
    const std::string why = "request " + std::to_string(id_) + " " + std::string(RequestStatusName(status)) +
                            (reason.empty() ? "" : ": " + reason);
    if (!stream_mode_) {
      if (!ok) {
        Respond(code, ErrorBody(code, why));
      } else {
        nlohmann::json j = Envelope(false);
        nlohmann::json choice = {{"index", 0}, {"finish_reason", "length"}, {"logprobs", nullptr}};
        if (chat_) {
          choice["message"] = {{"role", "assistant"}, {"content", text_}};
        } else {
          choice["text"] = text_;
        }
        j["choices"] = nlohmann::json::array({choice});
        j["usage"] = Usage();
        Respond(200, j.dump());
      }
      return;
    }
    if (!ok && !began_) {
      Respond(code, ErrorBody(code, why));
      return;
    }
    BeginStream();
    if (!ok) {
      // Failed mid-stream: an error event (clients that read one report
      // it), then the connection closes without the chunked body's end, so
      // that every client records a failure rather than a short success.
      Queue(Chunk("data: " + ErrorBody(code, why) + "\n\n"));
      keep_alive_ = false;
      EndResponse();
      return;
    }
    // The last token's chunk carried finish_reason; a completion cut short
    // (its prompt filled the context) says so in one empty chunk.
    if (sent_ < max_tokens_) Queue(Chunk("data: " + ChunkJson("", true) + "\n\n"));
    if (include_usage_) {
      nlohmann::json j = Envelope(true);
      j["choices"] = nlohmann::json::array();
      j["usage"] = Usage();
      Queue(Chunk("data: " + j.dump() + "\n\n"));
    }
    Queue(Chunk("data: [DONE]\n\n"));
    Queue("0\r\n\r\n");
    EndResponse();
  }

 private:
  void OnTokenText() {
    ++sent_;
    const std::string_view text = TokenText(sent_);
    if (!stream_mode_) {
      text_ += text;
    } else {
      BeginStream();
      Queue(Chunk("data: " + ChunkJson(std::string(text)) + "\n\n"));
    }
  }

  void Read() {
    if (server_.closing) {
      Close();
      server_.Drop(this);
      return;
    }
    reading_ = true;
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    stream_.expires_after(Seconds(server_.options.idle_timeout_s));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) {
      self->reading_ = false;
      if (ec == http::error::body_limit) {
        self->keep_alive_ = false;
        self->Respond(413, ErrorBody(413, "the request body is over 1 MiB"));
        return;
      }
      if (ec) {
        self->Close();
        self->server_.Drop(self.get());
        return;
      }
      self->Handle(self->parser_->release());
    });
  }

  void Handle(http::request<http::string_body> req) {
    keep_alive_ = req.keep_alive();
    std::string target(req.target());
    if (const size_t q = target.find('?'); q != std::string::npos) target.resize(q);
    if (target == "/health" || target == "/v1/models") {
      if (req.method() != http::verb::get) return Respond(405, ErrorBody(405, target + ": use GET"));
      if (target == "/health") return Respond(200, "{}");
      nlohmann::json data = nlohmann::json::array();
      for (const std::string& m : server_.models)
        data.push_back({{"id", m}, {"object", "model"}, {"created", server_.created}, {"owned_by", "fleetsim"}, {"root", m}});
      return Respond(200, nlohmann::json{{"object", "list"}, {"data", data}}.dump());
    }
    if (target != "/v1/completions" && target != "/v1/chat/completions")
      return Respond(404, ErrorBody(404, target + ": no such endpoint (GET /health, /v1/models; POST "
                                                  "/v1/completions, /v1/chat/completions)"));
    if (req.method() != http::verb::post) return Respond(405, ErrorBody(405, target + ": use POST"));
    chat_ = target == "/v1/chat/completions";
    Completion(req.body());
  }

  void Completion(const std::string& body) {
    const nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
    auto bad = [&](const std::string& m) { Respond(400, ErrorBody(400, m)); };
    if (j.is_discarded() || !j.is_object()) return bad("the body is not a JSON object");
    model_ = server_.models.front();
    std::string model;
    if (j.contains("model") && !j["model"].is_null()) {
      if (!j["model"].is_string()) return bad("model: expected a string");
      model = j["model"].get<std::string>();
      bool found = false;
      for (const std::string& m : server_.models) found = found || m == model;
      if (!found) return Respond(404, ErrorBody(404, "model: \"" + model + "\" is not served (GET /v1/models)"));
      model_ = model;
    }
    int64_t prompt = 0;
    if (chat_) {
      if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty())
        return bad("messages: expected a non-empty array");
      size_t bytes = 0;
      for (size_t i = 0; i < j["messages"].size(); ++i) {
        const nlohmann::json& m = j["messages"][i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) return bad(where + ": expected an object");
        if (!m.contains("content")) continue;  // an assistant's tool calls, say: no text
        const nlohmann::json& c = m["content"];
        if (c.is_string()) {
          bytes += c.get_ref<const std::string&>().size();
        } else if (c.is_array()) {
          for (const nlohmann::json& part : c)
            if (part.is_object() && part.contains("text") && part["text"].is_string())
              bytes += part["text"].get_ref<const std::string&>().size();
        } else if (!c.is_null()) {
          return bad(where + ".content: expected a string or an array of parts");
        }
      }
      prompt = PromptTokensOfText(bytes);
    } else {
      if (!j.contains("prompt")) return bad("prompt: missing");
      const nlohmann::json& p = j["prompt"];
      if (p.is_string()) {
        prompt = PromptTokensOfText(p.get_ref<const std::string&>().size());
      } else if (p.is_array() && !p.empty() && p.front().is_number_integer()) {
        for (const nlohmann::json& t : p)
          if (!t.is_number_integer()) return bad("prompt: a list of token ids must hold integers only");
        prompt = static_cast<int64_t>(p.size());
      } else if (p.is_array() && p.size() == 1 && p.front().is_string()) {
        prompt = PromptTokensOfText(p.front().get_ref<const std::string&>().size());
      } else {
        return bad("prompt: expected a string, one string in a list, or a list of token ids (one prompt per "
                   "request)");
      }
    }
    int64_t max_tokens = server_.options.default_max_tokens;
    for (const char* k : {"max_tokens", "max_completion_tokens"}) {
      if (!j.contains(k) || j[k].is_null()) continue;
      if (!j[k].is_number_integer() || j[k].get<int64_t>() < 1 || j[k].get<int64_t>() > (int64_t{1} << 30))
        return bad(std::string(k) + ": expected an integer from 1");
      max_tokens = j[k].get<int64_t>();
    }
    if (j.contains("n") && !j["n"].is_null() && !(j["n"].is_number_integer() && j["n"].get<int64_t>() == 1))
      return bad("n: only 1 completion per request is served");
    if (prompt > (int64_t{1} << 30)) return bad("prompt: too long");
    stream_mode_ = false;
    include_usage_ = false;
    if (j.contains("stream") && !j["stream"].is_null()) {
      if (!j["stream"].is_boolean()) return bad("stream: expected true or false");
      stream_mode_ = j["stream"].get<bool>();
    }
    if (j.contains("stream_options") && j["stream_options"].is_object() &&
        j["stream_options"].contains("include_usage") && j["stream_options"]["include_usage"].is_boolean())
      include_usage_ = j["stream_options"]["include_usage"].get<bool>();
    const std::optional<uint64_t> id = server_.Claim();
    if (!id)
      return Respond(503, ErrorBody(503, "live mode accepts no more requests (--serve-requests " +
                                             std::to_string(server_.options.max_requests) + " or --serve-seconds reached)"));
    id_ = *id;
    prompt_tokens_ = static_cast<int32_t>(prompt);
    max_tokens_ = static_cast<int32_t>(max_tokens);
    sent_ = 0;
    text_.clear();
    began_ = false;
    done_ = false;
    waiting_ = true;
    server_.by_request[id_] = weak_from_this();
    Request r;
    r.id = id_;
    r.prompt_tokens = prompt_tokens_;
    r.output_tokens = max_tokens_;
    r.model = model == server_.models.front() ? std::string() : model;
    server_.submit(std::move(r));
  }

  nlohmann::json Envelope(bool chunk) const {
    nlohmann::json j;
    j["id"] = (chat_ ? "chatcmpl-" : "cmpl-") + std::to_string(id_);
    j["object"] = chat_ ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    j["created"] = server_.created;
    j["model"] = model_;
    return j;
  }
  nlohmann::json Usage() const {
    return {{"prompt_tokens", prompt_tokens_}, {"completion_tokens", sent_}, {"total_tokens", prompt_tokens_ + sent_}};
  }
  // A streamed chunk: a token's text (the last one, sent_ == max_tokens_,
  // with finish_reason "length", as vLLM sends it), or, with `end`, an empty
  // one that only finishes.
  std::string ChunkJson(const std::string& text, bool end = false) const {
    nlohmann::json j = Envelope(true);
    nlohmann::json choice = {{"index", 0}};
    if (chat_) {
      nlohmann::json delta = nlohmann::json::object();
      if (!end) {
        if (sent_ == 1) delta["role"] = "assistant";
        delta["content"] = text;
      }
      choice["delta"] = delta;
    } else {
      choice["text"] = text;
      choice["logprobs"] = nullptr;
    }
    const bool last = end || sent_ >= max_tokens_;
    choice["finish_reason"] = last ? nlohmann::json("length") : nlohmann::json(nullptr);
    j["choices"] = nlohmann::json::array({choice});
    return j.dump();
  }

  void BeginStream() {
    if (began_) return;
    began_ = true;
    Queue(std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                      "Transfer-Encoding: chunked\r\n") +
          (keep_alive_ ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"));
  }
  void Respond(int code, const std::string& body) {
    waiting_ = false;
    Queue(Response(code, "application/json", body, keep_alive_));
    EndResponse();
  }
  // The response is whole once the queue drains: then read the next request.
  void EndResponse() { end_after_writes_ = true; if (!writing_) Next(); }
  void Next() {
    end_after_writes_ = false;
    server_.by_request.erase(id_);
    if (keep_alive_ && !server_.closing) {
      Read();
    } else {
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      Close();
      server_.Drop(this);
    }
  }
  void Queue(std::string data) {
    if (dead_) return;
    out_.push_back(std::move(data));
    if (!writing_) Write();
  }
  // Writes everything queued in one write (a token's chunk is not held
  // back behind the previous one's acknowledgement).
  void Write() {
    writing_ = true;
    wire_.clear();
    for (const std::string& s : out_) wire_ += s;
    out_.clear();
    stream_.expires_after(Seconds(kWriteTimeoutS));
    net::async_write(stream_, net::buffer(wire_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) {
        // The client went away: its request runs on in the fleet (no
        // cancellation), and nothing more is written.
        self->writing_ = false;
        self->out_.clear();
        self->dead_ = true;
        self->Close();
        self->server_.Drop(self.get());
        return;
      }
      if (!self->out_.empty()) return self->Write();
      self->writing_ = false;
      if (self->end_after_writes_) self->Next();
    });
  }

  CompletionServer::Impl& server_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<std::string> out_;
  std::string wire_;  // what is being written
  bool writing_ = false;
  bool reading_ = false;
  bool end_after_writes_ = false;
  bool keep_alive_ = true;
  bool dead_ = false;
  // The completion in progress.
  bool waiting_ = false;  // accepted, its end not yet heard
  bool done_ = false;
  bool chat_ = false;
  bool stream_mode_ = false;
  bool include_usage_ = false;
  bool began_ = false;  // the stream's header is written
  uint64_t id_ = ~uint64_t{0};
  std::string model_;
  int32_t prompt_tokens_ = 0;
  int32_t max_tokens_ = 0;
  int32_t sent_ = 0;
  std::string text_;
};

void CompletionServer::Impl::Accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (!acceptor.is_open() || closing) return;
      return Accept();
    }
    if (closing) return;
    if (sessions.size() >= static_cast<size_t>(options.max_connections)) {
      const std::string r = Response(503, "application/json",
                                     ErrorBody(503, "too many connections (at most " +
                                                        std::to_string(options.max_connections) + ")"),
                                     false);
      beast::error_code wec;
      net::write(socket, net::buffer(r), wec);
      socket.shutdown(tcp::socket::shutdown_both, wec);
      socket.close(wec);
      return Accept();
    }
    // Small writes (a token's chunk) go out at once, not after the client's
    // delayed acknowledgement of the previous one (Nagle: up to 40 ms).
    beast::error_code nec;
    socket.set_option(tcp::no_delay(true), nec);
    auto s = std::make_shared<Session>(*this, std::move(socket));
    sessions.emplace(s.get(), s);
    {
      std::lock_guard<std::mutex> lock(mu);
      session_count = sessions.size();
    }
    s->Start();
    Accept();
  });
}

void CompletionServer::Impl::Drop(Session* s) {
  // Keep the session alive until its handler returns.
  auto it = sessions.find(s);
  if (it == sessions.end()) return;
  std::shared_ptr<Session> keep = std::move(it->second);
  sessions.erase(it);
  net::post(ioc, [keep] {});
  {
    std::lock_guard<std::mutex> lock(mu);
    session_count = sessions.size();
  }
  cv.notify_all();
}

CompletionServer::CompletionServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Status CompletionServer::Open(const ServeOptions& options, std::vector<std::string> models, Submit submit,
                              std::unique_ptr<CompletionServer>* out) {
  if (models.empty()) return Status::Invalid("serve: no model to serve");
  if (options.port < 0 || options.port > 65535) return Status::Invalid("serve: --port: expected 0 to 65535");
  if (options.max_connections < 1) return Status::Invalid("serve: --serve-connections: expected at least 1");
  // A descriptor per connection: raise the soft limit toward the hard one
  // when the bound needs it (the default soft limit is often 1024).
  if (rlimit rl{}; getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    const rlim_t want = static_cast<rlim_t>(options.max_connections) + 128;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
      rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min(want, rl.rlim_max);
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  auto impl = std::make_unique<Impl>(options, std::move(models), std::move(submit));
  beast::error_code ec;
  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), static_cast<uint16_t>(options.port));
  impl->acceptor.open(ep.protocol(), ec);
  if (!ec) impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) impl->acceptor.bind(ep, ec);
  if (!ec) impl->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec)
    return Status::Unavailable("serve: cannot listen on 127.0.0.1:" + std::to_string(options.port) + ": " +
                               ec.message());
  Impl* p = impl.get();
  p->Accept();
  p->thread = std::thread([p] { p->ioc.run(); });
  out->reset(new CompletionServer(std::move(impl)));
  return Status::Ok();
}

CompletionServer::~CompletionServer() { Close(); }

int CompletionServer::port() const {
  beast::error_code ec;
  const tcp::endpoint ep = impl_->acceptor.local_endpoint(ec);
  return ec ? -1 : ep.port();
}

bool CompletionServer::accepting() const { return impl_->accepting(); }
int64_t CompletionServer::open_requests() const { return impl_->open.load(); }

void CompletionServer::OnTokens(const std::vector<std::pair<uint64_t, int32_t>>& tokens) {
  if (tokens.empty() || !impl_->thread.joinable()) return;
  Impl* p = impl_.get();
  net::post(p->ioc, [p, tokens] {
    for (const auto& [id, token] : tokens) {
      auto it = p->by_request.find(id);
      if (it == p->by_request.end()) continue;
      if (std::shared_ptr<Session> s = it->second.lock()) s->OnToken(token);
    }
  });
}

void CompletionServer::OnFinished(const RequestRecord& rec) {
  impl_->open.fetch_sub(1);
  if (!impl_->thread.joinable()) return;
  Impl* p = impl_.get();
  net::post(p->ioc, [p, id = rec.id, status = rec.status, reason = std::string(rec.reason),
                     generated = rec.generated_tokens] {
    auto it = p->by_request.find(id);
    if (it == p->by_request.end()) return;
    if (std::shared_ptr<Session> s = it->second.lock()) s->OnFinished(status, reason, generated);
  });
}

void CompletionServer::Close(double drain_s) {
  Impl* p = impl_.get();
  if (!p || !p->thread.joinable()) return;
  p->stopped.store(true);
  net::post(p->ioc, [p] {
    p->closing = true;
    beast::error_code ec;
    p->acceptor.close(ec);
    // Connections waiting for a request close now; the others once their
    // response is written.
    std::vector<std::shared_ptr<Session>> idle;
    for (auto& [s, keep] : p->sessions)
      if (s->idle()) idle.push_back(keep);
    for (auto& s : idle) {
      s->Close();
      p->Drop(s.get());
    }
  });
  {
    std::unique_lock<std::mutex> lock(p->mu);
    p->cv.wait_for(lock, std::chrono::duration<double>(drain_s), [p] { return p->session_count == 0; });
  }
  net::post(p->ioc, [p] {
    std::vector<std::shared_ptr<Session>> all;
    for (auto& [s, keep] : p->sessions) all.push_back(keep);
    for (auto& s : all) s->Close();
    p->sessions.clear();
    p->by_request.clear();
    p->guard.reset();
    p->ioc.stop();  // handlers of the closed sockets that have not run are dropped
  });
  p->thread.join();
}

}  // namespace fleetsim::live
