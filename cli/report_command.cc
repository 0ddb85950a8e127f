// `tessera report --db DB|--server ADDR -o report.html`: the tuning report (report/report.h) of
// every task in a records database (a SQLite file or a postgresql:// URL) or on a tuning server
// (its ExportRecords stream, read into memory first), as one self-contained HTML page; with
// --roofline the roofline of the targets given, with --anchors latencies measured elsewhere
// (libraries), with --model the model's per-kernel table.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/remote_records.h"
#include "ir/target.h"
#include "model/load.h"
#include "report/report.h"
#include "tuner/best_record.h"

namespace tessera {
namespace cli {
namespace {

struct ReportCommandOptions {
  std::string db_path;
  ClientOptions client;  // --server: the records of a tuning server instead of --db
  std::string output;
  std::string title = "Tessera tuning report";
  std::vector<std::string> rooflines;  // "cpu=1200,90"
  std::string anchors;                 // a JSON-lines file of anchors
  std::vector<std::string> models;     // .onnx files
  std::vector<std::string> input_shapes;
  std::string model_target = "cpu";  // named for a model none of whose kernels has a record
};

std::string NowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

// The anchors file: one JSON object a line, {"workload": "GMM:M=128,N=128,K=128" (a spec or an
// IR file, as for tune), "target": "cpu" (a target string prefix), "name": "OpenBLAS", "seconds":
// 1.2e-4}; blank lines are skipped. Errors name the file and line.
absl::StatusOr<std::vector<std::pair<PrimFunc, Anchor>>> ReadAnchors(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("--anchors ", path, ": cannot read it"));
  std::vector<std::pair<PrimFunc, Anchor>> out;
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(absl::StrCat("--anchors ", path, ":", n, ": ", why));
    };
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return bad("not a JSON object");
    for (const char* key : {"workload", "target", "name"}) {
      if (!j.contains(key) || !j[key].is_string())
        return bad(absl::StrCat("no string \"", key, "\""));
    }
    if (!j.contains("seconds") || !j["seconds"].is_number() || !(j["seconds"].get<double>() > 0)) {
      return bad("\"seconds\" must be a positive number");
    }
    FunctionList list;
    list.specs = {j["workload"].get<std::string>()};
    absl::StatusOr<std::vector<FunctionList::Entry>> funcs = list.Load();
    if (!funcs.ok()) return bad(std::string(funcs.status().message()));
    Anchor anchor;
    anchor.name = j["name"].get<std::string>();
    anchor.target_prefix = j["target"].get<std::string>();
    anchor.seconds = j["seconds"].get<double>();
    out.push_back({funcs->front().func, anchor});
  }
  return out;
}

