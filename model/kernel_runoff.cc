#include "model/kernel_runoff.h"

#include <memory>
#include <utility>

#include "base/median.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "model/executor.h"

namespace tessera {
namespace {

// One model of the pair, its inputs set, and each run's time per kernel.
struct Contender {
  std::unique_ptr<Executor> executor;
  std::vector<std::vector<double>> kernel_secs;  // per kernel, one entry per timed run
};

absl::Status RunOnce(Contender* c, bool record) {
  std::vector<double> call_secs;
  TESSERA_RETURN_IF_ERROR(c->executor->Run(&call_secs));
  if (!record) return absl::OkStatus();
  const ModelPlan& plan = c->executor->plan();
  std::vector<double> per_kernel(c->kernel_secs.size(), 0.0);
  for (size_t i = 0; i < plan.calls.size(); ++i) per_kernel[plan.calls[i].task] += call_secs[i];
  for (size_t k = 0; k < per_kernel.size(); ++k) c->kernel_secs[k].push_back(per_kernel[k]);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KernelTimesInModel> TimeKernelsInModel(const CompiledModel& first,
                                                      const CompiledModel& second,
                                                      const std::string& dir,
                                                      const std::string& weights,
                                                      const KernelRunoffOptions& options) {
  if (first.kernels.size() != second.kernels.size() ||
      PlanToJson(first.plan) != PlanToJson(second.plan)) {
    return absl::InvalidArgumentError("kernel runoff: the two models do not share one plan");
  }
  ExecutorOptions executor_options;
  executor_options.num_threads = options.num_threads;
  Contender pair[2];
  const CompiledModel* models[2] = {&first, &second};
  for (int m = 0; m < 2; ++m) {
    TESSERA_ASSIGN_OR_RETURN(pair[m].executor,
                             Executor::Create(*models[m], dir, weights, executor_options));
    pair[m].kernel_secs.resize(models[m]->kernels.size());
    Random rng(0);  // the same inputs for both
    for (size_t i = 0; i < first.plan.inputs.size(); ++i) {
      const PlanValue& v = first.plan.inputs[i].second;
      NDArray a = NDArray::Empty(v.dtype, v.shape);
      a.FillRandom(&rng);
      TESSERA_RETURN_IF_ERROR(pair[m].executor->SetInput(static_cast<int>(i), a));
    }
    TESSERA_RETURN_IF_ERROR(RunOnce(&pair[m], /*record=*/false));
  }
  for (int round = 0; round < options.rounds; ++round) {
    for (int turn = 0; turn < 2; ++turn) {
      Contender* c = &pair[(round + turn) % 2];
      for (int run = 0; run < options.runs_per_round; ++run) {
        TESSERA_RETURN_IF_ERROR(RunOnce(c, /*record=*/true));
      }
    }
  }
  KernelTimesInModel times;
  times.rounds = options.rounds;
  const size_t runs = static_cast<size_t>(options.runs_per_round);
  for (size_t k = 0; k < pair[0].kernel_secs.size(); ++k) {
    const std::vector<double>& first_runs = pair[0].kernel_secs[k];
    const std::vector<double>& second_runs = pair[1].kernel_secs[k];
    times.first_secs.push_back(Median(first_runs));
    times.second_secs.push_back(Median(second_runs));
    int won = 0;
    for (size_t r = 0; r < static_cast<size_t>(options.rounds); ++r) {
      auto round_median = [&](const std::vector<double>& all) {
        return Median(std::vector<double>(all.begin() + r * runs, all.begin() + (r + 1) * runs));
      };
      won += round_median(first_runs) < round_median(second_runs);
    }
    times.first_rounds_won.push_back(won);
  }
  return times;
}

bool FirstWinsBeyondNoise(const KernelTimesInModel& times, size_t k) {
  return times.first_secs[k] <= times.second_secs[k] &&
         times.first_rounds_won[k] >= times.rounds - 1;
}

}  // namespace tessera
