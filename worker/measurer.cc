#include "worker/measurer.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/cpu_times.h"
#include "base/median.h"
#include "base/version.h"
#include "ir/analysis.h"
#include "ir/structural_hash.h"
#include "worker/backends.h"
#include "worker/builder_internal.h"
#include "worker/devices.h"
#include "worker/host.h"

namespace tessera {
namespace {

using internal::SecondsSince;

int HardwareThreads() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

// Threads a CPU kernel's parallel loops use: OMP_NUM_THREADS's first level when set, else
// libgomp's default, every hardware thread.
int KernelThreads() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  int threads = 0;
  if (env != nullptr &&
      absl::SimpleAtoi(std::string(env).substr(0, std::string(env).find(',')), &threads) &&
      threads > 0) {
    return threads;
  }
  return HardwareThreads();
}

bool OverlapBuilds(const Target& target, const MeasureConfig& config) {
  switch (config.overlap_builds) {
    case BuildOverlap::kOn:
      return true;
    case BuildOverlap::kOff:
      return false;
    case BuildOverlap::kAuto:
      break;
  }
  if (!target.is_cpu()) return false;
  const int builds = config.build_parallelism > 0 ? config.build_parallelism : HardwareThreads();
  return HardwareThreads() >= builds + KernelThreads();
}

}  // namespace

std::optional<double> MeasureOutcome::mean_secs() const {
  if (!ok()) return std::nullopt;
  return std::accumulate(run_secs.begin(), run_secs.end(), 0.0) /
         static_cast<double>(run_secs.size());
}

absl::StatusOr<std::unique_ptr<LocalMeasurer>> LocalMeasurer::Create(const Target& target,
                                                                     const MeasureConfig& config) {
  std::unique_ptr<LocalMeasurer> m(new LocalMeasurer());
  m->target_ = target;
  m->config_ = config;
  m->provenance_.tessera_version = kTesseraVersion;
  if (target.is_cuda()) {
    absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
    if (!devices.ok()) return devices.status();
    m->provenance_.compiler = absl::StrCat("nvrtc ", target.arch());
    m->provenance_.device = devices->front().name;
    m->provenance_.driver = absl::StrCat(devices->front().driver_version);
  } else {
    const CBuilderOptions c;  // NewBuilder's compiler and flags
    m->provenance_.compiler = absl::StrCat(
        c.compiler, " ", absl::StrJoin(c.optimization_flags, " "), c.openmp ? " -fopenmp" : "");
    m->provenance_.device = HostCpuName();
  }
  BackendBuildOptions options;
  options.work_dir = config.work_dir;
  options.parallelism = config.build_parallelism;
  options.timeout_sec = config.build_timeout_sec;
  m->builder_ = NewBuilder(target, options);
  m->overlap_builds_ = OverlapBuilds(target, config);
  m->runner_ = NewRunner(target);
  return m;
}

RunnerConfig LocalMeasurer::RunnerConfigFor(double best_secs) const {
  RunnerConfig r = config_.runner;
  if (!(best_secs > 0) || best_secs >= 1e9) return r;
  if (target_.is_cuda()) {
    // The CUDA runner's step is a whole measurement (warm-up and every repeat) after creating
    // a context, and it has no slow-candidate rule.
    if (config_.cutoff_ratio > 0) {
      constexpr double kCudaMinTimeout = 2;
      double runs = r.warmup + r.repeat * std::max(1, r.number);
      double expected = config_.cutoff_ratio * best_secs * runs + r.repeat * r.min_repeat_ms / 1e3;
      r.timeout_sec = std::clamp(expected, std::min(kCudaMinTimeout, r.timeout_sec), r.timeout_sec);
    }
    return r;
  }
  if (config_.slow_ratio > 0) {
    // The first run of a freshly forked child also pays for the OpenMP thread pool and first
    // page touches (~0.1-1 ms): one run ranks a kernel well only when it lasts much longer.
    r.slow_run_secs = std::max(config_.slow_ratio * best_secs, config_.min_slow_run_secs);
  }
  if (config_.cutoff_ratio > 0) {
    // A step is the load plus the first warm-up run, or one repeat. Start-up (fork, dlopen,
    // first touches) is a few milliseconds; a repeat of a kernel faster than slow_run_secs can
    // last up to that plus about 3 min_repeat_ms (number grows and short timings are redone).
    constexpr double kStartupSecs = 0.05;
    double step = std::max(config_.cutoff_ratio * best_secs + kStartupSecs,
                           r.slow_run_secs + 3 * r.min_repeat_ms / 1e3);
    r.timeout_sec =
        std::clamp(step, std::min(config_.min_timeout_sec, r.timeout_sec), r.timeout_sec);
  }
  return r;
}

