// ReplicaState: the requests one replica holds and their KV blocks, kept as
// aggregates so that an iteration costs O(1) plus O(log n) per request that
// starts or ends, never O(batch).
//
// Running requests are either *prefilling* (some prompt tokens not yet in
// the KV cache; few at a time) or *decoding*. The decoding set is not walked
// per step: every decoding sequence advances one token per decode step, so
// with a replica-wide decode-step counter D a sequence that joined at step d0
// with kv0 tokens in KV holds kv0 + (D - d0) tokens at step D. The set keeps
//   - sum of (kv0 - d0): the summed context of a step is that + n*(D+1);
//   - a count per residue (kv0 - d0) mod block_size: the sequences needing a
//     new block at step D are those with residue == -D mod block_size;
//   - a min-heap of finishing steps d0 + tokens_left, with lazy deletion.
// Batch schedulers (batch_scheduler.h) read this state and build a Batch
// through its methods; the Replica applies the finished batch.
//
// Decoder groups. With pipeline parallelism up to pp batches are in flight
// at once, and a sequence in one of them cannot be in another (its next
// token is not known yet). The decoders are therefore split into groups,
// each with its own step counter and aggregates as above, one group per
// batch slot, as vLLM V0 runs pipeline parallelism (one virtual engine, with
// its own scheduler and queues, per stage): an arriving request joins the
// group holding fewest requests and stays in it (waiting, prefilling,
// decoding); a batch is built for a group that is not in flight
// (SelectGroup) from that group's requests alone. Preemption may take any
// request not in flight, and a preempted one waits in its own group's
// queue; a swapped one resumes into the group that takes it back. With one
// group (pp = 1) nothing is ever in flight while a batch is built, and the
// state behaves as a single set of queues and decoders.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <vector>

#include "model/batch_shape.h"
#include "sim/cluster/kv_cache.h"
#include "sim/cluster/observer.h"
#include "sim/cluster/prefix_cache.h"
#include "sim/cluster/speculation.h"
#include "sim/engine/time.h"
#include "sim/traffic/request.h"

