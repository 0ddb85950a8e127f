#include "model/reference.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/interpreter.h"
#include "model/executor.h"
#include "model/planner.h"
#include "worker/builder.h"
#include "worker/host.h"

namespace tessera {
namespace {

// Above this many FLOPs per inference the reference is a naive build, not the interpreter
// (the same budget idea as `tessera run --check`, docs/cli.md).
constexpr double kInterpreterFlops = 2e8;

// The naive build of `ref`'s tasks, run by an executor over an in-memory compiled model.
absl::StatusOr<std::vector<NDArray>> RunNaiveBuild(const LoadedModel& ref,
                                                   const std::vector<NDArray>& inputs) {
  TESSERA_ASSIGN_OR_RETURN(Target target, ResolveTarget("cpu"));
  CBuilderOptions options;
  options.optimization_flags = {"-O0"};
  options.openmp = false;
  options.batch_size = 16;
  std::unique_ptr<Builder> builder = NewCBuilder(options);
  std::vector<BuildInput> build_inputs;
  for (const ExtractedTask& t : ref.tasks) {
    build_inputs.push_back({t.func.WithName(t.name), target});
  }
  std::vector<BuildResult> built = builder->Build(build_inputs);
  CompiledModel compiled;
  compiled.plan = PlanModel(ref.graph, ref.fused, ref.tasks);
  for (size_t i = 0; i < built.size(); ++i) {
    if (!built[i].ok()) {
      return absl::InternalError(
          absl::StrCat("reference build of ", ref.tasks[i].name, " failed: ", built[i].error_msg));
    }
    CompiledKernel k;
    k.task = ref.tasks[i].name;
    k.artifact = built[i].artifact_path;  // absolute
    k.symbol = built[i].symbol;
    compiled.kernels.push_back(std::move(k));
  }
  const std::string weights = WeightsBlob(ref.graph, compiled.plan);
  // The builder's directory lives until the kernels are loaded (dlopen maps them).
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Executor> executor,
                           Executor::Create(std::move(compiled), "/", weights));
  for (size_t i = 0; i < inputs.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(executor->SetInput(static_cast<int>(i), inputs[i]));
  }
  TESSERA_RETURN_IF_ERROR(executor->Run());
  std::vector<NDArray> outputs;
  for (size_t o = 0; o < executor->plan().outputs.size(); ++o) {
    outputs.push_back(executor->Output(static_cast<int>(o)));
  }
  return outputs;
}

}  // namespace

absl::StatusOr<std::vector<NDArray>> InterpretModel(const Graph& graph, const FusedGraph& fused,
                                                    const std::vector<NDArray>& inputs) {
  std::vector<ExtractedTask> tasks = ExtractTasks(fused);
  ModelPlan plan = PlanModel(graph, fused, tasks);
  TESSERA_ASSIGN_OR_RETURN(PlanMemory memory, PlanMemory::Create(plan, WeightsBlob(graph, plan)));
  if (inputs.size() != plan.inputs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", plan.inputs.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(memory.SetInput(static_cast<int>(i), inputs[i]));
  }
  TESSERA_RETURN_IF_ERROR(ExecutePlan(plan, &memory, [&](int call, const std::vector<void*>& args) {
    const PlanCall& c = plan.calls[call];
    std::vector<NDArray> views;
    for (size_t a = 0; a < args.size(); ++a) {
      views.push_back(NDArray::View(c.args[a].dtype, c.args[a].shape, args[a]));
    }
    std::vector<NDArray*> ptrs;
    for (NDArray& v : views) ptrs.push_back(&v);
    absl::Status s = Interpret(fused.functions[call].func, ptrs);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(c.function, ": ", s.message()));
    return absl::OkStatus();
  }));
  std::vector<NDArray> outputs;
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    outputs.push_back(memory.Output(static_cast<int>(o)));
  return outputs;
}

absl::StatusOr<ModelReferenceOutputs> ComputeReference(const std::string& model_path,
                                                       const InputShapes& input_shapes,
                                                       const std::vector<NDArray>& inputs) {
  TESSERA_ASSIGN_OR_RETURN(LoadedModel ref, LoadModel(model_path, /*fuse=*/false, input_shapes));
  ModelReferenceOutputs out;
  if (ref.total_flops <= kInterpreterFlops) {
    out.how = "the interpreter on the unfused graph";
    TESSERA_ASSIGN_OR_RETURN(out.outputs, InterpretModel(ref.graph, ref.fused, inputs));
  } else {
    out.how = "a naive build (-O0) of the unfused graph";
    TESSERA_ASSIGN_OR_RETURN(out.outputs, RunNaiveBuild(ref, inputs));
  }
  return out;
}

}  // namespace tessera
