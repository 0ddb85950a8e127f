// The median of a sample: the middle value, or the mean of the two middle ones; 0 for none.
// Timings are summarized by it throughout (a repeat that another program disturbed moves a mean,
// not a median).
#ifndef TESSERA_BASE_MEDIAN_H_
#define TESSERA_BASE_MEDIAN_H_

#include <algorithm>
#include <vector>

namespace tessera {

inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace tessera

#endif  // TESSERA_BASE_MEDIAN_H_