namespace fleetsim {

using SeqId = uint32_t;
inline constexpr SeqId kNoSeq = ~SeqId{0};
// A running request's place in its replica's victim order (VictimOrder):
// the largest key is preempted first.
using RunKey = std::tuple<int64_t, int64_t, int64_t, SeqId>;

enum class SeqPhase : uint8_t { kFree, kWaiting, kPrefill, kDecode, kSwapped, kDone };

// Which running request an engine gives up first when KV blocks run out.
enum class VictimOrder : uint8_t {
  // The latest-arrived (highest (priority, arrival)): Sarathi-Serve sorts
  // its running list first come first served and pops its tail; vLLM V0 and
  // Orca as modelled here.
  kLatestArrival,
  // The last admitted or resumed: vLLM V1 pops the tail of its running list,
  // to which a resumed request is appended again.
  kRunningQueueTail,
  // SGLang's retract_decode: the decoder with the fewest output tokens, then
  // the longest prompt, then the last to join the decode batch; requests
  // still in prefill come after every decoder.
  kFewestOutputsLongestPrompt,
};

// An engine's rules for the state its scheduler builds batches from
// (BatchScheduler::state_rules()).
struct StateRules {
  VictimOrder victim_order = VictimOrder::kLatestArrival;
  // A request preempted by recompute waits at the back of the queue (SGLang
  // appends retracted requests) instead of the front (vLLM, Sarathi-Serve).
  bool requeue_at_back = false;
  // With prefix caching on, every full block a request computed stays cached
  // when it lets go of its KV, generated tokens included, as vLLM V1 hashes
  // each full block: a preempted request finds its own blocks when it
  // resumes, and a finished one's blocks wait their turn in the LRU order
  // instead of being reused first. Off: only prompt prefix ids are kept.
  bool cache_every_full_block = false;
};

// What preemption does with a running request's KV.
enum class PreemptionMode {
  kRecompute,  // drop it; the request prefills prompt + generated tokens again (vLLM's default)
  kSwap,       // copy a decoder's KV to host memory over PCIe and back on resume (vLLM V0's swap)
};

struct Seq {
  Request req;
  SeqPhase phase = SeqPhase::kFree;
  int32_t prefill_target = 0;   // tokens the current prefill must put in KV
  int32_t prefilled = 0;        // of those, already in KV (prefill phase)
  int32_t generated = 0;        // output tokens produced so far (at d0 while decoding; see Generated())
  int32_t preemptions = 0;
  int64_t held_blocks = 0;      // KV blocks held (prefill phase, or the whole reservation; derived in decode)
  bool reserved = false;        // held_blocks were reserved at admission for the request's whole length (Orca)
  int64_t swapped_tokens = 0;   // KV tokens in host memory while swapped
  // Prefix caching: the cached prefix nodes this request references, and
  // their blocks (part of its KV, not of held_blocks).
  std::vector<PrefixCache::NodeId> nodes;
  int64_t shared_blocks = 0;
  int32_t cached_tokens = -1;   // prompt tokens found cached at first admission (-1: not admitted yet)
  // Its own KV past its prompt's prefix ids, cached when it last let go of
  // its KV (StateRules::cache_every_full_block), or 0. In `nodes` (last)
  // while it is in use again; it may have been evicted since.
  PrefixCache::NodeId own_node = 0;
  RunKey run_key{};             // its place among the running requests
  // Decode phase: KV tokens at step D are kv0 + (D - d0).
  int64_t d0 = 0;
  int64_t kv0 = 0;
  SimTime joined_decode = 0;    // when its previous token (the one that made it a decoder) came
  uint32_t heap_gen = 0;        // invalidates stale finish-heap entries
  bool in_batch = false;        // scheduled in the batch being built or in flight
  uint8_t group = 0;            // its decoder group (decode phase; ReplicaState)
  SimTime enqueued = 0;         // reached this replica
  double queue_key = 0;         // its place in the waiting queue: ascending, FCFS among equals
  SimTime first_scheduled = -1;
  SimTime first_token = -1;
  SimTime last_token = -1;
};

// One prefill chunk of a batch.
struct Chunk {
  SeqId seq;
  int32_t tokens;
  int32_t start;  // tokens of this prefill already in KV before the chunk
};

// What one iteration runs.
struct Batch {
  uint64_t id = 0;
  int group = 0;               // the decoder group it is built for (ReplicaState::SelectGroup)
  bool decodes = false;        // the group's whole decoding set advances one token
  int64_t decode_seqs = 0;
  std::vector<Chunk> chunks;
  BatchShape shape;
  SimTime start = 0;           // set before scheduling
  bool empty() const { return !decodes && chunks.empty() && shape.empty(); }
};

class ReplicaState {
 public:
  // `host_blocks`: KV blocks of host memory for swapped requests (0: swap
  // falls back to recompute).
  // `decode_groups`: batches that may be in flight at once (the pipeline
  // depth), 1 to 255.
  ReplicaState(int64_t kv_blocks, int block_size, PreemptionMode mode = PreemptionMode::kRecompute,
               int64_t host_blocks = 0, std::optional<PrefixCache::Eviction> prefix_cache = std::nullopt,
               const StateRules& rules = {}, int decode_groups = 1);
  ReplicaState(const ReplicaState&) = delete;
  ReplicaState& operator=(const ReplicaState&) = delete;
  ReplicaState(ReplicaState&&) = default;
  ReplicaState& operator=(ReplicaState&&) = default;  // a restart starts from a fresh state

