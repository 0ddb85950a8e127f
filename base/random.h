// The one source of randomness in Tessera: a seeded, forkable Park-Miller (Lehmer) generator,
// as in MetaSchedule. Sampling helpers are written out here rather than taken from <random>'s
// distributions, whose outputs differ between standard libraries; the same seed therefore
// gives the same stream on every machine and build.
// Not thread-safe: Fork() one generator per thread or per candidate.
#ifndef TESSERA_BASE_RANDOM_H_
#define TESSERA_BASE_RANDOM_H_

#include <cstdint>
#include <vector>

namespace tessera {

class Random {
 public:
  static constexpr uint64_t kModulus = 2147483647;  // 2^31 - 1
  static constexpr uint64_t kMultiplier = 48271;

  // `seed` < 0 draws a seed from std::random_device; otherwise seed % modulus (0 becomes 1).
  explicit Random(int64_t seed);

  // The raw state, to persist and restore a generator exactly.
  uint64_t state() const { return state_; }

  // Next raw draw in [1, 2^31 - 2].
  uint64_t Next();

  // A child generator whose stream is independent of this one's continuation.
  Random Fork();
  // A child seed, for handing to another component.
  int64_t ForkSeed();

  // Uniform integer in [lo, hi). Requires lo < hi.
  int64_t UniformInt(int64_t lo, int64_t hi);
  // Uniform real in [0, 1).
  double UniformReal();
  // Index drawn with probability proportional to weights[i] (non-negative, not all zero).
  int SampleCategorical(const std::vector<double>& weights);
  // Shuffles in place (Fisher-Yates).
  template <typename T>
  void Shuffle(std::vector<T>* items) {
    for (int64_t i = static_cast<int64_t>(items->size()) - 1; i > 0; --i) {
      int64_t j = UniformInt(0, i + 1);
      std::swap((*items)[i], (*items)[j]);
    }
  }

 private:
  uint64_t state_;
};

}  // namespace tessera

#endif  // TESSERA_BASE_RANDOM_H_
