#include "tuner/measure.h"

#include <chrono>

#include "absl/strings/str_cat.h"
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

MeasuredBatch Measurer::Measure(const std::vector<PrimFunc>& funcs, double run_timeout_sec) {
  RunnerConfig runner_config = config_.runner;
  if (run_timeout_sec > 0) runner_config.timeout_sec = run_timeout_sec;
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
    std::vector<RunResult> ran = runner_->Run(
        {RunInput{built.artifact_path, built.symbol, ArgInfosOf(funcs[i])}}, runner_config);
    if (ran.size() != 1) {
      batch.results[i].error_msg = "run: the runner returned no result";
    } else if (!ran[0].ok()) {
      batch.results[i].error_msg = absl::StrCat("run: ", ran[0].error_msg);
    } else {
      batch.results[i].run_secs = ran[0].run_secs;
    }
  }
  batch.run_seconds = SecondsSince(start);
  return batch;
}

}  // namespace tessera