  // ---- Decoder groups (the replica) ---------------------------------------
  int decode_groups() const { return static_cast<int>(groups_.size()); }
  // The group the next batch is built for; the decode views and batch
  // building below act on it. REQUIRES: it is not in flight.
  void SelectGroup(int g) {
    FLEETSIM_CHECK(g >= 0 && g < decode_groups() && !groups_[g].in_flight);
    active_ = g;
  }
  int selected_group() const { return active_; }
  bool group_in_flight(int g) const { return groups_[g].in_flight; }
  // `batch` (built for its group) was launched: the group is in flight
  // until Complete(batch).
  void Launched(const Batch& batch) { groups_[batch.group].in_flight = true; }
  // A decode span (completed by CompleteDecodeSteps, not Complete) ended.
  void SpanLanded() { G().in_flight = false; }
  int64_t num_decoding_in(int g) const { return groups_[g].n; }
  // The group's decoders, for listing a batch's sequences: fn(id, kv_tokens)
  // with the KV each holds before the step, as its blocks count it (a
  // speculating decoder's accepted tokens beyond one a step are in the
  // batch shape's KV read only: speculation.h). O(slots); only for
  // executors that ask.
  template <typename Fn>
  void ForEachDecoder(int g, Fn&& fn) const {
    for (SeqId id = 0; id < seqs_.size(); ++id)
      if (seqs_[id].phase == SeqPhase::kDecode && seqs_[id].group == g) fn(id, KvLen(seqs_[id]));
  }

