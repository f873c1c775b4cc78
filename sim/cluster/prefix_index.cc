#include "sim/cluster/prefix_index.h"

#include <algorithm>

#include "base/status.h"

namespace fleetsim {

PrefixIndex::NodeId PrefixIndex::NewNode(NodeId parent, uint64_t id) {
  NodeId n;
  if (!free_.empty()) {
    n = free_.back();
    free_.pop_back();
    nodes_[n] = Node{};
  } else {
    n = static_cast<NodeId>(nodes_.size());
    nodes_.emplace_back();
  }
  nodes_[n].parent = parent;
  nodes_[n].id = id;
  nodes_[parent].children++;
  children_.emplace(std::make_pair(parent, id), n);
  return n;
}

void PrefixIndex::FreeNode(NodeId node) {
  Node& n = nodes_[node];
  children_.erase(std::make_pair(n.parent, n.id));
  nodes_[n.parent].children--;
  n.holders.clear();
  n.holders.shrink_to_fit();
  free_.push_back(node);
}

PrefixIndex::NodeId PrefixIndex::Child(NodeId parent, uint64_t id) {
  auto it = children_.find(std::make_pair(parent, id));
  if (it != children_.end()) return it->second;
  return NewNode(parent, id);
}

void PrefixIndex::Touch(NodeId node, int tenant) {
  Tenant& t = tenants_[tenant];
  const uint64_t stamp = ++clock_;
  for (Holder& h : nodes_[node].holders) {
    if (h.tenant != tenant) continue;
    t.lru.erase(h.stamp);
    h.stamp = stamp;
    t.lru.emplace(stamp, node);
    return;
  }
  nodes_[node].holders.push_back(Holder{tenant, stamp});
  t.lru.emplace(stamp, node);
}

void PrefixIndex::EvictOldest(int tenant) {
  Tenant& t = tenants_[tenant];
  const NodeId node = t.lru.begin()->second;
  t.lru.erase(t.lru.begin());
  std::vector<Holder>& hs = nodes_[node].holders;
  const auto held = std::find_if(hs.begin(), hs.end(), [&](const Holder& h) { return h.tenant == tenant; });
  FLEETSIM_CHECK(held != hs.end());  // the tenant's LRU lists only nodes it holds
  hs.erase(held);
  // Leaves go first (ancestors are never older), so a node nobody holds has
  // no held descendants; free it, and any ancestors that are left empty.
  NodeId n = node;
  while (n != kRoot && nodes_[n].holders.empty() && nodes_[n].children == 0) {
    const NodeId parent = nodes_[n].parent;
    FreeNode(n);
    n = parent;
  }
}

void PrefixIndex::Insert(int tenant, const std::vector<uint64_t>& blocks) {
  FLEETSIM_CHECK(tenant >= 0);
  if (blocks.empty() || max_blocks_ <= 0) return;
  if (tenant >= static_cast<int>(tenants_.size())) tenants_.resize(tenant + 1);
  path_.clear();
  NodeId n = kRoot;
  for (uint64_t id : blocks) {
    n = Child(n, id);
    path_.push_back(n);
  }
  // Deepest first: every ancestor ends up at least as recent as its
  // descendants (see the header).
  for (auto it = path_.rbegin(); it != path_.rend(); ++it) Touch(*it, tenant);
  // The path just touched is the newest, so eviction takes it last; a
  // prompt longer than the bound keeps only its leading blocks' ancestors
  // evicted deepest first, which is what an LRU of that size would hold.
  while (static_cast<int64_t>(tenants_[tenant].lru.size()) > max_blocks_) EvictOldest(tenant);
}

void PrefixIndex::Match(const std::vector<uint64_t>& blocks, const std::vector<int>& tenants,
                        std::vector<int64_t>* matched) {
  matched->assign(tenants.size(), 0);
  if (blocks.empty() || tenants.empty()) return;
  int max_tenant = *std::max_element(tenants.begin(), tenants.end());
  if (static_cast<int>(slot_of_.size()) <= max_tenant) slot_of_.resize(max_tenant + 1, -1);
  for (size_t i = 0; i < tenants.size(); ++i) slot_of_[tenants[i]] = static_cast<int>(i);
  NodeId n = kRoot;
  int64_t depth = 0;
  for (uint64_t id : blocks) {
    auto it = children_.find(std::make_pair(n, id));
    if (it == children_.end()) break;
    n = it->second;
    ++depth;
    bool any = false;
    for (const Holder& h : nodes_[n].holders) {
      if (h.tenant >= static_cast<int>(slot_of_.size()) || slot_of_[h.tenant] < 0) continue;
      (*matched)[slot_of_[h.tenant]] = depth;
      any = true;
    }
    if (!any) break;  // no listed tenant deeper than this
  }
  for (int t : tenants) slot_of_[t] = -1;
}

}  // namespace fleetsim
