// `tessera exec DIR`: runs a model compiled by `tessera compile` in this process with the
// runtime's executor (model/executor.h): feeds the inputs (.npy files in model order, an .npz
// with the inputs' names, or seeded random data), runs the plan once to warm up and then
// --repeat times, and prints the end-to-end latency (median of the repeats) and a per-kernel
// breakdown. --check compares the outputs with the reference (model/reference.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/median.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "cli/commands.h"
#include "frontend/npy.h"
#include "model/executor.h"
#include "model/reference.h"

namespace tessera {
namespace cli {
namespace {

struct ExecOptions {
  std::string dir;
  std::string inputs;  // comma-separated .npy files in model order, or one .npz
  std::string save;    // a directory (one NAME.npy per output) or an .npz file
  int repeat = 10;
  int threads = 0;  // ExecutorOptions::num_threads
  int64_t seed = 0;
  bool check = false;
  bool json = false;
};

// The model's inputs: from `o.inputs`, or seeded random data.
absl::StatusOr<std::vector<NDArray>> ReadInputs(const ExecOptions& o, const ModelPlan& plan) {
  std::vector<NDArray> inputs;
  if (o.inputs.empty()) {
    Random rng(o.seed);
    for (const auto& [name, v] : plan.inputs) {
      NDArray a = NDArray::Empty(v.dtype, v.shape);
      a.FillRandom(&rng);
      inputs.push_back(std::move(a));
    }
    return inputs;
  }
  if (absl::EndsWith(o.inputs, ".npz")) {
    TESSERA_ASSIGN_OR_RETURN(NamedArrays arrays, ReadNpz(o.inputs));
    std::set<std::string> used;
    for (const auto& [name, v] : plan.inputs) {
      auto it = std::find_if(arrays.begin(), arrays.end(),
                             [&, &name = name](const auto& a) { return a.first == name; });
      if (it == arrays.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--inputs ", o.inputs, ": no array named ", name));
      }
      used.insert(name);
      inputs.push_back(it->second);
    }
    for (const auto& [name, a] : arrays) {
      if (used.count(name) == 0) {
        std::vector<std::string> names;
        for (const auto& input : plan.inputs) names.push_back(input.first);
        return absl::InvalidArgumentError(
            absl::StrCat("--inputs ", o.inputs, ": array ", name,
                         " is no model input (inputs: ", absl::StrJoin(names, ", "), ")"));
      }
    }
    return inputs;
  }
  std::vector<std::string> files = absl::StrSplit(o.inputs, ',');
  if (files.size() != plan.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("--inputs: ", files.size(), " files for ",
                                                   plan.inputs.size(), " model inputs"));
  }
  for (const std::string& file : files) {
    TESSERA_ASSIGN_OR_RETURN(NDArray a, ReadNpy(file));
    inputs.push_back(std::move(a));
  }
  return inputs;
}

// An output name as a file name: characters other than letters, digits, '.', '_' and '-'
// become '_' (ONNX names may hold '/' or ':').
std::string FileNameOf(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      c = '_';
    }
  }
  return out == "." || out == ".." ? "_" + out : out;
}

// --save: an .npz of the named outputs, or a directory (created) of NAME.npy files.
absl::Status SaveOutputs(const std::string& save, const ModelPlan& plan,
                         const std::vector<NDArray>& outputs) {
  const bool npz = absl::EndsWith(save, ".npz");
  const std::filesystem::path dir =
      npz ? std::filesystem::path(save).parent_path() : std::filesystem::path(save);
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("cannot create ", dir.string(), ": ", ec.message()));
  NamedArrays named;
  for (size_t i = 0; i < outputs.size(); ++i) named.push_back({plan.outputs[i].first, outputs[i]});
  if (npz) return WriteNpz(save, named);
  std::set<std::string> files;
  for (const auto& [name, array] : named) {
    const std::string file = FileNameOf(name) + ".npy";
    if (!files.insert(file).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--save: two outputs are both saved as ", file, "; save an .npz instead"));
    }
    TESSERA_RETURN_IF_ERROR(WriteNpy((dir / file).string(), array));
  }
  return absl::OkStatus();
}

// "tuned #17", "default CpuDefault" or "unscheduled", from compile's record of the path.
std::string ScheduleName(const KernelSchedule& s) {
  if (s.kind == "tuned") return absl::StrCat("tuned #", s.record);
  if (s.kind == "default") return "default " + s.rule;
  return s.kind;
}

