#include "tuner/measure.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/version.h"
#include "worker/cuda_runner.h"
#include "worker/devices.h"
#include "worker/host.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Measurer>> Measurer::Create(const Target& target,
                                                           const MeasureConfig& config) {
  std::unique_ptr<Measurer> m(new Measurer());
  m->target_ = target;
  m->config_ = config;
  m->provenance_.tessera_version = kTesseraVersion;
  if (target.is_cuda()) {
    absl::StatusOr<std::vector<CudaDeviceInfo>> devices = ListCudaDevices();
    if (!devices.ok()) return devices.status();
    NvrtcBuilderOptions options;
    options.work_dir = config.work_dir;
    options.parallelism = config.build_parallelism;
    m->builder_ = NewNvrtcBuilder(options);
    m->runner_ = NewCudaRunner();
    m->provenance_.compiler = absl::StrCat("nvrtc ", target.arch());
    m->provenance_.device = devices->front().name;
    m->provenance_.driver = absl::StrCat(devices->front().driver_version);
  } else {
    CBuilderOptions options;
    options.work_dir = config.work_dir;
    options.parallelism = config.build_parallelism;
    options.timeout_sec = config.build_timeout_sec;
    m->provenance_.compiler = absl::StrCat(options.compiler, " ",
                                           absl::StrJoin(options.optimization_flags, " "),
                                           options.openmp ? " -fopenmp" : "");
    m->builder_ = NewCBuilder(options);
    m->runner_ = NewCpuRunner();
    m->provenance_.device = HostCpuName();
  }
  return m;
}

RunnerConfig Measurer::RunnerConfigFor(double best_secs) const {
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
    r.timeout_sec = std::clamp(step, std::min(config_.min_timeout_sec, r.timeout_sec),
                               r.timeout_sec);
  }
  return r;
}

MeasuredBatch Measurer::Measure(const std::vector<PrimFunc>& funcs, double best_secs) {
  MeasuredBatch batch;
  auto start = std::chrono::steady_clock::now();
  std::vector<BuildInput> inputs;
  for (const PrimFunc& f : funcs) inputs.push_back(BuildInput{f, target_});
  batch.builds = builder_->Build(inputs);
  batch.build_seconds = SecondsSince(start);

  start = std::chrono::steady_clock::now();
  batch.results.resize(funcs.size());
  for (size_t i = 0; i < funcs.size(); ++i) {
    const BuildResult& built = batch.builds[i];
    if (!built.ok()) {
      batch.results[i].error_msg = absl::StrCat("build: ", built.error_msg);
      continue;
    }
    // One input per call: a crash or time-out of one candidate cannot cost the others.
    const RunnerConfig runner_config = RunnerConfigFor(best_secs);
    std::vector<RunResult> ran = runner_->Run(
        {RunInput{built.artifact_path, built.symbol, ArgInfosOf(funcs[i])}}, runner_config);
    if (ran.size() != 1) {
      batch.results[i].error_msg = "run: the runner returned no result";
    } else if (!ran[0].ok()) {
      batch.results[i].error_msg = absl::StrCat("run: ", ran[0].error_msg);
      if (runner_config.timeout_sec < config_.runner.timeout_sec &&
          ran[0].error_msg.rfind("timed out", 0) == 0) {
        absl::StrAppend(&batch.results[i].error_msg, " (cut off at ", config_.cutoff_ratio,
                        "x the best ", absl::StrFormat("%.4g", best_secs * 1e3), " ms)");
      }
    } else {
      batch.results[i].run_secs = ran[0].run_secs;
      double secs = batch.results[i].median_secs();
      if (!(best_secs > 0) || secs < best_secs) best_secs = secs;
    }
  }
  batch.run_seconds = SecondsSince(start);
  return batch;
}

}  // namespace tessera
