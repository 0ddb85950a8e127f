#include "base/cpu_times.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

namespace tessera {
namespace {

std::optional<std::string> ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<int> AffinityCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

std::optional<int64_t> BusyTicks(const std::string& proc_stat, const std::vector<int>& cpus) {
  int64_t busy = 0;
  for (int cpu : cpus) {
    const std::string label = "\ncpu" + std::to_string(cpu) + " ";
    const size_t at = proc_stat.find(label);
    if (at == std::string::npos) return std::nullopt;
    const size_t start = at + label.size();
    const size_t end = proc_stat.find('\n', start);
    std::istringstream line(proc_stat.substr(start, end == std::string::npos ? end : end - start));
    // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
    int64_t field[8];
    for (int64_t& f : field) {
      if (!(line >> f)) return std::nullopt;
    }
    busy += field[0] + field[1] + field[2] + field[5] + field[6] + field[7];
  }
  return busy;
}

std::optional<int64_t> OwnTicks(const std::string& proc_self_stat, OwnCpu own) {
  // "pid (comm) state ..." where comm may hold spaces: fields count from the last ')'.
  const size_t close = proc_self_stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(proc_self_stat.substr(close + 1));
  std::string field;
  // Fields 3.. after the comm; utime, stime, cutime and cstime are fields 14 to 17.
  for (int i = 3; i < 14; ++i) {
    if (!(rest >> field)) return std::nullopt;
  }
  int64_t utime = 0, stime = 0, cutime = 0, cstime = 0;
  if (!(rest >> utime >> stime)) return std::nullopt;
  if (own == OwnCpu::kProcess) return utime + stime;
  if (!(rest >> cutime >> cstime)) return std::nullopt;
  return utime + stime + cutime + cstime;
}

std::optional<CpuTimes> ReadCpuTimes(const std::vector<int>& cpus, OwnCpu own) {
  std::optional<std::string> stat = ReadFile("/proc/stat");
  std::optional<std::string> self = ReadFile("/proc/self/stat");
  if (!stat || !self || cpus.empty()) return std::nullopt;
  std::optional<int64_t> busy = BusyTicks(*stat, cpus);
  std::optional<int64_t> own_ticks = OwnTicks(*self, own);
  if (!busy || !own_ticks) return std::nullopt;
  return CpuTimes{*busy, *own_ticks, SteadySeconds()};
}

double OthersBusyCores(const CpuTimes& before, const CpuTimes& after, double ticks_per_second) {
  const double seconds = after.wall - before.wall;
  if (seconds <= 0 || ticks_per_second <= 0) return 0;
  // Waited-for children bring all their ticks at once, some from before `before`, so own time
  // can outrun the cores' busy time.
  return std::max(0.0, static_cast<double>((after.busy - before.busy) - (after.own - before.own)) /
                           ticks_per_second / seconds);
}

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double TicksPerSecond() { return static_cast<double>(sysconf(_SC_CLK_TCK)); }

}  // namespace tessera
