#include "model/compile.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "codegen/codegen_c.h"
#include "ir/prepack.h"
#include "ir/structural_hash.h"
#include "model/kernel_runoff.h"
#include "model/planner.h"
#include "rules/default/default_rule.h"
#include "tuner/apply_best.h"
#include "worker/backends.h"
#include "worker/builder.h"

namespace tessera {
namespace {

// How the executor runs a kernel that packs its layout-free weights: the packing once per call
// site, then the kernel per inference.
KernelPrepack PrepackOf(const PrepackSplit& split, const std::string& symbol) {
  auto indices = [](const std::vector<PrepackArg>& args) {
    std::vector<int> out;
    for (const PrepackArg& a : args) out.push_back(a.packed ? -1 - a.index : a.index);
    return out;
  };
  KernelPrepack p;
  p.symbol = PrepackSymbol(symbol);
  p.args = indices(split.prepack_args);
  p.kernel_symbol = PrepackedSymbol(symbol);
  p.kernel_args = indices(split.prepacked_args);
  for (const Buffer& b : split.packed)
    p.packed_bytes.push_back(b.NumElements() * b.dtype().bytes());
  return p;
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// What the runoff in the model measured for kernel `k`, in words.
std::string InModelNote(const KernelTimesInModel& times, size_t k) {
  return absl::StrFormat(
      "%.1f us in the model against the default's %.1f us, faster in %d of %d rounds",
      times.first_secs[k] * 1e6, times.second_secs[k] * 1e6, times.first_rounds_won[k],
      times.rounds);
}

// Times every tuned kernel that is not the default schedule against the default schedule's
// kernel inside the model (model/kernel_runoff.h) and keeps the tuned one only where it won
// beyond the noise (FirstWinsBeyondNoise): otherwise the default replaces it, with a note naming
// the record. A runoff that cannot run leaves the tuned kernels and says why in a warning.
void RunOffInModel(const LoadedModel& model, const Target& target,
                   const IRModule& default_scheduled,
                   const std::vector<DefaultScheduleEntry>& default_rules, Builder* builder,
                   const std::string& out_dir, const std::string& weights,
                   ModelCompileResult* result) {
  CompiledModel& compiled = result->compiled;
  std::vector<size_t> contested;
  std::vector<BuildInput> inputs;
  for (size_t i = 0; i < compiled.kernels.size(); ++i) {
    const KernelSchedule& s = compiled.kernels[i].schedule;
    if (s.kind != "tuned" || !s.note.empty()) continue;
    absl::StatusOr<PrimFunc> as_default = default_scheduled.Lookup(model.tasks[i].name);
    if (!as_default.ok()) continue;
    contested.push_back(i);
    inputs.push_back({*as_default, target});
  }
  if (contested.empty()) return;
  std::vector<BuildResult> built = builder->Build(inputs);
  CompiledModel with_defaults = compiled;
  std::vector<size_t> raced;
  for (size_t j = 0; j < contested.size(); ++j) {
    if (!built[j].ok()) continue;
    CompiledKernel& k = with_defaults.kernels[contested[j]];
    k.schedule = KernelSchedule();
    k.schedule.kind = "default";
    for (const DefaultScheduleEntry& d : default_rules) {
      if (d.function == k.task) k.schedule.rule = d.rule;
    }
    k.artifact = "kernels/" + std::filesystem::path(built[j].artifact_path).filename().string();
    k.symbol = built[j].symbol;
    k.prepack.reset();
    absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(inputs[j].func);
    if (split.ok() && split->has_value()) k.prepack = PrepackOf(**split, k.symbol);
    raced.push_back(contested[j]);
  }
  if (raced.empty()) return;
  absl::StatusOr<KernelTimesInModel> times =
      TimeKernelsInModel(compiled, with_defaults, out_dir, weights);
  if (!times.ok()) {
    result->warnings.push_back(
        absl::StrCat("the tuned kernels were not timed against their defaults in the model (",
                     times.status().message(), "); kept as tuned"));
    return;
  }
  for (size_t i : raced) {
    const bool tuned_wins = FirstWinsBeyondNoise(*times, i);
    CompiledKernel& loser = tuned_wins ? with_defaults.kernels[i] : compiled.kernels[i];
    std::error_code ec;
    std::filesystem::remove(out_dir + "/" + loser.artifact, ec);
    std::filesystem::remove(
        std::filesystem::path(out_dir + "/" + loser.artifact).replace_extension(".c"), ec);
    if (tuned_wins) {
      compiled.kernels[i].schedule.note = InModelNote(*times, i);
    } else {
      const int64_t record = compiled.kernels[i].schedule.record;
      const bool slower = times->first_secs[i] > times->second_secs[i];
      compiled.kernels[i] = with_defaults.kernels[i];
      compiled.kernels[i].schedule.note = absl::StrCat(
          "tuned record ", record,
          slower ? " ran slower: " : " was not faster beyond the noise: ", InModelNote(*times, i));
    }
  }
}

}  // namespace

absl::StatusOr<ModelCompileResult> CompileModel(const LoadedModel& model,
                                                const std::string& out_dir,
                                                const ModelCompileOptions& options) {
  const Target& target = options.target;
  IRModule mod;
  for (const ExtractedTask& t : model.tasks) mod.Update(t.func.WithName(t.name));
  std::vector<ApplyBestEntry> hits;
  IRModule scheduled = mod;
  if (options.database != nullptr) {
    TESSERA_ASSIGN_OR_RETURN(scheduled, ApplyBest(mod, target, options.database, &hits));
  }
  // What the default rules make of each task, to tell a tuned record that is the default
  // schedule itself (the tuning measured it first and nothing it found was faster).
  absl::StatusOr<IRModule> default_scheduled = absl::NotFoundError("no tuned record");
  std::vector<DefaultScheduleEntry> default_rules;  // of default_scheduled
  if (std::any_of(hits.begin(), hits.end(), [](const ApplyBestEntry& h) { return h.hit; })) {
    default_scheduled = ApplyDefaultSchedule(mod, target, DefaultRulesFor(target), &default_rules);
  }
  std::vector<DefaultScheduleEntry> defaults;
  if (options.apply_defaults) {
    TESSERA_ASSIGN_OR_RETURN(
        scheduled, ApplyDefaultSchedule(scheduled, target, DefaultRulesFor(target), &defaults));
  }

  std::error_code ec;
  std::filesystem::create_directories(out_dir + "/kernels", ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", out_dir, ": ", ec.message()));
  // C for cpu, NVRTC for cuda; a given directory is kept.
  BackendBuildOptions builder_options;
  builder_options.work_dir = out_dir + "/kernels";
  std::unique_ptr<Builder> builder = NewBuilder(target, builder_options);
  std::vector<BuildInput> inputs;
  for (const ExtractedTask& t : model.tasks) inputs.push_back({*scheduled.Lookup(t.name), target});
  std::vector<BuildResult> built = builder->Build(inputs);

  ModelCompileResult result;
  CompiledModel& compiled = result.compiled;
  compiled.target = target.ToString();
  compiled.input_shapes = options.input_shapes;
  for (size_t i = 0; i < model.tasks.size(); ++i) {
    const ExtractedTask& t = model.tasks[i];
    CompiledKernel k;
    k.task = t.name;
    k.weight = t.weight;
    k.flops = t.flops;
    k.structural_hash = StructuralHashHex(t.func);
    for (const ApplyBestEntry& h : hits) {
      if (h.function == t.name && h.hit) {
        k.schedule.kind = "tuned";
        k.schedule.record = h.record_id;
        k.schedule.record_seconds = h.record_secs;
        absl::StatusOr<PrimFunc> as_default =
            default_scheduled.ok() ? default_scheduled->Lookup(t.name) : default_scheduled.status();
        absl::StatusOr<PrimFunc> as_tuned = scheduled.Lookup(t.name);
        if (as_default.ok() && as_tuned.ok() &&
            StructuralHashHex(*as_default) == StructuralHashHex(*as_tuned)) {
          k.schedule.note = "the default schedule, which tuning did not beat";
        }
      }
    }
    for (const DefaultScheduleEntry& d : defaults) {
      if (d.function == t.name && !d.rule.empty() && !d.already_scheduled) {
        k.schedule = KernelSchedule();
        k.schedule.kind = "default";
        k.schedule.rule = d.rule;
      }
    }
    BuildResult kernel = built[i];
    std::optional<PrepackSplit> split;
    if (kernel.ok()) {
      // Weights are packed at load by a cpu kernel's own packing function; a GPU kernel reads
      // them as they are.
      absl::StatusOr<std::optional<PrepackSplit>> s =
          target.is_cpu() ? SplitPrepack(inputs[i].func) : std::optional<PrepackSplit>();
      if (s.ok()) split = *s;
    } else if (target.is_cuda()) {
      // An unscheduled function has no thread bindings: on a GPU there is nothing to fall
      // back to.
      return absl::InternalError(absl::StrCat(t.name, ": ", DescribeSchedule(k.schedule),
                                              " did not build for ", target.ToString(), ": ",
                                              kernel.error_msg));
    } else {
      result.warnings.push_back(absl::StrCat(t.name, ": ", DescribeSchedule(k.schedule),
                                             " did not build (", kernel.error_msg,
                                             "); using the unscheduled function"));
      TESSERA_ASSIGN_OR_RETURN(kernel, BuildOne(builder.get(), t.func.WithName(t.name), target));
      k.schedule = KernelSchedule();
      k.schedule.note = "scheduled function did not build";
    }
    k.artifact = "kernels/" + std::filesystem::path(kernel.artifact_path).filename().string();
    k.symbol = kernel.symbol;
    if (split.has_value()) k.prepack = PrepackOf(*split, kernel.symbol);
    compiled.kernels.push_back(std::move(k));
  }
  compiled.plan = PlanModel(model.graph, model.fused, model.tasks);
  const std::string weights = WeightsBlob(model.graph, compiled.plan);
  // The runoff times kernels in this process, which only a cpu model can (a GPU's kernels are
  // timed by the tuner in its place already: nothing else shares the GPU between launches).
  if (options.runoff && target.is_cpu() && default_scheduled.ok()) {
    RunOffInModel(model, target, *default_scheduled, default_rules, builder.get(), out_dir, weights,
                  &result);
  }
  TESSERA_RETURN_IF_ERROR(WriteCompiledModel(out_dir, compiled));
  TESSERA_RETURN_IF_ERROR(WriteFile(out_dir + "/weights.bin", weights));
  std::filesystem::copy_file(model.path, out_dir + "/" + compiled.model,
                             std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot copy ", model.path, ": ", ec.message()));
  return result;
}

}  // namespace tessera
