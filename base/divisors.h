// The divisors of an integer, which tile sampling (schedule/) and tile mutation (tuner/) both
// enumerate, and the count of tiles that cover an extent.
#ifndef TESSERA_BASE_DIVISORS_H_
#define TESSERA_BASE_DIVISORS_H_

#include <cstdint>
#include <vector>

namespace tessera {

// The divisors of n (n >= 1), ascending.
inline std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> low, high;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(d);
    if (d != n / d) high.push_back(n / d);
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  return low;
}

// The tiles of b that cover a (a >= 0, b >= 1): a / b rounded up.
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace tessera

#endif  // TESSERA_BASE_DIVISORS_H_
