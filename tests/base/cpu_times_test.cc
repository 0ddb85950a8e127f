// base/cpu_times.h: /proc/stat and /proc/self/stat parsed, and readings of this machine in
// which a child's CPU time is someone else's until it is waited for.
#include "base/cpu_times.h"

#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

constexpr char kProcStat[] =
    "cpu  700 0 300 5000 20 0 10 0 0 0\n"
    "cpu0 400 0 100 2500 10 0 5 0 0 0\n"
    "cpu1 300 0 200 2500 10 0 5 1 0 0\n"
    "intr 12345\n";

TEST(CpuTimesTest, BusyTicksSumTheChosenCpusWithoutIdleAndIowait) {
  EXPECT_EQ(BusyTicks(kProcStat, {0}), 505);
  EXPECT_EQ(BusyTicks(kProcStat, {1}), 506);
  EXPECT_EQ(BusyTicks(kProcStat, {0, 1}), 1011);
  EXPECT_FALSE(BusyTicks(kProcStat, {2}).has_value()) << "no cpu2 line";
  EXPECT_FALSE(BusyTicks("cpu  1 2 3\ncpu0 1 2\n", {0}).has_value()) << "a short line";
}

TEST(CpuTimesTest, OwnTicksAreUtimePlusStimeAfterTheCommandAndTheWaitedChildrensOnRequest) {
  // A command with spaces and parentheses: fields count from the last ')'. utime 70, stime 30,
  // cutime 5, cstime 2.
  const std::string stat =
      "4242 (my (odd) app) S 1 4242 4242 0 -1 4194560 500 0 0 0 70 30 5 2 20 0 3 0 100 "
      "1000000 200 18446744073709551615";
  EXPECT_EQ(OwnTicks(stat), 100);
  EXPECT_EQ(OwnTicks(stat, OwnCpu::kWithWaitedChildren), 107);
  EXPECT_FALSE(OwnTicks("4242 (app) S 1 2").has_value());
  EXPECT_FALSE(
      OwnTicks("4242 (app) S 1 4242 4242 0 -1 4194560 500 0 0 0 70 30", OwnCpu::kWithWaitedChildren)
          .has_value())
      << "no cutime";
  EXPECT_FALSE(OwnTicks("garbage").has_value());
}

TEST(CpuTimesTest, OthersBusyCoresAreTheBusyTicksNotOurOwnOverTheInterval) {
  const CpuTimes before{1000, 100, 10.0};
  // 2 s; 300 busy ticks, 100 of them ours: others kept 1 core busy at 100 ticks a second.
  EXPECT_DOUBLE_EQ(OthersBusyCores(before, CpuTimes{1300, 200, 12.0}, 100), 1.0);
  EXPECT_DOUBLE_EQ(OthersBusyCores(before, before, 100), 0.0) << "no time between";
}

// Burns `seconds` of this process's CPU time.
void Spin(double seconds) {
  timespec start{}, now{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &start);
  volatile double sink = 0;
  do {
    for (int i = 0; i < 10000; ++i) sink = sink + i;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) * 1e-9 < seconds);
}

// A child that burns 0.3 s of CPU: its ticks are another program's while it is not waited for,
// and this process's own (with OwnCpu::kWithWaitedChildren) once it is. Bounds leave the
// machine's load out: the child's 0.3 s of CPU are 30 ticks whatever else runs.
TEST(CpuTimesTest, AChildCountsAsOwnOnlyOnceWaitedFor) {
  const std::vector<int> cpus = AffinityCpus();
  ASSERT_FALSE(cpus.empty());
  const double hz = TicksPerSecond();
  ASSERT_GT(hz, 0);
  std::optional<CpuTimes> before = ReadCpuTimes(cpus, OwnCpu::kWithWaitedChildren);
  ASSERT_TRUE(before.has_value()) << "/proc unreadable";
  int done[2];
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Spin(0.3);
    char byte = 1;
    _exit(write(done[1], &byte, 1) == 1 ? 0 : 1);
  }
  char byte = 0;
  ASSERT_EQ(read(done[0], &byte, 1), 1);
  // The child has finished its work but is not yet waited for.
  usleep(20000);
  std::optional<CpuTimes> unwaited = ReadCpuTimes(cpus, OwnCpu::kWithWaitedChildren);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::optional<CpuTimes> waited = ReadCpuTimes(cpus, OwnCpu::kWithWaitedChildren);
  close(done[0]);
  close(done[1]);
  ASSERT_TRUE(unwaited.has_value() && waited.has_value());
  const double others_seconds =
      OthersBusyCores(*before, *unwaited, hz) * (unwaited->wall - before->wall);
  EXPECT_GE(others_seconds, 0.25) << "the unwaited child's 0.3 s are another program's";
  EXPECT_GE(static_cast<double>(waited->own - unwaited->own) / hz, 0.25)
      << "waited for, they are ours";
  EXPECT_LT(static_cast<double>(unwaited->own - before->own) / hz, 0.25)
      << "before the wait, the child's time is not ours";
}

}  // namespace
}  // namespace tessera