absl::StatusOr<MeasuredBatch> LocalMeasurer::Measure(const MeasureRequest& request) {
  if (request.target.ToString() != target_.ToString()) {
    return absl::InvalidArgumentError(
        absl::StrCat("measure: the batch is for target '", request.target.ToString(),
                     "' but this measurer measures on '", target_.ToString(), "'"));
  }
  MeasuredBatch batch;
  batch.provenance = provenance_;
  // Whether other programs shared the cores while the batch ran: the compilers and kernel
  // processes are this process's children, their time its own once waited for.
  const std::vector<int> cpus = target_.is_cpu() ? AffinityCpus() : std::vector<int>{};
  const std::optional<CpuTimes> before = ReadCpuTimes(cpus, OwnCpu::kWithWaitedChildren);
  std::vector<BuildResult> builds;
  if (overlap_builds_) {
    BuildAndRunOverlapped(request, &builds, &batch);
  } else {
    BuildAndRun(request, &builds, &batch);
  }
  TimeInMoreProcesses(request, builds, &batch);
  if (request.verify) CheckNewBests(request, builds, &batch);
  const std::optional<CpuTimes> after = ReadCpuTimes(cpus, OwnCpu::kWithWaitedChildren);
  if (before.has_value() && after.has_value()) {
    const double others = OthersBusyCores(*before, *after, TicksPerSecond());
    for (MeasureOutcome& o : batch.outcomes) o.others_busy_cores = others;
  }
  // Outcomes of a cancelled batch are partial (candidates left out, checks not made): none of
  // them may be stored as a measurement.
  if (request.cancelled()) return absl::CancelledError("measure: cancelled");
  return batch;
}

void LocalMeasurer::BuildAndRun(const MeasureRequest& request, std::vector<BuildResult>* builds,
                                MeasuredBatch* batch) {
  const std::vector<PrimFunc>& funcs = request.candidates;
  double best_secs = request.best_secs;
  auto start = std::chrono::steady_clock::now();
  std::vector<BuildInput> inputs;
  for (const PrimFunc& f : funcs) inputs.push_back(BuildInput{f, target_, request.cancel});
  *builds = builder_->Build(inputs);
  batch->build_seconds = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  batch->outcomes.resize(funcs.size());
  for (size_t i = 0; i < funcs.size() && !request.cancelled(); ++i) {
    RunCandidate(request, i, (*builds)[i], &best_secs, &batch->outcomes[i]);
  }
  batch->run_seconds = SecondsSince(start);
}

void LocalMeasurer::BuildAndRunOverlapped(const MeasureRequest& request,
                                          std::vector<BuildResult>* builds, MeasuredBatch* batch) {
  const size_t n = request.candidates.size();
  double best_secs = request.best_secs;
  builds->assign(n, BuildResult{});
  batch->outcomes.resize(n);
  std::vector<BuildInput> inputs;
  for (const PrimFunc& f : request.candidates) {
    inputs.push_back(BuildInput{f, target_, request.cancel});
  }
  std::mutex mu;
  std::condition_variable built_cv;
  std::vector<bool> built(n, false);  // guarded by mu
  // The builder's threads fill `builds` and signal; a build that fails or times out is a
  // result like any other, so the runner never waits for a candidate that will not come.
  std::thread producer([&] {
    builder_->BuildEach(inputs, [&](size_t i, BuildResult result) {
      std::lock_guard<std::mutex> lock(mu);
      (*builds)[i] = std::move(result);
      built[i] = true;
      built_cv.notify_all();
    });
  });
  // On cancel the producer's remaining builds are skipped (BuildInput::cancel), so the join
  // below does not wait for them.
  for (size_t i = 0; i < n && !request.cancelled(); ++i) {
    const auto wait_start = std::chrono::steady_clock::now();
    {
      std::unique_lock<std::mutex> lock(mu);
      built_cv.wait(lock, [&] { return built[i]; });
    }
    batch->build_seconds += SecondsSince(wait_start);
    const auto run_start = std::chrono::steady_clock::now();
    RunCandidate(request, i, (*builds)[i], &best_secs, &batch->outcomes[i]);
    batch->run_seconds += SecondsSince(run_start);
  }
  producer.join();
}

