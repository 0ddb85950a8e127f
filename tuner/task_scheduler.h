// Task schedulers share a job's trial budget among its tasks (docs/reference/metaschedule.md §7):
//   - RoundRobin: the next unfinished task in turn;
//   - GradientBased (default): after one warm-up batch per task, the task whose weighted
//     latency is expected to drop most: grad = (alpha * backward gradient over `window`
//     batches + (1 - alpha) * best / batches) * weight.
// Deviations from MetaSchedule's gradient scheduler: its warm-up skips tasks that already have
// a batch (a resumed job), and a task without a valid latency after its warm-up is not last in
// line (-1e9) but scored with an estimated latency, its FLOPs at the lowest throughput any task
// reached: without it a model has no latency estimate at all, and the 1/batches factor keeps a
// task that never succeeds from taking the budget; and a batch without a valid latency gives no
// backward gradient (1e9 - best would give the task every batch for `window` batches).
#ifndef TESSERA_TUNER_TASK_SCHEDULER_H_
#define TESSERA_TUNER_TASK_SCHEDULER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/random.h"

namespace tessera {

// What a scheduler sees of a task.
struct TaskProgress {
  double weight = 1;
  double flops = 0;  // of one call; <= 0: unknown (no estimate without a valid latency)
  bool terminated = false;
  // Best latency (ms; 1e9 while nothing succeeded) after each measured batch of this task.
  std::vector<double> best_latency_history;
};

class TaskScheduler {
 public:
  virtual ~TaskScheduler() = default;
  virtual std::string name() const = 0;
  // The index of the task to give the next batch, or -1 when every task is terminated.
  virtual int NextTaskId(const std::vector<TaskProgress>& tasks) = 0;
};

std::unique_ptr<TaskScheduler> NewRoundRobinScheduler();
std::unique_ptr<TaskScheduler> NewGradientScheduler(double alpha = 0.2, int window = 3,
                                                    int64_t seed = 0);
// "round-robin" or "gradient"; kInvalidArgument otherwise.
absl::StatusOr<std::unique_ptr<TaskScheduler>> NewTaskScheduler(const std::string& name,
                                                                int64_t seed);

}  // namespace tessera

#endif  // TESSERA_TUNER_TASK_SCHEDULER_H_
