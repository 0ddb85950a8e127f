// `tessera best` and `tessera topk`: the fastest records of one workload on one target in a
// tuning database (the target is resolved like `tune` resolves it, so `--target cpu` finds
// what `tune --target cpu` stored on this machine).
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/measure.h"
#include "cli/remote_records.h"
#include "database/record_json.h"
#include "ir/flops.h"
#include "schedule/trace.h"
#include "tuner/best_record.h"

namespace tessera {
namespace cli {
namespace {

struct RecordsOptions {
  FunctionSource source;
  std::string target = "cpu";
  std::string db_path;
  ClientOptions client;  // --server: ask a tuning server instead of --db
  int k = 10;
  bool all = false;  // unverified records too
  bool json = false;
  bool trace = false;
};

nlohmann::json RecordJson(const TuningRecord& r, double flops, bool best) {
  nlohmann::json j = {{"id", r.id},
                      {"mean_seconds", r.mean_secs()},
                      {"gflops_per_second", flops / r.mean_secs() / 1e9},
                      {"run_secs", r.run_secs},
                      {"verified", r.verified},
                      {"timestamp", r.timestamp},
                      {"provenance",
                       {{"tessera_version", r.provenance.tessera_version},
                        {"compiler", r.provenance.compiler},
                        {"device", r.provenance.device},
                        {"driver", r.provenance.driver}}}};
  j["stage_secs"] = StageSecondsToJson(r.stage_secs);
  j["trace"] = nlohmann::json::parse(r.trace_json, nullptr, false);
  j["best"] = best;
  if (r.is_retiming()) j["retimes_record_id"] = r.retimes;
  return j;
}

int RunRecords(const RecordsOptions& o, bool topk) {
  if (o.client.server.empty() == o.db_path.empty()) {
    return ReportError(absl::InvalidArgumentError("give either --db FILE or --server ADDR"));
  }
  if (!o.client.server.empty()) {
    RemoteRecordsQuery query;
    query.source = o.source;
    query.target = o.target;
    query.k = o.k;
    query.topk = topk;
    query.all = o.all;
    query.trace = o.trace;
    query.json = o.json;
    return RunRecordsOnServer(o.client, query);
  }
  std::string label;
  absl::StatusOr<PrimFunc> func = o.source.Load(&label);
  if (!func.ok()) return ReportError(func.status());
  absl::StatusOr<Target> target = ResolveRunnableTarget(o.target);
  if (!target.ok()) return ReportError(target.status());
  if (o.k <= 0) return ReportError(absl::InvalidArgumentError("-k must be positive"));
  absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(o.db_path);
  if (!db.ok()) return ReportError(db.status());
  absl::StatusOr<std::optional<Workload>> workload = (*db)->FindWorkload(*func);
  if (!workload.ok()) return ReportError(workload.status());
  if (!*workload) {
    return ReportError(absl::NotFoundError(
        absl::StrCat(label, " is not in the database ", o.db_path, " (tune it first)")));
  }
  absl::StatusOr<std::vector<TuningRecord>> records = std::vector<TuningRecord>();
  std::optional<TuningRecord> passed_over;
  int64_t best_id = -1;
  if (topk) {
    // best's record first, then each other program by its latest record (tuner/best_record.h).
    absl::StatusOr<TopRecords> top =
        TopRecordsWithBest(db->get(), *func, *target, /*verified_only=*/!o.all, o.k);
    if (!top.ok()) return ReportError(top.status());
    records = top->records;
    if (top->best) best_id = top->best->record.id;
  } else {
    absl::StatusOr<std::optional<ChosenRecord>> chosen =
        BestRecordOrDefault(db->get(), *func, *target, /*verified_only=*/!o.all);
    if (!chosen.ok()) return ReportError(chosen.status());
    if (*chosen) {
      records->push_back((*chosen)->record);
      passed_over = (*chosen)->passed_over;
    }
  }
  if (!records.ok()) return ReportError(records.status());
  if (records->empty()) {
    return ReportError(
        absl::NotFoundError(absl::StrCat("no ", o.all ? "" : "verified ", "record of ", label,
                                         " for target ", target->ToString(), " in ", o.db_path)));
  }
  double flops = std::max(1.0, EstimateFlops(*func));
  if (o.json) {
    nlohmann::json out = {{"function", label}, {"target", target->ToString()}};
    for (const TuningRecord& r : *records) {
      out["records"].push_back(RecordJson(r, flops, !topk || r.id == best_id));
    }
    if (passed_over) out["passed_over"] = RecordJson(*passed_over, flops, false);
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s on %s\n", label.c_str(), target->ToString().c_str());
  for (size_t i = 0; i < records->size(); ++i) {
    const TuningRecord& r = (*records)[i];
    const std::string head = RecordHead(i + 1, r.id, topk && r.id == best_id, r.retimes);
    std::printf("%s: %s, %.2f GFLOP/s%s (%s, %s)\n", head.c_str(),
                FormatSeconds(r.mean_secs()).c_str(), flops / r.mean_secs() / 1e9,
                r.verified ? ", verified" : ", NOT verified", r.provenance.device.c_str(),
                r.provenance.compiler.c_str());
    if (o.trace) std::printf("%s\n", r.trace_json.c_str());
  }
  if (passed_over) {
    std::printf("%s\n", PassedOverLine(passed_over->id, passed_over->mean_secs()).c_str());
  }
  return 0;
}

Command Register(CLI::App* root, const std::string& name, const std::string& help, bool topk) {
  CLI::App* app = root->add_subcommand(name, help);
  auto o = std::make_shared<RecordsOptions>();
  o->source.AddOptions(app);
  app->add_option("--target", o->target, "Target the records were measured on")
      ->capture_default_str();
  app->add_option("--db", o->db_path, "Tuning database: a SQLite file or a postgresql:// URL");
  o->client.AddOptions(app, /*server_optional=*/true);
  if (topk) {
    app->add_option("-k", o->k,
                    "Number of records: best's first, then each other program by its latest record")
        ->capture_default_str();
  }
  app->add_flag("--all", o->all, "Include records that were not verified");
  app->add_flag("--trace", o->trace, "Print each record's trace (JSON)");
  app->add_flag("--json", o->json, "Print machine-readable JSON (traces included)");
  return {app, [o, topk]() { return RunRecords(*o, topk); }};
}

}  // namespace

Command RegisterBestCommand(CLI::App* root) {
  return Register(root, "best", "Show the best verified record of a workload", false);
}

Command RegisterTopKCommand(CLI::App* root) {
  return Register(root, "topk", "Show the k best verified records of a workload", true);
}

}  // namespace cli
}  // namespace tessera
