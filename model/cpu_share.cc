#include "model/cpu_share.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace tessera {

int ThreadsLeft(const CpuTimes& before, const CpuTimes& after, int cores, double ticks_per_second) {
  const double others = OthersBusyCores(before, after, ticks_per_second);
  const int busy_cores = static_cast<int>(std::floor(others + 0.5));
  return std::max(1, cores - busy_cores);
}

CpuShare::CpuShare(int max_threads)
    : cpus_(AffinityCpus()),
      max_threads_(std::max(1, max_threads)),
      ticks_per_second_(TicksPerSecond()),
      threads_(max_threads_) {
  if (max_threads_ > 1) last_ = ReadCpuTimes(cpus_);
}

int CpuShare::Threads() {
  if (max_threads_ == 1) return 1;
  if (last_.has_value() &&
      SteadySeconds() - last_->wall < (decided_ ? kResampleSeconds : kFirstSeconds)) {
    return threads_;
  }
  std::optional<CpuTimes> now = ReadCpuTimes(cpus_);
  if (!now.has_value()) {
    last_.reset();
    threads_ = max_threads_;
    return threads_;
  }
  if (last_.has_value()) {
    threads_ = std::min(
        max_threads_, ThreadsLeft(*last_, *now, static_cast<int>(cpus_.size()), ticks_per_second_));
    decided_ = true;
  }
  last_ = now;
  return threads_;
}

int DefaultMaxThreads() {
  int cores = std::max<int>(1, static_cast<int>(AffinityCpus().size()));
  if (const char* env = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(env);
    if (n > 0) cores = std::min(cores, n);
  }
  return cores;
}

}  // namespace tessera
