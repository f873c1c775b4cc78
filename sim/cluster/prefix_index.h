// PrefixIndex: a router's own approximate radix tree of the prompt prefixes
// it has sent to each replica, as SGLang's cache-aware router keeps one per
// worker (sgl-router's tree.rs) and llm-d's prefix scorer keeps an LRU index
// of block hashes per server. It is what the router *believes* the engines
// cached, built only from its own routing decisions: it knows nothing of
// the engines' evictions, preemptions or failures, which is the gap the
// routers' `oracle` option closes (the engines' true caches).
//
// A node is one prefix block id (Request::prefix_blocks, chained) under its
// parent; each node lists the replicas ("tenants") believed to hold it,
// with the logical time each last touched it. A touch stamps a path from
// its deepest node up to the root, so an ancestor is never older than its
// descendants for the same tenant: LRU eviction then takes leaves first and
// a tenant present at a node is present at all its ancestors (a tenant's
// match is one walk down the path).
//
// Bounded: each tenant holds at most `max_blocks_per_tenant` nodes; inserting
// past the bound evicts that tenant's least recently touched nodes (SGLang
// evicts down to max_tree_size every eviction interval; doing it at insert
// keeps memory bounded at every instant and the result deterministic).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fleetsim {

class PrefixIndex {
 public:
  explicit PrefixIndex(int64_t max_blocks_per_tenant) : max_blocks_(max_blocks_per_tenant) {}
  PrefixIndex(const PrefixIndex&) = delete;
  PrefixIndex& operator=(const PrefixIndex&) = delete;

  // Records that `tenant` was sent a prompt of these blocks: inserts the
  // path and touches it. O(blocks + evictions).
  void Insert(int tenant, const std::vector<uint64_t>& blocks);

  // For each tenant in `tenants`, the number of leading blocks of `blocks`
  // it is believed to hold, written to (*matched)[i]. O(blocks + the
  // tenants listed on the matched path).
  void Match(const std::vector<uint64_t>& blocks, const std::vector<int>& tenants, std::vector<int64_t>* matched);

  // Blocks `tenant` holds in the index (its "tree size").
  int64_t TenantBlocks(int tenant) const {
    return tenant < static_cast<int>(tenants_.size()) ? static_cast<int64_t>(tenants_[tenant].lru.size()) : 0;
  }
  size_t nodes() const { return nodes_.size() - 1 - free_.size(); }  // live ones, the root aside

 private:
  using NodeId = uint32_t;
  static constexpr NodeId kRoot = 0;
  struct Holder {
    int tenant;
    uint64_t stamp;
  };
  struct Node {
    NodeId parent = kRoot;
    uint64_t id = 0;
    std::vector<Holder> holders;  // few: the replicas sent this prefix
    int children = 0;
  };
  struct Tenant {
    std::map<uint64_t, NodeId> lru;  // stamp -> node, oldest first
  };
  struct KeyHash {
    size_t operator()(const std::pair<NodeId, uint64_t>& k) const {
      return std::hash<uint64_t>()((uint64_t{k.first} * 0x9e3779b97f4a7c15ULL) ^ k.second);
    }
  };

  NodeId Child(NodeId parent, uint64_t id);  // creates it when missing
  void Touch(NodeId node, int tenant);
  void EvictOldest(int tenant);
  NodeId NewNode(NodeId parent, uint64_t id);
  void FreeNode(NodeId node);

  int64_t max_blocks_;
  std::vector<Node> nodes_{Node{}};  // [0]: the root
  std::vector<NodeId> free_;
  std::unordered_map<std::pair<NodeId, uint64_t>, NodeId, KeyHash> children_;
  std::vector<Tenant> tenants_;
  uint64_t clock_ = 0;
  std::vector<NodeId> path_;    // scratch
  std::vector<int> slot_of_;    // scratch: tenant -> index in Match's list (-1)
};

}  // namespace fleetsim
