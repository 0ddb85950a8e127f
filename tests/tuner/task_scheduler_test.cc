// The task schedulers (tuner/task_scheduler.cc): round-robin over unfinished tasks, and the
// gradient scheduler's warm-up and choice of the task with the most weighted latency to gain,
// tasks without a valid latency included.
#include "tuner/task_scheduler.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(TaskSchedulerTest, RoundRobinCyclesOverUnfinishedTasks) {
  std::unique_ptr<TaskScheduler> s = NewRoundRobinScheduler();
  std::vector<TaskProgress> tasks(3);
  EXPECT_EQ(s->NextTaskId(tasks), 0);
  EXPECT_EQ(s->NextTaskId(tasks), 1);
  tasks[2].terminated = true;
  EXPECT_EQ(s->NextTaskId(tasks), 0);
  tasks[0].terminated = tasks[1].terminated = true;
  EXPECT_EQ(s->NextTaskId(tasks), -1);
}

TEST(TaskSchedulerTest, GradientWarmsUpThenFavorsTheHeavierSlowerTask) {
  std::unique_ptr<TaskScheduler> s = NewGradientScheduler(0.2, 3, 1);
  std::vector<TaskProgress> tasks(2);
  EXPECT_EQ(s->NextTaskId(tasks), 0);
  EXPECT_EQ(s->NextTaskId(tasks), 1);
  tasks[0].best_latency_history = {1.0};
  tasks[1].best_latency_history = {1.0};
  tasks[1].weight = 5;  // occurs five times in the job
  EXPECT_EQ(s->NextTaskId(tasks), 1);
  tasks[1].weight = 1;
  tasks[0].best_latency_history = {10.0};  // slower: more to gain
  EXPECT_EQ(s->NextTaskId(tasks), 0);
  tasks[0].best_latency_history = {1e9};  // nothing valid yet: last priority
  EXPECT_EQ(s->NextTaskId(tasks), 1);
}

// A resumed job's tasks that have batches already had their warm-up.
TEST(TaskSchedulerTest, GradientWarmUpSkipsTasksThatHaveABatch) {
  std::unique_ptr<TaskScheduler> s = NewGradientScheduler(0.2, 3, 1);
  std::vector<TaskProgress> tasks(3);
  tasks[0].best_latency_history = {1.0};
  tasks[2].best_latency_history = {1.0};
  EXPECT_EQ(s->NextTaskId(tasks), 1);
  tasks[1].best_latency_history = {1.0};
  tasks[1].weight = 3;  // then the gradient: the heaviest
  EXPECT_EQ(s->NextTaskId(tasks), 1);
}

// A task without a valid latency after its warm-up is estimated at the lowest throughput any
// task reached (its FLOPs at that speed), not left last in line; each batch without one
// lowers the estimate's priority, so the task cannot take the whole budget.
TEST(TaskSchedulerTest, GradientEstimatesATaskWithoutAValidLatencyFromItsFlops) {
  std::unique_ptr<TaskScheduler> s = NewGradientScheduler(0.2, 3, 1);
  std::vector<TaskProgress> tasks(2);
  EXPECT_EQ(s->NextTaskId(tasks), 0);
  EXPECT_EQ(s->NextTaskId(tasks), 1);
  tasks[0].flops = 1e6;
  tasks[0].best_latency_history = {1.0};  // 1e6 FLOPs per ms
  tasks[1].flops = 4e6;
  tasks[1].best_latency_history = {1e9};  // nothing valid: estimated 4 ms
  EXPECT_EQ(s->NextTaskId(tasks), 1);
  tasks[1].best_latency_history = {1e9, 1e9, 1e9, 1e9, 1e9};  // 4 ms / 5 batches < 1 ms / 1
  EXPECT_EQ(s->NextTaskId(tasks), 0);
  // Without FLOPs there is no estimate: last in line, as in MetaSchedule.
  tasks[1].flops = 0;
  tasks[1].best_latency_history = {1e9};
  EXPECT_EQ(s->NextTaskId(tasks), 0);
}

// A batch without a valid latency in the window gives no backward gradient: 1e9 - best would
// give the task every batch until it leaves the window.
TEST(TaskSchedulerTest, GradientIgnoresInvalidLatenciesInTheBackwardGradient) {
  std::unique_ptr<TaskScheduler> s = NewGradientScheduler(0.2, 3, 1);
  std::vector<TaskProgress> tasks(2);
  s->NextTaskId(tasks);
  s->NextTaskId(tasks);
  tasks[0].best_latency_history = {1e9, 2.0, 2.0, 2.0};  // forward 0.8 * 2 / 4 = 0.4
  tasks[1].best_latency_history = {1.0};                 // forward 0.8 * 1 / 1 = 0.8
  EXPECT_EQ(s->NextTaskId(tasks), 1);
}

TEST(TaskSchedulerTest, FactoryKnowsBothSchedulersByName) {
  absl::StatusOr<std::unique_ptr<TaskScheduler>> rr = NewTaskScheduler("round-robin", 0);
  ASSERT_TRUE(rr.ok()) << rr.status();
  EXPECT_EQ((*rr)->name(), "round-robin");
  absl::StatusOr<std::unique_ptr<TaskScheduler>> gradient = NewTaskScheduler("gradient", 0);
  ASSERT_TRUE(gradient.ok()) << gradient.status();
  EXPECT_EQ((*gradient)->name(), "gradient");
  absl::StatusOr<std::unique_ptr<TaskScheduler>> unknown = NewTaskScheduler("fifo", 0);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("fifo"), std::string::npos) << unknown.status();
}

}  // namespace
}  // namespace tessera
