// Measuring candidates in the tuning process: a batch is built in parallel (C compiler or
// NVRTC) and run one candidate at a time on the device (CPU runner or CUDA runner), so
// measurements do not disturb each other. A failed build or run becomes a failed
// MeasureResult carrying the error, never an exception or a lost candidate.
//
// Far slower candidates than the task's best teach the search little and can cost seconds
// each, so once a best latency b is known (from earlier batches, or from this batch's
// candidates measured so far) the CPU runner is told to
//   - take the first warm-up run as the only measurement when it lasts >= slow_ratio * b and
//     >= min_slow_run_secs (RunnerConfig::slow_run_secs; the repeats would add nothing to the
//     ranking, and the first run's start-up costs are negligible at that length), and
//   - kill a run step (load + first warm-up, one repeat) that lasts longer than
//     cutoff_ratio * b (plus start-up), never below min_timeout_sec nor above the configured
//     timeout; such a candidate fails with "run: timed out after ... (cut off at 20x ...)".
// On CUDA (no slow-candidate rule; a step is a whole measurement) the time-out is
// cutoff_ratio * b per run of the measurement, at least 2 s.
#ifndef TESSERA_TUNER_MEASURE_H_
#define TESSERA_TUNER_MEASURE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/function.h"
#include "ir/target.h"
#include "tuner/search_strategy.h"
#include "worker/builder.h"
#include "worker/runner.h"

namespace tessera {

struct MeasureConfig {
  RunnerConfig runner;          // warmup, number, repeat, min_repeat_ms, cache flush, timeout
  double slow_ratio = 10;       // one timed run at >= slow_ratio x best (<= 0: always repeat)
  double min_slow_run_secs = 0.05;  // ... and at >= this (a first run's start-up noise is ~1 ms)
  double cutoff_ratio = 20;     // run steps killed beyond cutoff_ratio x best (<= 0: never)
  double min_timeout_sec = 0.25;  // floor of the cut-off time-out
  int build_parallelism = 0;    // concurrent compilations; <= 0: hardware threads
  double build_timeout_sec = 60;
  std::string work_dir;         // build artifacts (empty: a temporary directory)
};

// One batch's builds, kept so that a new best can be checked against the reference without
// building it again.
struct MeasuredBatch {
  std::vector<BuildResult> builds;
  std::vector<MeasureResult> results;
  double build_seconds = 0;  // wall time of the parallel build
  double run_seconds = 0;    // wall time of the runs
};

class Measurer {
 public:
  // Builders and runners for the target's kind (cuda needs a GPU to run).
  static absl::StatusOr<std::unique_ptr<Measurer>> Create(const Target& target,
                                                          const MeasureConfig& config);
  // `best_secs` > 0: the task's best latency so far, which the slow-candidate and cut-off
  // rules above start from (they then follow this batch's own best).
  MeasuredBatch Measure(const std::vector<PrimFunc>& funcs, double best_secs = 0);
  // The runner config for a candidate when the task's best latency is `best_secs` (<= 0:
  // none known, the configured one).
  RunnerConfig RunnerConfigFor(double best_secs) const;
  Builder* builder() { return builder_.get(); }
  const Target& target() const { return target_; }
  // Where the measurements come from (records store it).
  const Provenance& provenance() const { return provenance_; }

 private:
  Measurer() = default;
  Target target_;
  MeasureConfig config_;
  std::unique_ptr<Builder> builder_;
  std::unique_ptr<Runner> runner_;
  Provenance provenance_;
};

}  // namespace tessera

#endif  // TESSERA_TUNER_MEASURE_H_
