// The per-tool readers behind ReadObservedText (private to sim/observe).
// Each fills ObservedRuns from a file's text or parsed document, with start
// times on any origin; read_observed.cc picks the reader, then sorts each
// run by start and rebases it to its first request.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "sim/observe/json_fields.h"
#include "sim/observe/observed_run.h"
#include "sim/observe/read_observed.h"

namespace fleetsim::observe_internal {

struct ReadContext {
  std::string path;  // names the file in messages and locates companion files
  ReadObservedOptions options;
};

// One vLLM result object (a whole file, or one line of an --append-result
// file). `w` names the file or line.
Status ReadVllmResult(const ReadContext& ctx, const Where& w, const Json& doc, ObservedRun* run);
// An AIPerf profile_export.jsonl.
Status ReadAiperfExport(const ReadContext& ctx, std::string_view text, std::vector<ObservedRun>* out);
// A GenAI-Perf (perf_analyzer) profile_export.json.
Status ReadGenaiPerfExport(const ReadContext& ctx, const Json& doc, std::vector<ObservedRun>* out);
// A GuideLLM benchmarks.json.
Status ReadGuidellmReport(const ReadContext& ctx, const Json& doc, std::vector<ObservedRun>* out);
// fleetsim's per-request CSV.
Status ReadObservedCsv(const ReadContext& ctx, std::string_view text, std::vector<ObservedRun>* out);

// A run whose file keeps no per-request timing: refused with `why` and `fix`
// ("<file>: <why>; <fix>, or read its aggregates alone with
// --allow-aggregates"), or, when the options allow aggregates, marked
// per_request_timing false with no requests and `why` as a note.
Status WithoutPerRequestTiming(const ReadContext& ctx, const std::string& why, const std::string& fix,
                               ObservedRun* run);

// The aggregate file AIPerf or GenAI-Perf writes beside its per-request
// export, if present: fills run->file_aggregates (and mode and model where
// the run lacks them, from its input_config). `companion` is its path;
// absent is not an error, and is said in the run's notes.
Status ReadCompanionSummary(const std::string& companion, ObservedRun* run);

// TTFT <= E2E up to rounding in the client's own arithmetic.
inline bool TtftWithinE2e(double ttft_s, double e2e_s) { return ttft_s <= e2e_s * (1 + 1e-9) + 1e-9; }

}  // namespace fleetsim::observe_internal
