// `tessera default`: schedule a function with the default (DLight-style) rules of the target
// (rules/default/default_rule.h), say which rule took it and print the schedule's trace; with
// --run build and time the scheduled function like `tessera run`, with --check compare its
// outputs against the UNSCHEDULED function's.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/measure.h"
#include "rules/default/default_rule.h"

namespace tessera {
namespace cli {
namespace {

struct DefaultOptions {
  FunctionSource source;
  MeasureOptions measure;
  bool run = false;
  bool json = false;
};

// Without --run a cuda target needs no GPU: the string is parsed, not resolved on a device.
absl::StatusOr<Target> TargetFor(const DefaultOptions& options) {
  absl::StatusOr<Target> resolved = ResolveRunnableTarget(options.measure.target);
  if (resolved.ok() || options.run) return resolved;
  return Target::Parse(options.measure.target);
}

int RunDefault(DefaultOptions options) {
  options.run = options.run || options.measure.check;
  std::string label;
  absl::StatusOr<PrimFunc> func = options.source.Load(&label);
  if (!func.ok()) return ReportError(func.status());
  absl::StatusOr<Target> target = TargetFor(options);
  if (!target.ok()) return ReportError(target.status());

  const std::vector<DefaultRulePtr> rules = DefaultRulesFor(*target);
  std::vector<DefaultScheduleEntry> report;
  absl::StatusOr<IRModule> mod =
      ApplyDefaultSchedule(IRModule::FromFunction(*func), *target, rules, &report);
  if (!mod.ok()) return ReportError(mod.status());
  const DefaultScheduleEntry& entry = report.front();
  if (entry.rule.empty()) {
    return ReportError(absl::NotFoundError(absl::StrCat(
        "default: no default rule for ", target->kind_name(), " applies to ", entry.function,
        entry.already_scheduled ? " (already scheduled)" : "")));
  }
  // The winning rule again, for its trace (rules are deterministic).
  std::optional<Schedule> sch;
  for (const DefaultRulePtr& rule : rules) {
    if (rule->name() != entry.rule) continue;
    absl::StatusOr<std::optional<Schedule>> applied = rule->Apply(*func, *target);
    if (!applied.ok()) return ReportError(applied.status());
    sch = std::move(*applied);
  }
  if (!sch.has_value()) {
    return ReportError(absl::InternalError(
        absl::StrCat("default: rule ", entry.rule, " did not apply a second time")));
  }
  const PrimFunc scheduled = *mod->Lookup(entry.function);

  absl::StatusOr<Measurement> m;
  if (options.run) {
    m = BuildAndMeasure(scheduled, /*reference=*/*func, *target, options.measure);
    if (!m.ok()) return ReportError(m.status());
  }
  if (options.json) {
    nlohmann::json out = options.run ? m->ToJson() : nlohmann::json::object();
    out["function"] = label;
    out["target"] = target->ToString();
    out["rule"] = entry.rule;
    out["trace"] = nlohmann::json::parse(sch->trace().ToJson());
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    if (options.run) {
      std::printf("default: rule %s scheduled %s\n", entry.rule.c_str(), entry.function.c_str());
      std::printf("%s on %s\n%s", label.c_str(), m->target.c_str(), m->ToText().c_str());
    } else {
      // The trace alone on stdout: `tessera default W > t.json` gives what --trace reads.
      std::fprintf(stderr, "default: rule %s scheduled %s\n", entry.rule.c_str(),
                   entry.function.c_str());
      std::printf("%s\n", sch->trace().ToJson().c_str());
    }
  }
  return options.run ? m->ExitCode() : 0;
}

}  // namespace

Command RegisterDefaultCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "default", "Schedule a function with the target's default rules and print the trace");
  auto options = std::make_shared<DefaultOptions>();
  options->source.AddOptions(app);
  app->add_flag("--run", options->run,
                "Build and time the scheduled function like `tessera run` instead of printing "
                "the trace");
  options->measure.AddOptions(
      app,
      "Compare the scheduled function's outputs with the unscheduled function's (implies --run)",
      "Seed of the random inputs");
  app->add_flag("--json", options->json,
                "Print machine-readable JSON: function, target, rule, trace (and the measurement)");
  return {app, [options]() { return RunDefault(*options); }};
}

}  // namespace cli
}  // namespace tessera
