#include "sim/cluster/replica_state.h"

#include <algorithm>
#include <limits>

namespace fleetsim {

ReplicaState::ReplicaState(int64_t kv_blocks, int block_size, PreemptionMode mode, int64_t host_blocks,
                           std::optional<PrefixCache::Eviction> prefix_cache, const StateRules& rules,
                           int decode_groups)
    : mode_(mode),
      rules_(rules),
      host_blocks_(host_blocks),
      kv_(kv_blocks, block_size, prefix_cache),
      block_size_(block_size) {
  FLEETSIM_CHECK(block_size > 0 && kv_blocks >= 0 && decode_groups >= 1 && decode_groups <= 255);
  groups_.resize(static_cast<size_t>(decode_groups));
  for (DecodeGroup& g : groups_) g.residue_count.assign(static_cast<size_t>(block_size), 0);
}

SeqId ReplicaState::NewSlot() {
  if (!free_slots_.empty()) {
    SeqId id = free_slots_.back();
    free_slots_.pop_back();
    return id;
  }
  seqs_.emplace_back();
  return static_cast<SeqId>(seqs_.size() - 1);
}

void ReplicaState::FreeSlot(SeqId id) {
  Seq& s = seqs_[id];
  if (s.phase != SeqPhase::kFree) --groups_[s.group].members;
  uint32_t gen = s.heap_gen + 1;
  s = Seq();
  s.heap_gen = gen;  // a slot's stale heap entries stay stale after reuse
  free_slots_.push_back(id);
}

SeqId ReplicaState::Enqueue(Request req, SimTime now, double key) {
  SeqId id = NewSlot();
  Seq& s = seqs_[id];
  s.req = std::move(req);
  s.phase = SeqPhase::kWaiting;
  s.prefill_target = s.req.prompt_tokens;
  s.enqueued = now;
  s.queue_key = key;
  // Its first token already streamed from a prefill replica: the next one
  // is a gap after it.
  if (s.req.streamed_first_token >= 0) s.first_token = s.last_token = s.req.streamed_first_token;
  s.group = static_cast<uint8_t>(groups_.size() == 1 ? 0 : LeastLoadedGroup());
  ++groups_[s.group].members;
  InsertWaiting(id, false);
  return id;
}

int ReplicaState::LeastLoadedGroup() const {
  int best = 0;
  for (int g = 1; g < decode_groups(); ++g)
    if (groups_[g].members < groups_[best].members) best = g;
  return best;
}

void ReplicaState::InsertWaiting(SeqId id, bool front_of_equals) {
  std::deque<SeqId>& q = groups_[seqs_[id].group].waiting;
  const double key = seqs_[id].queue_key;
  ++n_waiting_all_;
  if (front_of_equals) {
    auto at = q.begin();
    while (at != q.end() && seqs_[*at].queue_key < key) ++at;
    q.insert(at, id);
    return;
  }
  if (q.empty() || seqs_[q.back()].queue_key <= key) {
    q.push_back(id);  // first come first served, and most arrivals of an ordered queue
    return;
  }
  auto at = q.end();
  while (at != q.begin() && seqs_[*(at - 1)].queue_key > key) --at;
  q.insert(at, id);
}

void ReplicaState::RemoveWaiting(SeqId id) {
  FLEETSIM_CHECK(seqs_[id].phase == SeqPhase::kWaiting);
  std::deque<SeqId>& q = groups_[seqs_[id].group].waiting;
  q.erase(std::find(q.begin(), q.end(), id));
  --n_waiting_all_;
  FreeSlot(id);
}

int64_t ReplicaState::DecodeBlocksNeeded() const {
  const DecodeGroup& g = G();
  if (g.n == 0) return 0;
  // Sequence i writes position kv_len_i this step and needs a new block when
  // kv_len_i % block_size == 0, i.e. residue_i == -D mod block_size.
  return g.residue_count[Residue(-g.step)];
}

int64_t ReplicaState::DecodeBlocksAhead(int64_t from, int64_t to) const {
  const DecodeGroup& g = G();
  if (g.n == 0 || to <= from) return 0;
  // Over any block_size steps in a row each decoder needs exactly one block
  // (but those holding a reservation).
  const int64_t steps = to - from;
  int64_t blocks = steps / block_size_ * BlockTakingDecoders();
  for (int64_t d = g.step + from + steps / block_size_ * block_size_; d < g.step + to; ++d)
    blocks += g.residue_count[Residue(-d)];
  return blocks;
}

int64_t ReplicaState::DecodeStepsFitting(int64_t from, int64_t blocks) const {
  FLEETSIM_CHECK(blocks >= 0);
  const int64_t takers = BlockTakingDecoders();
  if (takers == 0) return std::numeric_limits<int64_t>::max() / 4;
  // Whole rounds of block_size steps take `takers` blocks each; then step
  // by step (fewer than block_size more fit).
  const int64_t rounds = blocks / takers;
  int64_t steps = rounds * block_size_;
  int64_t left = blocks - rounds * takers;
  for (int64_t d = G().step + from + steps;; ++d, ++steps) {
    left -= G().residue_count[Residue(-d)];
    if (left < 0) return steps;
  }
}

int64_t ReplicaState::BlockTakingDecoders() const {
  int64_t n = 0;
  for (int64_t c : G().residue_count) n += c;
  return n;
}

void ReplicaState::TakeDecodeBlocks(int64_t from, int64_t to) {
  // One allocation for all: step by step, each would evict (from the same
  // order) what the next one would have, so the cache ends the same.
  if (const int64_t blocks = DecodeBlocksAhead(from, to); blocks > 0) kv_.Allocate(blocks);
}

int64_t ReplicaState::DecodeStepsToFirstFinish() {
  DecodeGroup& g = G();
  while (!g.finish_heap.empty()) {
    const FinishEntry& e = g.finish_heap.top();
    const Seq& s = seqs_[e.seq];
    if (s.phase == SeqPhase::kDecode && s.heap_gen == e.gen) return std::max<int64_t>(1, e.step - g.step);
    g.finish_heap.pop();
  }
  return 0;
}

int64_t ReplicaState::ChunkBlocksNeeded(SeqId id, int32_t tokens) const {
  const Seq& s = seqs_[id];
  if (s.reserved) return 0;
  // Zero when the blocks were taken at admission (Admission::allocate_prefill).
  return std::max<int64_t>(
      0, kv_.BlocksFor(static_cast<int64_t>(s.prefilled) + tokens) - s.shared_blocks - s.held_blocks);
}

void ReplicaState::EnterRunning(SeqId id) {
  Seq& s = seqs_[id];
  switch (rules_.victim_order) {
    case VictimOrder::kLatestArrival:
      s.run_key = {s.req.priority, s.req.arrival, static_cast<int64_t>(s.req.id), id};
      break;
    case VictimOrder::kRunningQueueTail:
      s.run_key = {run_seq_++, 0, 0, id};
      break;
    case VictimOrder::kFewestOutputsLongestPrompt:
      // A decoder's output count is generated + (D - d0), so fewer outputs
      // is a larger d0 - generated at any D. Requests in prefill sort first.
      s.run_key = s.phase == SeqPhase::kDecode
                      ? RunKey{s.d0 - s.generated, s.req.prompt_tokens, run_seq_++, id}
                      : RunKey{std::numeric_limits<int64_t>::min(), 0, run_seq_++, id};
      break;
  }
  victims_.insert(s.run_key);
}

void ReplicaState::AddDecodes(Batch* batch) {
  FLEETSIM_CHECK(!batch->decodes && batch->group == active_);
  DecodeGroup& g = G();
  if (g.n == 0) return;
  g.inflight_blocks = DecodeBlocksNeeded();
  kv_.Allocate(g.inflight_blocks);
  batch->decodes = true;
  batch->decode_seqs = g.n;
  batch->shape.decode_seqs = static_cast<int32_t>(g.n);
  batch->shape.decode_tokens = g.n;
  // Each attends to its KV plus the token it feeds: kv_len + 1.
  batch->shape.decode_kv_tokens = g.sum_base + g.n * (g.step + 1);
  // Speculative decoders hold the tokens they accepted beyond one a step.
  if (g.spec_q != 0) batch->shape.decode_kv_tokens += (g.spec_q * g.step - g.spec_q_d0) >> kSpecExtraShift;
  batch->shape.sampled_seqs += static_cast<int32_t>(g.n);
}

SeqId ReplicaState::AdmitFront(int64_t reserve_tokens) {
  std::deque<SeqId>& q = G().waiting;
  FLEETSIM_CHECK(!q.empty());
  SeqId id = q.front();
  q.pop_front();
  --n_waiting_all_;
  Seq& s = seqs_[id];
  s.phase = SeqPhase::kPrefill;
  s.prefilled = 0;
  s.held_blocks = 0;
  s.reserved = reserve_tokens > 0;
  if (s.reserved) {
    FLEETSIM_CHECK(reserve_tokens >= static_cast<int64_t>(s.req.prompt_tokens) + s.req.output_tokens);
    s.held_blocks = kv_.BlocksFor(reserve_tokens);
    kv_.Allocate(s.held_blocks);
  }
  G().prefilling.push_back(id);
  ++n_prefill_all_;
  EnterRunning(id);
  return id;
}

void ReplicaState::AddChunk(SeqId id, int32_t tokens, Batch* batch) {
  Seq& s = seqs_[id];
  FLEETSIM_CHECK(s.phase == SeqPhase::kPrefill && !s.in_batch);
  FLEETSIM_CHECK(tokens > 0 && tokens <= PrefillLeft(id));
  const int64_t blocks = ChunkBlocksNeeded(id, tokens);
  kv_.Allocate(blocks);
  s.held_blocks += blocks;
  s.in_batch = true;
  if (s.first_scheduled < 0) s.first_scheduled = batch->start;
  batch->chunks.push_back(Chunk{id, tokens, s.prefilled});
  const int64_t p = s.prefilled, c = tokens;
  batch->shape.prefill_seqs += 1;
  batch->shape.prefill_tokens += c;
  batch->shape.prefill_attn_pairs += c * p + c * (c + 1) / 2;
  batch->shape.prefill_kv_tokens += p + c;
  if (s.prefilled + tokens == s.prefill_target) batch->shape.sampled_seqs += 1;
}

void ReplicaState::JoinDecode(SeqId id, SimTime now) {
  Seq& s = seqs_[id];
  DecodeGroup& g = G();
  FLEETSIM_CHECK(s.group == active_);
  s.phase = SeqPhase::kDecode;
  s.kv0 = s.prefilled;
  s.d0 = g.step;
  s.joined_decode = now;
  if (!s.reserved) s.held_blocks = 0;  // derived from kv_len while decoding
  ++g.n;
  ++n_decode_all_;
  g.sum_base += s.kv0 - s.d0;
  g.sum_out_base += s.req.output_tokens - s.generated + s.d0;
  g.sum_output += s.req.output_tokens;
  if (const int64_t e = SpecExtraQ(s.req); e != 0) {
    g.spec_q += e;
    g.spec_q_d0 += e * s.d0;
  }
  if (rules_.victim_order == VictimOrder::kFewestOutputsLongestPrompt) {
    // Its key depends on the phase: it joins the decode batch's tail.
    LeaveRunning(id);
    EnterRunning(id);
  }
  if (!s.reserved) g.residue_count[Residue(s.kv0 - s.d0)]++;
  g.finish_heap.push(FinishEntry{s.d0 + (s.req.output_tokens - s.generated), id, s.heap_gen});
  if (!g.fresh.empty() && g.fresh.back().first == now) {
    g.fresh.back().second++;
  } else {
    g.fresh.push_back({now, 1});
  }
}

void ReplicaState::LeaveDecode(SeqId id, Release why) {
  Seq& s = seqs_[id];
  FLEETSIM_CHECK(s.phase == SeqPhase::kDecode);
  ReleaseKv(id, why);  // reads KvLen(s) while s still counts as decoding
  DecodeGroup& g = groups_[s.group];
  --g.n;
  --n_decode_all_;
  g.sum_base -= s.kv0 - s.d0;
  g.sum_out_base -= s.req.output_tokens - s.generated + s.d0;
  g.sum_output -= s.req.output_tokens;
  if (const int64_t e = SpecExtraQ(s.req); e != 0) {
    g.spec_q -= e;
    g.spec_q_d0 -= e * s.d0;
  }
  ++s.heap_gen;
  if (!s.reserved) g.residue_count[Residue(s.kv0 - s.d0)]--;
  LeaveRunning(id);
  // A decoder that has not decoded since it joined sits in its group's fresh.
  if (s.d0 == g.step) {
    for (auto& [t, count] : g.fresh)
      if (t == s.joined_decode && count > 0) {
        --count;
        break;
      }
  }
}

void ReplicaState::RemovePrefilling(SeqId id) {
  std::vector<SeqId>& p = groups_[seqs_[id].group].prefilling;
  auto it = std::find(p.begin(), p.end(), id);
  FLEETSIM_CHECK(it != p.end());
  p.erase(it);
  --n_prefill_all_;
}

SeqId ReplicaState::PreemptVictim(Batch* batch, SimTime now) {
  (void)now;
  // The last key goes first; skip sequences already in the batch or in
  // one in flight (and the group's decoders once its decoding set has been
  // added).
  for (auto it = victims_.rbegin(); it != victims_.rend(); ++it) {
    const SeqId id = std::get<3>(*it);
    Seq& s = seqs_[id];
    if (s.in_batch) continue;
    if (s.phase == SeqPhase::kDecode &&
        (groups_[s.group].in_flight || (batch->decodes && s.group == batch->group)))
      continue;
    ++s.preemptions;
    ++preemptions_;
    if (s.phase == SeqPhase::kDecode) {
      const int64_t kv_len = KvLen(s);
      const int64_t blocks = kv_.BlocksFor(kv_len);
      const DecodeGroup& g = groups_[s.group];
      s.last_token = s.d0 == g.step ? s.joined_decode : g.last_end;
      const bool swap = mode_ == PreemptionMode::kSwap && host_used_ + blocks <= host_blocks_;
      // Generated() reads d0, so take it before leaving the decoding set.
      const int32_t generated = Generated(s);
      LeaveDecode(id, swap ? Release::kSwapOut : Release::kPreempt);  // leaves the running set, frees the GPU blocks
      s.generated = generated;
      if (swap) {
        s.reserved = false;
        s.phase = SeqPhase::kSwapped;
        s.swapped_tokens = kv_len;
        host_used_ += blocks;
        batch->shape.swap_out_tokens += kv_len;
        swapped_.push_back(id);
        return id;
      }
    } else {
      ReleaseKv(id, Release::kPreempt);
      LeaveRunning(id);
      RemovePrefilling(id);
    }
    // Recompute: the prompt and every token generated so far go through
    // prefill again, which then yields the next token.
    s.phase = SeqPhase::kWaiting;
    s.held_blocks = 0;
    s.reserved = false;
    s.prefilled = 0;
    s.prefill_target = s.req.prompt_tokens + s.generated;
    // Back where the engine puts it within its class: in front of every
    // request whose key is not below its own (the front, when the queue is
    // first come first served: all keys 0), or behind every one not above
    // it (the back) with requeue_at_back. vLLM's priority queue re-inserts
    // a preempted request by its (priority, arrival) key likewise.
    InsertWaiting(id, !rules_.requeue_at_back);
    return id;
  }
  return kNoSeq;
}

size_t ReplicaState::FullPromptIds(const Seq& s) const {
  const int32_t per_id = s.req.prefix_block_tokens;
  if (s.req.prefix_blocks.empty() || per_id <= 0 || per_id % block_size_ != 0) return 0;
  return std::min(s.req.prefix_blocks.size(), static_cast<size_t>(s.req.prompt_tokens / per_id));
}

int64_t ReplicaState::MatchPrefix(const Seq& s, std::vector<PrefixCache::NodeId>* nodes) const {
  nodes->clear();
  const PrefixCache* cache = kv_.cache();
  const int64_t per_id = s.req.prefix_block_tokens;
  const int64_t limit = s.prefill_target - 1;  // at least one token to compute the first logits from
  if (!cache) return s.req.kv_imported > 0 ? std::min<int64_t>(s.req.kv_imported, limit) : 0;
  if (FullPromptIds(s) > 0) {
    cache->Match(s.req.prefix_blocks, nodes);
    // Only ids wholly inside the prompt.
    while (!nodes->empty() && (static_cast<int64_t>(nodes->size()) * per_id > s.req.prompt_tokens ||
                               static_cast<int64_t>(nodes->size()) * per_id > limit))
      nodes->pop_back();
  }
  int64_t tokens = static_cast<int64_t>(nodes->size()) * per_id;
  // Its own KV from before it was preempted, if the ids matched right up to
  // where that begins.
  if (s.own_node != 0 && cache->Contains(s.own_node) &&
      cache->Parent(s.own_node) == (nodes->empty() ? PrefixCache::kRoot : nodes->back()) &&
      tokens + cache->Blocks(s.own_node) * block_size_ <= limit) {
    nodes->push_back(s.own_node);
    tokens += cache->Blocks(s.own_node) * block_size_;
  }
  // KV moved here from a prefill replica (disaggregated serving), in blocks
  // of its own, when it covers more than the cache does.
  if (s.req.kv_imported > tokens) {
    nodes->clear();
    tokens = std::min<int64_t>(s.req.kv_imported, limit);
  }
  return tokens;
}

int64_t ReplicaState::FrontCachedTokens() const {
  if (G().waiting.empty()) return 0;
  std::vector<PrefixCache::NodeId> nodes;
  return MatchPrefix(seqs_[G().waiting.front()], &nodes);
}

SeqId ReplicaState::TryAdmitFront(const Admission& a, Batch* batch) {
  if (G().waiting.empty() || a.max_tokens <= 0) return kNoSeq;
  const SeqId id = G().waiting.front();
  Seq& s = seqs_[id];
  const int64_t hit = MatchPrefix(s, &match_scratch_);
  const int64_t left = s.prefill_target - hit;
  const int64_t tokens = std::min(left, a.max_tokens);
  if (a.whole && tokens < left) return kNoSeq;
  // Referenced nodes are no longer evictable: take them before checking.
  PrefixCache* cache = kv_.cache();
  int64_t shared = 0;
  for (PrefixCache::NodeId n : match_scratch_) {
    cache->Acquire(n);
    shared += cache->Blocks(n);
  }
  const int64_t blocks = kv_.BlocksFor(hit + (a.allocate_prefill ? left : tokens)) - shared;
  if (!kv_.CanAllocate(blocks + a.keep_free)) {
    for (PrefixCache::NodeId n : match_scratch_) cache->Release(n);
    return kNoSeq;
  }
  AdmitFront();
  s.nodes = match_scratch_;
  s.shared_blocks = shared;
  s.prefilled = static_cast<int32_t>(hit);
  if (a.allocate_prefill) {
    kv_.Allocate(blocks);
    s.held_blocks = blocks;
  }
  // Imported KV is not a prefix-cache hit; once admitted it is in KV, and a
  // preempted request computes it again.
  const bool imported = s.req.kv_imported > 0 && match_scratch_.empty() && hit == std::min<int64_t>(s.req.kv_imported, s.prefill_target - 1);
  s.req.kv_imported = 0;
  if (!imported) batch->shape.cached_tokens += hit;
  if (s.cached_tokens < 0) {
    s.cached_tokens = imported ? 0 : static_cast<int32_t>(hit);
    if (!imported) prefix_hit_tokens_ += hit;
    prefix_prompt_tokens_ += s.req.prompt_tokens;
  }
  AddChunk(id, static_cast<int32_t>(tokens), batch);
  return id;
}

void ReplicaState::PublishPrefix(SeqId id, int64_t upto) {
  Seq& s = seqs_[id];
  PrefixCache* cache = kv_.cache();
  const size_t prompt_ids = FullPromptIds(s);
  if (s.reserved || prompt_ids == 0) return;
  const int64_t per_id = s.req.prefix_block_tokens;
  const size_t full_ids = std::min(prompt_ids, static_cast<size_t>(std::max<int64_t>(0, upto) / per_id));
  if (IdNodes(s) >= full_ids) return;
  // A request holding its own node already holds every full id (ReleaseKv
  // keeps an own node only then), so `nodes` are ids here.
  FLEETSIM_CHECK(IdNodes(s) == s.nodes.size());
  const int64_t per_blocks = per_id / block_size_;
  PrefixCache::NodeId parent = s.nodes.empty() ? PrefixCache::kRoot : s.nodes.back();
  for (size_t i = s.nodes.size(); i < full_ids; ++i) {
    PrefixCache::NodeId node = cache->Child(parent, s.req.prefix_blocks[i]);
    if (node != 0) {
      // Cached by another request meanwhile: share it, drop our copy.
      cache->Acquire(node);
      kv_.Free(per_blocks);
    } else {
      node = cache->Insert(parent, s.req.prefix_blocks[i], per_blocks);
      kv_.MoveToCache(per_blocks);
    }
    s.held_blocks -= per_blocks;
    s.shared_blocks += per_blocks;
    s.nodes.push_back(node);
    parent = node;
  }
}

void ReplicaState::ReleaseKv(SeqId id, Release why) {
  Seq& s = seqs_[id];
  const bool decoding = s.phase == SeqPhase::kDecode;
  if (s.reserved) {
    kv_.Free(s.held_blocks);
    s.held_blocks = 0;
    ReleasePrefix(s);
    return;
  }
  PrefixCache* cache = kv_.cache();
  const bool keep = cache != nullptr && rules_.cache_every_full_block && why != Release::kSwapOut;
  const int64_t kv_tokens = decoding ? KvLen(s) : s.prefilled;
  // A prefill cut short publishes the prompt ids it computed, as vLLM caches
  // each block once it is full.
  if (keep && !decoding) PublishPrefix(id, kv_tokens);
  const int64_t private_blocks = decoding ? kv_.BlocksFor(kv_tokens) - s.shared_blocks : s.held_blocks;
  // Its full blocks past the prompt's ids: kept only when every full id is
  // held, so that they continue the chain of ids.
  int64_t kept = 0;
  if (keep && IdNodes(s) == FullPromptIds(s))
    kept = std::clamp<int64_t>(kv_tokens / block_size_ - s.shared_blocks, 0, private_blocks);
  if (kept > 0) {
    kv_.MoveToCache(kept);
    if (why == Release::kFinish) {
      cache->AddUnmatchable(kept);  // nobody will ask for them again
    } else if (IdNodes(s) < s.nodes.size()) {
      cache->Grow(s.own_node, kept);  // it had resumed from its own node
    } else {
      s.own_node = cache->InsertPrivate(s.nodes.empty() ? PrefixCache::kRoot : s.nodes.back(), kept);
      s.nodes.push_back(s.own_node);
    }
  }
  kv_.Free(private_blocks - kept);
  s.held_blocks = 0;
  ReleasePrefix(s);
}

void ReplicaState::ReleasePrefix(Seq& s) {
  if (!s.nodes.empty()) {
    PrefixCache* cache = kv_.cache();
    if (cache->eviction() == PrefixCache::Eviction::kLru) {
      // Tail first, so that LRU evicts the chain from its tail (vLLM's
      // KVCacheManager.free).
      for (auto it = s.nodes.rbegin(); it != s.nodes.rend(); ++it) cache->Release(*it);
    } else {
      // SGLang's radix tree stamps a path root first when it matches it.
      for (PrefixCache::NodeId n : s.nodes) cache->Release(n);
    }
  }
  s.nodes.clear();
  s.shared_blocks = 0;
}

int64_t ReplicaState::SwapInBlocks() const {
  FLEETSIM_CHECK(!swapped_.empty());
  return kv_.BlocksFor(seqs_[swapped_.front()].swapped_tokens);
}

SeqId ReplicaState::ResumeSwappedFront(Batch* batch) {
  FLEETSIM_CHECK(!batch->decodes);
  const SeqId id = swapped_.front();
  swapped_.pop_front();
  Seq& s = seqs_[id];
  const int64_t blocks = kv_.BlocksFor(s.swapped_tokens);
  kv_.Allocate(blocks);
  host_used_ -= blocks;
  batch->shape.swap_in_tokens += s.swapped_tokens;
  // Back into the decoding set with the KV it left with; its previous token
  // came at last_token, so the next gap spans the whole stall.
  s.prefilled = static_cast<int32_t>(s.swapped_tokens);
  s.swapped_tokens = 0;
  --groups_[s.group].members;
  s.group = static_cast<uint8_t>(active_);
  ++G().members;
  EnterRunning(id);
  JoinDecode(id, s.last_token);
  return id;
}

bool ReplicaState::CheckInvariants() const {
  const size_t ng = groups_.size();
  std::vector<int64_t> n(ng, 0), sum(ng, 0), sum_out(ng, 0), sum_output(ng, 0), spec(ng, 0), spec_d0(ng, 0);
  std::vector<std::vector<int64_t>> residues(ng, std::vector<int64_t>(static_cast<size_t>(block_size_), 0));
  int64_t blocks = 0, host = 0;
  for (const Seq& s : seqs_) {
    if (s.phase == SeqPhase::kDecode) {
      if (s.group >= ng) return false;
      ++n[s.group];
      sum[s.group] += s.kv0 - s.d0;
      sum_out[s.group] += s.req.output_tokens - s.generated + s.d0;
      sum_output[s.group] += s.req.output_tokens;
      spec[s.group] += SpecExtraQ(s.req);
      spec_d0[s.group] += SpecExtraQ(s.req) * s.d0;
      if (s.reserved) {
        blocks += s.held_blocks;
        if (s.held_blocks < kv_.BlocksFor(KvLen(s) + 1)) return false;
      } else {
        residues[s.group][Residue(s.kv0 - s.d0)]++;
        blocks += kv_.BlocksFor(KvLen(s)) - s.shared_blocks;
      }
    } else if (s.phase == SeqPhase::kPrefill) {
      blocks += s.held_blocks;
    } else if (s.phase == SeqPhase::kSwapped) {
      host += kv_.BlocksFor(s.swapped_tokens);
      if (s.held_blocks != 0) return false;
    } else if (s.phase == SeqPhase::kWaiting && s.held_blocks != 0) {
      return false;
    }
  }
  int64_t all = 0, waiting = 0, prefilling = 0;
  for (size_t k = 0; k < ng; ++k) {
    const DecodeGroup& g = groups_[k];
    waiting += static_cast<int64_t>(g.waiting.size());
    prefilling += static_cast<int64_t>(g.prefilling.size());
    for (SeqId id : g.waiting)
      if (seqs_[id].group != k || seqs_[id].phase != SeqPhase::kWaiting) return false;
    for (SeqId id : g.prefilling)
      if (seqs_[id].group != k || seqs_[id].phase != SeqPhase::kPrefill) return false;
    // Blocks for a group's decode step in flight are allocated before D advances.
    blocks += g.inflight_blocks;
    all += g.n;
    if (n[k] != g.n || sum[k] != g.sum_base || sum_out[k] != g.sum_out_base || sum_output[k] != g.sum_output ||
        residues[k] != g.residue_count || spec[k] != g.spec_q || spec_d0[k] != g.spec_q_d0)
      return false;
  }
  return all == n_decode_all_ && waiting == n_waiting_all_ && prefilling == n_prefill_all_ && blocks == kv_.used_blocks() && host == host_used_ && host <= host_blocks_ &&
         static_cast<int64_t>(victims_.size()) == num_running();
}

}  // namespace fleetsim