void LocalMeasurer::RunCandidate(const MeasureRequest& request, size_t i, const BuildResult& built,
                                 double* best_secs, MeasureOutcome* outcome) {
  outcome->build_secs = built.compile_seconds;
  if (!built.ok()) {
    outcome->error = MeasureError::kBuild;
    outcome->error_msg = absl::StrCat("build: ", built.error_msg);
    return;
  }
  // One input per call: a crash or time-out of one candidate cannot cost the others.
  const RunnerConfig runner_config = RunnerConfigFor(request.measure_fully ? 0 : *best_secs);
  const auto run_start = std::chrono::steady_clock::now();
  std::vector<RunResult> ran = runner_->Run(
      {TimedRunInput(built.artifact_path, built.symbol, request.candidates[i], target_)},
      runner_config);
  outcome->run_wall_secs = SecondsSince(run_start);
  if (ran.size() != 1) {
    outcome->error = MeasureError::kRun;
    outcome->error_msg = "run: the runner returned no result";
  } else if (!ran[0].ok()) {
    bool timed_out = ran[0].error_msg.rfind("timed out", 0) == 0;
    outcome->error = timed_out ? MeasureError::kTimeout : MeasureError::kRun;
    outcome->error_msg = absl::StrCat("run: ", ran[0].error_msg);
    if (timed_out && runner_config.timeout_sec < config_.runner.timeout_sec) {
      absl::StrAppend(&outcome->error_msg, " (cut off at ", config_.cutoff_ratio, "x the best ",
                      absl::StrFormat("%.4g", *best_secs * 1e3), " ms)");
    }
  } else {
    outcome->run_secs = ran[0].run_secs;
    double secs = *outcome->mean_secs();
    if (!(*best_secs > 0) || secs < *best_secs) *best_secs = secs;
  }
}

