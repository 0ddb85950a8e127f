// Measuring a batch of candidates of one task. `Measurer` is the seam between the tuning job
// (tuner/tuning_job.h) and where measurements happen: LocalMeasurer builds and runs in this
// process (`tessera tune`, and each `tessera worker` daemon); the server's remote measurer
// (server/) queues the batch for worker daemons and waits for their reports.
//
// LocalMeasurer builds a batch in parallel (C compiler or NVRTC) and runs one candidate at a
// time on the device (CPU runner or CUDA runner), so measurements do not disturb each other.
// A failed build or run becomes an outcome with its error kind, never an exception or a lost
// candidate. Then, when asked to verify, it checks this batch's fastest candidates that beat
// the task's best against the reference (the unscheduled workload), fastest first, at most
// kMaxChecksPerBatch, until one passes, and the candidates the request names in check_always;
// a candidate whose outputs differ is a wrong_output.
//
// Far slower candidates than the task's best teach the search little and can cost seconds
// each, so once a best latency b is known (from earlier batches, or from this batch's
// candidates measured so far) the CPU runner is told to
//   - take the first warm-up run as the only measurement when it lasts >= slow_ratio * b and
//     >= min_slow_run_secs (RunnerConfig::slow_run_secs; the repeats would add nothing to the
//     ranking, and the first run's start-up costs are negligible at that length), and
//   - kill a run step (load + first warm-up, one repeat) that lasts longer than
//     cutoff_ratio * b (plus start-up), never below min_timeout_sec nor above the configured
//     timeout; such a candidate is a timeout "run: timed out after ... (cut off at 20x ...)".
// On CUDA (no slow-candidate rule; a step is a whole measurement) the time-out is
// cutoff_ratio * b per run of the measurement, at least 2 s.
#ifndef TESSERA_WORKER_MEASURER_H_
#define TESSERA_WORKER_MEASURER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/function.h"
#include "ir/target.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/runner.h"

namespace tessera {

// Whether LocalMeasurer builds and runs a batch as a pipeline: builder threads compile
// candidates j+1, j+2, ... while candidate j runs, and the runner takes them in order as they
// are built, instead of building the whole batch first and then running it. Compiling beside
// a timed run slowed the kernel 1.6-2.3x on a 2-core machine (bench/bench_build_overlap,
// docs/tuning.md "Overlapping builds with runs"), far beyond the noise; holding compilations
// back while a run is timed would leave nothing to overlap (each compile takes a core the
// kernel's threads use). So kAuto pipelines only on a machine with cores that neither the
// compilers nor the kernels use: hardware threads >= build threads + kernel threads
// (OMP_NUM_THREADS, else every hardware thread), which the defaults never give.
enum class BuildOverlap { kAuto, kOff, kOn };

struct MeasureConfig {
  RunnerConfig runner;              // warmup, number, repeat, min_repeat_ms, cache flush, timeout
  double slow_ratio = 10;           // one timed run at >= slow_ratio x best (<= 0: always repeat)
  double min_slow_run_secs = 0.05;  // ... and at >= this (a first run's start-up noise is ~1 ms)
  double cutoff_ratio = 20;         // run steps killed beyond cutoff_ratio x best (<= 0: never)
  double min_timeout_sec = 0.25;    // floor of the cut-off time-out
  // CPU: each candidate that ran is timed again in this many processes in all, one pass over
  // the batch each (odd passes in reverse order), and keeps the repeats of the process with the
  // lowest median. A kernel's time is a property of the process it ran in as much as of the
  // kernel: on a 2-core VM a transpose of 2 KB ran 0.65 us in one process and 1.6 us in the
  // next, every repeat of each alike, and the tuner's timings of small kernels were 2-5x off a
  // re-timing (docs/tuning.md, "Measurements that agree with themselves"). 1: one process.
  int processes_per_candidate = 2;
  // When the processes' medians differ by more than this fraction, one more process (up to
  // max_processes_per_candidate); if they still differ, the outcome is `disturbed`.
  double process_disagreement = 0.15;
  int max_processes_per_candidate = 3;
  int build_parallelism = 0;        // concurrent compilations; <= 0: hardware threads
  double build_timeout_sec = 60;
  BuildOverlap overlap_builds = BuildOverlap::kAuto;
  std::string work_dir;  // build artifacts (empty: a temporary directory)
};

// What measuring one candidate gave.
struct MeasureOutcome {
  MeasureError error = MeasureError::kNone;
  std::string error_msg;         // for people: "build: ...", "run: ...", "check: ..."
  std::vector<double> run_secs;  // seconds per run, one per repeat; empty unless it ran
  // The median seconds per run of each process it was timed in (MeasureConfig::
  // processes_per_candidate); run_secs are the repeats of the lowest. Empty when it did not
  // run, or ran once as a slow candidate.
  std::vector<double> process_medians;
  // Its processes still disagreed by more than MeasureConfig::process_disagreement after the
  // extra ones: other programs used the cores (others_busy_cores says), or the kernel's time
  // moved with the process it ran in. Ranked by its lowest process.
  bool disturbed = false;
  // The cores (fractional, on average) the machine's other programs kept busy while its batch
  // was measured (base/cpu_times.h; CPU measurers; 0 where unknown). Tells disturbed timings
  // that had company from those that moved with the process alone.
  double others_busy_cores = 0;
  bool verified = false;         // a check ran and passed (never set without a check)
  double build_secs = 0;         // wall time of its code generation and compilation
  double run_wall_secs = 0;      // wall time of its run steps (load, warm-up, repeats)
  double verify_secs = 0;        // wall time of its check (0 unless checked)
  // Where it was measured, when a batch's outcomes come from different places (the service's
  // workers); otherwise MeasuredBatch::provenance.
  std::optional<Provenance> provenance;

