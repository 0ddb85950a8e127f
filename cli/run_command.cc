// `tessera run`: build a function for a target (cpu or cuda), time it, and optionally check its
// outputs against the reference interpreter (or, above an interpreter budget, against the same
// function compiled naively: -O0, serial). With --trace the function is scheduled by the trace
// first and checked against the unscheduled one. The work is cli/measure.h's BuildAndMeasure.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/measure.h"

namespace tessera {
namespace cli {
namespace {

struct RunOptions {
  FunctionSource source;
  std::string trace_path;
  MeasureOptions measure;
  bool json = false;
};

int Run(const RunOptions& options) {
  std::string label;
  absl::StatusOr<PrimFunc> func = options.source.Load(&label);
  if (!func.ok()) return ReportError(func.status());
  absl::StatusOr<Target> target = ResolveRunnableTarget(options.measure.target);
  if (!target.ok()) return ReportError(target.status());
  PrimFunc measured = *func;
  if (!options.trace_path.empty()) {
    absl::StatusOr<Trace> trace = LoadTrace(options.trace_path);
    if (!trace.ok()) return ReportError(trace.status());
    absl::StatusOr<Schedule> sch = Replay(*func, *trace, options.trace_path, options.measure.seed);
    if (!sch.ok()) return ReportError(sch.status());
    measured = sch->func();
  }
  absl::StatusOr<Measurement> m = BuildAndMeasure(measured, *func, *target, options.measure);
  if (!m.ok()) return ReportError(m.status());

  if (options.json) {
    nlohmann::json out = m->ToJson();
    out["function"] = label;
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("%s on %s\n%s", label.c_str(), m->target.c_str(), m->ToText().c_str());
  }
  return m->ExitCode();
}

}  // namespace

Command RegisterRunCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand("run", "Build, time and optionally check a function");
  auto options = std::make_shared<RunOptions>();
  options->source.AddOptions(app);
  options->measure.AddOptions(app,
                              "Compare the outputs with the reference interpreter on random inputs",
                              "Seed of the random inputs");
  app->add_option("--trace", options->trace_path,
                  "Schedule the function with this trace (JSON) first; --check then compares "
                  "with the unscheduled function");
  app->add_flag("--json", options->json, "Print machine-readable JSON");
  return {app, [options]() { return Run(*options); }};
}

}  // namespace cli
}  // namespace tessera
