// `tessera apply`: schedules workloads with their best verified records (ApplyBest), then
// schedules the misses with the default rules (ApplyDefaultSchedule), says which function got
// what, and prints the scheduled functions or, with --run, builds and times them (--check:
// against the unscheduled functions).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/measure.h"
#include "cli/remote_records.h"
#include "ir/printer.h"
#include "rules/default/default_rule.h"
#include "tuner/apply_best.h"

namespace tessera {
namespace cli {
namespace {

struct ApplyOptions {
  FunctionList functions;
  std::string db_path;
  ClientOptions client;  // --server: ApplyBest on a tuning server instead of --db
  MeasureOptions measure;
  bool run = false;
  bool no_default = false;
};

int RunApply(const ApplyOptions& o) {
  if (o.client.server.empty() == o.db_path.empty()) {
    return ReportError(absl::InvalidArgumentError("give either --db FILE or --server ADDR"));
  }
  if (!o.client.server.empty()) {
    return RunApplyOnServer(o.client, o.functions, o.measure, o.run, o.no_default);
  }
  absl::StatusOr<std::vector<FunctionList::Entry>> entries = o.functions.Load();
  if (!entries.ok()) return ReportError(entries.status());
  absl::StatusOr<Target> target = ResolveRunnableTarget(o.measure.target);
  if (!target.ok()) return ReportError(target.status());
  absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(o.db_path);
  if (!db.ok()) return ReportError(db.status());

  IRModule mod;
  for (const FunctionList::Entry& e : *entries) mod.Update(e.func);
  std::vector<ApplyBestEntry> hits;
  absl::StatusOr<IRModule> tuned = ApplyBest(mod, *target, db->get(), &hits);
  if (!tuned.ok()) return ReportError(tuned.status());
  std::vector<DefaultScheduleEntry> defaults;
  if (!o.no_default) {
    tuned = ApplyDefaultSchedule(*tuned, *target, DefaultRulesFor(*target), &defaults);
    if (!tuned.ok()) return ReportError(tuned.status());
  }
  int exit_code = 0;
  for (const FunctionList::Entry& e : *entries) {
    std::string how = "left unscheduled";
    for (const ApplyBestEntry& h : hits) {
      if (h.function != e.name) continue;
      if (h.hit) {
        how = absl::StrCat("tuned record ", h.record_id, " (", FormatSeconds(h.record_secs),
                           " when measured)");
      } else {
        how = absl::StrCat("miss: ", h.note);
      }
    }
    for (const DefaultScheduleEntry& d : defaults) {
      if (d.function == e.name && !d.rule.empty() && !d.already_scheduled) {
        how += absl::StrCat("; default rule ", d.rule);
      }
    }
    std::printf("%s: %s\n", e.label.c_str(), how.c_str());
    absl::StatusOr<PrimFunc> scheduled = tuned->Lookup(e.name);
    if (!scheduled.ok()) return ReportError(scheduled.status());
    if (!o.run) {
      std::printf("%s\n", PrintFunc(*scheduled).c_str());
      continue;
    }
    absl::StatusOr<Measurement> m = BuildAndMeasure(*scheduled, e.func, *target, o.measure);
    if (!m.ok()) return ReportError(m.status());
    std::printf("%s", m->ToText().c_str());
    exit_code = std::max(exit_code, m->ExitCode());
  }
  return exit_code;
}

}  // namespace

Command RegisterApplyCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "apply", "Schedule workloads with their best tuned records (default rules for the rest)");
  auto o = std::make_shared<ApplyOptions>();
  o->functions.AddOptions(app);
  app->add_option("--db", o->db_path, "Tuning database: a SQLite file or a postgresql:// URL");
  o->client.AddOptions(app, /*server_optional=*/true);
  o->measure.AddOptions(app, "With --run: compare the outputs with the unscheduled function",
                        "Seed of the random inputs");
  app->add_flag("--run", o->run, "Build and time the scheduled functions instead of printing them");
  app->add_flag("--no-default", o->no_default,
                "Leave functions without a record unscheduled instead of applying default rules");
  return {app, [o]() { return RunApply(*o); }};
}

}  // namespace cli
}  // namespace tessera
