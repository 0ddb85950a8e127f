// `tessera compile MODEL -o DIR`: imports and fuses a model, schedules every task with its best
// tuned record (ApplyBest) and the rest with the default rules (ApplyDefaultSchedule), builds
// one kernel per task with the C builder, and writes DIR: plan.json (kernels, storages, calls;
// docs/models.md), weights.bin, model.onnx (a copy, the reference of `exec --check`) and
// kernels/. Prints which task took which path.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "cli/measure.h"
#include "cli/model.h"
#include "codegen/codegen_c.h"
#include "frontend/model_plan.h"
#include "ir/prepack.h"
#include "ir/structural_hash.h"
#include "rules/default/default_rule.h"
#include "tuner/apply_best.h"
#include "worker/builder.h"

namespace tessera {
namespace cli {
namespace {

// How `tessera exec` runs a kernel that packs its layout-free weights (docs/models.md): the
// packing once per call site, then the kernel per inference. An argument is an index into the
// call's arguments, or -1 - p for packed buffer p.
nlohmann::json PrepackJson(const PrepackSplit& split, const std::string& symbol) {
  auto indices = [](const std::vector<PrepackArg>& args) {
    std::vector<int> out;
    for (const PrepackArg& a : args) out.push_back(a.packed ? -1 - a.index : a.index);
    return out;
  };
  std::vector<int64_t> bytes;
  for (const Buffer& b : split.packed) bytes.push_back(b.NumElements() * b.dtype().bytes());
  return {{"symbol", PrepackSymbol(symbol)},
          {"args", indices(split.prepack_args)},
          {"kernel_symbol", PrepackedSymbol(symbol)},
          {"kernel_args", indices(split.prepacked_args)},
          {"packed_bytes", bytes}};
}

struct CompileOptions {
  std::string model;
  std::string db_path;
  std::string target = "cpu";
  std::string out_dir;
  bool no_default = false;
  std::vector<std::string> input_shapes;
};

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

int RunCompile(const CompileOptions& o) {
  absl::StatusOr<InputShapes> shapes = ParseInputShapes(o.input_shapes);
  if (!shapes.ok()) return ReportError(shapes.status());
  absl::StatusOr<LoadedModel> m = LoadModel(o.model, /*fuse=*/true, *shapes);
  if (!m.ok()) return ReportError(m.status());
  absl::StatusOr<Target> target = ResolveRunnableTarget(o.target);
  if (!target.ok()) return ReportError(target.status());
  if (!target->is_cpu()) {
    return ReportError(absl::UnimplementedError(
        absl::StrCat("compile: target ", target->ToString(), ": models compile for cpu only")));
  }
  IRModule mod;
  for (const ExtractedTask& t : m->tasks) mod.Update(t.func.WithName(t.name));
  std::vector<ApplyBestEntry> hits;
  IRModule scheduled = mod;
  if (!o.db_path.empty()) {
    absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(o.db_path);
    if (!db.ok()) return ReportError(db.status());
    absl::StatusOr<IRModule> tuned = ApplyBest(mod, *target, db->get(), &hits);
    if (!tuned.ok()) return ReportError(tuned.status());
    scheduled = *tuned;
  }
  std::vector<DefaultScheduleEntry> defaults;
  if (!o.no_default) {
    absl::StatusOr<IRModule> with_defaults =
        ApplyDefaultSchedule(scheduled, *target, DefaultRulesFor(*target), &defaults);
    if (!with_defaults.ok()) return ReportError(with_defaults.status());
    scheduled = *with_defaults;
  }

  std::error_code ec;
  std::filesystem::create_directories(o.out_dir + "/kernels", ec);
  if (ec) {
    return ReportError(
        absl::InternalError(absl::StrCat("cannot create ", o.out_dir, ": ", ec.message())));
  }
  CBuilderOptions builder_options;
  builder_options.work_dir = o.out_dir + "/kernels";
  builder_options.keep_work_dir = true;
  std::unique_ptr<Builder> builder = NewCBuilder(builder_options);
  std::vector<BuildInput> inputs;
  for (const ExtractedTask& t : m->tasks) inputs.push_back({*scheduled.Lookup(t.name), *target});
  std::vector<BuildResult> built = builder->Build(inputs);

  nlohmann::json kernels = nlohmann::json::array();
  std::printf("%s: %zu nodes, %zu functions, %zu tasks -> %s (target %s)\n", o.model.c_str(),
              m->graph.nodes.size(), m->fused.functions.size(), m->tasks.size(), o.out_dir.c_str(),
              target->ToString().c_str());
  for (size_t i = 0; i < m->tasks.size(); ++i) {
    const ExtractedTask& t = m->tasks[i];
    std::string path = "unscheduled";
    nlohmann::json how = {{"kind", "unscheduled"}};
    for (const ApplyBestEntry& h : hits) {
      if (h.function == t.name && h.hit) {
        path = absl::StrCat("tuned record ", h.record_id, " (", FormatSeconds(h.record_secs),
                            " when measured)");
        how = {{"kind", "tuned"}, {"record", h.record_id}, {"record_seconds", h.record_secs}};
      }
    }
    for (const DefaultScheduleEntry& d : defaults) {
      if (d.function == t.name && !d.rule.empty() && !d.already_scheduled) {
        path = absl::StrCat("default rule ", d.rule);
        how = {{"kind", "default"}, {"rule", d.rule}};
      }
    }
    BuildResult result = built[i];
    std::optional<PrepackSplit> split;
    if (result.ok()) {
      absl::StatusOr<std::optional<PrepackSplit>> s = SplitPrepack(inputs[i].func);
      if (s.ok()) split = *s;
    }
    if (!result.ok()) {
      // A schedule that does not build is a bug elsewhere; the model still compiles, slower.
      std::fprintf(stderr,
                   "tessera: warning: %s: %s did not build (%s); using the unscheduled "
                   "function\n",
                   t.name.c_str(), path.c_str(), result.error_msg.c_str());
      absl::StatusOr<BuildResult> plain = BuildOne(builder.get(), t.func.WithName(t.name), *target);
      if (!plain.ok()) return ReportError(plain.status());
      result = *plain;
      path = "unscheduled (the scheduled function did not build)";
      how = {{"kind", "unscheduled"}, {"note", "scheduled function did not build"}};
    }
    std::printf("  %-40s x%-3d %10.4f MFLOP  %s\n", t.name.c_str(), t.weight, t.flops / 1e6,
                path.c_str());
    std::filesystem::path artifact(result.artifact_path);
    kernels.push_back({{"task", t.name},
                       {"weight", t.weight},
                       {"flops", t.flops},
                       {"structural_hash", StructuralHashHex(t.func)},
                       {"schedule", how},
                       {"artifact", "kernels/" + artifact.filename().string()},
                       {"symbol", result.symbol}});
    if (split.has_value()) kernels.back()["prepack"] = PrepackJson(*split, result.symbol);
  }
  ModelPlan plan = PlanModel(m->graph, m->fused, m->tasks);
  nlohmann::json out;
  out["format"] = "tessera-model-plan-1";
  out["model"] = "model.onnx";
  out["target"] = target->ToString();
  out["input_shapes"] = *shapes;  // exec --check imports model.onnx with them
  out["kernels"] = kernels;
  out["plan"] = PlanToJson(plan);
  absl::Status s = WriteFile(o.out_dir + "/plan.json", out.dump(1));
  if (s.ok()) s = WriteFile(o.out_dir + "/weights.bin", WeightsBlob(m->graph, plan));
  if (s.ok()) {
    std::filesystem::copy_file(o.model, o.out_dir + "/model.onnx",
                               std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) s = absl::InternalError(absl::StrCat("cannot copy ", o.model, ": ", ec.message()));
  }
  if (!s.ok()) return ReportError(s);
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
  app->add_option("--target", o->target, "Target (cpu)")->capture_default_str();
  app->add_option("-o,--output", o->out_dir, "Output directory (created if missing)")->required();
  app->add_option("--input-shape", o->input_shapes,
                  "NAME=D0,D1,...: the shape of a graph input (fixes dynamic dimensions); "
                  "repeatable");
  app->add_flag("--no-default", o->no_default,
                "Leave tasks without a record unscheduled instead of applying default rules");
  return {app, [o]() { return RunCompile(*o); }};
}

}  // namespace cli
}  // namespace tessera
