// CpuShare (model/cpu_share.cc): the threads other processes leave computed from two readings
// (base/cpu_times.h), and a reading of this machine that gives a count between 1 and the cores
// this process may run on.
#include "model/cpu_share.h"

#include "gtest/gtest.h"

namespace tessera {
namespace {

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
