// `tessera schedule`: replay a trace (JSON, docs/formats.md) on a workload and print the
// scheduled IR; with --run build and time it like `tessera run`, with --check compare its
// outputs against the UNSCHEDULED function's (interpreter or naive compilation).
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/commands.h"
#include "cli/measure.h"
#include "ir/printer.h"
#include "ir/structural_hash.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"

namespace tessera {
namespace cli {
namespace {

struct ScheduleOptions {
  FunctionSource source;
  std::string trace_path;
  MeasureOptions measure;
  bool run = false;
  bool json = false;
};

int RunSchedule(ScheduleOptions options) {
  // --check needs outputs to compare, so it implies --run.
  options.run = options.run || options.measure.check;
  std::string label;
  absl::StatusOr<PrimFunc> func = options.source.Load(&label);
  if (!func.ok()) return ReportError(func.status());
  absl::StatusOr<Target> target = ResolveRunnableTarget(options.measure.target);
  if (!target.ok()) return ReportError(target.status());
  absl::StatusOr<Trace> trace = LoadTrace(options.trace_path);
  if (!trace.ok()) return ReportError(trace.status());
  absl::StatusOr<Schedule> sch = Replay(*func, *trace, options.trace_path, options.measure.seed);
  if (!sch.ok()) return ReportError(sch.status());
  const PrimFunc& scheduled = sch->func();

  absl::StatusOr<Measurement> m;
  if (options.run) {
    m = BuildAndMeasure(scheduled, /*reference=*/*func, *target, options.measure);
    if (!m.ok()) return ReportError(m.status());
  }

  if (options.json) {
    nlohmann::json out = options.run ? m->ToJson() : nlohmann::json::object();
    out["function"] = label;
    out["trace_file"] = options.trace_path;
    // The replayed trace: sampling instructions recorded without a decision now have one.
    out["trace"] = nlohmann::json::parse(sch->trace().ToJson());
    out["structural_hash"] = StructuralHashHex(scheduled);
    out["ir"] = PrintFunc(scheduled);
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("# %s  scheduled by %s (%zu instructions)  structural hash %s\n%s", label.c_str(),
                options.trace_path.c_str(), sch->trace().size(),
                StructuralHashHex(scheduled).c_str(), PrintFunc(scheduled).c_str());
    if (options.run) std::printf("# on %s\n%s", m->target.c_str(), m->ToText().c_str());
  }
  return options.run ? m->ExitCode() : 0;
}

}  // namespace

Command RegisterScheduleCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "schedule", "Replay a schedule trace (JSON) on a function and print the scheduled IR");
  auto options = std::make_shared<ScheduleOptions>();
  options->source.AddOptions(app);
  app->add_option("--trace", options->trace_path,
                  "Trace JSON file: [[instructions...], [decisions...]] (see docs/formats.md)")
      ->required();
  app->add_flag("--run", options->run, "Build and time the scheduled function like `tessera run`");
  options->measure.AddOptions(
      app,
      "Compare the scheduled function's outputs with the unscheduled function's (implies --run)",
      "Seed of sampling instructions without a decision and of the random inputs");
  app->add_flag("--json", options->json, "Print machine-readable JSON (with the IR as text)");
  return {app, [options]() { return RunSchedule(*options); }};
}

}  // namespace cli
}  // namespace tessera
