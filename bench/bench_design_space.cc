// bench_design_space: what the CPU design space holds for GMM, from one run of this program —
// the unscheduled function, the rule-based default schedule (rules/default, DefaultCpuRules)
// and the best of N random samples of the default design spaces (tuner/space_generator.h
// SampleCandidate: ReplayTrace's draw). Everything is built in one Build call (C builder, -O3
// -march=native, OpenMP); the samples are screened with one timed run each, then the
// unscheduled function, the default schedule and the best sample are timed together by one CPU
// runner call, and the two schedules are checked against the unscheduled function.
//
//   bench_design_space [--size 1024] [--samples 64] [--seed 1] [--repeat 3]
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "base/median.h"
#include "frontend/workloads.h"
#include "ir/analysis.h"
#include "ir/flops.h"
#include "rules/default/default_rule.h"
#include "tuner/space_generator.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "bench_design_space: error: %s\n", message.c_str());
  return 1;
}

int Bench(int64_t size, int samples, int64_t seed, int repeat) {
  absl::StatusOr<PrimFunc> func =
      MakeWorkload("GMM", {{"B", 1}, {"M", size}, {"N", size}, {"K", size}}, "float32");
  if (!func.ok()) return Fail(std::string(func.status().message()));
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  if (!target.ok()) return Fail(std::string(target.status().message()));

  absl::StatusOr<IRModule> defaulted =
      ApplyDefaultSchedule(IRModule::FromFunction(*func), *target, DefaultCpuRules());
  if (!defaulted.ok()) return Fail(std::string(defaulted.status().message()));
  absl::StatusOr<PrimFunc> default_func = defaulted->Lookup(func->name());
  if (!default_func.ok()) return Fail(std::string(default_func.status().message()));

  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(*target);
  if (!config.ok()) return Fail(std::string(config.status().message()));
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(*func, *config, seed);
  if (!spaces.ok()) return Fail(std::string(spaces.status().message()));
  if (spaces->empty()) return Fail("no design space");
  std::vector<Trace> traces;
  for (const Schedule& s : *spaces) traces.push_back(s.trace().Simplified(true));

  // Inputs: [0] unscheduled, [1] default, [2..] the valid samples.
  std::vector<BuildInput> inputs = {{*func, *target}, {*default_func, *target}};
  Random rng(seed);
  int rejected = 0;
  for (int i = 0; i < samples; ++i) {
    SampledCandidate sample = SampleCandidate(*func, traces, config->postprocs, &rng);
    if (sample.schedule.ok()) {
      inputs.push_back({sample.schedule->func(), *target});
    } else {
      ++rejected;
    }
  }
  std::fprintf(stderr, "building %zu functions...\n", inputs.size());
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = builder->Build(inputs);
  for (int i : {0, 1}) {
    if (!built[i].ok()) return Fail("build failed: " + built[i].error_msg);
  }

  const std::vector<ArgInfo> args = ArgInfosOf(*func);
  std::unique_ptr<Runner> runner = NewCpuRunner();
  RunnerConfig screen;
  screen.warmup = 0;
  screen.repeat = 1;
  screen.timeout_sec = 120;
  std::vector<RunInput> screened;
  std::vector<size_t> screened_index;
  std::string first_build_error;
  for (size_t i = 2; i < built.size(); ++i) {
    if (!built[i].ok()) {
      if (first_build_error.empty()) first_build_error = built[i].error_msg;
      continue;
    }
    screened.push_back({built[i].artifact_path, built[i].symbol, args});
    screened_index.push_back(i);
  }
  std::fprintf(stderr, "screening %zu samples...\n", screened.size());
  std::vector<RunResult> screen_runs = runner->Run(screened, screen);
  size_t best = 0;
  double best_secs = 0;
  int failed = 0;
  for (size_t k = 0; k < screen_runs.size(); ++k) {
    if (!screen_runs[k].ok()) {
      ++failed;
      continue;
    }
    double secs = screen_runs[k].run_secs.front();
    if (best == 0 || secs < best_secs) {
      best = screened_index[k];
      best_secs = secs;
    }
  }
  if (best == 0) return Fail("no sample built and ran");

  RunnerConfig timed;
  timed.warmup = 1;
  timed.repeat = repeat;
  timed.timeout_sec = 600;
  std::vector<RunResult> runs = runner->Run(
      {RunInput{built[0].artifact_path, built[0].symbol, args},
       RunInput{built[1].artifact_path, built[1].symbol, args},
       RunInput{built[best].artifact_path, built[best].symbol, args}},
      timed);
  for (const RunResult& r : runs) {
    if (!r.ok()) return Fail("run failed: " + r.error_msg);
  }
  absl::StatusOr<ReferenceOutputs> reference = ComputeReference(*func, seed, 600);
  if (!reference.ok()) return Fail(std::string(reference.status().message()));
  std::vector<std::string> checks;
  for (size_t i : {size_t{1}, best}) {
    absl::StatusOr<CheckOutcome> check =
        CheckAgainstReference(inputs[i].func, *reference, *target, built[i], 600);
    if (!check.ok()) return Fail(std::string(check.status().message()));
    checks.push_back(check->passed ? "match" : "DIFFER");
  }

  const double flops = EstimateFlops(*func);
  std::printf("GMM %lldx%lldx%lld float32 on %s (%s), median of %d repeats\n",
              static_cast<long long>(size), static_cast<long long>(size),
              static_cast<long long>(size), target->ToString().c_str(), HostCpuName().c_str(),
              repeat);
  const char* names[] = {"unscheduled", "default schedule", "best random sample"};
  for (int i = 0; i < 3; ++i) {
    double secs = Median(runs[i].run_secs);
    std::printf("  %-20s %10.2f ms  %8.2f GFLOP/s  %s\n", names[i], secs * 1e3,
                flops / secs / 1e9, i == 0 ? "" : ("outputs " + checks[i - 1]).c_str());
  }
  std::printf("  samples: %d drawn from %zu design spaces, %d rejected, %zu built, %d failed "
              "to run; best is sample %zu (screened at %.2f ms)\n",
              samples, spaces->size(), rejected, screened.size(), failed, best - 2,
              best_secs * 1e3);
  if (!first_build_error.empty()) {
    std::printf("  first build failure: %s\n",
                first_build_error.substr(0, first_build_error.find('\n')).c_str());
  }
  return checks[0] == "match" && checks[1] == "match" ? 0 : 1;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  CLI::App app{"GMM on cpu: unscheduled vs default schedule vs best random sample",
               "bench_design_space"};
  int64_t size = 1024;
  int samples = 64;
  int64_t seed = 1;
  int repeat = 3;
  app.add_option("--size", size, "M = N = K")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--samples", samples, "Random samples of the design spaces")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", seed, "Seed of the design spaces, the samples and the check inputs")
      ->capture_default_str();
  app.add_option("--repeat", repeat, "Timed repeats of each of the three")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  return tessera::Bench(size, samples, seed, repeat);
}
