// Does compiling while a candidate is timed disturb its timing? The measurement behind
// MeasureConfig::overlap_builds (worker/measurer.h, docs/tuning.md): for each workload, the
// default schedule is built once and timed by the CPU runner, in rounds that alternate three
// conditions: nothing else running, one compiler running the whole time, and as many
// compilers as build threads (the C builder's `parallelism`, by default the hardware
// threads). Prints the median latency per condition and its ratio to the quiet one, and the
// spread of the quiet rounds (max/min), which is the noise to compare with.
//
//   bench_build_overlap [--rounds 5] [--workloads
//   "DENSE_BIAS_RELU:M=128,N=3072,K=768;GEMV:M=4096,K=4096"]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_split.h"
#include "base/openmp_env.h"
#include "frontend/workloads.h"
#include "ir/analysis.h"
#include "rules/default/default_rule.h"
#include "worker/backends.h"
#include "worker/builder.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Keeps `compilers` compilations of `func` going until destroyed.
class BackgroundCompiles {
 public:
  BackgroundCompiles(Builder* builder, const BuildInput& input, int compilers) {
    for (int t = 0; t < compilers; ++t) {
      threads_.emplace_back([this, builder, input] {
        while (!stop_) builder->Build({input});
      });
    }
    // Let the compilers get past their start-up before anything is timed.
    if (compilers > 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ~BackgroundCompiles() {
    stop_ = true;
    for (std::thread& t : threads_) t.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

int Bench(const std::vector<std::string>& specs, int rounds) {
  const Target target = *ResolveTarget("cpu");
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  std::unique_ptr<Builder> builder = NewBuilder(target);
  std::unique_ptr<Runner> runner = NewRunner(target);
  RunnerConfig config;  // as the measurer times a candidate: 3 repeats of >= 20 ms
  config.repeat = 3;
  config.min_repeat_ms = 20;
  std::printf("%d hardware threads; %d rounds; conditions: quiet, 1 compiler, %d compilers\n",
              cores, rounds, cores);
  std::printf("%-36s %11s %11s %11s %8s %8s %12s\n", "workload", "quiet", "1 cc", "n cc", "1cc/q",
              "ncc/q", "quiet max/min");
  for (const std::string& spec : specs) {
    std::vector<std::string> parts = absl::StrSplit(spec, absl::MaxSplits(':', 1));
    absl::StatusOr<std::map<std::string, int64_t>> shape =
        ParseShapeOverrides(parts.size() > 1 ? parts[1] : "");
    if (!shape.ok()) {
      std::fprintf(stderr, "%s: %s\n", spec.c_str(), shape.status().ToString().c_str());
      return 1;
    }
    absl::StatusOr<PrimFunc> func = MakeWorkload(parts[0], *shape);
    if (!func.ok()) {
      std::fprintf(stderr, "%s: %s\n", spec.c_str(), func.status().ToString().c_str());
      return 1;
    }
    PrimFunc scheduled = *func;
    for (const DefaultRulePtr& rule : DefaultRulesFor(target)) {
      absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(*func, target);
      if (sch.ok() && sch->has_value()) {
        scheduled = (*sch)->func();
        break;
      }
    }
    const BuildInput input{scheduled, target};
    absl::StatusOr<BuildResult> built = BuildOne(builder.get(), scheduled, target);
    if (!built.ok()) {
      std::fprintf(stderr, "%s: %s\n", spec.c_str(), built.status().ToString().c_str());
      return 1;
    }
    const RunInput run{built->artifact_path, built->symbol, ArgInfosOf(scheduled)};
    std::vector<double> secs[3];
    for (int r = 0; r < rounds; ++r) {
      for (int condition = 0; condition < 3; ++condition) {
        const int compilers = condition == 0 ? 0 : condition == 1 ? 1 : cores;
        BackgroundCompiles compiles(builder.get(), input, compilers);
        std::vector<RunResult> ran = runner->Run({run}, config);
        if (ran.size() != 1 || !ran[0].ok()) {
          std::fprintf(stderr, "%s: run failed: %s\n", spec.c_str(),
                       ran.empty() ? "no result" : ran[0].error_msg.c_str());
          return 1;
        }
        secs[condition].push_back(Median(ran[0].run_secs));
      }
    }
    const double quiet = Median(secs[0]);
    const auto [lo, hi] = std::minmax_element(secs[0].begin(), secs[0].end());
    std::printf("%-36s %8.3f ms %8.3f ms %8.3f ms %7.2fx %7.2fx %11.2fx\n", spec.c_str(),
                quiet * 1e3, Median(secs[1]) * 1e3, Median(secs[2]) * 1e3, Median(secs[1]) / quiet,
                Median(secs[2]) / quiet, *hi / *lo);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) {
  if (absl::Status s = tessera::ReexecWithOpenMpEnvDefaults(argv, tessera::KernelUse::kMeasured);
      !s.ok()) {
    std::fprintf(stderr, "bench_build_overlap: %s\n", s.ToString().c_str());
    return 1;
  }
  CLI::App app{"Latency of a kernel with and without compilations running beside it"};
  int rounds = 5;
  std::string workloads =
      "DENSE_BIAS_RELU:M=128,N=3072,K=768;GEMV:M=4096,K=4096;C2D:N=1,H=14,W=14,CI=256,CO=256,K=3,"
      "stride=1,"
      "padding=1;SFM:M=1024,N=1024";
  app.add_option("--rounds", rounds, "Rounds of the three conditions")->capture_default_str();
  app.add_option("--workloads", workloads, "';'-separated NAME:K=V,... workload specs")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return tessera::Bench(absl::StrSplit(workloads, ';', absl::SkipEmpty()), rounds);
}
