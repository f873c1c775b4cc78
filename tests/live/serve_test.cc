// fleetsim live --serve: the OpenAI-compatible endpoint, driven by a small
// HTTP client of the test's own (bounded: a few requests, each read with a
// 30 s timeout; the server's own bounds end the run).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "model/catalog.h"
#include "sim/live/live_mode.h"
#include "sim/live/serve.h"
#include "sim/runner/run.h"
#include "sim/scenario/parse.h"
#include "tests/cli/cli_test_util.h"

namespace fleetsim {
namespace {

using clitest::ScratchDir;
using clitest::ShellQuote;
using nlohmann::json;

struct HttpResponse {
  int status = 0;
  std::string headers;  // lower-cased
  std::string body;     // de-chunked
  std::string error;    // the client's: connection or timeout
  // The body's server-sent events: each "data: " payload.
  std::vector<std::string> Events() const {
    std::vector<std::string> out;
    size_t at = 0;
    while ((at = body.find("data: ", at)) != std::string::npos) {
      const size_t end = body.find("\n\n", at);
      out.push_back(body.substr(at + 6, (end == std::string::npos ? body.size() : end) - at - 6));
      at = end == std::string::npos ? body.size() : end + 2;
    }
    return out;
  }
};

// One keep-alive connection to 127.0.0.1:port.
class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    timeval tv{30, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Client() { ::close(fd_); }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  HttpResponse Call(const std::string& method, const std::string& path, const std::string& body = "") {
    HttpResponse r;
    if (!connected_) {
      r.error = "not connected";
      return r;
    }
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (!body.empty()) req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n" + body;
    if (::send(fd_, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
      r.error = "send failed";
      return r;
    }
    size_t head_end;
    while ((head_end = buf_.find("\r\n\r\n")) == std::string::npos)
      if (!Fill(&r)) return r;
    const std::string head = buf_.substr(0, head_end);
    buf_.erase(0, head_end + 4);
    r.status = std::atoi(head.substr(9, 3).c_str());
    for (char c : head) r.headers += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (r.headers.find("transfer-encoding: chunked") != std::string::npos) {
      for (;;) {
        size_t eol;
        while ((eol = buf_.find("\r\n")) == std::string::npos)
          if (!Fill(&r)) return r;
        const size_t n = std::stoul(buf_.substr(0, eol), nullptr, 16);
        while (buf_.size() < eol + 2 + n + 2)
          if (!Fill(&r)) return r;
        r.body += buf_.substr(eol + 2, n);
        buf_.erase(0, eol + 2 + n + 2);
        if (n == 0) break;
      }
    } else {
      const size_t at = r.headers.find("content-length: ");
      const size_t n = at == std::string::npos ? 0 : std::stoul(r.headers.substr(at + 16));
      while (buf_.size() < n)
        if (!Fill(&r)) return r;
      r.body = buf_.substr(0, n);
      buf_.erase(0, n);
    }
    return r;
  }

