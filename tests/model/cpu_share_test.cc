// CpuShare (model/cpu_share.cc): /proc/stat and /proc/self/stat parsed, the threads other
// processes leave computed from two readings, and a reading of this machine that gives a
// count between 1 and the cores this process may run on.
#include "model/cpu_share.h"

#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

constexpr char kProcStat[] =
    "cpu  700 0 300 5000 20 0 10 0 0 0\n"
    "cpu0 400 0 100 2500 10 0 5 0 0 0\n"
    "cpu1 300 0 200 2500 10 0 5 1 0 0\n"
    "intr 12345\n";

TEST(CpuShareTest, BusyTicksSumTheChosenCpusWithoutIdleAndIowait) {
  EXPECT_EQ(BusyTicks(kProcStat, {0}), 505);
  EXPECT_EQ(BusyTicks(kProcStat, {1}), 506);
  EXPECT_EQ(BusyTicks(kProcStat, {0, 1}), 1011);
  EXPECT_FALSE(BusyTicks(kProcStat, {2}).has_value()) << "no cpu2 line";
  EXPECT_FALSE(BusyTicks("cpu  1 2 3\ncpu0 1 2\n", {0}).has_value()) << "a short line";
}

TEST(CpuShareTest, OwnTicksAreUtimePlusStimeAfterTheCommand) {
  // A command with spaces and parentheses: fields count from the last ')'.
  const std::string stat =
      "4242 (my (odd) app) S 1 4242 4242 0 -1 4194560 500 0 0 0 70 30 0 0 20 0 3 0 100 "
      "1000000 200 18446744073709551615";
  EXPECT_EQ(OwnTicks(stat), 100);
  EXPECT_FALSE(OwnTicks("4242 (app) S 1 2").has_value());
  EXPECT_FALSE(OwnTicks("garbage").has_value());
}

TEST(CpuShareTest, ThreadsLeftSubtractTheCoresOthersKeptBusy) {
  const double hz = 100;
  const CpuTimes before{1000, 100, 10.0};
  // 1 s on 2 cores: this process used 1.2 cores, others 0.8 of one: one core is theirs.
  EXPECT_EQ(ThreadsLeft(before, CpuTimes{1200, 220, 11.0}, 2, hz), 1);
  // Others used 0.3 of a core: both stay ours.
  EXPECT_EQ(ThreadsLeft(before, CpuTimes{1150, 220, 11.0}, 2, hz), 2);
  // Others kept both cores busy: at least one thread.
  EXPECT_EQ(ThreadsLeft(before, CpuTimes{1200, 100, 11.0}, 2, hz), 1);
  // 16 cores, others on 3.4 of them.
  EXPECT_EQ(ThreadsLeft(before, CpuTimes{1000 + 340 + 500, 600, 11.0}, 16, hz), 13);
  // No time between the readings: every core.
  EXPECT_EQ(ThreadsLeft(before, before, 4, hz), 4);
}

TEST(CpuShareTest, ThisMachineGivesBetweenOneAndTheMaximum) {
  const int max_threads = DefaultMaxThreads();
  ASSERT_GE(max_threads, 1);
  CpuShare share(max_threads);
  EXPECT_EQ(share.max_threads(), max_threads);
  EXPECT_EQ(share.Threads(), max_threads) << "no share before kFirstSeconds have passed";
  for (int i = 0; i < 3; ++i) {
    const int threads = share.Threads();
    EXPECT_GE(threads, 1);
    EXPECT_LE(threads, max_threads);
  }
  EXPECT_EQ(CpuShare(1).Threads(), 1);
}

}  // namespace
}  // namespace tessera
