// `tessera codegen`: print the source a function compiles from: C for a cpu target
// (codegen/codegen_c.h), CUDA C++ for a cuda target (codegen/codegen_cuda.h, preceded by one
// comment line per kernel with its launch configuration). With --trace the function is
// scheduled by the trace first. Needs no GPU: a cuda target is used as written (defaults for
// the keys it does not give, ir/target.h).
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "codegen/codegen_c.h"
#include "codegen/codegen_cuda.h"
#include "worker/host.h"

namespace tessera {
namespace cli {
namespace {

struct CodegenOptions {
  FunctionSource source;
  std::string target = "cpu";
  std::string trace_path;
  int64_t seed = 0;
};

std::string Dims(const int64_t* d) { return absl::StrCat("(", d[0], ", ", d[1], ", ", d[2], ")"); }

absl::StatusOr<std::string> Generate(const PrimFunc& func, const Target& target) {
  if (target.is_cpu()) return GenerateC(func, func.name() + "_kernel");
  absl::StatusOr<CudaModule> module = GenerateCuda(func, target);
  if (!module.ok()) return module.status();
  std::string text = absl::StrCat("// ", target.ToString(), "\n");
  for (const CudaKernel& k : module->kernels) {
    absl::StrAppend(&text, "// launch ", k.name, ": grid ", Dims(k.grid), ", block ", Dims(k.block),
                    ", dynamic shared memory ", k.dynamic_shared_bytes, " bytes, params [",
                    absl::StrJoin(k.param_indices, ", "), "]\n");
    for (const CudaTensorMap& m : k.tensor_maps) {
      absl::StrAppend(&text, "//   tensor map of param ", m.param, " (", m.dtype, "): dims [",
                      absl::StrJoin(m.dims, ", "), "], box [", absl::StrJoin(m.box, ", "),
                      "], innermost first, 128-byte swizzle\n");
    }
  }
  return absl::StrCat(text, module->source);
}

int RunCodegen(const CodegenOptions& options) {
  std::string label;
  absl::StatusOr<PrimFunc> func = options.source.Load(&label);
  if (!func.ok()) return ReportError(func.status());
  absl::StatusOr<Target> target = ResolveTarget(options.target);
  if (!target.ok()) return ReportError(target.status());
  PrimFunc scheduled = *func;
  if (!options.trace_path.empty()) {
    absl::StatusOr<Trace> trace = LoadTrace(options.trace_path);
    if (!trace.ok()) return ReportError(trace.status());
    absl::StatusOr<Schedule> sch = Replay(*func, *trace, options.trace_path, options.seed);
    if (!sch.ok()) return ReportError(sch.status());
    scheduled = sch->func();
  }
  absl::StatusOr<std::string> source = Generate(scheduled, *target);
  if (!source.ok()) return ReportError(source.status());
  std::printf("%s", source->c_str());
  if (!source->empty() && source->back() != '\n') std::printf("\n");
  return 0;
}

}  // namespace

Command RegisterCodegenCommand(CLI::App* root) {
  CLI::App* app =
      root->add_subcommand("codegen", "Print the C (cpu) or CUDA (cuda) source of a function");
  auto options = std::make_shared<CodegenOptions>();
  options->source.AddOptions(app);
  app->add_option("--target", options->target, "Target: cpu, cuda, or e.g. 'cuda -arch=sm_90'")
      ->capture_default_str();
  app->add_option("--trace", options->trace_path, "Schedule the function with this trace first");
  app->add_option("--seed", options->seed, "Seed of sampling instructions without a decision")
      ->capture_default_str();
  return {app, [options]() { return RunCodegen(*options); }};
}

}  // namespace cli
}  // namespace tessera