 private:
  bool Fill(HttpResponse* r) {
    char b[4096];
    const ssize_t n = ::recv(fd_, b, sizeof b, 0);
    if (n <= 0) {
      r->error = n == 0 ? "connection closed" : "receive timed out or failed";
      return false;
    }
    buf_.append(b, static_cast<size_t>(n));
    return true;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

json TinyScenario() {
  return json::parse(R"({
    "name": "live-serve", "seed": 5, "model": "tiny",
    "fleet": { "pools": [ { "name": "cpu", "gpu": "H100-SXM", "replicas": 1, "engine": "fleetsim_live",
                            "max_num_seqs": 16, "max_num_batched_tokens": 256 } ] },
    "traffic": { "generator": { "arrival": "poisson", "rate_per_s": 10, "prompt_tokens": 16, "output_tokens": 4 },
                 "max_requests": 1000 }
  })");
}

struct Fixture {
  ScratchDir dir;
  Catalog catalog;
  Policies policies;
  std::unique_ptr<ScenarioRun> run;
  Status Build() {
    FLEETSIM_RETURN_IF_ERROR(Catalog::LoadBuiltin(&catalog));
    RegisterBuiltins(&policies);
    ScenarioSpec spec;
    FLEETSIM_RETURN_IF_ERROR(LoadScenarioFile(dir.Write("s.json", TinyScenario().dump()), &spec));
    return ScenarioRun::Build(spec, catalog, policies, &run);
  }
};

TEST(Serve, PromptLengthsAndTokenTexts) {
  EXPECT_EQ(live::PromptTokensOfText(0), 1);
  EXPECT_EQ(live::PromptTokensOfText(4), 1);
  EXPECT_EQ(live::PromptTokensOfText(5), 2);
  EXPECT_EQ(live::PromptTokensOfText(400), 100);
  EXPECT_EQ(live::TokenText(0), " the");
  EXPECT_EQ(live::TokenText(64), live::TokenText(0));
  EXPECT_FALSE(live::TokenText(-7).empty());
}

// Streams and plain answers, completions and chat: every completed
// request returns exactly max_tokens tokens; bad requests are refused and
// not counted; past --serve-requests, 503; the run then ends by itself
// with every served request in its books.
TEST(Serve, StreamsTheTokensAskedForAndEndsAtItsBound) {
  Fixture f;
  Status s = f.Build();
  ASSERT_TRUE(s.ok()) << s.message();
  live::LiveOptions lo;
  live::ServeOptions so;
  so.port = 0;
  so.max_requests = 6;
  so.max_seconds = 120;  // the run ends by then whatever the client does
  lo.serve = so;
  live::LiveMode mode(lo);
  s = mode.Prepare(*f.run);
  ASSERT_TRUE(s.ok()) << s.message();
  const int port = mode.port();
  ASSERT_GT(port, 0);

  RunReport report;
  Status run_status;
  std::vector<RequestRecord> records;
  std::thread runner([&] {
    RunOptions ro;
    ro.seed = 5;
    ro.execution = &mode;
    ro.on_request = [&](const RequestRecord& r) { records.push_back(r); };
    run_status = f.run->Run(MetricsOptions{}, ro, nullptr, &report);
  });

  {
    Client c(port);
    EXPECT_EQ(c.Call("GET", "/health").status, 200);
    const HttpResponse models = c.Call("GET", "/v1/models");
    ASSERT_EQ(models.status, 200) << models.error;
    EXPECT_EQ(json::parse(models.body)["data"][0]["id"], "tiny");
    EXPECT_EQ(json::parse(models.body)["data"][0]["root"], "tiny");  // vllm bench serve reads it without --model
    // Refused, and not counted against the bound.
    EXPECT_EQ(c.Call("POST", "/v1/completions", "{not json").status, 400);
    EXPECT_EQ(c.Call("POST", "/v1/completions", R"({"max_tokens": 3})").status, 400);
    EXPECT_EQ(c.Call("POST", "/v1/completions", R"({"prompt": "x", "max_tokens": 0})").status, 400);
    EXPECT_EQ(c.Call("POST", "/v1/completions", R"({"prompt": ["a", "b"]})").status, 400);
    const HttpResponse unknown = c.Call("POST", "/v1/completions", R"({"model": "gpt-9", "prompt": "x"})");
    EXPECT_EQ(unknown.status, 404);
    EXPECT_NE(unknown.body.find("gpt-9"), std::string::npos) << unknown.body;
    EXPECT_EQ(c.Call("POST", "/v1/embeddings", "{}").status, 404);
    EXPECT_EQ(c.Call("GET", "/v1/completions").status, 405);
  }

  // Four streams at once, each on its connection.
  const int lengths[4] = {3, 7, 12, 1};
  std::vector<HttpResponse> streams(4);
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i)
    clients.emplace_back([&, i] {
      Client c(port);
      json body = {{"model", "tiny"}, {"prompt", std::vector<int>(10 + 5 * i, 42)}, {"max_tokens", lengths[i]},
                   {"stream", true}, {"stream_options", {{"include_usage", true}}}, {"ignore_eos", true}};
      if (i == 3) body = {{"messages", {{{"role", "user"}, {"content", "Hello, how are you today?"}}}},
                          {"max_tokens", lengths[i]}, {"stream", true}};
      streams[i] = c.Call("POST", i == 3 ? "/v1/chat/completions" : "/v1/completions", body.dump());
    });
  for (std::thread& t : clients) t.join();
  for (int i = 0; i < 4; ++i) {
    const HttpResponse& r = streams[i];
    ASSERT_EQ(r.status, 200) << i << ": " << r.error << " " << r.body;
    EXPECT_NE(r.headers.find("text/event-stream"), std::string::npos);
    const std::vector<std::string> ev = r.Events();
    ASSERT_FALSE(ev.empty());
    EXPECT_EQ(ev.back(), "[DONE]");
    int texts = 0, choice_chunks = 0;
    std::string finish;
    json usage;
    for (const std::string& e : ev) {
      if (e == "[DONE]") continue;
      const json j = json::parse(e);
      if (j.contains("usage")) usage = j["usage"];
      if (j["choices"].empty()) continue;
      ++choice_chunks;
      const json& c = j["choices"][0];
      EXPECT_TRUE(finish.empty()) << "stream " << i << ": a chunk after the one that finished";
      if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
      const bool has_text = i == 3 ? c["delta"].contains("content") : !c["text"].get<std::string>().empty();
      if (has_text) ++texts;
    }
    EXPECT_EQ(texts, lengths[i]) << "stream " << i << ": one chunk per token";
    // The last token's chunk finishes (as vLLM's do): no empty chunk after
    // it, which a client would count as one more inter-token gap.
    EXPECT_EQ(choice_chunks, lengths[i]) << "stream " << i;
    EXPECT_EQ(finish, "length");
    if (i < 3) {
      ASSERT_TRUE(usage.is_object()) << "include_usage asked for";
      EXPECT_EQ(usage["completion_tokens"], lengths[i]);
      EXPECT_EQ(usage["prompt_tokens"], 10 + 5 * i);
    }
  }

