#include "sim/cluster/prefix_cache.h"

#include <algorithm>

#include "base/status.h"

namespace fleetsim {

PrefixCache::NodeId PrefixCache::Child(NodeId parent, uint64_t id) const {
  auto it = children_.find({parent, id});
  return it == children_.end() ? 0 : it->second;
}

size_t PrefixCache::Match(const std::vector<uint64_t>& ids, std::vector<NodeId>* out) const {
  NodeId at = kRoot;
  size_t n = 0;
  for (uint64_t id : ids) {
    const NodeId next = Child(at, id);
    if (next == 0) break;
    out->push_back(next);
    at = next;
    ++n;
  }
  return n;
}

void PrefixCache::Update(NodeId id, bool was_evictable) {
  Node& n = nodes_.at(id);
  const bool now = Evictable(n);
  if (was_evictable == now) return;
  if (now) {
    lru_.insert({n.released_at, id});
    evictable_blocks_ += n.blocks;
  } else {
    lru_.erase({n.released_at, id});
    evictable_blocks_ -= n.blocks;
  }
}

void PrefixCache::Acquire(NodeId id) {
  Node& n = nodes_.at(id);
  const bool was = Evictable(n);
  ++n.refs;
  ++references_;
  Update(id, was);
}

void PrefixCache::Release(NodeId id) {
  Node& n = nodes_.at(id);
  FLEETSIM_CHECK(n.refs > 0);
  const bool was = Evictable(n);
  --n.refs;
  --references_;
  if (n.refs == 0) {
    // Re-key in the LRU order at this release.
    if (was) lru_.erase({n.released_at, id});
    n.released_at = ++clock_;
    if (was) lru_.insert({n.released_at, id});
  }
  Update(id, was);
}

PrefixCache::NodeId PrefixCache::Insert(NodeId parent, uint64_t id, int64_t blocks) {
  FLEETSIM_CHECK(Child(parent, id) == 0);
  const NodeId nid = AddNode(parent, id, blocks, /*is_private=*/false);
  children_.emplace(std::make_pair(parent, id), nid);
  return nid;
}

PrefixCache::NodeId PrefixCache::InsertPrivate(NodeId parent, int64_t blocks) {
  return AddNode(parent, 0, blocks, /*is_private=*/true);
}

PrefixCache::NodeId PrefixCache::AddNode(NodeId parent, uint64_t id, int64_t blocks, bool is_private) {
  FLEETSIM_CHECK(blocks > 0);
  const NodeId nid = next_id_++;
  Node n;
  n.parent = parent;
  n.id = id;
  n.blocks = blocks;
  n.refs = 1;
  n.is_private = is_private;
  ++references_;
  n.released_at = ++clock_;
  nodes_.emplace(nid, n);
  cached_blocks_ += blocks;
  if (parent != kRoot) {
    Node& p = nodes_.at(parent);
    const bool was = Evictable(p);
    ++p.children;
    Update(parent, was);
  }
  return nid;
}

void PrefixCache::Grow(NodeId node, int64_t blocks) {
  Node& n = nodes_.at(node);
  FLEETSIM_CHECK(n.is_private && n.refs > 0 && blocks >= 0);
  n.blocks += blocks;
  cached_blocks_ += blocks;
}

void PrefixCache::AddUnmatchable(int64_t blocks) {
  if (blocks <= 0) return;
  if (!unmatchable_.empty() && unmatchable_.back().first == clock_) {
    unmatchable_.back().second += blocks;  // nothing released since: the same place in the order
  } else {
    unmatchable_.push_back({++clock_, blocks});
  }
  cached_blocks_ += blocks;
  evictable_blocks_ += blocks;
}

int64_t PrefixCache::Evict(int64_t blocks) {
  int64_t freed = 0;
  while (freed < blocks && (!lru_.empty() || !unmatchable_.empty())) {
    const int64_t want = blocks - freed;
    // The least recently released goes first: a node or an unmatchable run.
    if (!unmatchable_.empty() && (lru_.empty() || unmatchable_.front().first < lru_.begin()->first)) {
      auto& run = unmatchable_.front();
      const int64_t take = std::min(run.second, want);
      run.second -= take;
      if (run.second == 0) unmatchable_.pop_front();
      cached_blocks_ -= take;
      evictable_blocks_ -= take;
      freed += take;
      continue;
    }
    const NodeId id = lru_.begin()->second;
    Node& victim = nodes_.at(id);
    if (victim.is_private && victim.blocks > want) {
      // Its tail goes; the head stays cached for its owner.
      victim.blocks -= want;
      cached_blocks_ -= want;
      evictable_blocks_ -= want;
      evicted_total_ += want;
      freed += want;
      continue;
    }
    lru_.erase(lru_.begin());
    const Node n = victim;
    evictable_blocks_ -= n.blocks;
    cached_blocks_ -= n.blocks;
    freed += n.blocks;
    evicted_total_ += n.blocks;
    if (!n.is_private) children_.erase({n.parent, n.id});
    nodes_.erase(id);
    // The parent may become a leaf (and evictable under kLeafLru). Its
    // other children, orphaned under kLru, keep their keys but can no
    // longer be reached from the root.
    if (n.parent != kRoot) {
      auto p = nodes_.find(n.parent);
      if (p != nodes_.end()) {
        const bool was = Evictable(p->second);
        --p->second.children;
        Update(n.parent, was);
      }
    }
  }
  return freed;
}

}  // namespace fleetsim