  bool ok() const { return error == MeasureError::kNone && !run_secs.empty(); }
  // Mean of run_secs; nullopt unless ok().
  std::optional<double> mean_secs() const;
};

// One batch of one task.
struct MeasureRequest {
  Target target;
  PrimFunc workload;                 // the unscheduled function: the checks' reference
  std::vector<PrimFunc> candidates;  // scheduled and post-processed
  double best_secs = 0;              // the task's best verified mean so far; <= 0: none
  bool verify = true;                // check the candidates that beat best_secs
  int64_t check_seed = 0;            // seed of the checks' random inputs
  // Indices of candidates checked whatever their time when `verify` is set: the task's default
  // schedule, which `best` returns while the fastest record beats it by less than the timings'
  // noise (tuner/best_record.h), so it must be verified even when it is not the fastest.
  std::vector<size_t> check_always;
  // Time every candidate in full: no single run for slow candidates and no cut-off (the
  // runoff, tuner/runoff.h, times two programs that both ran before, and must compare them).
  bool measure_fully = false;
  // Time every candidate on one machine: a remote measurer leases the batch whole, to one
  // worker (the runoff compares the times of its candidates with each other). A local
  // measurer is one machine already.
  bool same_machine = false;
  // Stops the measurement when it turns true (a worker whose lease was revoked): builds not
  // started are skipped, and no candidate, process or check starts after it; the run in
  // progress ends first. Measure then returns kCancelled. Null: never.
  std::shared_ptr<const std::atomic<bool>> cancel;
  bool cancelled() const { return cancel != nullptr && cancel->load(); }
};

struct MeasuredBatch {
  std::vector<MeasureOutcome> outcomes;  // one per candidate, in order
  // Wall time of the parallel builds; when builds overlap runs (BuildOverlap), only the time
  // the runner waited for a build, so build + run is still the batch's wall time before checks.
  double build_seconds = 0;
  double run_seconds = 0;     // wall time of the runs
  double verify_seconds = 0;  // wall time of the checks (the reference included)
  Provenance provenance;      // where they were measured (set by the measurer)
};

class Measurer {
 public:
  virtual ~Measurer() = default;
  // Measures every candidate of `request`. An error status only for what stops the whole
  // batch (the job was cancelled, the server is shutting down, request.cancel); a candidate
  // that fails is an outcome with its error kind.
  virtual absl::StatusOr<MeasuredBatch> Measure(const MeasureRequest& request) = 0;
};

// Builds and runs in this process, for one target.
class LocalMeasurer : public Measurer {
 public:
  static constexpr int kMaxChecksPerBatch = 3;

  // Builders and runners for the target's kind (cuda needs a GPU to run).
  static absl::StatusOr<std::unique_ptr<LocalMeasurer>> Create(const Target& target,
                                                               const MeasureConfig& config);
  // request.target must be this measurer's target (kInvalidArgument otherwise).
  absl::StatusOr<MeasuredBatch> Measure(const MeasureRequest& request) override;
  // The runner config for a candidate when the task's best latency is `best_secs` (<= 0:
  // none known, the configured one).
  RunnerConfig RunnerConfigFor(double best_secs) const;
  Builder* builder() { return builder_.get(); }
  const Target& target() const { return target_; }
  // Where the measurements come from (records store it).
  const Provenance& provenance() const { return provenance_; }
  // Whether batches are built and run as a pipeline (MeasureConfig::overlap_builds).
  bool overlaps_builds() const { return overlap_builds_; }

 private:
  LocalMeasurer() = default;
  // Builds and runs, filling run_secs / errors: every build first, then the runs.
  void BuildAndRun(const MeasureRequest& request, std::vector<BuildResult>* builds,
                   MeasuredBatch* batch);
  // The same as a pipeline: each candidate runs, in order, as soon as it is built.
  void BuildAndRunOverlapped(const MeasureRequest& request, std::vector<BuildResult>* builds,
                             MeasuredBatch* batch);
  // Runs candidate i of `request` (built as `built`) into `outcome`; a faster run lowers
  // `*best_secs`.
  void RunCandidate(const MeasureRequest& request, size_t i, const BuildResult& built,
                    double* best_secs, MeasureOutcome* outcome);
  void CheckNewBests(const MeasureRequest& request, const std::vector<BuildResult>& builds,
                     MeasuredBatch* batch);
  // The later processes of every candidate that ran (MeasureConfig::processes_per_candidate):
  // sets each outcome's run_secs, process_medians and disturbed.
  void TimeInMoreProcesses(const MeasureRequest& request, const std::vector<BuildResult>& builds,
                           MeasuredBatch* batch);

  Target target_;
  MeasureConfig config_;
  std::unique_ptr<Builder> builder_;
  std::unique_ptr<Runner> runner_;
  Provenance provenance_;
  bool overlap_builds_ = false;
  // Reference outputs by workload hash and seed, computed at a task's first check and reused
  // by every later one: the interpreter or a naive build takes seconds on large tasks. Errors
  // are kept too, so a reference that cannot run is not retried every batch.
  std::map<std::pair<std::string, int64_t>, absl::StatusOr<ReferenceOutputs>> references_;
};

}  // namespace tessera

#endif  // TESSERA_WORKER_MEASURER_H_
