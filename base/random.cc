#include "base/random.h"

#include <random>

#include "base/check.h"

namespace tessera {

Random::Random(int64_t seed) {
  if (seed < 0) {
    std::random_device device;
    seed = static_cast<int64_t>(device() % kModulus);
  }
  state_ = static_cast<uint64_t>(seed) % kModulus;
  if (state_ == 0) state_ = 1;
}

uint64_t Random::Next() {
  state_ = state_ * kMultiplier % kModulus;
  return state_;
}

int64_t Random::ForkSeed() { return static_cast<int64_t>((Next() * 32767) % 1999999973); }

Random Random::Fork() { return Random(ForkSeed()); }

int64_t Random::UniformInt(int64_t lo, int64_t hi) {
  TESSERA_CHECK_LT(lo, hi) << "UniformInt needs a non-empty range";
  const uint64_t span = static_cast<uint64_t>(hi - lo);
  // Rejection sampling over the draw range [1, kModulus - 1] keeps the result unbiased.
  const uint64_t range = kModulus - 1;
  if (span <= range) {
    const uint64_t limit = range - range % span;
    uint64_t draw;
    do {
      draw = Next() - 1;
    } while (draw >= limit);
    return lo + static_cast<int64_t>(draw % span);
  }
  // Spans wider than 2^31 combine two draws.
  uint64_t wide = ((Next() - 1) << 31) | (Next() - 1);
  return lo + static_cast<int64_t>(wide % span);
}

double Random::UniformReal() {
  return static_cast<double>(Next() - 1) / static_cast<double>(kModulus - 1);
}

int Random::SampleCategorical(const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) {
    TESSERA_CHECK_GE(w, 0.0) << "categorical weight";
    total += w;
  }
  TESSERA_CHECK(total > 0) << "categorical weights are all zero";
  double x = UniformReal() * total;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (x < weights[i]) return static_cast<int>(i);
    x -= weights[i];
  }
  // Rounding left x at the end: pick the last index with a positive weight.
  for (size_t i = weights.size(); i-- > 0;) {
    if (weights[i] > 0) return static_cast<int>(i);
  }
  return 0;
}

}  // namespace tessera
