// TrafficSpec: the typed form of a scenario's "traffic" section (parsed in
// sim/scenario; no JSON here). MakeRequestSource turns it into a stream.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/traffic/source.h"

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
  kCsv,       // arrival_s,prompt_tokens,output_tokens[,session_id][,model][,priority]
};

enum class ArrivalProcess { kPoisson, kGamma, kConstant };

struct TrafficSpec {
  enum class Kind { kTrace, kGenerator };
  Kind kind = Kind::kGenerator;

  // --- kTrace ---
  TraceFormat format = TraceFormat::kCsv;
  std::string path;          // absolute, or relative to the working directory
  // Keep arrivals with trace time in [start_s, end_s) (seconds from the
  // trace's first arrival), shifted so the window starts at time 0 ...
  double start_s = 0;
  double end_s = std::numeric_limits<double>::infinity();
  // ... then divide inter-arrival times by rate_scale (2 = twice the rate).
  double rate_scale = 1.0;

  // --- kGenerator ---
  ArrivalProcess arrival = ArrivalProcess::kPoisson;
  double rate_per_s = 0;     // mean arrival rate
  double cv = 1.0;           // kGamma: coefficient of variation of the gaps
  LengthSpec prompt;         // used unless lengths_csv is set
  LengthSpec output;
  // A length-distribution CSV (num_prefill_tokens,num_decode_tokens,...; the
  // ShareGPT format): each request draws one row, prompt and output together.
  std::string lengths_csv;
  std::string model;         // model name stamped on generated requests ("" = default)

  // --- both ---
  int64_t max_requests = std::numeric_limits<int64_t>::max();  // stop after this many
  double max_arrival_s = std::numeric_limits<double>::infinity();  // stop at this arrival time
};

// Builds the stream. `rng` feeds generators (ignored by traces). Opening
// errors (missing file, bad header, empty length CSV) are returned here;
// row errors surface later through RequestSource::status().
Status MakeRequestSource(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out);

}  // namespace fleetsim