int RunExec(const ExecOptions& o) {
  if (o.repeat < 1) {
    return ReportError(absl::InvalidArgumentError(
        absl::StrCat("--repeat ", o.repeat, ": must be positive (timed runs of the model)")));
  }
  ExecutorOptions executor_options;
  executor_options.num_threads = o.threads;
  absl::StatusOr<std::unique_ptr<Executor>> executor = Executor::Load(o.dir, executor_options);
  if (!executor.ok()) return ReportError(executor.status());
  Executor& ex = **executor;
  const ModelPlan& plan = ex.plan();
  absl::StatusOr<std::vector<NDArray>> inputs = ReadInputs(o, plan);
  if (!inputs.ok()) return ReportError(inputs.status());
  for (size_t i = 0; i < inputs->size(); ++i) {
    absl::Status s = ex.SetInput(static_cast<int>(i), (*inputs)[i]);
    if (!s.ok()) return ReportError(s);
  }

  // Run: one warm-up, then timed repeats.
  const size_t ncalls = plan.calls.size();
  std::vector<std::vector<double>> call_secs(ncalls);
  std::vector<double> total_secs, secs;
  for (int r = 0; r <= o.repeat; ++r) {
    const auto start = std::chrono::steady_clock::now();
    absl::Status s = ex.Run(&secs);
    if (!s.ok()) return ReportError(s);
    if (r == 0) continue;
    total_secs.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (size_t c = 0; c < ncalls; ++c) call_secs[c].push_back(secs[c]);
  }
  std::vector<NDArray> outputs;
  for (size_t i = 0; i < plan.outputs.size(); ++i)
    outputs.push_back(ex.Output(static_cast<int>(i)));
  if (!o.save.empty()) {
    absl::Status s = SaveOutputs(o.save, plan, outputs);
    if (!s.ok()) return ReportError(s);
  }

  // Check against the unfused, unscheduled graph.
  int exit_code = 0;
  nlohmann::json check_json;
  std::string check_line;
  if (o.check) {
    absl::StatusOr<ModelReferenceOutputs> expected =
        ComputeReference(o.dir + "/" + ex.model().model, ex.model().input_shapes, *inputs);
    if (!expected.ok()) return ReportError(expected.status());
    bool pass = true;
    double max_abs = 0, max_rel = 0;
    for (size_t i = 0; i < outputs.size(); ++i) {
      double rtol, atol;
      DefaultTolerance(outputs[i].dtype(), &rtol, &atol);
      // Fused kernels reassociate reductions (tiling, vectorization): float32 tolerance of
      // chained operators.
      absl::StatusOr<Comparison> c =
          Compare(outputs[i], expected->outputs[i], std::max(rtol, 1e-4), std::max(atol, 1e-4));
      if (!c.ok()) return ReportError(c.status());
      pass = pass && c->ok();
      max_abs = std::max(max_abs, c->max_abs_error);
      max_rel = std::max(max_rel, c->max_rel_error);
    }
    check_line = absl::StrCat("check: ", pass ? "PASS" : "FAIL", " against ", expected->how,
                              " (max abs error ", max_abs, ", max rel error ", max_rel, ")");
    check_json = {{"pass", pass},
                  {"reference", expected->how},
                  {"max_abs_error", max_abs},
                  {"max_rel_error", max_rel}};
    if (!pass) exit_code = 2;
  }

  const std::vector<CompiledKernel>& kernels = ex.model().kernels;
  const double total = Median(total_secs);
  if (o.json) {
    nlohmann::json out;
    out["latency_seconds"] = total;
    out["run_secs"] = total_secs;
    out["packed_calls"] = ex.packed_calls();
    out["packing_seconds"] = ex.packing_seconds();
    for (size_t c = 0; c < ncalls; ++c) {
      const CompiledKernel& k = kernels[plan.calls[c].task];
      out["calls"].push_back({{"function", plan.calls[c].function},
                              {"task", k.task},
                              {"schedule", ScheduleName(k.schedule)},
                              {"flops", k.flops},
                              {"seconds", Median(call_secs[c])}});
    }
    if (o.check) out["check"] = check_json;
    std::printf("%s\n", out.dump(2).c_str());
    return exit_code;
  }
  std::printf(
      "%s: %zu kernels per inference, inputs %s\n", o.dir.c_str(), ncalls,
      o.inputs.empty() ? absl::StrCat("random (seed ", o.seed, ")").c_str() : o.inputs.c_str());
  std::printf("latency: %s (median of %d repeats)\n", FormatSeconds(total).c_str(), o.repeat);
  if (ex.packed_calls() > 0) {
    std::printf("packed weights: %d calls, %s once before the runs\n", ex.packed_calls(),
                FormatSeconds(ex.packing_seconds()).c_str());
  }
  std::printf("%-4s %-40s %12s %9s %7s  %s\n", "#", "FUNCTION", "MEDIAN", "GFLOP/s", "SHARE",
              "SCHEDULE");
  double sum = 0;
  for (size_t c = 0; c < ncalls; ++c) sum += Median(call_secs[c]);
  for (size_t c = 0; c < ncalls; ++c) {
    const double t = Median(call_secs[c]);
    const CompiledKernel& k = kernels[plan.calls[c].task];
    std::printf("%-4zu %-40s %12s %9.2f %6.1f%%  %s\n", c, plan.calls[c].function.c_str(),
                FormatSeconds(t).c_str(), k.flops / std::max(t, 1e-12) / 1e9,
                100 * t / std::max(sum, 1e-12), ScheduleName(k.schedule).c_str());
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
                  "Inputs: .npy files, comma-separated in model order, or one .npz holding an "
                  "array per input name (default: seeded random)");
  app->add_option("--repeat", o->repeat, "Timed runs of the whole model (positive)")
      ->capture_default_str();
  app->add_option("--threads", o->threads,
                  "Threads of the kernels; 0: the cores left by other processes, read again "
                  "during the runs (docs/models.md \"Under contention\")")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app->add_option("--seed", o->seed, "Seed of the random inputs")->capture_default_str();
  app->add_option("--save", o->save,
                  "Write the outputs: into a directory (created) as NAME.npy per output name, "
                  "or as one .npz when the path ends in .npz");
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
