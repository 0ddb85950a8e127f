// Tests of worker/runner_internal.cc, what the CPU and CUDA runners share: the shared-memory
// slots a forked child writes into, the child process and what its end is reported as (exit
// code, message, signal, time-out), the growth of `number`, the config check and the seeded
// argument data.
#include "worker/runner_internal.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace internal {
namespace {

TEST(RunnerInternalTest, AlignUpRoundsToSixtyFourBytes) {
  EXPECT_EQ(AlignUp(0), 0u);
  EXPECT_EQ(AlignUp(1), 64u);
  EXPECT_EQ(AlignUp(64), 64u);
  EXPECT_EQ(AlignUp(65), 128u);
}

TEST(RunnerInternalTest, SharedMemoryIsZeroedAndSeesTheChildsWrites) {
  absl::StatusOr<SharedMemory> shm = SharedMemory::Map(sizeof(ChildMessage) + 64, "test");
  ASSERT_TRUE(shm.ok()) << shm.status();
  ASSERT_EQ(shm->size(), sizeof(ChildMessage) + 64);
  char* data = shm->data();
  for (size_t i = 0; i < shm->size(); ++i) ASSERT_EQ(data[i], 0) << i;
  auto* message = reinterpret_cast<ChildMessage*>(data);
  char* payload = data + sizeof(ChildMessage);
  absl::StatusOr<std::string> outcome = RunInChildProcess(
      [&] {
        std::strcpy(payload, "from the child");
        return 0;
      },
      10, message);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, "");
  EXPECT_STREQ(payload, "from the child");
}

// The one-line outcome of `child_main` in a forked child with `timeout_sec`.
std::string Outcome(const std::function<int()>& child_main, double timeout_sec = 10) {
  absl::StatusOr<SharedMemory> shm = SharedMemory::Map(sizeof(ChildMessage), "test");
  EXPECT_TRUE(shm.ok()) << shm.status();
  if (!shm.ok()) return "<no shared memory>";
  auto* message = reinterpret_cast<ChildMessage*>(shm->data());
  absl::StatusOr<std::string> outcome = RunInChildProcess(child_main, timeout_sec, message);
  EXPECT_TRUE(outcome.ok()) << outcome.status();
  return outcome.ok() ? *outcome : "<error>";
}

TEST(RunnerInternalTest, ChildEndsAreReportedInOneLine) {
  EXPECT_EQ(Outcome([] { return 0; }), "");
  EXPECT_EQ(Outcome([] { return 5; }), "kernel process exited with code 5");
  EXPECT_EQ(Outcome([] {
              raise(SIGSEGV);
              return 0;
            }).rfind("kernel crashed: SIGSEGV", 0),
            0u);
}

TEST(RunnerInternalTest, TheMessageAChildLeavesIsTheOutcome) {
  absl::StatusOr<SharedMemory> shm = SharedMemory::Map(sizeof(ChildMessage), "test");
  ASSERT_TRUE(shm.ok()) << shm.status();
  auto* message = reinterpret_cast<ChildMessage*>(shm->data());
  absl::StatusOr<std::string> outcome = RunInChildProcess(
      [message]() -> int { ExitChildWithMessage(message, "cannot load kernel.so"); }, 10, message);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(*outcome, "cannot load kernel.so");
}

TEST(RunnerInternalTest, AChildThatNeverEndsIsKilledAtTheTimeOut) {
  EXPECT_EQ(Outcome(
                [] {
                  for (;;) pause();
                  return 0;
                },
                0.2),
            "timed out after 0.2s");
}

TEST(RunnerInternalTest, GrowNumberJumpsToTheEstimateAndGrowsAtLeastByTheGoldenRatio) {
  // 1 ms per run and 100 ms wanted: about 100 runs.
  EXPECT_EQ(GrowNumber(0.001, 1, 100), 101);
  // Already close to the target: still at least x1.618.
  EXPECT_EQ(GrowNumber(0.09, 100, 100), 162);
  // No time measured: ten times as many.
  EXPECT_EQ(GrowNumber(0, 3, 100), 30);
}

TEST(RunnerInternalTest, ConfigCheckNamesTheCallerAndTheValues) {
  RunnerConfig config;
  EXPECT_TRUE(ValidateRunnerConfig(config, "cpu runner").ok());
  config.number = 0;
  absl::Status s = ValidateRunnerConfig(config, "cpu runner");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.message()).rfind("cpu runner: invalid config (warmup=1, number=0", 0), 0u)
      << s;
  config = RunnerConfig();
  config.timeout_sec = 0;
  EXPECT_FALSE(ValidateRunnerConfig(config, "cpu runner").ok());
}

TEST(RunnerInternalTest, RandomArgumentsDependOnlyOnTheSeed) {
  const std::vector<ArgInfo> infos = {{DataType::Float32(), {4, 4}}, {DataType::Int8(), {8}}};
  absl::StatusOr<std::vector<NDArray>> a = RandomArguments(infos, 7, "test");
  absl::StatusOr<std::vector<NDArray>> b = RandomArguments(infos, 7, "test");
  absl::StatusOr<std::vector<NDArray>> c = RandomArguments(infos, 8, "test");
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].shape(), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ((*a)[1].dtype(), DataType::Int8());
  bool differs = false;
  for (int64_t i = 0; i < 16; ++i) {
    EXPECT_EQ((*a)[0].GetFlat(i), (*b)[0].GetFlat(i)) << i;
    differs = differs || (*a)[0].GetFlat(i) != (*c)[0].GetFlat(i);
  }
  EXPECT_TRUE(differs);
}

TEST(RunnerInternalTest, RandomArgumentsRefuseANonConstantShape) {
  absl::StatusOr<std::vector<NDArray>> args =
      RandomArguments({{DataType::Float32(), {4}}, {DataType::Float32(), {-1, 2}}}, 0, "runner");
  EXPECT_EQ(args.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(args.status().message(), "runner: argument 1 has a non-constant or negative shape");
}

}  // namespace
}  // namespace internal
}  // namespace tessera
