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
    // Warm-up: one batch for every task, in order.
    while (warmup_next_ < n) {
      int id = warmup_next_++;
      if (!tasks[id].terminated) return id;
    }
    std::vector<int> alive;
    std::vector<double> grads;
    for (int i = 0; i < n; ++i) {
      if (tasks[i].terminated) continue;
      alive.push_back(i);
      grads.push_back(Gradient(tasks[i]));
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
  double Gradient(const TaskProgress& task) const {
    const std::vector<double>& h = task.best_latency_history;
    int len = static_cast<int>(h.size());
    if (len == 0 || h.back() >= kNoLatency) return -1e9;
    double best = h.back();
    double backward = len >= 1 + window_ ? (h[len - 1 - window_] - best) / window_ : 0;
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
