// `tessera run`: build a function for a target, time it, and optionally check its outputs
// against the reference interpreter (or, above an interpreter budget, against the same
// function compiled naively: -O0, serial).
#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "cli/commands.h"
#include "ir/analysis.h"
#include "ir/flops.h"
#include "ir/interpreter.h"
#include "ir/ndarray.h"
#include "worker/builder.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace cli {
namespace {

// Above this many FLOPs the interpreter (tens of millions of operations per second) would take
// too long as the oracle, so the check uses a naive compilation instead.
constexpr double kInterpreterFlopBudget = 1.5e9;

struct RunOptions {
  FunctionSource source;
  std::string target = "cpu";
  bool check = false;
  bool json = false;
  int64_t seed = 0;
  int number = 1;
  int repeat = 5;
  int min_repeat_ms = 50;
  bool cache_flush = false;
  double timeout = 60;
};

struct CheckOutcome {
  std::string reference;
  double max_abs_error = 0;
  double max_rel_error = 0;
  int64_t mismatches = 0;
  bool passed = false;
};

std::vector<NDArray> RandomArgs(const PrimFunc& func, int64_t seed) {
  Random rng(seed);
  std::vector<NDArray> args;
  for (const ArgInfo& info : ArgInfosOf(func)) {
    args.push_back(NDArray::Empty(info.dtype, info.shape));
    args.back().FillRandom(&rng);
  }
  return args;
}

absl::StatusOr<BuildResult> BuildOne(Builder* builder, const PrimFunc& func, const Target& target) {
  std::vector<BuildResult> results = builder->Build({BuildInput{func, target}});
  if (results.size() != 1) return absl::InternalError("builder returned no result");
  if (!results[0].ok()) {
    return absl::InternalError(absl::StrCat("build failed: ", results[0].error_msg));
  }
  return results[0];
}

absl::StatusOr<CheckOutcome> Check(const PrimFunc& func, const Target& target,
                                   const BuildResult& built, const RunOptions& options) {
  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  once.number = 1;
  once.timeout_sec = options.timeout;
  std::vector<NDArray> actual = RandomArgs(func, options.seed);
  std::vector<NDArray> expected;
  for (const NDArray& a : actual) expected.push_back(a.Clone());
  absl::StatusOr<RunResult> ran = RunCpuKernel(built.artifact_path, built.symbol, &actual, once);
  if (!ran.ok()) return ran.status();
  if (!ran->ok()) return absl::InternalError(absl::StrCat("run failed: ", ran->error_msg));

  CheckOutcome outcome;
  if (EstimateFlops(func) <= kInterpreterFlopBudget) {
    outcome.reference = "interpreter";
    std::vector<NDArray*> pointers;
    for (NDArray& e : expected) pointers.push_back(&e);
    TESSERA_RETURN_IF_ERROR(Interpret(func, pointers));
  } else {
    outcome.reference = "naive compiled C (-O0, serial)";
    CBuilderOptions naive;
    naive.optimization_flags = {"-O0"};
    naive.openmp = false;
    std::unique_ptr<Builder> builder = NewCBuilder(naive);
    TESSERA_ASSIGN_OR_RETURN(BuildResult ref_build, BuildOne(builder.get(), func, target));
    absl::StatusOr<RunResult> ref_ran =
        RunCpuKernel(ref_build.artifact_path, ref_build.symbol, &expected, once);
    if (!ref_ran.ok()) return ref_ran.status();
    if (!ref_ran->ok()) return absl::InternalError(absl::StrCat("reference run failed: ", ref_ran->error_msg));
  }
  outcome.passed = true;
  for (int index : WrittenParamIndices(func)) {
    TESSERA_ASSIGN_OR_RETURN(Comparison cmp, Compare(actual[index], expected[index]));
    outcome.max_abs_error = std::max(outcome.max_abs_error, cmp.max_abs_error);
    outcome.max_rel_error = std::max(outcome.max_rel_error, cmp.max_rel_error);
    outcome.mismatches += cmp.mismatches;
    if (!cmp.ok()) outcome.passed = false;
  }
  return outcome;
}

int Run(const RunOptions& options) {
  std::string label;
  absl::StatusOr<PrimFunc> func = options.source.Load(&label);
  if (!func.ok()) return ReportError(func.status());
  absl::StatusOr<Target> target = ResolveTarget(options.target);
  if (!target.ok()) return ReportError(target.status());
  if (target->is_cuda()) {
    return ReportError(absl::UnimplementedError(
        "target cuda: the CUDA backend is not part of this build yet; use --target cpu"));
  }
  std::unique_ptr<Builder> builder = NewCBuilder(CBuilderOptions());
  absl::StatusOr<BuildResult> built = BuildOne(builder.get(), *func, *target);
  if (!built.ok()) return ReportError(built.status());

  RunnerConfig config;
  config.number = options.number;
  config.repeat = options.repeat;
  config.min_repeat_ms = options.min_repeat_ms;
  config.enable_cpu_cache_flush = options.cache_flush;
  config.timeout_sec = options.timeout;
  config.seed = static_cast<uint64_t>(options.seed);
  std::unique_ptr<Runner> runner = NewCpuRunner();
  std::vector<RunResult> results =
      runner->Run({RunInput{built->artifact_path, built->symbol, ArgInfosOf(*func)}}, config);
  if (results.size() != 1 || !results[0].ok()) {
    return ReportError(absl::InternalError(
        absl::StrCat("run failed: ", results.empty() ? "no result" : results[0].error_msg)));
  }
  std::vector<double> secs = results[0].run_secs;
  std::sort(secs.begin(), secs.end());
  double median = secs.size() % 2 ? secs[secs.size() / 2]
                                  : (secs[secs.size() / 2 - 1] + secs[secs.size() / 2]) / 2;
  double flops = EstimateFlops(*func);
  // Like MetaSchedule, count at least one operation so data movement gets a rate too.
  double gflops = median > 0 ? std::max(flops, 1.0) / median / 1e9 : 0;

  absl::StatusOr<CheckOutcome> check;
  if (options.check) check = Check(*func, *target, *built, options);

  if (options.json) {
    nlohmann::json out = {{"function", label},
                          {"target", target->ToString()},
                          {"latency_seconds", median},
                          {"run_secs", results[0].run_secs},
                          {"flops", flops},
                          {"gflops_per_second", gflops}};
    if (options.check) {
      if (check.ok()) {
        out["check"] = {{"passed", check->passed},
                        {"reference", check->reference},
                        {"max_abs_error", check->max_abs_error},
                        {"max_rel_error", check->max_rel_error},
                        {"mismatches", check->mismatches}};
      } else {
        out["check"] = {{"passed", false}, {"error", std::string(check.status().message())}};
      }
    }
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%s on %s\n", label.c_str(), target->ToString().c_str());
    std::printf("latency: %s (median of %zu repeats), %.2f GFLOP/s\n",
                FormatSeconds(median).c_str(), secs.size(), gflops);
    if (options.check && check.ok()) {
      std::printf("check: %s against the %s (max abs error %.3g, max rel error %.3g%s)\n",
                  check->passed ? "PASS" : "FAIL", check->reference.c_str(),
                  check->max_abs_error, check->max_rel_error,
                  check->passed ? "" : absl::StrCat(", ", check->mismatches, " mismatches").c_str());
    }
  }
  if (options.check && !check.ok()) return ReportError(check.status());
  if (options.check && !check->passed) return 2;
  return 0;
}

}  // namespace

Command RegisterRunCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand("run", "Build, time and optionally check a function");
  auto options = std::make_shared<RunOptions>();
  options->source.AddOptions(app);
  app->add_option("--target", options->target, "Target, e.g. cpu or 'cpu -cores=2'")
      ->capture_default_str();
  app->add_flag("--check", options->check,
                "Compare the outputs with the reference interpreter on random inputs");
  app->add_flag("--json", options->json, "Print machine-readable JSON");
  app->add_option("--seed", options->seed, "Seed of the random inputs")->capture_default_str();
  app->add_option("--number", options->number, "Runs per repeat")->capture_default_str()
      ->check(CLI::PositiveNumber);
  app->add_option("--repeat", options->repeat, "Timed repeats")->capture_default_str()
      ->check(CLI::PositiveNumber);
  app->add_option("--min-repeat-ms", options->min_repeat_ms,
                  "Grow --number until one repeat lasts this long")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app->add_flag("--cache-flush", options->cache_flush, "Flush the CPU caches before each repeat");
  app->add_option("--timeout", options->timeout, "Seconds before a run is killed")
      ->capture_default_str()->check(CLI::PositiveNumber);
  return {app, [options]() { return Run(*options); }};
}

}  // namespace cli
}  // namespace tessera
