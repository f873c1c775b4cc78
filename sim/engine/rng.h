// Random numbers that are the same on every compiler and standard library.
//
// The generator is xoshiro256** (Blackman and Vigna), seeded through
// splitmix64 from (seed, replication, FNV-1a hash of the stream name). The
// samplers are written here rather than taken from <random>, whose
// distributions differ between libstdc++ and libc++. They use only +, -, *,
// / and std::log/exp/sqrt/cos on doubles, built without FMA contraction.
#pragma once

#include <cstdint>
#include <string_view>

namespace fleetsim {

class Rng {
 public:
  // The stream named `name` of run (seed, replication).
  static Rng ForStream(uint64_t seed, uint64_t replication, std::string_view name);
  explicit Rng(uint64_t seed);

  uint64_t NextU64();
  // Uniform in [0, 1) with 53 random bits.
  double Uniform();
  // Uniform in (0, 1]: safe to take the log of.
  double UniformOpenZero() { return 1.0 - Uniform(); }
  // Uniform integer in [0, n). REQUIRES: n > 0. Unbiased (Lemire's method).
  uint64_t Below(uint64_t n);

  // Exponential with the given mean.
  double Exponential(double mean);
  // Standard normal (Marsaglia polar method; caches the second value).
  double Normal();
  // Normal(mu, sigma) exponentiated: median exp(mu).
  double LogNormal(double mu, double sigma);
  // Gamma(shape k, scale theta), mean k*theta (Marsaglia-Tsang; boosted for
  // k < 1). REQUIRES: k > 0, theta > 0.
  double Gamma(double shape, double scale);

 private:
  uint64_t s_[4];
  double cached_normal_ = 0;
  bool has_cached_normal_ = false;
};

// Stable 64-bit FNV-1a hash, for stream names.
uint64_t Fnv1a64(std::string_view s);

}  // namespace fleetsim
