// TrafficSpec: the typed form of a scenario's "traffic" section (parsed in
// sim/scenario; no JSON here). MakeRequestSource turns it into a stream.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/traffic/source.h"
#include "sim/traffic/trace_window.h"

namespace fleetsim {

// A token-length distribution for generated requests.
struct LengthSpec {
  enum class Kind { kFixed, kLogNormal, kUniform };
  Kind kind = Kind::kFixed;
  int32_t value = 0;         // kFixed
  double median = 0;         // kLogNormal: exp(mu)
  double sigma = 0;          // kLogNormal: std-dev of log length
  int32_t min = 1;           // kLogNormal clamp, kUniform lower bound (inclusive)
  int32_t max = 1 << 30;     // kLogNormal clamp, kUniform upper bound (inclusive)
};

enum class TraceFormat {
  kAzure,     // TIMESTAMP,ContextTokens,GeneratedTokens (Azure LLM inference 2023 and 2024)
  kMooncake,  // JSONL {"timestamp": ms, "input_length", "output_length", "hash_ids"}
  kCsv,       // arrival_s,prompt_tokens,output_tokens[,session_id][,model][,priority][,tenant][,location]
  kBurstGpt,  // Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type (BurstGPT)
  kSplitwise, // arrived_at,num_prefill_tokens,num_decode_tokens[,...] (Splitwise as Vidur processed it)
  kServeGen,  // ServeGen per-client windows: window_start_s,rate,cv,arrival_dist,p1,p2 (generated arrivals)
};

enum class ArrivalProcess { kPoisson, kGamma, kConstant };

// Generated requests that open with one of `groups` system prompts of
// `tokens` tokens each, so that a prefix cache has something to share.
//
// Each request (each session, with SessionSpec) belongs to one group drawn
// uniformly from its own random sub-stream, so turning this on or changing
// it moves neither arrival times nor drawn lengths. Its prompt is the
// group's system prompt followed by its own drawn prompt:
//   prompt_tokens = tokens + drawn prompt.
// prefix_block_tokens is 512 and prefix_blocks holds ceil(prompt_tokens /
// 512) chained ids (see GeneratorSource for their values):
//   - the first floor(tokens / 512) are the group's: every request of the
//     group starts with the same ones, so two requests of one group share
//     exactly floor(tokens / 512) leading ids, and of two groups none;
//   - the rest are fresh ids that no other request (or session) carries.
// Only FULL 512-token blocks of the system prompt get group ids: when
// `tokens` is not a multiple of 512, the block holding its tail also holds
// the request's own first tokens, so its contents differ between requests
// and it gets a fresh id. The unshared tail is still counted in
// prompt_tokens.
struct SharedPrefixSpec {
  int32_t groups = 1;  // distinct system prompts, each equally likely; [1, kMaxSharedPrefixGroups]
  int32_t tokens = 0;  // tokens per system prompt; [1, kMaxSharedPrefixTokens]
};
// Bounds of SharedPrefixSpec: group ids are packed as (group, block) pairs
// of 20 bits each (GeneratorSource), so at most 2^20 groups of 2^20 blocks;
// tokens stays far below that (2^24 tokens = 32,768 blocks).
inline constexpr int32_t kMaxSharedPrefixGroups = 1 << 20;
inline constexpr int32_t kMaxSharedPrefixTokens = 1 << 24;

// Multi-turn chat sessions. The generator's arrival process then gives
// session STARTS (rate_per_s is sessions per second); a session has up to
// `turns` requests:
//   - turn 1 is drawn as a plain request (prompt and output from the length
//     distribution, plus the system prompt with SharedPrefixSpec);
//   - turn k+1 arrives think_time after turn k's ARRIVAL, think_time
//     exponential with mean think_time_s from its own sub-stream. The loop is
//     open: the simulator does not tell the generator when turn k finished,
//     so a slow fleet sees the next turn arrive while the previous one is
//     still running, as a client that does not wait would send it;
//   - turn k+1's prompt is the whole conversation so far plus a new message:
//     prompt(k+1) = prompt(k) + output(k) + a newly drawn prompt length,
//     and its output is drawn as usual;
//   - turn k+1's prefix_blocks are turn k's ids truncated to the FULL
//     512-token blocks of turn k's prompt (a prefix cache holds those),
//     followed by fresh ids for the rest of the prompt;
//   - a follow-up turn whose prompt + output would exceed
//     max_context_tokens is not sent and ends the session early (the
//     conversation has outgrown the context). Turn 1 is never capped: it is
//     sent as drawn, as without sessions (an engine refuses it if it is
//     longer than the model's context).
// Every turn carries session_id = the session's index (0, 1, 2, ... in
// start order). With SharedPrefixSpec, the session's group is drawn once at
// its start and every turn begins with that group's system prompt.
// max_requests and max_arrival_s count and cut turns, not sessions.
struct SessionSpec {
  int32_t turns = 1;                   // requests per session at most; [1, kMaxSessionTurns]
  double think_time_s = 1;             // mean gap between turns' arrivals, seconds; > 0
  int32_t max_context_tokens = 32768;  // cap on a follow-up turn's prompt + output; [1, 2^30]
};
inline constexpr int32_t kMaxSessionTurns = 1 << 20;
inline constexpr int32_t kMaxSessionContextTokens = 1 << 30;

// Closed-loop clients, as benchmark tools (vllm bench serve
// --max-concurrency, GenAI-Perf --concurrency) and chat users behave: `users`
// clients each send a request, wait for its last token (or its rejection),
// think, and send the next. All start at time 0. Lengths are the
// generator's, drawn in request order, so they do not depend on timing;
// arrival times follow the fleet. max_requests counts requests sent;
// max_arrival_s (or duration_s) stops sending.
struct ClosedLoopSpec {
  int64_t users = 1;          // [1, kMaxClosedLoopUsers]
  double think_time_s = 0;    // after a response, before the next request; >= 0
  bool exponential = false;   // think time exponential with that mean (else fixed)
};
inline constexpr int64_t kMaxClosedLoopUsers = 1 << 20;

struct TrafficSpec {
  // kList: requests given in memory (a replay of an observed run: `fleetsim
  // fit`), not from a scenario file.
  enum class Kind { kTrace, kGenerator, kList };
  Kind kind = Kind::kGenerator;

