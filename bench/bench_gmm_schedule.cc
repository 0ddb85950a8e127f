// bench_gmm_schedule: the unscheduled GMM against the hand-written schedule of
// examples/gmm_cpu_tiled.json on the host CPU, from one run of this program: both functions are
// built in one Build call (C builder, -O3 -march=native, OpenMP) and timed by one CPU runner call
// on the same seeded inputs; then both run once more on identical arrays and their outputs are
// compared. Prints latency and GFLOP/s of each and the speed-up (docs/schedule.md).
//
//   bench_gmm_schedule [--size 1024] [--trace examples/gmm_cpu_tiled.json] [--repeat 3]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/median.h"
#include "base/random.h"
#include "frontend/workloads.h"
#include "ir/analysis.h"
#include "ir/flops.h"
#include "ir/ndarray.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "worker/builder.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace {

// The bar for the example schedule at 1024^3 on a 2-core machine.
constexpr double kTargetSpeedup = 10;

int Fail(const std::string& message) {
  std::fprintf(stderr, "bench_gmm_schedule: error: %s\n", message.c_str());
  return 1;
}

int Bench(int64_t size, const std::string& trace_path, int repeat) {
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("GMM", {{"B", 1}, {"M", size}, {"N", size}, {"K", size}}, "float32");
  if (!func.ok()) return Fail(std::string(func.status().message()));
  std::ifstream in(trace_path);
  if (!in) return Fail("cannot read trace file " + trace_path);
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<Trace> trace = Trace::FromJson(text.str());
  if (!trace.ok()) return Fail(trace_path + ": " + std::string(trace.status().message()));
  Schedule sch = Schedule::Create(*func, /*seed=*/0);
  absl::Status applied = trace->ApplyTo(&sch, /*remove_postproc=*/false);
  if (!applied.ok()) return Fail(trace_path + ": " + std::string(applied.message()));
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  if (!target.ok()) return Fail(std::string(target.status().message()));

  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built =
      builder->Build({BuildInput{*func, *target}, BuildInput{sch.func(), *target}});
  for (const BuildResult& b : built) {
    if (!b.ok()) return Fail("build failed: " + b.error_msg);
  }

  RunnerConfig config;
  config.warmup = 1;
  config.number = 1;
  config.repeat = repeat;
  config.timeout_sec = 600;
  config.seed = 1;
  const std::vector<ArgInfo> args = ArgInfosOf(*func);
  std::vector<RunResult> runs =
      NewCpuRunner()->Run({RunInput{built[0].artifact_path, built[0].symbol, args},
                           RunInput{built[1].artifact_path, built[1].symbol, args}},
                          config);
  for (const RunResult& r : runs) {
    if (!r.ok()) return Fail("run failed: " + r.error_msg);
  }

  // Same inputs, one run each: the schedule must compute what the unscheduled GMM computes.
  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  once.timeout_sec = 600;
  std::vector<std::vector<NDArray>> outputs;
  for (const BuildResult& b : built) {
    Random rng(2);
    std::vector<NDArray> arrays;
    for (const ArgInfo& info : args) {
      arrays.push_back(NDArray::Empty(info.dtype, info.shape));
      arrays.back().FillRandom(&rng);
    }
    absl::StatusOr<RunResult> ran = RunCpuKernel(b.artifact_path, b.symbol, &arrays, once);
    if (!ran.ok()) return Fail(std::string(ran.status().message()));
    if (!ran->ok()) return Fail("check run failed: " + ran->error_msg);
    outputs.push_back(std::move(arrays));
  }
  const int out_index = WrittenParamIndices(*func).front();
  absl::StatusOr<Comparison> cmp = Compare(outputs[1][out_index], outputs[0][out_index]);
  if (!cmp.ok()) return Fail(std::string(cmp.status().message()));

  const double flops = EstimateFlops(*func);
  const double base = Median(runs[0].run_secs), tuned = Median(runs[1].run_secs);
  std::printf("GMM %lldx%lldx%lld float32 on %s (%s), median of %d repeats\n",
              static_cast<long long>(size), static_cast<long long>(size),
              static_cast<long long>(size), target->ToString().c_str(), HostCpuName().c_str(),
              repeat);
  std::printf("  unscheduled          %10.2f ms  %8.2f GFLOP/s\n", base * 1e3, flops / base / 1e9);
  std::printf("  %-20s %10.2f ms  %8.2f GFLOP/s\n", "gmm_cpu_tiled.json", tuned * 1e3,
              flops / tuned / 1e9);
  std::printf("  speed-up             %10.1fx  (target >= %.0fx: %s)\n", base / tuned,
              kTargetSpeedup, base / tuned >= kTargetSpeedup ? "met" : "NOT met");
  std::printf("  outputs              %s (max abs error %.3g, %lld mismatches)\n",
              cmp->ok() ? "match" : "DIFFER", cmp->max_abs_error,
              static_cast<long long>(cmp->mismatches));
  return cmp->ok() ? 0 : 1;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  CLI::App app{"GMM: unscheduled vs the example CPU schedule", "bench_gmm_schedule"};
  int64_t size = 1024;
  std::string trace = std::string(TESSERA_SOURCE_DIR) + "/examples/gmm_cpu_tiled.json";
  int repeat = 3;
  app.add_option("--size", size, "M = N = K")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--trace", trace, "Trace JSON of the schedule")->capture_default_str();
  app.add_option("--repeat", repeat, "Timed repeats of each")
      ->capture_default_str()
      ->check(CLI::Range(3, 1000));
  CLI11_PARSE(app, argc, argv);
  return tessera::Bench(size, trace, repeat);
}
