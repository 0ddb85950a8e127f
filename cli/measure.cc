#include "cli/measure.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "cli/common.h"
#include "ir/flops.h"
#include "worker/backends.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/devices.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace cli {
namespace {

}  // namespace

void MeasureOptions::AddOptions(CLI::App* app, const std::string& check_help,
                                const std::string& seed_help) {
  app->add_option("--target", target,
                  "Target, e.g. cpu, 'cpu -cores=2' or cuda (keys not given come from the host "
                  "or GPU 0)")
      ->capture_default_str();
  app->add_flag("--check", check, check_help);
  app->add_option("--seed", seed, seed_help)->capture_default_str();
  app->add_option("--number", number, "Runs per repeat")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app->add_option("--repeat", repeat, "Timed repeats")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app->add_option("--min-repeat-ms", min_repeat_ms,
                  "Grow --number until one repeat lasts this long")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app->add_flag("--cache-flush", cache_flush,
                "Flush the CPU caches (cuda: the GPU's L2) before each repeat");
  app->add_option("--timeout", timeout, "Seconds before a run is killed")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
}

nlohmann::json Measurement::ToJson() const {
  nlohmann::json out = {{"target", target},
                        {"latency_seconds", latency_seconds},
                        {"run_secs", run_secs},
                        {"flops", flops},
                        {"gflops_per_second", gflops_per_second},
                        {"prepacked_weights", prepacked_weights}};
  if (checked) {
    if (check_status.ok()) {
      out["check"] = {{"passed", check.passed},
                      {"reference", check.reference},
                      {"max_abs_error", check.max_abs_error},
                      {"max_rel_error", check.max_rel_error},
                      {"mismatches", check.mismatches}};
    } else {
      out["check"] = {{"passed", false}, {"error", std::string(check_status.message())}};
    }
  }
  return out;
}

std::string Measurement::ToText() const {
  std::string text = absl::StrFormat("latency: %s (median of %zu repeats%s), %.2f GFLOP/s\n",
                                     FormatSeconds(latency_seconds), run_secs.size(),
                                     prepacked_weights ? "; the kernel on pre-packed weights" : "",
                                     gflops_per_second);
  if (checked && check_status.ok()) {
    absl::StrAppendFormat(
        &text, "check: %s against the %s (max abs error %.3g, max rel error %.3g%s)\n",
        check.passed ? "PASS" : "FAIL", check.reference, check.max_abs_error, check.max_rel_error,
        check.passed ? "" : absl::StrCat(", ", check.mismatches, " mismatches"));
  }
  return text;
}

int Measurement::ExitCode() const {
  if (!checked) return 0;
  if (!check_status.ok()) return ReportError(check_status);
  return check.passed ? 0 : 2;
}

absl::StatusOr<Target> ResolveRunnableTarget(const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(Target target, ResolveTarget(text));
  if (!target.is_cuda()) return target;
  absl::StatusOr<Target> device = ResolveCudaTarget(text);
  if (!device.ok()) {
    return absl::Status(device.status().code(),
                        absl::StrCat("target cuda: ", device.status().message()));
  }
  return device;
}

absl::StatusOr<Measurement> BuildAndMeasure(const PrimFunc& func, const PrimFunc& reference,
                                            const Target& target, const MeasureOptions& options) {
  std::unique_ptr<Builder> builder = NewBuilder(target);
  TESSERA_ASSIGN_OR_RETURN(BuildResult built, BuildOne(builder.get(), func, target));

  RunnerConfig config;
  config.number = options.number;
  config.repeat = options.repeat;
  config.min_repeat_ms = options.min_repeat_ms;
  config.enable_cpu_cache_flush = options.cache_flush;
  config.timeout_sec = options.timeout;
  config.seed = static_cast<uint64_t>(options.seed);
  std::unique_ptr<Runner> runner = NewRunner(target);
  const RunInput timed = TimedRunInput(built.artifact_path, built.symbol, func, target);
  std::vector<RunResult> results = runner->Run({timed}, config);
  if (results.size() != 1 || !results[0].ok()) {
    return absl::InternalError(
        absl::StrCat("run failed: ", results.empty() ? "no result" : results[0].error_msg));
  }

  Measurement m;
  m.target = target.ToString();
  m.run_secs = results[0].run_secs;
  m.prepacked_weights = timed.symbol != built.symbol;
  std::vector<double> secs = m.run_secs;
  std::sort(secs.begin(), secs.end());
  m.latency_seconds = secs.size() % 2 ? secs[secs.size() / 2]
                                      : (secs[secs.size() / 2 - 1] + secs[secs.size() / 2]) / 2;
  // The workload's operations, not the scheduled function's: a tensorized body is calls.
  m.flops = EstimateFlops(reference);
  // Like MetaSchedule, count at least one operation so data movement gets a rate too.
  m.gflops_per_second =
      m.latency_seconds > 0 ? std::max(m.flops, 1.0) / m.latency_seconds / 1e9 : 0;
  if (options.check) {
    m.checked = true;
    absl::StatusOr<CheckOutcome> check = CheckAgainstReference(func, reference, target, built, options.seed, options.timeout);
    if (check.ok()) {
      m.check = *check;
    } else {
      m.check_status = check.status();
    }
  }
  return m;
}

}  // namespace cli
}  // namespace tessera
