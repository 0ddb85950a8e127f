#include "tuner/task_scheduler.h"

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

constexpr double kNoLatency = 1e9;

class RoundRobinScheduler : public TaskScheduler {
 public:
  std::string name() const override { return "round-robin"; }
  int NextTaskId(const std::vector<TaskProgress>& tasks) override {
    int n = static_cast<int>(tasks.size());
    for (int step = 1; step <= n; ++step) {
      int id = (last_ + step) % n;
      if (!tasks[id].terminated) {
        last_ = id;
        return id;
      }
    }
    return -1;
  }

 private:
  int last_ = -1;
};

class GradientScheduler : public TaskScheduler {
 public:
  GradientScheduler(double alpha, int window, int64_t seed)
      : alpha_(alpha), window_(window), rng_(seed) {}
  std::string name() const override { return "gradient"; }

  int NextTaskId(const std::vector<TaskProgress>& tasks) override {
    int n = static_cast<int>(tasks.size());
    // Warm-up: one batch for every task, in order; a task with a batch already (a resumed
    // job) has had its warm-up.
    while (warmup_next_ < n) {
      int id = warmup_next_++;
      if (!tasks[id].terminated && tasks[id].best_latency_history.empty()) return id;
    }
    // The lowest throughput (FLOPs per ms) a task reached: the estimate for tasks without a
    // valid latency.
    double slowest = 0;
    for (const TaskProgress& t : tasks) {
      const std::vector<double>& h = t.best_latency_history;
      if (h.empty() || h.back() >= kNoLatency || t.flops <= 0) continue;
      const double throughput = t.flops / h.back();
      if (slowest == 0 || throughput < slowest) slowest = throughput;
    }
    std::vector<int> alive;
    std::vector<double> grads;
    for (int i = 0; i < n; ++i) {
      if (tasks[i].terminated) continue;
      alive.push_back(i);
      grads.push_back(Gradient(tasks[i], slowest));
    }
    if (alive.empty()) return -1;
    size_t best = 0;
    bool all_equal = true;
    for (size_t j = 1; j < grads.size(); ++j) {
      if (grads[j] != grads[0]) all_equal = false;
      if (grads[j] > grads[best]) best = j;
    }
    if (all_equal) return alive[rng_.UniformInt(0, static_cast<int64_t>(alive.size()))];
    return alive[best];
  }

 private:
  // `slowest`: the lowest throughput (FLOPs per ms) of the tasks with a valid latency, 0 if
  // none.
  double Gradient(const TaskProgress& task, double slowest) const {
    const std::vector<double>& h = task.best_latency_history;
    int len = static_cast<int>(h.size());
    if (len == 0) return -1e9;
    if (h.back() >= kNoLatency) {
      // No valid candidate yet: as slow as the slowest task, per FLOP; 1 / batches decays it.
      if (slowest <= 0 || task.flops <= 0) return -1e9;
      return task.flops / slowest / len * (1 - alpha_) * task.weight;
    }
    double best = h.back();
    // No backward gradient from a batch without a valid latency (1e9 - best would give the
    // task every batch until that one leaves the window).
    double backward = len >= 1 + window_ && h[len - 1 - window_] < kNoLatency
                          ? (h[len - 1 - window_] - best) / window_
                          : 0;
    double forward = best / len;
    return (alpha_ * backward + (1 - alpha_) * forward) * task.weight;
  }

  double alpha_;
  int window_;
  Random rng_;
  int warmup_next_ = 0;
};

}  // namespace

std::unique_ptr<TaskScheduler> NewRoundRobinScheduler() {
  return std::make_unique<RoundRobinScheduler>();
}

std::unique_ptr<TaskScheduler> NewGradientScheduler(double alpha, int window, int64_t seed) {
  return std::make_unique<GradientScheduler>(alpha, window, seed);
}

absl::StatusOr<std::unique_ptr<TaskScheduler>> NewTaskScheduler(const std::string& name,
                                                                int64_t seed) {
  if (name == "round-robin") return NewRoundRobinScheduler();
  if (name == "gradient") return NewGradientScheduler(0.2, 3, seed);
  return absl::InvalidArgumentError(absl::StrCat("unknown task scheduler '", name,
                                                 "' (expected gradient or round-robin)"));
}

}  // namespace tessera