  // ---- Views for schedulers ----------------------------------------------
  const Seq& seq(SeqId id) const { return seqs_[id]; }
  size_t num_slots() const { return seqs_.size(); }
  // The selected group's waiting queue (each group has its own, as each of
  // vLLM's virtual engines has its own scheduler; one group: the replica's).
  const std::deque<SeqId>& waiting() const { return G().waiting; }
  const std::deque<SeqId>& waiting_in(int g) const { return groups_[g].waiting; }
  int64_t num_waiting() const { return n_waiting_all_; }
  // Prefilling requests, in admission order.
  const std::vector<SeqId>& prefilling() const { return G().prefilling; }
  const std::vector<SeqId>& prefilling_in(int g) const { return groups_[g].prefilling; }
  // Swapped-out requests, in the order they were swapped out.
  const std::deque<SeqId>& swapped() const { return swapped_; }
  int64_t host_blocks_used() const { return host_used_; }
  // Every decoder (all groups): output tokens still to come, and their
  // whole output lengths (what SGLang knows as max_new_tokens).
  int64_t DecodingTokensLeft() const {
    int64_t left = 0;
    for (const DecodeGroup& g : groups_) left += g.sum_out_base - g.n * g.step;
    return left;
  }
  int64_t DecodingOutputTokens() const {
    int64_t out = 0;
    for (const DecodeGroup& g : groups_) out += g.sum_output;
    return out;
  }
  int64_t num_decoding_all() const { return n_decode_all_; }
  // Decoders of the selected group (what its next batch may decode); below,
  // "the decoding set" is that group's.
  int64_t num_decoding() const { return G().n; }
  int64_t num_running() const { return n_decode_all_ + n_prefill_all_; }
  int64_t num_live() const {
    return num_running() + n_waiting_all_ + static_cast<int64_t>(swapped_.size());
  }
  const KvCacheManager& kv() const { return kv_; }
  int64_t decode_step() const { return G().step; }
  // New KV blocks the decoding set needs to run one more step.
  int64_t DecodeBlocksNeeded() const;
  // While the decoding set stays as it is: calls fn(blocks, kv_tokens) for
  // the next decode steps in order (DecodeBlocksNeeded() and the
  // BatchShape::decode_kv_tokens of each), until fn returns false.
  template <typename Fn>
  void ForEachDecodeStepAhead(Fn&& fn) const {
    const DecodeGroup& g = G();
    if (g.n == 0) return;
    int r = Residue(-g.step);
    for (int64_t kv = g.sum_base + g.n * (g.step + 1);; kv += g.n) {
      if (!fn(g.residue_count[r], kv)) return;
      r = r == 0 ? block_size_ - 1 : r - 1;
    }
  }
  int64_t DecodeKvTokensAhead(int64_t ahead) const { return G().sum_base + G().n * (G().step + ahead + 1); }
  // What AddDecodes does to the state, without a Batch: a decode span's
  // iteration starts. `blocks` must be DecodeBlocksNeeded() (the span
  // planned it with ForEachDecodeStepAhead). REQUIRES: as AddDecodes.
  void StartDecodeStep(int64_t blocks) {
    G().inflight_blocks = blocks;
    if (blocks > 0) kv_.Allocate(blocks);
  }
  // While the decoding set stays as it is: the new KV blocks of the decode
  // steps `from` to `to` - 1 ahead (0: the next), summed.
  int64_t DecodeBlocksAhead(int64_t from, int64_t to) const;
  // The most decode steps from `from` ahead on whose blocks, summed, fit in
  // `blocks` (while the decoding set stays as it is). REQUIRES: decoders.
  int64_t DecodeStepsFitting(int64_t from, int64_t blocks) const;
  // A decode span's steps `from` to `to` - 1 ahead start (and complete, by
  // CompleteDecodeSteps, before another starts): takes their blocks, one
  // step at a time where that evicts cached prefixes, as AddDecodes would.
  void TakeDecodeBlocks(int64_t from, int64_t to);
  // Decoders that take a new block every block_size steps (all but those
  // holding a reservation).
  int64_t BlockTakingDecoders() const;
  // Completes steps 0 to run.count - 1 of a decode span's (none gives a
  // decoder its last token; their blocks taken): what Complete does for
  // each, with their gaps reported as gap(at, gap, count) for the first
  // step's decoders whose previous token came at another time than
  // run.End(-1), then steps(run) for the rest (from run.first: 0, or 1).
  // REQUIRES: run.count > 0.
  template <typename GapFn, typename StepsFn>
  void CompleteDecodeSteps(DecodeStepRun& run, GapFn&& gap, StepsFn&& steps);
  // Decode steps to complete, from now, until the first that gives some
  // decoder its last token (1: the next one); 0 when none decode. Drops
  // stale entries from the top of the finish heap.
  int64_t DecodeStepsToFirstFinish();
  // New KV blocks `id` needs to add `tokens` prefill tokens.
  int64_t ChunkBlocksNeeded(SeqId id, int32_t tokens) const;
  int32_t PrefillLeft(SeqId id) const { return seqs_[id].prefill_target - seqs_[id].prefilled; }
  // Output tokens produced so far (a decoder's count is derived from D).
  int32_t Generated(const Seq& s) const {
    return s.phase == SeqPhase::kDecode ? s.generated + static_cast<int32_t>(groups_[s.group].step - s.d0)
                                        : s.generated;
  }

