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

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fleetsim {

class LogHistogram {
 public:
  void Add(int64_t value, int64_t count = 1);
  // Adds end(i) - end(i - 1) for each i in [first, last), `count` times
  // each: the same as Add of each. With `ascending` (those never fall), in
  // O(log) per bucket they fill, else O(1) per run of values in one bucket.
  template <typename EndFn>
  void AddSteps(EndFn&& end, int64_t first, int64_t last, int64_t count, bool ascending);
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
  // `n` values in `bucket`, ranging over [mn, mx] and summing to `sum`.
  void AddBucketed(int bucket, int64_t n);
  void AddTotals(int64_t mn, int64_t mx, int64_t n, __int128 sum);

  std::vector<int64_t> buckets_;
  int64_t count_ = 0;
  __int128 sum_ = 0;
  int64_t max_ = 0;
  int64_t min_ = 0;
};

template <typename EndFn>
void LogHistogram::AddSteps(EndFn&& end, int64_t first, int64_t last, int64_t count, bool ascending) {
  if (count <= 0 || first >= last) return;
  auto gap = [&end](int64_t i) { return end(i) - end(i - 1); };
  if (ascending) {
    for (int64_t i = first; i < last;) {
      const int b = BucketOf(gap(i));
      const int64_t hi = BucketHigh(b);
      // The first step past i whose gap reaches hi: gallop, then bisect.
      int64_t lo_i = i, step = 1, hi_i = i + 1;
      while (hi_i < last && gap(hi_i) < hi) {
        lo_i = hi_i;
        step *= 2;
        hi_i = std::min(last, hi_i + step);
      }
      // gap(lo_i) < hi; hi_i == last or gap(hi_i) >= hi.
      while (hi_i - lo_i > 1) {
        const int64_t mid = lo_i + (hi_i - lo_i) / 2;
        if (gap(mid) < hi) {
          lo_i = mid;
        } else {
          hi_i = mid;
        }
      }
      AddBucketed(b, (hi_i - i) * count);
      i = hi_i;
    }
    AddTotals(gap(first), gap(last - 1), (last - first) * count,
              static_cast<__int128>(end(last - 1) - end(first - 1)) * count);
    return;
  }
  int64_t lo = 0, hi = 0;  // the current run's bucket, [lo, hi)
  int bucket = -1;
  int64_t run = 0;
  int64_t mn = gap(first), mx = mn;
  int64_t prev = end(first - 1);
  for (int64_t i = first; i < last; ++i) {
    const int64_t e = end(i);
    const int64_t v = e - prev;
    prev = e;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    if (v >= lo && v < hi) {
      ++run;
      continue;
    }
    if (run > 0) AddBucketed(bucket, run * count);
    bucket = BucketOf(v);
    lo = BucketLow(bucket);
    hi = BucketHigh(bucket);
    run = 1;
  }
  AddBucketed(bucket, run * count);
  AddTotals(mn, mx, (last - first) * count, static_cast<__int128>(prev - end(first - 1)) * count);
}

}  // namespace fleetsim
