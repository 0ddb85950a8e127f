// `tessera compile MODEL -o DIR`: loads the model and compiles it with model/compile.h (tuned
// records, default rules, kernels, DIR/plan.json; docs/models.md). Prints which task took which
// path. The records come from --db, or with --server from a tuning server (its records of the
// model's tasks, read into memory), or none (default schedules).
#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/measure.h"
#include "cli/remote_records.h"
#include "ir/structural_hash.h"
#include "model/compile.h"
#include "model/load.h"
#include "worker/host.h"

namespace tessera {
namespace cli {
namespace {

struct CompileOptions {
  std::string model;
  std::string db_path;
  ClientOptions client;  // --server: the records of a tuning server instead of --db
  std::string target = "cpu";
  std::string out_dir;
  bool no_default = false;
  bool no_runoff = false;
  bool no_winograd = false;
  std::vector<std::string> input_shapes;
};

// DescribeSchedule, with a tuned record's time: "tuned record 3 (11.2 us when measured)".
std::string PathOf(const KernelSchedule& s) {
  if (s.kind != "tuned") return DescribeSchedule(s);
  return absl::StrCat(DescribeSchedule(s), " (", FormatSeconds(s.record_seconds),
                      " when measured)");
}

int RunCompile(const CompileOptions& o) {
  absl::StatusOr<InputShapes> shapes = ParseInputShapes(o.input_shapes);
  if (!shapes.ok()) return ReportError(shapes.status());
  absl::StatusOr<LoadedModel> m = LoadModel(o.model, /*fuse=*/true, *shapes, !o.no_winograd);
  if (!m.ok()) return ReportError(m.status());
  // A cuda target that names its -arch compiles here without a GPU (for the machine that has
  // one); without it, GPU 0 gives the keys.
  const bool names_arch = absl::StrContains(o.target, "-arch=");
  absl::StatusOr<Target> target =
      names_arch ? ResolveTarget(o.target) : ResolveRunnableTarget(o.target);
  if (!target.ok()) return ReportError(target.status());
  ModelCompileOptions options;
  options.target = *target;
  options.apply_defaults = !o.no_default;
  options.runoff = !o.no_runoff;
  options.input_shapes = *shapes;
  std::unique_ptr<Database> db;
  if (!o.db_path.empty() && !o.client.server.empty()) {
    return ReportError(absl::InvalidArgumentError("compile: give --db or --server, not both"));
  }
  if (!o.client.server.empty()) {
    // Only the records of the model's tasks travel.
    std::vector<std::string> hashes;
    for (const ExtractedTask& t : m->tasks) hashes.push_back(StructuralHashHex(t.func));
    absl::StatusOr<std::unique_ptr<Database>> fetched =
        FetchServerRecords(o.client, "compile", hashes);
    if (!fetched.ok()) return ReportError(fetched.status());
    db = *std::move(fetched);
  } else if (!o.db_path.empty()) {
    absl::StatusOr<std::unique_ptr<Database>> opened = OpenDatabase(o.db_path);
    if (!opened.ok()) return ReportError(opened.status());
    db = *std::move(opened);
  }
  options.database = db.get();
  absl::StatusOr<ModelCompileResult> result = CompileModel(*m, o.out_dir, options);
  if (!result.ok()) return ReportError(result.status());
  for (const std::string& w : result->warnings) {
    std::fprintf(stderr, "tessera: warning: %s\n", w.c_str());
  }
  std::printf("%s: %zu nodes, %zu functions, %zu tasks -> %s (target %s)\n", o.model.c_str(),
              m->graph.nodes.size(), m->fused.functions.size(), m->tasks.size(), o.out_dir.c_str(),
              target->ToString().c_str());
  for (const CompiledKernel& k : result->compiled.kernels) {
    std::printf("  %-40s x%-3d %10.4f MFLOP  %s\n", k.task.c_str(), k.weight, k.flops / 1e6,
                PathOf(k.schedule).c_str());
  }
  const ModelPlan& plan = result->compiled.plan;
  std::printf("plan: %zu calls, intermediates %.1f KiB in an arena of %.1f KiB, weights %.1f KiB\n",
              plan.calls.size(), plan.unshared_bytes / 1024.0, plan.arena_bytes / 1024.0,
              plan.weights_bytes / 1024.0);
  return 0;
}

}  // namespace

Command RegisterCompileCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "compile",
      "Compile a model (.onnx): tuned records, then default schedules, kernels and a "
      "runtime plan in a directory");
  auto o = std::make_shared<CompileOptions>();
  app->add_option("MODEL", o->model, "ONNX model file")->required();
  app->add_option(
      "--db", o->db_path,
      "Tuning database (a SQLite file or a postgresql:// URL); without it, defaults only");
  o->client.AddOptions(app, /*server_optional=*/true);
  app->add_option("--target", o->target,
                  "Target: cpu, or cuda (GPU 0's keys; 'cuda -arch=sm_90' compiles without a GPU)")
      ->capture_default_str();
  app->add_option("-o,--output", o->out_dir, "Output directory (created if missing)")->required();
  app->add_option("--input-shape", o->input_shapes,
                  "NAME=D0,D1,...: the shape of a graph input (fixes dynamic dimensions); "
                  "repeatable");
  app->add_flag("--no-winograd", o->no_winograd,
                "Compute the wide 3x3 convolutions directly, not as Winograd GEMMs (docs/models.md "
                "\"Winograd convolutions\"; tune and compile a model with the same choice)");
  app->add_flag("--no-default", o->no_default,
                "Leave tasks without a record unscheduled instead of applying default rules");
  app->add_flag("--no-runoff", o->no_runoff,
                "Keep every tuned kernel without timing it against its default schedule in the "
                "model");
  return {app, [o]() { return RunCompile(*o); }};
}

}  // namespace cli
}  // namespace tessera
