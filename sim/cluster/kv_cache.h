// KvCacheManager: the paged KV cache of one replica, counted in blocks.
//
// Blocks are counted, not represented as objects. Requests' own blocks are
// `used`; with prefix caching on, cached blocks (prompt prefixes, and for
// engines that keep every full block, requests' own blocks after they let go
// of them) belong to the PrefixCache: referenced ones are in use,
// unreferenced ones are still occupied but count as available, since
// allocation evicts them on demand.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "base/status.h"
#include "sim/cluster/prefix_cache.h"

namespace fleetsim {

class KvCacheManager {
 public:
  // `eviction` set: prefix caching on, with that eviction order.
  KvCacheManager(int64_t total_blocks, int block_size,
                 std::optional<PrefixCache::Eviction> eviction = std::nullopt)
      : total_(total_blocks), block_size_(block_size) {
    if (eviction) cache_ = std::make_unique<PrefixCache>(*eviction);
  }

  int64_t total_blocks() const { return total_; }
  // Blocks held by requests (not counting shared cached prefixes).
  int64_t used_blocks() const { return used_; }
  int64_t cached_blocks() const { return cache_ ? cache_->cached_blocks() : 0; }
  // Blocks an allocation can get: free ones plus evictable cached ones.
  int64_t free_blocks() const { return RawFree() + (cache_ ? cache_->evictable_blocks() : 0); }
  int block_size() const { return block_size_; }
  // Fraction of blocks in use by requests, cached prefixes they reference
  // included; evictable cached blocks count as free.
  double utilization() const {
    return total_ ? static_cast<double>(total_ - free_blocks()) / static_cast<double>(total_) : 0.0;
  }

  // Blocks that hold `tokens` tokens.
  int64_t BlocksFor(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  bool CanAllocate(int64_t blocks) const { return blocks <= free_blocks(); }
  // Evicts cached prefixes if it must. REQUIRES: CanAllocate(blocks).
  void Allocate(int64_t blocks) {
    FLEETSIM_CHECK(blocks >= 0 && blocks <= free_blocks());
    if (blocks > RawFree()) cache_->Evict(blocks - RawFree());
    FLEETSIM_CHECK(blocks <= RawFree());
    used_ += blocks;
  }
  void Free(int64_t blocks) {
    FLEETSIM_CHECK(blocks >= 0 && blocks <= used_);
    used_ -= blocks;
  }
  // A request's blocks became a cached prefix node (PrefixCache::Insert
  // already counts them).
  void MoveToCache(int64_t blocks) { Free(blocks); }

  PrefixCache* cache() { return cache_.get(); }
  const PrefixCache* cache() const { return cache_.get(); }

 private:
  int64_t RawFree() const { return total_ - used_ - cached_blocks(); }

  int64_t total_;
  int64_t used_ = 0;
  int block_size_;
  std::unique_ptr<PrefixCache> cache_;
};

}  // namespace fleetsim
