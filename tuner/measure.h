// Measuring candidates in the tuning process: a batch is built in parallel (C compiler or
// NVRTC) and run one candidate at a time on the device (CPU runner or CUDA runner), so
// measurements do not disturb each other. A failed build or run becomes a failed
// MeasureResult carrying the error, never an exception or a lost candidate.
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
  // `run_timeout_sec` > 0 replaces the configured run time-out for this batch.
  MeasuredBatch Measure(const std::vector<PrimFunc>& funcs, double run_timeout_sec = 0);
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