  // ---- Batch building (schedulers) ---------------------------------------
  // Adds one step of every decoding sequence, allocating its new blocks.
  // REQUIRES: kv().CanAllocate(DecodeBlocksNeeded()), no decodes in batch.
  void AddDecodes(Batch* batch);
  struct Admission {
    int64_t max_tokens = 0;         // tokens of the first prefill chunk, at most
    bool whole = false;             // the entire prefill in that chunk, or nothing
    int64_t keep_free = 0;          // blocks that must stay available after it
    bool allocate_prefill = false;  // take the whole prefill's blocks now (Sarathi-Serve), not the chunk's
  };
  // Admits the front waiting request with a first prefill chunk, reusing the
  // longest cached prefix of its prompt (or its own cached KV), if the blocks
  // fit. Returns it, or kNoSeq (nothing changed). The way every scheduler
  // but Orca admits.
  SeqId TryAdmitFront(const Admission& admission, Batch* batch);
  // Tokens the front waiting request would find cached.
  int64_t FrontCachedTokens() const;
  // Prefix-cache figures: prompt tokens found cached and prompt tokens
  // admitted (first admissions only), blocks evicted.
  int64_t prefix_hit_tokens() const { return prefix_hit_tokens_; }
  int64_t prefix_prompt_tokens() const { return prefix_prompt_tokens_; }
  bool prefix_caching() const { return kv_.cache() != nullptr; }
  // Moves the front waiting request to the running (prefilling) set. With
  // reserve_tokens > 0, KV blocks for that many tokens are taken now and
  // cover the request's whole life (Orca's reservation).
  // REQUIRES: the reservation fits.
  SeqId AdmitFront(int64_t reserve_tokens = 0);
  // Brings the first swapped request back: allocates its blocks, adds the
  // copy to `batch` and makes it a decoder of this step. Call before
  // AddDecodes. REQUIRES: kv().CanAllocate(SwapInBlocks()).
  SeqId ResumeSwappedFront(Batch* batch);
  int64_t SwapInBlocks() const;  // blocks the first swapped request needs
  // Adds a chunk of `tokens` prefill tokens of prefilling `id`, allocating
  // its blocks. REQUIRES: blocks available, 0 < tokens <= PrefillLeft(id).
  void AddChunk(SeqId id, int32_t tokens, Batch* batch);
  // Preempts the running request the engine gives up first
  // (StateRules::victim_order) that is not already in `batch`, and frees its
  // blocks. A decoder is swapped out when the mode is kSwap and host memory
  // has room (the copy is added to `batch`); otherwise the request returns
  // to the waiting queue (front, or back with requeue_at_back) to be
  // recomputed. Returns it, or kNoSeq if none.
  SeqId PreemptVictim(Batch* batch, SimTime now);
  int64_t preemptions() const { return preemptions_; }

  // ---- Replica side --------------------------------------------------------
  // Adds a request to the waiting queue behind every request whose key is
  // at most `key` (all keys 0: first come first served, O(1); a priority
  // order otherwise, O(requests it passes)).
  SeqId Enqueue(Request req, SimTime now, double key = 0);
  // Takes a waiting request that was never scheduled out of the queue and
  // frees its slot (a queue timeout). REQUIRES: it is waiting.
  void RemoveWaiting(SeqId id);
  // Completes `batch` at `end`: advances prefills and decodes, emits tokens.
  // Calls gap(gap, count) for each group of inter-token gaps, and
  // finished(seq) for each request that produced its last token; the
  // finished slots are freed after the callback returns.
  template <typename GapFn, typename FinishFn>
  void Complete(Batch& batch, SimTime end, GapFn&& gap, FinishFn&& finished);
  // Every request still held (waiting or running), for end-of-run records.
  template <typename Fn>
  void ForEachLive(Fn&& fn) const {
    for (SeqId id = 0; id < seqs_.size(); ++id)
      if (seqs_[id].phase != SeqPhase::kFree && seqs_[id].phase != SeqPhase::kDone) fn(seqs_[id]);
  }
  // Checks the running sums against a walk over every sequence (tests).
  bool CheckInvariants() const;

