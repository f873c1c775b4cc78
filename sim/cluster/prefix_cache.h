// PrefixCache: KV blocks of prompt prefixes kept for reuse, matched by
// chained block ids (Request::prefix_blocks).
//
// Each node holds the KV blocks of one prefix id (prefix_block_tokens
// tokens, e.g. 512 for Mooncake) under its parent, so a chain of nodes from
// the root is a cached prefix and two requests share exactly their leading
// common ids. Running requests hold references; a node nobody references
// stays cached (its blocks occupied) until evicted:
//   kLru      least recently released first, whatever its place in the
//             chain (vLLM's free-block queue; a child whose parent was
//             evicted can no longer be matched and ages out in turn);
//   kLeafLru  least recently released among nodes without cached children
//             (SGLang's radix tree evicts from the leaves).
// Node ids are never reused, so an orphan can never be matched by mistake.
//
// Besides the id nodes, the cache holds KV no id leads to, for engines that
// keep every full block (vLLM V1 hashes each full block, generated tokens
// included): a *private* node, one request's own KV past its prompt's ids,
// which only that request can find again (it keeps the node id), and
// *unmatchable* runs of blocks (a finished request's own KV) that no request
// will ask for but that take their place in the LRU order. Eviction may trim
// both from their tail.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fleetsim {

class PrefixCache {
 public:
  enum class Eviction { kLru, kLeafLru };
  using NodeId = uint64_t;
  static constexpr NodeId kRoot = 0;

  explicit PrefixCache(Eviction eviction) : eviction_(eviction) {}
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // Appends the longest cached chain matching `ids` (from the root) to
  // *nodes; returns how many matched. Does not change the cache.
  size_t Match(const std::vector<uint64_t>& ids, std::vector<NodeId>* nodes) const;
  // The cached child of `parent` for `id`, or 0.
  NodeId Child(NodeId parent, uint64_t id) const;
  int64_t Blocks(NodeId node) const { return nodes_.at(node).blocks; }

  void Acquire(NodeId node);
  void Release(NodeId node);
  // Adds a node of `blocks` blocks under `parent` (referenced once, by the
  // caller). REQUIRES: no child `id` under `parent` yet.
  NodeId Insert(NodeId parent, uint64_t id, int64_t blocks);
  // Adds a private node of `blocks` blocks under `parent`: no id leads to it
  // (Match never returns it), so only the holder of its id finds it.
  // Referenced once, by the caller.
  NodeId InsertPrivate(NodeId parent, int64_t blocks);
  // Adds `blocks` to the end of a private node. REQUIRES: it is referenced.
  void Grow(NodeId node, int64_t blocks);
  // Caches `blocks` blocks nothing can match, released now: they are
  // evictable at once and leave in LRU order with the nodes.
  void AddUnmatchable(int64_t blocks);
  // Whether `node` is still cached (not evicted), and its parent.
  bool Contains(NodeId node) const { return nodes_.count(node) != 0; }
  NodeId Parent(NodeId node) const { return nodes_.at(node).parent; }
  Eviction eviction() const { return eviction_; }

  int64_t cached_blocks() const { return cached_blocks_; }
  int64_t evictable_blocks() const { return evictable_blocks_; }
  // Evicts in policy order until at least `blocks` are freed or nothing is
  // evictable; returns the blocks freed. A private node or an unmatchable
  // run loses only the blocks still needed, from its tail.
  int64_t Evict(int64_t blocks);
  // Blocks of id and private nodes evicted: cached KV some request could
  // have found (unmatchable blocks are not counted).
  int64_t evicted_blocks() const { return evicted_total_; }
  size_t nodes() const { return nodes_.size(); }
  // References held by running requests, over all nodes.
  int64_t references() const { return references_; }

 private:
  struct Node {
    NodeId parent = kRoot;
    uint64_t id = 0;
    int64_t blocks = 0;
    int64_t refs = 0;
    int64_t children = 0;      // cached children
    uint64_t released_at = 0;  // order of its last release, for LRU
    bool parent_alive = true;
    bool is_private = false;   // no id leads to it (InsertPrivate)
  };
  struct KeyHash {
    size_t operator()(const std::pair<NodeId, uint64_t>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9e3779b97f4a7c15ULL ^ k.second);
    }
  };
  bool Evictable(const Node& n) const {
    return n.refs == 0 && (eviction_ == Eviction::kLru || n.children == 0);
  }
  // Keeps node `id`'s membership of lru_ in line with Evictable().
  void Update(NodeId id, bool was_evictable);
  NodeId AddNode(NodeId parent, uint64_t id, int64_t blocks, bool is_private);

  Eviction eviction_;
  std::unordered_map<NodeId, Node> nodes_;
  std::unordered_map<std::pair<NodeId, uint64_t>, NodeId, KeyHash> children_;
  std::set<std::pair<uint64_t, NodeId>> lru_;  // (released_at, node), evictable ones
  // Unmatchable runs, (released_at, blocks), oldest first: release stamps
  // only grow, so appending keeps the order.
  std::deque<std::pair<uint64_t, int64_t>> unmatchable_;
  NodeId next_id_ = 1;
  uint64_t clock_ = 0;
  int64_t cached_blocks_ = 0;
  int64_t evictable_blocks_ = 0;
  int64_t evicted_total_ = 0;
  int64_t references_ = 0;
};

}  // namespace fleetsim
