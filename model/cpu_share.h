// How many of this process's cores other processes leave it: the runtime's thread count when the
// caller asks for none (docs/models.md "Under contention"). Kernels split their parallel loops
// evenly over an OpenMP team and wait for its slowest thread; with another process busy on one
// of two cores, that thread gets half a core, and each loop waits for it (and for whole
// scheduler time slices when it is preempted): ResNet-18 ran 84 ms on two threads beside a
// spinning process, 35 ms on one, 17 ms on two alone. So from its construction on, and before a
// run at most every kResampleSeconds, the runtime reads how much CPU time the machine's other
// processes used on the cores this process may run on since the last reading, and runs on the cores
// they left.
#ifndef TESSERA_MODEL_CPU_SHARE_H_
#define TESSERA_MODEL_CPU_SHARE_H_

#include <optional>
#include <vector>

#include "base/cpu_times.h"

namespace tessera {

// The threads to run on between readings `before` and `after`: `cores` less the cores the other
// processes kept busy (their ticks over the interval, rounded to whole cores, a core counted
// once it is busy more than half the time), at least 1. `ticks_per_second` as sysconf's
// _SC_CLK_TCK.
int ThreadsLeft(const CpuTimes& before, const CpuTimes& after, int cores, double ticks_per_second);

// Reads this machine and keeps the thread count between readings.
class CpuShare {
 public:
  static constexpr double kResampleSeconds = 0.2;
  // The first decision comes this long after construction (the first reading): a model's plan
  // spins 30,000 times at its barriers (base/openmp_env.h), and a team of two beside a busy
  // process ran the small bench CNN 10x slower until the share was known. Shorter would misread
  // /proc/stat's 10 ms ticks: one tick of a daemon is 0.1 of a core over 0.1 s.
  static constexpr double kFirstSeconds = 0.1;

  // `max_threads`: the most threads to use (the cores this process may run on, or
  // OMP_NUM_THREADS where that is lower).
  explicit CpuShare(int max_threads);
  // The threads for the next run: max_threads until a reading kFirstSeconds after the one taken
  // at construction says otherwise, then a new reading at most every kResampleSeconds;
  // max_threads again whenever /proc cannot be read.
  int Threads();
  int max_threads() const { return max_threads_; }

 private:
  std::vector<int> cpus_;  // the cores this process may run on
  int max_threads_;
  double ticks_per_second_;
  std::optional<CpuTimes> last_;
  bool decided_ = false;  // a share was computed from two readings
  int threads_;
};

// The cores this process may run on (sched_getaffinity), at least one; their count capped by
// OMP_NUM_THREADS when that is set to a positive number.
int DefaultMaxThreads();

}  // namespace tessera

#endif  // TESSERA_MODEL_CPU_SHARE_H_