void LocalMeasurer::TimeInMoreProcesses(const MeasureRequest& request,
                                        const std::vector<BuildResult>& builds,
                                        MeasuredBatch* batch) {
  const size_t n = batch->outcomes.size();
  // Each candidate's processes: their repeats. A slow candidate's single run is not timed
  // again: it ranks far behind the best whatever its process.
  std::vector<std::vector<std::vector<double>>> processes(n);
  for (size_t i = 0; i < n; ++i) {
    const MeasureOutcome& o = batch->outcomes[i];
    if (o.ok() && o.run_secs.size() > 1) processes[i].push_back(o.run_secs);
  }
  if (!target_.is_cpu() || config_.processes_per_candidate <= 1) {
    for (size_t i = 0; i < n; ++i) {
      if (!processes[i].empty()) batch->outcomes[i].process_medians = {Median(processes[i][0])};
    }
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  auto time_again = [&](size_t i) {
    RunnerConfig runner_config = RunnerConfigFor(request.measure_fully ? 0 : request.best_secs);
    runner_config.slow_run_secs = 0;  // it ran in full before: compare like with like
    const auto run_start = std::chrono::steady_clock::now();
    std::vector<RunResult> ran = runner_->Run(
        {TimedRunInput(builds[i].artifact_path, builds[i].symbol, request.candidates[i], target_)},
        runner_config);
    batch->outcomes[i].run_wall_secs += SecondsSince(run_start);
    if (ran.size() == 1 && ran[0].ok() && !ran[0].run_secs.empty()) {
      processes[i].push_back(ran[0].run_secs);
    } else {
      // It ran in full in an earlier process: this one was disturbed, not the kernel broken.
      batch->outcomes[i].disturbed = true;
    }
  };
  auto disagree = [&](size_t i) {
    if (processes[i].size() < 2) return false;
    double low = 0, high = 0;
    for (size_t p = 0; p < processes[i].size(); ++p) {
      const double m = Median(processes[i][p]);
      low = p == 0 ? m : std::min(low, m);
      high = p == 0 ? m : std::max(high, m);
    }
    return high > low * (1 + config_.process_disagreement);
  };
  for (int pass = 1; pass < config_.max_processes_per_candidate; ++pass) {
    const bool extra = pass >= config_.processes_per_candidate;
    for (size_t k = 0; k < n && !request.cancelled(); ++k) {
      const size_t i = pass % 2 == 1 ? n - 1 - k : k;  // odd passes backwards
      if (processes[i].empty()) continue;
      if (extra && !disagree(i)) continue;
      time_again(i);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (processes[i].empty()) continue;
    MeasureOutcome& o = batch->outcomes[i];
    size_t lowest = 0;
    o.process_medians.clear();
    for (size_t p = 0; p < processes[i].size(); ++p) {
      o.process_medians.push_back(Median(processes[i][p]));
      if (o.process_medians[p] < o.process_medians[lowest]) lowest = p;
    }
    o.run_secs = processes[i][lowest];
    if (disagree(i)) o.disturbed = true;
  }
  batch->run_seconds += SecondsSince(start);
}

void LocalMeasurer::CheckNewBests(const MeasureRequest& request,
                                  const std::vector<BuildResult>& builds, MeasuredBatch* batch) {
  auto start = std::chrono::steady_clock::now();
  const double timeout = config_.runner.timeout_sec;
  std::vector<bool> checked(batch->outcomes.size(), false);
  // Checks candidate i; true when its outputs match the reference's.
  auto check = [&](size_t i) {
    checked[i] = true;
    // The first check of a task also computes its reference: that time is this check's.
    const auto check_start = std::chrono::steady_clock::now();
    auto key = std::make_pair(StructuralHashHex(request.workload), request.check_seed);
    auto it = references_.find(key);
    if (it == references_.end()) {
      it = references_.emplace(key, ComputeReference(request.workload, request.check_seed, timeout))
               .first;
    }
    MeasureOutcome& outcome = batch->outcomes[i];
    absl::StatusOr<CheckOutcome> checked =
        it->second.ok()
            ? CheckAgainstReference(request.candidates[i], *it->second, target_, builds[i], timeout)
            : absl::StatusOr<CheckOutcome>(it->second.status());
    outcome.verify_secs = SecondsSince(check_start);
    if (checked.ok() && checked->passed) {
      outcome.verified = true;
      return true;
    }
    outcome.error = MeasureError::kWrongOutput;
    outcome.error_msg = checked.ok()
                            ? absl::StrFormat(
                                  "check: outputs differ from the %s's: max abs error %g, "
                                  "%d mismatches",
                                  checked->reference, checked->max_abs_error, checked->mismatches)
                            : absl::StrCat("check: ", checked.status().message());
    return false;
  };
  std::vector<size_t> order;
  for (size_t i = 0; i < batch->outcomes.size(); ++i) {
    const MeasureOutcome& o = batch->outcomes[i];
    if (o.ok() && (!(request.best_secs > 0) || *o.mean_secs() < request.best_secs)) {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return *batch->outcomes[a].mean_secs() < *batch->outcomes[b].mean_secs();
  });
  if (order.size() > kMaxChecksPerBatch) order.resize(kMaxChecksPerBatch);
  for (size_t i : order) {
    if (request.cancelled() || check(i)) break;
  }
  for (size_t i : request.check_always) {
    if (request.cancelled()) break;
    if (i < batch->outcomes.size() && batch->outcomes[i].ok() && !checked[i]) check(i);
  }
  batch->verify_seconds = SecondsSince(start);
}

}  // namespace tessera
