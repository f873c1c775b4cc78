#include "sim/metrics/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "base/status.h"

namespace fleetsim {

int LogHistogram::BucketOf(int64_t value) {
  FLEETSIM_CHECK(value >= 0);
  if (value < kSub) return static_cast<int>(value);
  const int e = 63 - std::countl_zero(static_cast<uint64_t>(value));  // >= kSubBits
  const int sub = static_cast<int>((value >> (e - kSubBits)) & (kSub - 1));
  return (e - kSubBits + 1) * kSub + sub;
}

int64_t LogHistogram::BucketLow(int bucket) {
  if (bucket < kSub) return bucket;
  const int e = bucket / kSub + kSubBits - 1;
  const int sub = bucket % kSub;
  return (int64_t{kSub} + sub) << (e - kSubBits);
}

int64_t LogHistogram::BucketHigh(int bucket) {
  if (bucket < kSub) return bucket + 1;
  const int e = bucket / kSub + kSubBits - 1;
  return BucketLow(bucket) + (int64_t{1} << (e - kSubBits));
}

void LogHistogram::Add(int64_t value, int64_t count) {
  if (count <= 0) return;
  const int b = BucketOf(value);
  if (static_cast<size_t>(b) >= buckets_.size()) buckets_.resize(b + 1, 0);
  buckets_[b] += count;
  if (count_ == 0) {
    min_ = max_ = value;
  } else {
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  count_ += count;
  sum_ += static_cast<__int128>(value) * count;
}

void LogHistogram::AddBucketed(int bucket, int64_t n) {
  if (static_cast<size_t>(bucket) >= buckets_.size()) buckets_.resize(bucket + 1, 0);
  buckets_[bucket] += n;
}

void LogHistogram::AddTotals(int64_t mn, int64_t mx, int64_t n, __int128 sum) {
  if (count_ == 0) {
    min_ = mn;
    max_ = mx;
  } else {
    min_ = std::min(min_, mn);
    max_ = std::max(max_, mx);
  }
  count_ += n;
  sum_ += sum;
}

void LogHistogram::Merge(const LogHistogram& other) {
  if (other.count_ == 0) return;
  if (buckets_.size() < other.buckets_.size()) buckets_.resize(other.buckets_.size(), 0);
  for (size_t b = 0; b < other.buckets_.size(); ++b) buckets_[b] += other.buckets_[b];
  if (count_ == 0) {
    min_ = other.min_;
    max_ = other.max_;
  } else {
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
  }
  count_ += other.count_;
  sum_ += other.sum_;
}

double LogHistogram::Quantile(double q) const {
  if (count_ == 0) return 0.0;
  // Nearest rank: the smallest value with at least ceil(q * n) values <= it.
  int64_t rank = static_cast<int64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<int64_t>(rank, 1, count_);
  int64_t seen = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen >= rank) {
      const int bi = static_cast<int>(b);
      if (bi < kSub) return static_cast<double>(bi);
      double mid = 0.5 * static_cast<double>(BucketLow(bi) + BucketHigh(bi) - 1);
      return std::clamp(mid, static_cast<double>(min_), static_cast<double>(max_));
    }
  }
  return static_cast<double>(max_);
}

}  // namespace fleetsim
