// LogHistogram: bounded-memory distribution of non-negative integer values
// (nanoseconds), for the hundreds of millions of inter-token gaps of a long
// run.
//
// Values below 128 get a bucket each; above, each power of two is split into
// 128 equal buckets (the layout of HdrHistogram with 7 significant bits), so
// a bucket spans at most 1/128 of its lower edge. Quantiles report the bucket
// midpoint: relative error at most 1/256 < 0.4%. Counts are weighted, so one
// entry records all sequences that share a gap. At most 128 * 57 buckets;
// histograms merge by adding counts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fleetsim {

class LogHistogram {
 public:
  void Add(int64_t value, int64_t count = 1);
  // Adds every entry of `other`.
  void Merge(const LogHistogram& other);
  int64_t count() const { return count_; }
  // Exact figures (not bucketed).
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0.0; }
  int64_t max() const { return max_; }
  int64_t min() const { return min_; }
  // Value at quantile q in [0, 1] (nearest rank), within 0.4%. 0 if empty.
  double Quantile(double q) const;

  // Calls f(low, high_exclusive, count) for every non-empty bucket, in
  // ascending order.
  template <typename F>
  void ForEachBucket(F&& f) const {
    for (std::size_t b = 0; b < buckets_.size(); ++b)
      if (buckets_[b] > 0) f(BucketLow(static_cast<int>(b)), BucketHigh(static_cast<int>(b)), buckets_[b]);
  }

  static constexpr int kSubBits = 7;
  static constexpr int kSub = 1 << kSubBits;
  static int BucketOf(int64_t value);
  static int64_t BucketLow(int bucket);
  static int64_t BucketHigh(int bucket);  // exclusive

 private:
  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  __int128 sum_ = 0;
  int64_t max_ = 0;
  int64_t min_ = 0;
};

}  // namespace fleetsim
