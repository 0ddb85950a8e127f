// Tuned kernels against their default schedules inside the model (issue #32: a tuned model is
// never slower than its defaults). A record's time is the kernel's own, taken by the tuning job
// on buffers of its own, repeat after repeat with the same data in cache; inside the model a
// kernel runs after others that left their outputs (and not its weights) in cache, and a
// schedule faster alone can be slower there, or a few percent faster only in a quieter minute.
// So `compile` times both versions of every tuned kernel in the model itself: two executors of
// the same plan, one with the tuned kernels and one with the default schedules in their place,
// run alternately on the same seeded random inputs, every call timed.
#ifndef TESSERA_MODEL_KERNEL_RUNOFF_H_
#define TESSERA_MODEL_KERNEL_RUNOFF_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/compiled_model.h"

namespace tessera {

struct KernelRunoffOptions {
  int rounds = 7;          // alternations; the order of the two models swaps every round
  int runs_per_round = 3;  // runs of one model in a row
  int num_threads = 0;     // ExecutorOptions::num_threads
};

// Per kernel (task) of the plan: the median over runs of the summed time of its calls, in
// `first` and in `second`, and the rounds in which `first`'s median over the round's runs was
// below `second`'s.
struct KernelTimesInModel {
  std::vector<double> first_secs;
  std::vector<double> second_secs;
  std::vector<int> first_rounds_won;
  int rounds = 0;
};

// Whether `first`'s kernel `k` beat `second`'s beyond the noise: its median is not above the
// other's and it was faster in every round but at most one. Two kernels equally fast would
// pass with probability (1 + rounds) / 2^rounds, 6% at 7 rounds (a sign test), where a median
// alone is a coin flip: a tuned kernel 0.04% faster in one runoff replaced LLaMA's default.
bool FirstWinsBeyondNoise(const KernelTimesInModel& times, size_t k);

// Runs `first` and `second`, two compiled models of one plan whose kernels may differ (their
// artifacts relative to `dir`, both over the weights blob `weights`), alternately: one warm-up
// run each, then per round `runs_per_round` runs of one and of the other. kInvalidArgument when
// the plans differ; errors of Executor::Create and Run.
absl::StatusOr<KernelTimesInModel> TimeKernelsInModel(const CompiledModel& first,
                                                      const CompiledModel& second,
                                                      const std::string& dir,
                                                      const std::string& weights,
                                                      const KernelRunoffOptions& options = {});

}  // namespace tessera

#endif  // TESSERA_MODEL_KERNEL_RUNOFF_H_