 private:
  // Why a request lets go of its KV.
  enum class Release { kFinish, kPreempt, kSwapOut };
  // The running set, keyed so that the last element is the next victim.
  void EnterRunning(SeqId id);
  void LeaveRunning(SeqId id) { victims_.erase(seqs_[id].run_key); }
  SeqId NewSlot();
  void FreeSlot(SeqId id);
  int64_t KvLen(const Seq& s) const { return s.kv0 + (groups_[s.group].step - s.d0); }
  int Residue(int64_t v) const {
    int64_t r = v % block_size_;
    return static_cast<int>(r < 0 ? r + block_size_ : r);
  }
  // Joins the selected group's decoding set.
  void JoinDecode(SeqId id, SimTime now);
  // Cached nodes `s` would reuse (the longest match of its prompt's ids,
  // then its own cached KV if that continues the match), leaving at least
  // one token to compute. Returns the tokens they hold.
  int64_t MatchPrefix(const Seq& s, std::vector<PrefixCache::NodeId>* nodes) const;
  // Prefix ids of `s`'s prompt that cover whole blocks, and how many of its
  // nodes are such ids (its own node aside).
  size_t FullPromptIds(const Seq& s) const;
  size_t IdNodes(const Seq& s) const {
    return s.nodes.size() - (s.own_node != 0 && !s.nodes.empty() && s.nodes.back() == s.own_node ? 1 : 0);
  }
  // The prompt's full prefix ids within its first `upto` tokens become cache
  // nodes (or, when another request cached them meanwhile, are shared): at
  // the end of a prefill, and before a preempted prefill lets go.
  void PublishPrefix(SeqId id, int64_t upto);
  // Frees the KV of a running request: its own blocks (kept cached as the
  // rules say) and its references to cached nodes, released tail first under
  // LRU, as vLLM frees a request's blocks in reverse so that its chain's
  // tail is evicted first.
  void ReleaseKv(SeqId id, Release why);
  void ReleasePrefix(Seq& s);
  void LeaveDecode(SeqId id, Release why);
  void RemovePrefilling(SeqId id);

  std::vector<Seq> seqs_;
  std::vector<SeqId> free_slots_;
  std::deque<SeqId> swapped_;
  PreemptionMode mode_;
  StateRules rules_;
  int64_t host_blocks_;
  int64_t host_used_ = 0;
  std::set<RunKey> victims_;  // running requests; the last is the next victim
  int64_t run_seq_ = 0;       // order of entering the running set or the decode batch
  KvCacheManager kv_;
  int block_size_;

