// KvCacheManager: the paged KV cache of one replica, counted in blocks.
//
// Blocks are counted, not represented as objects: the spine needs only how
// many are free. The prefix cache (a later issue) extends this class with
// cached, unreferenced blocks that can be evicted.
#pragma once

#include <cstdint>

#include "base/status.h"

namespace fleetsim {

class KvCacheManager {
 public:
  KvCacheManager(int64_t total_blocks, int block_size)
      : total_(total_blocks), block_size_(block_size) {}

  int64_t total_blocks() const { return total_; }
  int64_t used_blocks() const { return used_; }
  int64_t free_blocks() const { return total_ - used_; }
  int block_size() const { return block_size_; }
  double utilization() const { return total_ ? static_cast<double>(used_) / static_cast<double>(total_) : 0.0; }

  // Blocks that hold `tokens` tokens.
  int64_t BlocksFor(int64_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }

  bool CanAllocate(int64_t blocks) const { return blocks <= free_blocks(); }
  // REQUIRES: CanAllocate(blocks).
  void Allocate(int64_t blocks) {
    FLEETSIM_CHECK(blocks >= 0 && blocks <= free_blocks());
    used_ += blocks;
  }
  void Free(int64_t blocks) {
    FLEETSIM_CHECK(blocks >= 0 && blocks <= used_);
    used_ -= blocks;
  }

 private:
  int64_t total_;
  int64_t used_ = 0;
  int block_size_;
};

}  // namespace fleetsim
