// GeneratorSource: a synthetic workload. Arrival instants come from an
// ArrivalTimes process; (prompt, output) lengths from two LengthSamplers or,
// when the spec names a length CSV, from one row of a LengthTable drawn
// uniformly. The stream stops at max_requests or before max_arrival_s,
// whichever comes first.
//
// Optionally (traffic_spec.h has the semantics): requests open with one of a
// few shared system prompts (SharedPrefixSpec), and/or arrivals start
// multi-turn sessions whose later turns resend the conversation so far
// (SessionSpec). Either one fills prefix_blocks with chained ids of
// kPrefixBlockTokens tokens each:
//   - group g's i-th system-prompt block: kGroupIdBase + g * 2^20 + i;
//   - every other block: a fresh id from a counter starting at kFreshIdBase,
//     handed out in output order and never reused (a session's later turns
//     repeat the ids of its earlier turns' full blocks).
// The two ranges cannot meet (group ids stay below 2^41), so two requests
// share exactly their common leading ids' worth of prompt.
//
// Random streams: the given Rng seeds four sub-streams, in this order: the
// gaps (session starts, with sessions), the lengths (prompt drawn before
// output), the groups, and the think times. So changing the length
// distribution leaves arrival times unchanged and vice versa; turning
// shared_prefix on or off changes neither; and without either key the
// stream is exactly what it was before they existed.
//
// Sessions stream: the next turn of each open session waits in a min-heap
// keyed by (arrival, session id) and is merged with new session starts in
// arrival order (ties go to the older session), so memory follows the open
// sessions, not the requests. A turn enters the heap when its predecessor
// is emitted (its think time and lengths are drawn then) and only if it
// will be sent: within max_context_tokens and before max_arrival_s.
//
// Next() is cheap: no allocation beyond the Request's own fields (the model
// name is copied into out->model and the ids into out->prefix_blocks, which
// reuse their capacity; the heap recycles its entries' id vectors), no
// strings built, one or two Rng draws per quantity.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "sim/engine/rng.h"
#include "sim/engine/time.h"
#include "sim/traffic/arrival_times.h"
#include "sim/traffic/length_sampler.h"
#include "sim/traffic/length_table.h"
#include "sim/traffic/source.h"
#include "sim/traffic/traffic_spec.h"

namespace fleetsim {

class GeneratorSource final : public RequestSource {
 public:
  // Tokens per prefix block id (as in the Mooncake traces).
  static constexpr int32_t kPrefixBlockTokens = 512;
  // Group g's i-th block id is kGroupIdBase + g * kGroupIdStride + i.
  static constexpr uint64_t kGroupIdBase = uint64_t{1} << 40;
  static constexpr uint64_t kGroupIdStride = uint64_t{1} << 20;
  // The first fresh (unshared) block id.
  static constexpr uint64_t kFreshIdBase = uint64_t{1} << 50;

  // Validates the generator fields of `spec` (errors name them as
  // "traffic.<field>"; the shared_prefix and sessions fields by their
  // scenario path, "traffic.generator.shared_prefix.tokens") and loads its
  // length CSV, if any. A generator needs max_requests or a finite
  // max_arrival_s, or it would never end. With shared_prefix, the system
  // prompt plus the longest drawable prompt must fit in an int32_t.
  static Status Make(const TrafficSpec& spec, Rng rng, std::unique_ptr<RequestSource>* out);

  bool Next(Request* out) override;
  const Status& status() const override { return status_; }

  // Sessions whose next turn is waiting to arrive (0 without sessions):
  // never more than the sessions open at the last emitted arrival.
  size_t pending_turns() const { return pending_.size(); }

 private:
  // A session's next turn, drawn when its previous turn was emitted.
  struct PendingTurn {
    SimTime arrival;
    int64_t session;
    int32_t turn;  // 1-based
    int32_t prompt_tokens;
    int32_t output_tokens;
    std::vector<uint64_t> blocks;  // the previous turn's full blocks
  };
  // Orders the heap so that its front is the smallest (arrival, session).
  struct LaterTurn {
    bool operator()(const PendingTurn& a, const PendingTurn& b) const {
      return a.arrival != b.arrival ? a.arrival > b.arrival : a.session > b.session;
    }
  };

  GeneratorSource(const TrafficSpec& spec, Rng gaps, Rng lengths, Rng groups, Rng think,
                  std::unique_ptr<const LengthTable> table);

  // One (prompt, output) draw from the lengths sub-stream.
  void DrawLengths(int32_t* prompt, int32_t* output);
  // A group's system-prompt block ids, then fresh ids up to `prompt_tokens`.
  void StartBlocks(std::vector<uint64_t>* blocks, int32_t prompt_tokens);
  // Appends fresh ids until `blocks` covers `prompt_tokens`.
  void AppendFreshBlocks(std::vector<uint64_t>* blocks, int64_t prompt_tokens);
  // Sessions: emits the next turn or session start; false at the end.
  bool NextTurn(Request* out);
  // Sessions: draws the turn after `out` and queues it if it will be sent.
  void ScheduleNextTurn(const Request& out, int32_t turn);
  // Fields every emitted request gets the same way.
  void FillCommon(Request* out, SimTime at);

  ArrivalTimes arrivals_;
  Rng length_rng_;
  Rng group_rng_;
  Rng think_rng_;
  LengthSampler prompt_;
  LengthSampler output_;
  std::unique_ptr<const LengthTable> table_;  // when set, prompt_/output_ are unused
  std::string model_;
  int64_t max_requests_;
  SimTime max_arrival_;  // exclusive
  int64_t emitted_ = 0;
  bool done_ = false;
  Status status_;  // always ok: a validated generator cannot fail mid-stream

  std::optional<SharedPrefixSpec> shared_prefix_;
  std::optional<SessionSpec> sessions_;
  uint64_t next_fresh_id_ = kFreshIdBase;

  // --- sessions ---
  int64_t sessions_started_ = 0;
  SimTime next_start_ = 0;  // the next session start, when have_next_start_
  bool have_next_start_ = false;
  std::vector<PendingTurn> pending_;                // a heap under LaterTurn
  std::vector<std::vector<uint64_t>> spare_blocks_;  // emptied vectors, for reuse
};

}  // namespace fleetsim