  {
    // Plain answers on one keep-alive connection.
    Client c(port);
    const HttpResponse a = c.Call("POST", "/v1/completions", R"({"prompt": "The quick brown fox", "max_tokens": 5})");
    ASSERT_EQ(a.status, 200) << a.error;
    const json ja = json::parse(a.body);
    EXPECT_EQ(ja["usage"]["completion_tokens"], 5);
    EXPECT_EQ(ja["usage"]["prompt_tokens"], 5);  // 19 bytes / 4, rounded up
    EXPECT_EQ(ja["choices"][0]["finish_reason"], "length");
    const HttpResponse b = c.Call("POST", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}],
                                                                      "max_completion_tokens": 2})");
    ASSERT_EQ(b.status, 200) << b.error;
    EXPECT_EQ(json::parse(b.body)["usage"]["completion_tokens"], 2);
    EXPECT_FALSE(json::parse(b.body)["choices"][0]["message"]["content"].get<std::string>().empty());
    // The seventh: past the bound.
    const HttpResponse over = c.Call("POST", "/v1/completions", R"({"prompt": "x"})");
    EXPECT_EQ(over.status, 503);
    EXPECT_NE(over.body.find("--serve-requests 6"), std::string::npos) << over.body;
  }

  runner.join();  // ends once the six have: the bound is reached
  ASSERT_TRUE(run_status.ok()) << run_status.message();
  EXPECT_EQ(report.summary.arrived, 6);
  EXPECT_EQ(report.summary.completed, 6);
  ASSERT_EQ(records.size(), 6u);
  int64_t asked = 0;
  for (const RequestRecord& r : records) {
    EXPECT_EQ(r.generated_tokens, r.output_tokens);
    asked += r.output_tokens;
  }
  EXPECT_EQ(asked, 3 + 7 + 12 + 1 + 5 + 2);
  EXPECT_EQ(mode.served().size(), 6u);
}

// The CLI: --serve --port 0 says its port on stderr; two requests, then the
// run ends, writes its folder (with the diff's replay of what it served).
TEST(Serve, CliServesThenWritesItsFolder) {
  ScratchDir dir;
  const std::string scenario = dir.Write("s.json", TinyScenario().dump());
  const std::string out = dir.File("out");
  const std::string cmd = ShellQuote(FLEETSIM_BINARY_DIR "/fleetsim") + " live " + ShellQuote(scenario) +
                          " --serve --port 0 --serve-requests 2 --serve-seconds 60 --quiet --out " + ShellQuote(out) +
                          " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  int port = 0;
  std::string seen;
  char line[1024];
  while (port == 0 && std::fgets(line, sizeof line, p)) {
    seen += line;
    if (const char* at = std::strstr(line, "http://127.0.0.1:")) port = std::atoi(at + 17);
  }
  ASSERT_GT(port, 0) << seen;
  for (int i = 0; i < 2; ++i) {
    Client c(port);
    const HttpResponse r =
        c.Call("POST", "/v1/completions", R"({"prompt": [1, 2, 3, 4, 5, 6, 7, 8], "max_tokens": 4, "stream": true})");
    EXPECT_EQ(r.status, 200) << r.error;
  }
  while (std::fgets(line, sizeof line, p)) seen += line;
  const int rc = ::pclose(p);
  ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0) << seen;
  std::ifstream live_json(out + "/live.json");
  const json lj = json::parse(live_json);
  EXPECT_EQ(lj["served"]["requests"], 2);
  std::ifstream summary(out + "/sim/summary.json");
  const json sj = json::parse(summary);
  EXPECT_EQ(sj["requests"]["arrived"], 2) << "the diff's simulation replays the served requests";
}

// A port already taken is the machine's problem, not the input's: exit 1
// (not 2), naming the port, and no output folder.
TEST(Serve, TakenPortExitsOneNamingIt) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const int port = ntohs(a.sin_port);
  ScratchDir dir;
  const std::string scenario = dir.Write("s.json", TinyScenario().dump());
  const clitest::CommandResult r = clitest::RunFleetsim("live " + ShellQuote(scenario) + " --serve --port " +
                                                        std::to_string(port) + " --out " + ShellQuote(dir.File("o")));
  ::close(fd);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("cannot listen on 127.0.0.1:" + std::to_string(port)), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir.File("o")));
}

}  // namespace
}  // namespace fleetsim
