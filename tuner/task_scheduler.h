// Task schedulers share a job's trial budget among its tasks (docs/reference/metaschedule.md §7):
//   - RoundRobin: the next unfinished task in turn;
//   - GradientBased (default): after one warm-up batch per task, the task whose weighted
//     latency is expected to drop most: grad = (alpha * backward gradient over `window`
//     batches + (1 - alpha) * best / batches) * weight.
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