  // --- kList ---
  // In arrival order, arrivals non-decreasing from 0; ids are reassigned
  // 0, 1, 2, ... With closed_loop, the arrivals are ignored (the clients'
  // pace sets them) and the list gives the requests' order and lengths.
  std::shared_ptr<const std::vector<Request>> requests;

  // --- kTrace ---
  TraceFormat format = TraceFormat::kCsv;
  std::string path;          // absolute, or relative to the working directory
  // Keep arrivals with trace time in [start_s, end_s) (seconds from the
  // trace's first arrival), shifted so the window starts at time 0 ...
  double start_s = 0;
  double end_s = std::numeric_limits<double>::infinity();
  // ... then divide inter-arrival times by rate_scale (2 = twice the rate).
  // Also kList: its arrivals are divided by rate_scale.
  double rate_scale = 1.0;
  // kServeGen only: path may also name a folder of chunk-N-trace.csv client
  // files. Request lengths come from each client's chunk-N-dataset.json
  // unless the scenario sets them for the trace (trace_lengths: prompt and
  // output below, or lengths_csv), which then applies to every client.
  bool trace_lengths = false;

  // --- kGenerator ---
  ArrivalProcess arrival = ArrivalProcess::kPoisson;
  double rate_per_s = 0;     // mean arrival rate
  double cv = 1.0;           // kGamma: coefficient of variation of the gaps
  LengthSpec prompt;         // used unless lengths_csv is set (also kServeGen traces)
  LengthSpec output;
  // A length-distribution CSV (num_prefill_tokens,num_decode_tokens,...; the
  // ShareGPT format): each request draws one row, prompt and output together.
  std::string lengths_csv;
  std::string model;         // model name stamped on generated requests ("" = default)
  // Unset: no prefix ids, session_id -1, the stream exactly as without them.
  std::optional<SharedPrefixSpec> shared_prefix;
  std::optional<SessionSpec> sessions;
  // Set: arrivals are closed-loop (the arrival process and rate do not
  // apply). Also for kList.
  std::optional<ClosedLoopSpec> closed_loop;

  // --- both ---
  // traffic.mix: who sends the requests. Each request draws one entry, with
  // probability weight / the weights' sum (a session draws once, by its
  // id, so its turns share an entry), and takes the entry's fields where it
  // has none of its own: a trace column wins over the mix (a priority of 0
  // counts as none). Empty: requests keep what the source gave.
  struct MixEntry {
    double weight = 1;
    std::string tenant, model, location;  // empty: not set by this entry
    std::optional<int32_t> priority;
  };
  std::vector<MixEntry> mix;
  int64_t max_requests = std::numeric_limits<int64_t>::max();  // stop after this many
  double max_arrival_s = std::numeric_limits<double>::infinity();  // stop at this arrival time
};

// Builds the stream. `rng` feeds generators and the ServeGen trace (which
// generates arrivals; other traces ignore it). Opening
// errors (missing file, bad header, empty length CSV) are returned here;
// row errors surface later through RequestSource::status().
Status MakeRequestSource(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out);

// Stamps requests with traffic.mix (TrafficSpec::MixEntry), drawing from
// its own stream.
class TrafficMix {
 public:
  TrafficMix(std::vector<TrafficSpec::MixEntry> mix, Rng rng);
  bool empty() const { return mix_.empty(); }
  void Apply(Request* req);

 private:
  std::vector<TrafficSpec::MixEntry> mix_;
  std::vector<double> cumulative_;  // running sums of the weights
  Rng rng_;
  uint64_t salt_;
};

// The two halves of MakeRequestSource for a trace (ScanTraffic uses them to
// read past the window): the format's reader over the whole trace, after
// the same checks of the spec, and the window that MakeRequestSource puts
// around it.
// REQUIRES: spec.kind == kTrace.
Status OpenTraceReader(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out);
TraceWindowOptions TraceWindowOptionsFor(const TrafficSpec& spec);

// Checks, without reading them, that every input file the spec names (trace
// file or ServeGen folder, length CSV) can be opened the way
// MakeRequestSource will open it: regular files only, no blocking open (see
// base/file.h). Messages start with the scenario key: `traffic.trace.path:
// cannot open trace "x": not a regular file (a FIFO)`.
Status CheckTrafficInputs(const TrafficSpec& spec);

}  // namespace fleetsim
