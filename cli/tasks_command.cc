// `tessera tasks MODEL`: imports a model, fuses it and lists its tasks (distinct functions by
// structural hash) with their weights and FLOPs.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "ir/printer.h"
#include "ir/structural_hash.h"
#include "model/load.h"

namespace tessera {
namespace cli {
namespace {

struct TasksOptions {
  std::string model;
  bool json = false;
  bool no_fuse = false;
  bool no_winograd = false;
  bool show_ir = false;
  std::vector<std::string> input_shapes;
};

int RunTasks(const TasksOptions& o) {
  absl::StatusOr<InputShapes> shapes = ParseInputShapes(o.input_shapes);
  if (!shapes.ok()) return ReportError(shapes.status());
  absl::StatusOr<LoadedModel> m = LoadModel(o.model, !o.no_fuse, *shapes, !o.no_winograd);
  if (!m.ok()) return ReportError(m.status());
  if (o.json) {
    nlohmann::json out;
    out["model"] = o.model;
    out["nodes"] = m->graph.nodes.size();
    out["functions"] = m->fused.functions.size();
    out["flops"] = m->total_flops;
    out["tasks"] = nlohmann::json::array();
    for (const ExtractedTask& t : m->tasks) {
      std::vector<std::string> functions, ops;
      for (int f : t.functions) functions.push_back(m->fused.functions[f].name);
      for (int n : m->fused.functions[t.functions[0]].nodes) {
        ops.push_back(m->graph.nodes[n].op_type);
      }
      nlohmann::json task = {{"name", t.name},
                             {"weight", t.weight},
                             {"flops", t.flops},
                             {"structural_hash", StructuralHashHex(t.func)},
                             {"pattern", OpPatternName(m->fused.functions[t.functions[0]].pattern)},
                             {"ops", ops},
                             {"functions", functions}};
      if (o.show_ir) task["ir"] = PrintFunc(t.func);
      out["tasks"].push_back(task);
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %zu nodes, %zu functions, %zu tasks, %.4g MFLOP per inference\n",
              o.model.c_str(), m->graph.nodes.size(), m->fused.functions.size(), m->tasks.size(),
              m->total_flops / 1e6);
  std::printf("%-4s %-40s %6s %10s  %-16s %s\n", "ID", "TASK", "WEIGHT", "MFLOP", "HASH", "OPS");
  for (size_t i = 0; i < m->tasks.size(); ++i) {
    const ExtractedTask& t = m->tasks[i];
    std::vector<std::string> ops;
    for (int n : m->fused.functions[t.functions[0]].nodes) ops.push_back(m->graph.nodes[n].op_type);
    std::printf("%-4zu %-40s %6d %10.4f  %-16s %s\n", i, t.name.c_str(), t.weight, t.flops / 1e6,
                StructuralHashHex(t.func).c_str(), absl::StrJoin(ops, "+").c_str());
    if (o.show_ir) std::printf("%s\n", PrintFunc(t.func).c_str());
  }
  return 0;
}

}  // namespace

Command RegisterTasksCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "tasks", "Import a model (.onnx), fuse it and list its tuning tasks with weights and FLOPs");
  auto o = std::make_shared<TasksOptions>();
  app->add_option("MODEL", o->model, "ONNX model file")->required();
  app->add_flag("--json", o->json, "Print the tasks as JSON");
  app->add_flag("--no-fuse", o->no_fuse, "One function per operator (no fusion)");
  app->add_flag("--no-winograd", o->no_winograd,
                "Compute the wide 3x3 convolutions directly, not as Winograd GEMMs (docs/models.md "
                "\"Winograd convolutions\"; tune and compile a model with the same choice)");
  app->add_flag("--ir", o->show_ir, "Also print each task's function");
  app->add_option("--input-shape", o->input_shapes,
                  "NAME=D0,D1,...: the shape of a graph input (fixes dynamic dimensions); "
                  "repeatable");
  return {app, [o]() { return RunTasks(*o); }};
}

}  // namespace cli
}  // namespace tessera
