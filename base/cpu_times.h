// CPU time read from /proc: how busy the cores this process may run on were, and how much of
// that was this process. Two readings tell how many cores the machine's other programs kept
// busy in between: the model runtime sizes its thread team by it (model/cpu_share.h), and the
// measurer says whether timings that disagreed had company (worker/measurer.h).
#ifndef TESSERA_BASE_CPU_TIMES_H_
#define TESSERA_BASE_CPU_TIMES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessera {

// A reading of CPU time, in clock ticks.
struct CpuTimes {
  int64_t busy = 0;  // busy ticks of the cores this process may run on (/proc/stat)
  int64_t own = 0;   // ticks this process used (/proc/self/stat; see OwnTicks)
  double wall = 0;   // SteadySeconds() when read
};

// Whose CPU time counts as this process's own.
enum class OwnCpu {
  kProcess,             // its threads
  kWithWaitedChildren,  // and the children (and their descendants) it has waited for
};

// The cores this process may run on (sched_getaffinity); empty when it cannot be read.
std::vector<int> AffinityCpus();

// The busy ticks (all but idle and iowait; steal counts, as time the core was not ours) of the
// `cpus` (their numbers) in `proc_stat`, the text of /proc/stat; nullopt when a cpu's line is
// missing or malformed.
std::optional<int64_t> BusyTicks(const std::string& proc_stat, const std::vector<int>& cpus);
// utime + stime of `proc_self_stat`, the text of /proc/self/stat, plus cutime + cstime with
// OwnCpu::kWithWaitedChildren; nullopt when malformed.
std::optional<int64_t> OwnTicks(const std::string& proc_self_stat, OwnCpu own = OwnCpu::kProcess);

// A reading of the `cpus`' busy ticks and this process's own, now; nullopt where /proc cannot
// be read or a cpu's line is missing.
std::optional<CpuTimes> ReadCpuTimes(const std::vector<int>& cpus, OwnCpu own = OwnCpu::kProcess);
// The cores (fractional) the machine's other processes kept busy between `before` and
// `after`; 0 for an empty interval, never below 0.
double OthersBusyCores(const CpuTimes& before, const CpuTimes& after, double ticks_per_second);
// sysconf(_SC_CLK_TCK): the ticks of /proc's times per second.
double TicksPerSecond();
// Seconds on the steady clock, the clock of CpuTimes::wall.
double SteadySeconds();

}  // namespace tessera

#endif  // TESSERA_BASE_CPU_TIMES_H_