  struct FinishEntry {
    int64_t step;
    SeqId seq;
    uint32_t gen;
    bool operator>(const FinishEntry& o) const {
      return step != o.step ? step > o.step : seq > o.seq;
    }
  };
  // One decoding set's aggregates (the file comment).
  struct DecodeGroup {
    int64_t step = 0;          // D
    int64_t n = 0;
    int64_t sum_base = 0;      // sum of kv0 - d0
    int64_t sum_out_base = 0;  // sum of output_tokens - generated + d0 (tokens left: that - n*D)
    int64_t sum_output = 0;    // sum of output_tokens
    // Speculative decoders (speculation.h): sum of SpecExtraQ e and of
    // e * d0, so the extra KV they read at step D is (D sum_e - sum_e_d0) / 1024.
    int64_t spec_q = 0;
    int64_t spec_q_d0 = 0;
    std::vector<int64_t> residue_count;
    std::priority_queue<FinishEntry, std::vector<FinishEntry>, std::greater<>> finish_heap;
    // Decoders whose previous token did not come from the group's last
    // decode step (they joined since), grouped by when that token came:
    // (time, count).
    std::vector<std::pair<SimTime, int64_t>> fresh;
    SimTime last_end = 0;
    int64_t inflight_blocks = 0;  // allocated by AddDecodes, not yet reflected in D
    bool in_flight = false;       // its batch is launched and not complete
    // Its requests that wait, and those in prefill (in admission order).
    std::deque<SeqId> waiting;
    std::vector<SeqId> prefilling;
    int64_t members = 0;          // requests it holds, of every phase
  };
  // Where an arriving request goes: the group holding fewest (vLLM V0's
  // add_request picks the virtual engine with the fewest unfinished).
  int LeastLoadedGroup() const;
  // Inserts `id` into its group's waiting queue by key: behind every
  // request whose key is at most its own (`front_of_equals`: in front of
  // every one whose key is not below it).
  void InsertWaiting(SeqId id, bool front_of_equals);
  DecodeGroup& G() { return groups_[active_]; }
  const DecodeGroup& G() const { return groups_[active_]; }
  std::vector<DecodeGroup> groups_;
  int active_ = 0;
  int64_t n_decode_all_ = 0;
  int64_t n_prefill_all_ = 0;
  int64_t n_waiting_all_ = 0;
  int64_t preemptions_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t prefix_prompt_tokens_ = 0;
  std::vector<PrefixCache::NodeId> match_scratch_;
  std::vector<SeqId> finished_scratch_;
};

// ---- Template implementation ------------------------------------------------

template <typename GapFn, typename FinishFn>
void ReplicaState::Complete(Batch& batch, SimTime end, GapFn&& gap, FinishFn&& finished) {
  finished_scratch_.clear();
  DecodeGroup& g = groups_[batch.group];
  g.in_flight = false;
  if (batch.decodes) {
    // Every decoder present at launch gets a token at `end`.
    int64_t fresh_total = 0;
    for (auto& [t, count] : g.fresh) {
      if (count > 0) gap(end - t, count);
      fresh_total += count;
    }
    const int64_t steady = g.n - fresh_total;
    if (steady > 0) gap(end - g.last_end, steady);
    g.fresh.clear();
    g.last_end = end;
    ++g.step;
    g.inflight_blocks = 0;
    while (!g.finish_heap.empty() && g.finish_heap.top().step <= g.step) {
      FinishEntry e = g.finish_heap.top();
      g.finish_heap.pop();
      Seq& s = seqs_[e.seq];
      if (s.phase != SeqPhase::kDecode || s.heap_gen != e.gen) continue;
      s.last_token = end;
      LeaveDecode(e.seq, Release::kFinish);
      s.generated = s.req.output_tokens;
      s.phase = SeqPhase::kDone;
      finished_scratch_.push_back(e.seq);
    }
  }
  // Prefills that end join this batch's group.
  active_ = batch.group;
  for (const Chunk& c : batch.chunks) {
    Seq& s = seqs_[c.seq];
    s.in_batch = false;
    if (s.phase != SeqPhase::kPrefill) continue;  // cannot happen: in flight, so never preempted
    s.prefilled += c.tokens;
    if (s.prefilled < s.prefill_target) continue;
    // Prefill done: the last position's logits give the next token.
    if (s.first_token < 0) {
      s.first_token = end;
    } else {
      gap(end - s.last_token, 1);  // resumed after preemption: one long gap
    }
    s.last_token = end;
    ++s.generated;
    RemovePrefilling(c.seq);
    if (kv_.cache()) PublishPrefix(c.seq, s.prefilled);
    if (s.generated >= s.req.output_tokens) {
      ReleaseKv(c.seq, Release::kFinish);
      LeaveRunning(c.seq);
      s.phase = SeqPhase::kDone;
      finished_scratch_.push_back(c.seq);
    } else {
      JoinDecode(c.seq, end);
    }
  }
  for (SeqId id : finished_scratch_) {
    finished(seqs_[id]);
    FreeSlot(id);
  }
}

template <typename GapFn, typename StepsFn>
void ReplicaState::CompleteDecodeSteps(DecodeStepRun& run, GapFn&& gap, StepsFn&& steps) {
  DecodeGroup& g = G();
  FLEETSIM_CHECK(run.count > 0 && g.n > 0 && run.seqs == g.n);
  const SimTime end0 = run.End(0);
  int64_t fresh_total = 0;
  for (auto& [t, c] : g.fresh) {
    if (c > 0) gap(end0, end0 - t, c);
    fresh_total += c;
  }
  run.first = 0;
  if (fresh_total > 0 || g.last_end != run.End(-1)) {
    const int64_t steady = g.n - fresh_total;
    if (steady > 0) gap(end0, end0 - g.last_end, steady);
    run.first = 1;
  }
  if (run.first < run.count) steps(run);
  g.fresh.clear();
  g.last_end = run.End(run.count - 1);
  g.step += run.count;
  g.inflight_blocks = 0;
  FLEETSIM_CHECK(g.finish_heap.empty() || g.finish_heap.top().step > g.step);
}

}  // namespace fleetsim