int RunReport(const ReportCommandOptions& o) {
  if (o.client.server.empty() == o.db_path.empty()) {
    return ReportError(absl::InvalidArgumentError("give either --db DB or --server ADDR"));
  }
  absl::StatusOr<std::unique_ptr<Database>> db =
      o.db_path.empty() ? FetchServerRecords(o.client, "report") : OpenDatabase(o.db_path);
  if (!db.ok()) return ReportError(db.status());
  std::vector<Roofline> rooflines;
  for (const std::string& text : o.rooflines) {
    absl::StatusOr<Roofline> r = ParseRoofline(text);
    if (!r.ok()) return ReportError(r.status());
    rooflines.push_back(*r);
  }
  absl::StatusOr<std::vector<ReportTask>> tasks = SummarizeTasks(db->get());
  if (!tasks.ok()) return ReportError(tasks.status());
  // Each task's best as `tessera best` shows it (verified, else any), and what a runoff changed.
  absl::Status chosen = ApplyChosenRecords(
      [&](const ReportTask& t) -> absl::StatusOr<ChosenRecords> {
        ChosenRecords out;
        absl::StatusOr<Target> target = Target::Parse(t.target);
        if (!target.ok()) return out;  // a target this tessera cannot read: the fastest stands
        for (bool verified_only : {true, false}) {
          TESSERA_ASSIGN_OR_RETURN(
              BestAndRunoff best,
              BestRecordAndRunoff(db->get(), t.workload.func, *target, verified_only));
          if (!best.best) continue;
          out.chosen = best.best->record;
          out.passed_over = best.best->passed_over;
          if (best.changed_by_runoff() && best.before_runoff) {
            out.before_runoff = best.before_runoff->record;
          }
          break;
        }
        return out;
      },
      &*tasks);
  if (!chosen.ok()) return ReportError(chosen);
  ApplyRooflines(rooflines, &*tasks);
  if (!o.anchors.empty()) {
    absl::StatusOr<std::vector<std::pair<PrimFunc, Anchor>>> anchors = ReadAnchors(o.anchors);
    if (!anchors.ok()) return ReportError(anchors.status());
    absl::StatusOr<int> applied = ApplyAnchors(db->get(), *anchors, &*tasks);
    if (!applied.ok()) return ReportError(applied.status());
  }
  std::vector<ReportModel> models;
  if (!o.models.empty()) {
    absl::StatusOr<InputShapes> shapes = ParseInputShapes(o.input_shapes);
    if (!shapes.ok()) return ReportError(shapes.status());
    for (const std::string& path : o.models) {
      absl::StatusOr<LoadedModel> model = LoadModel(path, /*fuse=*/true, *shapes);
      if (!model.ok()) return ReportError(model.status());
      std::vector<ModelKernel> kernels;
      for (const ExtractedTask& t : model->tasks) kernels.push_back({t.name, t.func, t.weight});
      absl::StatusOr<std::vector<ReportModel>> summary =
          SummarizeModel(db->get(), path, kernels, *tasks, o.model_target);
      if (!summary.ok()) return ReportError(summary.status());
      models.insert(models.end(), summary->begin(), summary->end());
    }
  }
  ReportOptions options;
  options.title = o.title;
  options.source =
      o.db_path.empty() ? absl::StrCat("server ", o.client.server) : RedactDatabaseUrl(o.db_path);
  options.generated_at = NowUtc();
  const std::string html = RenderReportHtml(*tasks, options, models);
  // Written beside the target, then renamed: a reader never sees half a page.
  const std::string temporary = o.output + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << html;
    out.flush();
    if (!out) {
      return ReportError(
          absl::FailedPreconditionError(absl::StrCat("report: cannot write ", temporary)));
    }
  }
  if (std::rename(temporary.c_str(), o.output.c_str()) != 0) {
    std::remove(temporary.c_str());
    return ReportError(
        absl::FailedPreconditionError(absl::StrCat("report: cannot write ", o.output)));
  }
  int64_t trials = 0;
  for (const ReportTask& t : *tasks) trials += t.trials;
  std::printf("wrote %s: %zu task%s, %lld trials\n", o.output.c_str(), tasks->size(),
              tasks->size() == 1 ? "" : "s", static_cast<long long>(trials));
  return 0;
}

}  // namespace

Command RegisterReportCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "report",
      "Write the tuning report of a records database or a tuning server as one HTML page");
  auto o = std::make_shared<ReportCommandOptions>();
  app->add_option("--db", o->db_path, "Tuning database: a SQLite file or a postgresql:// URL");
  o->client.AddOptions(app, /*server_optional=*/true);
  app->add_option("-o,--output", o->output, "The HTML file to write")->required();
  app->add_option("--title", o->title, "The page's title")->capture_default_str();
  app->add_option("--roofline", o->rooflines,
                  "TARGET=GFLOPS,GBPS: the peak arithmetic rate and memory bandwidth of the "
                  "targets whose string starts with TARGET, to draw each task's roofline "
                  "(repeatable; e.g. cpu=1200,90)");
  app->add_option("--anchors", o->anchors,
                  "JSON-lines file of latencies measured outside Tessera, drawn beside the "
                  "curves: {\"workload\": SPEC, \"target\": PREFIX, \"name\": LIBRARY, "
                  "\"seconds\": S} a line");
  app->add_option("--model", o->models,
                  "A model (.onnx): add its per-kernel table, tuned or default, latency and "
                  "share (repeatable)");
  app->add_option("--input-shape", o->input_shapes,
                  "NAME=D0,D1,...: the shape of a model input (as for tune)");
  app->add_option("--model-target", o->model_target,
                  "The target named for a model none of whose kernels has a record")
      ->capture_default_str();
  return {app, [o]() { return RunReport(*o); }};
}

}  // namespace cli
}  // namespace tessera
