// `tessera exec DIR`: runs a model compiled by `tessera compile` in this process: loads the
// kernels (dlopen), feeds the inputs (.npy files, or seeded random data), runs the plan once to
// warm up and then --repeat times, and prints the end-to-end latency (median of the repeats)
// and a per-kernel breakdown. --check compares the outputs with the reference: the model's
// unfused, unscheduled graph run by the interpreter, or above an interpreter budget compiled
// naively (-O0, serial, one kernel per operator) and run in this process.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "cli/commands.h"
#include "cli/model.h"
#include "frontend/model_plan.h"
#include "frontend/npy.h"
#include "worker/builder.h"
#include "worker/host.h"

namespace tessera {
namespace cli {
namespace {

struct ExecOptions {
  std::string dir;
  std::string inputs;  // comma-separated .npy files, model input order
  std::string save_dir;
  int repeat = 10;
  int64_t seed = 0;
  bool check = false;
  bool json = false;
};

using KernelFn = int32_t (*)(void**);

// Above this many FLOPs per inference the reference is a naive build, not the interpreter
// (the same budget idea as `tessera run --check`, docs/cli.md).
constexpr double kInterpreterFlops = 2e8;

absl::StatusOr<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Loads `symbol` from the shared object `path` (kept loaded for the process).
absl::StatusOr<KernelFn> LoadKernel(const std::string& path, const std::string& symbol) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::InternalError(absl::StrCat("cannot load ", path, ": ", dlerror()));
  }
  void* sym = dlsym(handle, symbol.c_str());
  if (sym == nullptr) return absl::InternalError(absl::StrCat(path, ": no symbol ", symbol));
  return reinterpret_cast<KernelFn>(sym);
}

// The reference outputs: the unfused, unscheduled model on `inputs`, by the interpreter or,
// above kInterpreterFlops, by a naive build. `*how` says which.
absl::StatusOr<std::vector<NDArray>> ReferenceOutputs(const std::string& model_path,
                                                      const InputShapes& input_shapes,
                                                      const std::vector<NDArray>& inputs,
                                                      std::string* how) {
  TESSERA_ASSIGN_OR_RETURN(LoadedModel ref, LoadModel(model_path, /*fuse=*/false, input_shapes));
  if (ref.total_flops <= kInterpreterFlops) {
    *how = "the interpreter on the unfused graph";
    return InterpretModel(ref.graph, ref.fused, inputs);
  }
  *how = "a naive build (-O0) of the unfused graph";
  TESSERA_ASSIGN_OR_RETURN(Target target, ResolveTarget("cpu"));
  CBuilderOptions options;
  options.optimization_flags = {"-O0"};
  options.openmp = false;
  options.batch_size = 16;
  std::unique_ptr<Builder> builder = NewCBuilder(options);
  std::vector<BuildInput> build_inputs;
  for (const ExtractedTask& t : ref.tasks)
    build_inputs.push_back({t.func.WithName(t.name), target});
  std::vector<BuildResult> built = builder->Build(build_inputs);
  std::vector<KernelFn> fns;
  for (size_t i = 0; i < built.size(); ++i) {
    if (!built[i].ok()) {
      return absl::InternalError(
          absl::StrCat("reference build of ", ref.tasks[i].name, " failed: ", built[i].error_msg));
    }
    TESSERA_ASSIGN_OR_RETURN(KernelFn fn, LoadKernel(built[i].artifact_path, built[i].symbol));
    fns.push_back(fn);
  }
  ModelPlan plan = PlanModel(ref.graph, ref.fused, ref.tasks);
  TESSERA_ASSIGN_OR_RETURN(PlanMemory memory,
                           PlanMemory::Create(plan, WeightsBlob(ref.graph, plan)));
  for (size_t i = 0; i < inputs.size(); ++i) {
    TESSERA_RETURN_IF_ERROR(memory.SetInput(static_cast<int>(i), inputs[i]));
  }
  TESSERA_RETURN_IF_ERROR(ExecutePlan(plan, &memory, [&](int call, const std::vector<void*>& args) {
    if (fns[plan.calls[call].task](const_cast<void**>(args.data())) != 0) {
      return absl::InternalError(
          absl::StrCat("reference kernel ", plan.calls[call].function, " failed"));
    }
    return absl::OkStatus();
  }));
  std::vector<NDArray> outputs;
  for (size_t o = 0; o < plan.outputs.size(); ++o)
    outputs.push_back(memory.Output(static_cast<int>(o)));
  return outputs;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

int RunExec(const ExecOptions& o) {
  absl::StatusOr<std::string> text = ReadAll(o.dir + "/plan.json");
  if (!text.ok()) return ReportError(text.status());
  nlohmann::json doc = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("plan") || !doc.contains("kernels")) {
    return ReportError(absl::InvalidArgumentError(
        absl::StrCat(o.dir, "/plan.json: not a plan written by tessera compile")));
  }
  absl::StatusOr<ModelPlan> plan = PlanFromJson(doc["plan"]);
  if (!plan.ok())
    return ReportError(
        absl::InvalidArgumentError(absl::StrCat(o.dir, "/plan.json: ", plan.status().message())));
  absl::StatusOr<std::string> weights = ReadAll(o.dir + "/weights.bin");
  if (!weights.ok()) return ReportError(weights.status());

  // Kernels, one per task; one that packs its layout-free weights also has its packing and its
  // kernel on packed weights (compile's "prepack", docs/models.md).
  struct Prepack {
    KernelFn pack = nullptr, kernel = nullptr;
    std::vector<int> args, kernel_args;  // call argument i, or -1 - p for packed buffer p
    std::vector<int64_t> packed_bytes;
  };
  std::vector<std::optional<Prepack>> task_prepack;
  std::vector<KernelFn> task_fn;
  std::vector<std::string> task_name, task_schedule;
  std::vector<double> task_flops;
  for (const nlohmann::json& k : doc["kernels"]) {
    absl::StatusOr<KernelFn> fn = LoadKernel(o.dir + "/" + k.at("artifact").get<std::string>(),
                                             k.at("symbol").get<std::string>());
    if (!fn.ok()) return ReportError(fn.status());
    task_fn.push_back(*fn);
    task_prepack.emplace_back();
    if (k.contains("prepack")) {
      const nlohmann::json& p = k["prepack"];
      Prepack prepack;
      const std::string artifact = o.dir + "/" + k.at("artifact").get<std::string>();
      absl::StatusOr<KernelFn> pack = LoadKernel(artifact, p.at("symbol").get<std::string>());
      absl::StatusOr<KernelFn> kernel =
          LoadKernel(artifact, p.at("kernel_symbol").get<std::string>());
      if (!pack.ok()) return ReportError(pack.status());
      if (!kernel.ok()) return ReportError(kernel.status());
      prepack.pack = *pack;
      prepack.kernel = *kernel;
      prepack.args = p.at("args").get<std::vector<int>>();
      prepack.kernel_args = p.at("kernel_args").get<std::vector<int>>();
      prepack.packed_bytes = p.at("packed_bytes").get<std::vector<int64_t>>();
      task_prepack.back() = std::move(prepack);
    }
    task_name.push_back(k.at("task").get<std::string>());
    task_flops.push_back(k.value("flops", 0.0));
    // "tuned #17", "default CpuDefault" or "unscheduled", from compile's record of the path.
    const nlohmann::json how = k.value("schedule", nlohmann::json::object());
    const std::string kind = how.value("kind", "");
    task_schedule.push_back(kind == "tuned"     ? absl::StrCat("tuned #", how.value("record", -1))
                            : kind == "default" ? "default " + how.value("rule", std::string())
                                                : kind);
  }
  for (const PlanCall& c : plan->calls) {
    if (c.task < 0 || static_cast<size_t>(c.task) >= task_fn.size()) {
      return ReportError(absl::InvalidArgumentError(
          absl::StrCat(o.dir, "/plan.json: call ", c.function, " has no kernel")));
    }
  }

  // Inputs.
  std::vector<NDArray> inputs;
  std::vector<std::string> files;
  if (!o.inputs.empty()) files = absl::StrSplit(o.inputs, ',');
  if (!files.empty() && files.size() != plan->inputs.size()) {
    return ReportError(absl::InvalidArgumentError(absl::StrCat(
        "--inputs: ", files.size(), " files for ", plan->inputs.size(), " model inputs")));
  }
  Random rng(o.seed);
  for (size_t i = 0; i < plan->inputs.size(); ++i) {
    const PlanValue& v = plan->inputs[i].second;
    if (files.empty()) {
      NDArray a = NDArray::Empty(v.dtype, v.shape);
      a.FillRandom(&rng);
      inputs.push_back(std::move(a));
    } else {
      absl::StatusOr<NDArray> a = ReadNpy(files[i]);
      if (!a.ok()) return ReportError(a.status());
      inputs.push_back(std::move(*a));
    }
  }
  absl::StatusOr<PlanMemory> memory = PlanMemory::Create(*plan, *weights);
  if (!memory.ok()) return ReportError(memory.status());
  for (size_t i = 0; i < inputs.size(); ++i) {
    absl::Status s = memory->SetInput(static_cast<int>(i), inputs[i]);
    if (!s.ok()) return ReportError(s);
  }

  // Pack each call's layout-free weights once, as a deployment does when it loads the model.
  const size_t ncalls = plan->calls.size();
  std::vector<std::vector<std::unique_ptr<void, decltype(&std::free)>>> packed(ncalls);
  // A split kernel's arguments: the call's own, or its packed buffers.
  auto split_args = [&](size_t call, const std::vector<int>& which,
                        const std::vector<void*>& args) -> absl::StatusOr<std::vector<void*>> {
    std::vector<void*> out;
    for (int a : which) {
      if (a >= 0 && static_cast<size_t>(a) < args.size()) {
        out.push_back(args[a]);
      } else if (a < 0 && static_cast<size_t>(-1 - a) < packed[call].size()) {
        out.push_back(packed[call][-1 - a].get());
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            o.dir, "/plan.json: call ", plan->calls[call].function, ": no argument ", a));
      }
    }
    return out;
  };
  double packing_secs = 0;
  int packed_calls = 0;
  for (size_t c = 0; c < ncalls; ++c) {
    const std::optional<Prepack>& p = task_prepack[plan->calls[c].task];
    if (!p.has_value()) continue;
    for (int64_t bytes : p->packed_bytes) {
      // 64-byte aligned, as the kernels' own buffers (aligned_alloc wants a multiple).
      void* buffer = std::aligned_alloc(64, (std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
      if (buffer == nullptr) {
        return ReportError(absl::ResourceExhaustedError(
            absl::StrCat("cannot allocate ", bytes, " bytes of packed weights")));
      }
      packed[c].emplace_back(buffer, &std::free);
    }
    absl::StatusOr<std::vector<void*>> args = split_args(c, p->args, memory->Args(c));
    if (!args.ok()) return ReportError(args.status());
    const auto start = std::chrono::steady_clock::now();
    if (p->pack(args->data()) != 0) {
      return ReportError(absl::InternalError(
          absl::StrCat(plan->calls[c].function, ": packing its weights failed")));
    }
    packing_secs += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++packed_calls;
  }

  // Run: one warm-up, then timed repeats.
  std::vector<std::vector<double>> call_secs(ncalls);
  std::vector<double> total_secs;
  for (int r = 0; r <= o.repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    absl::Status s = ExecutePlan(*plan, &*memory, [&](int call, const std::vector<void*>& args) {
      const std::optional<Prepack>& p = task_prepack[plan->calls[call].task];
      std::vector<void*> kernel_args = args;
      if (p.has_value()) {
        absl::StatusOr<std::vector<void*>> mapped = split_args(call, p->kernel_args, args);
        if (!mapped.ok()) return mapped.status();
        kernel_args = *std::move(mapped);
      }
      auto t0 = std::chrono::steady_clock::now();
      int32_t rc = p.has_value() ? p->kernel(kernel_args.data())
                                 : task_fn[plan->calls[call].task](kernel_args.data());
      auto t1 = std::chrono::steady_clock::now();
      if (r > 0) call_secs[call].push_back(std::chrono::duration<double>(t1 - t0).count());
      if (rc != 0) {
        return absl::InternalError(
            absl::StrCat(plan->calls[call].function, ": kernel returned ", rc));
      }
      return absl::OkStatus();
    });
    if (!s.ok()) return ReportError(s);
    if (r > 0) {
      total_secs.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::vector<NDArray> outputs;
  for (size_t i = 0; i < plan->outputs.size(); ++i)
    outputs.push_back(memory->Output(static_cast<int>(i)));
  if (!o.save_dir.empty()) {
    for (size_t i = 0; i < outputs.size(); ++i) {
      absl::Status s = WriteNpy(absl::StrCat(o.save_dir, "/output", i, ".npy"), outputs[i]);
      if (!s.ok()) return ReportError(s);
    }
  }

  // Check against the unfused, unscheduled graph through the interpreter.
  int exit_code = 0;
  nlohmann::json check_json;
  std::string check_line;
  if (o.check) {
    std::string how;
    absl::StatusOr<std::vector<NDArray>> expected = ReferenceOutputs(
        o.dir + "/model.onnx", doc.value("input_shapes", InputShapes{}), inputs, &how);
    if (!expected.ok()) return ReportError(expected.status());
    bool pass = true;
    double max_abs = 0, max_rel = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      double rtol, atol;
      DefaultTolerance(outputs[i].dtype(), &rtol, &atol);
      // Fused kernels reassociate reductions (tiling, vectorization): float32 tolerance of
      // chained operators.
      absl::StatusOr<Comparison> c =
          Compare(outputs[i], (*expected)[i], std::max(rtol, 1e-4), std::max(atol, 1e-4));
      if (!c.ok()) return ReportError(c.status());
      pass = pass && c->ok();
      max_abs = std::max(max_abs, c->max_abs_error);
      max_rel = std::max(max_rel, c->max_rel_error);
    }
    check_line = absl::StrCat("check: ", pass ? "PASS" : "FAIL", " against ", how,
                              " (max abs error ", max_abs, ", max rel error ", max_rel, ")");
    check_json = {
        {"pass", pass}, {"reference", how}, {"max_abs_error", max_abs}, {"max_rel_error", max_rel}};
    if (!pass) exit_code = 2;
  }

  const double total = Median(total_secs);
  if (o.json) {
    nlohmann::json out;
    out["latency_seconds"] = total;
    out["run_secs"] = total_secs;
    out["packed_calls"] = packed_calls;
    out["packing_seconds"] = packing_secs;
    for (size_t c = 0; c < ncalls; ++c) {
      const int task = plan->calls[c].task;
      out["calls"].push_back({{"function", plan->calls[c].function},
                              {"task", task_name[task]},
                              {"schedule", task_schedule[task]},
                              {"flops", task_flops[task]},
                              {"seconds", Median(call_secs[c])}});
    }
    if (o.check) out["check"] = check_json;
    std::printf("%s\n", out.dump(2).c_str());
    return exit_code;
  }
  std::printf(
      "%s: %zu kernels per inference, inputs %s\n", o.dir.c_str(), ncalls,
      files.empty() ? absl::StrCat("random (seed ", o.seed, ")").c_str() : o.inputs.c_str());
  std::printf("latency: %s (median of %d repeats)\n", FormatSeconds(total).c_str(), o.repeat);
  if (packed_calls > 0) {
    std::printf("packed weights: %d calls, %s once before the runs\n", packed_calls,
                FormatSeconds(packing_secs).c_str());
  }
  std::printf("%-4s %-40s %12s %9s %7s  %s\n", "#", "FUNCTION", "MEDIAN", "GFLOP/s", "SHARE",
              "SCHEDULE");
  double sum = 0;
  for (size_t c = 0; c < ncalls; ++c) sum += Median(call_secs[c]);
  for (size_t c = 0; c < ncalls; ++c) {
    const double t = Median(call_secs[c]);
    const int task = plan->calls[c].task;
    std::printf("%-4zu %-40s %12s %9.2f %6.1f%%  %s\n", c, plan->calls[c].function.c_str(),
                FormatSeconds(t).c_str(), task_flops[task] / std::max(t, 1e-12) / 1e9,
                100 * t / std::max(sum, 1e-12), task_schedule[task].c_str());
  }
  if (o.check) std::printf("%s\n", check_line.c_str());
  return exit_code;
}

}  // namespace

Command RegisterExecCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "exec", "Run a model compiled by `tessera compile`: latency, per-kernel times, --check");
  auto o = std::make_shared<ExecOptions>();
  app->add_option("DIR", o->dir, "Directory written by tessera compile")->required();
  app->add_option("--inputs", o->inputs,
                  "Input .npy files, comma-separated in model order (default: seeded random)");
  app->add_option("--repeat", o->repeat, "Timed runs of the whole model")->capture_default_str();
  app->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
  app->add_option("--save", o->save_dir, "Write the outputs as output<i>.npy into this directory");
  app->add_flag("--check", o->check,
                "Compare the outputs with the unfused, unscheduled graph (interpreter, or a "
                "naive build above 2e8 FLOP; exit status 2 on a mismatch)");
  app->add_flag("--json", o->json,
                "Print {latency_seconds, run_secs, packed_calls, packing_seconds, calls, check} as "
                "JSON");
  return {app, [o]() { return RunExec(*o); }};
}

}  // namespace cli
}  // namespace tessera
