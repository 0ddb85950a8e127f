#include "model/compile.h"

#include <filesystem>
#include <regex>

#include "absl/strings/match.h"
#include "cuda/module_file.h"
#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "model/reference.h"
#include "rules/default/default_rule.h"
#include "schedule/trace.h"
#include "tests/frontend/model_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "worker/host.h"

namespace tessera {
namespace {

TEST(CompileTest, DefaultsOnlyWritesTheWholeDirectory) {
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("cnn.onnx"));
  ASSERT_TRUE(m.ok()) << m.status();
  ModelCompileOptions options;
  options.target = *ResolveTarget("cpu");
  const std::string dir = testing::ScratchDirUntilTestEnds("compile") + "/out";
  absl::StatusOr<ModelCompileResult> result = CompileModel(*m, dir, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->warnings.empty());
  ASSERT_EQ(result->compiled.kernels.size(), m->tasks.size());
  for (const CompiledKernel& k : result->compiled.kernels) {
    EXPECT_EQ(k.schedule.kind, "default") << k.task;
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + k.artifact)) << k.artifact;
  }
  for (const char* file : {"plan.json", "weights.bin", "model.onnx"}) {
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + file)) << file;
  }
  absl::StatusOr<CompiledModel> back = ReadCompiledModel(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->plan.calls.size(), m->fused.functions.size());
}

// A task whose best record is the default schedule itself (tuning measured it first and found
// nothing faster) says so, rather than passing the default off as a tuned kernel.
TEST(CompileTest, ARecordOfTheDefaultScheduleSaysSo) {
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("cnn.onnx"));
  ASSERT_TRUE(m.ok()) << m.status();
  const Target target = *ResolveTarget("cpu");
  std::unique_ptr<Database> db = NewMemoryDatabase();
  const ExtractedTask& task = m->tasks.back();
  std::optional<Schedule> as_default;
  for (const DefaultRulePtr& rule : DefaultRulesFor(target)) {
    absl::StatusOr<std::optional<Schedule>> applied = rule->Apply(task.func, target);
    ASSERT_TRUE(applied.ok()) << applied.status();
    if (applied->has_value()) {
      as_default = **applied;
      break;
    }
  }
  ASSERT_TRUE(as_default.has_value());
  absl::StatusOr<Workload> workload = db->CommitWorkload(task.func);
  ASSERT_TRUE(workload.ok()) << workload.status();
  TuningRecord record;
  record.workload_id = workload->id;
  record.target = target.ToString();
  record.trace_json = as_default->trace().ToJson();
  record.run_secs = {1e-3};
  record.args = ArgInfosOf(task.func);
  record.verified = true;
  absl::StatusOr<int64_t> id = db->CommitRecord(record);
  ASSERT_TRUE(id.ok()) << id.status();

  ModelCompileOptions options;
  options.target = target;
  options.database = db.get();
  absl::StatusOr<ModelCompileResult> result =
      CompileModel(*m, testing::ScratchDirUntilTestEnds("compile_default_record"), options);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const CompiledKernel& k : result->compiled.kernels) {
    if (k.task != task.name) continue;
    EXPECT_EQ(k.schedule.kind, "tuned");
    EXPECT_EQ(DescribeSchedule(k.schedule),
              "tuned record " + std::to_string(*id) +
                  " (the default schedule, which tuning did not beat)");
  }
}

// A record whose schedule is slower than the default inside the model (here the unscheduled,
// one-thread function, recorded as if it took a nanosecond) loses the runoff in the model: the
// kernel is the default's, and compile says which record lost and by how much. Without the
// runoff the record is taken at its word. The contested task is the model's last convolution:
// its deep reduction runs ~20x slower unscheduled than by default, a gap no interference from
// other processes closes (the first convolution, 3 input channels, is only ~2x slower).
TEST(CompileTest, ATunedKernelSlowerInTheModelGivesWayToTheDefault) {
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("cnn.onnx"));
  ASSERT_TRUE(m.ok()) << m.status();
  const Target target = *ResolveTarget("cpu");
  const ExtractedTask* contested = nullptr;
  for (const ExtractedTask& t : m->tasks) {
    if (absl::StrContains(t.name, "conv")) contested = &t;
  }
  ASSERT_NE(contested, nullptr);
  std::unique_ptr<Database> db = NewMemoryDatabase();
  absl::StatusOr<Workload> workload = db->CommitWorkload(contested->func);
  ASSERT_TRUE(workload.ok()) << workload.status();
  TuningRecord record;
  record.workload_id = workload->id;
  record.target = target.ToString();
  record.trace_json = Trace().ToJson();
  record.run_secs = {1e-9};
  record.args = ArgInfosOf(contested->func);
  record.verified = true;
  absl::StatusOr<int64_t> id = db->CommitRecord(record);
  ASSERT_TRUE(id.ok()) << id.status();

  for (bool runoff : {true, false}) {
    ModelCompileOptions options;
    options.target = target;
    options.database = db.get();
    options.runoff = runoff;
    const std::string dir = testing::ScratchDirUntilTestEnds("compile_runoff");
    absl::StatusOr<ModelCompileResult> result = CompileModel(*m, dir, options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_TRUE(result->warnings.empty());
    const CompiledKernel* kernel = nullptr;
    for (const CompiledKernel& k : result->compiled.kernels) {
      if (k.task == contested->name) kernel = &k;
      EXPECT_TRUE(std::filesystem::exists(dir + "/" + k.artifact)) << k.artifact;
    }
    ASSERT_NE(kernel, nullptr);
    if (runoff) {
      EXPECT_EQ(kernel->schedule.kind, "default") << DescribeSchedule(kernel->schedule);
      const std::regex described("default rule \\w+ \\(tuned record " + std::to_string(*id) +
                                 " ran slower: [0-9.]+ us in the model against the default's "
                                 "[0-9.]+ us, faster in [0-7] of 7 rounds\\)");
      EXPECT_TRUE(std::regex_match(DescribeSchedule(kernel->schedule), described))
          << DescribeSchedule(kernel->schedule);
      // The losing kernel's files are gone: one artifact per kernel.
      size_t shared_objects = 0;
      for (const auto& entry : std::filesystem::directory_iterator(dir + "/kernels")) {
        shared_objects += entry.path().extension() == ".so";
      }
      EXPECT_EQ(shared_objects, result->compiled.kernels.size());
    } else {
      EXPECT_EQ(kernel->schedule.kind, "tuned");
      EXPECT_EQ(DescribeSchedule(kernel->schedule), "tuned record " + std::to_string(*id));
    }
    absl::StatusOr<CompiledModel> back = ReadCompiledModel(dir);
    ASSERT_TRUE(back.ok()) << back.status();
  }
}

TEST(CompileTest, WithoutDefaultsTasksStayUnscheduled) {
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("mlp16.onnx"));
  ASSERT_TRUE(m.ok()) << m.status();
  ModelCompileOptions options;
  options.target = *ResolveTarget("cpu");
  options.apply_defaults = false;
  absl::StatusOr<ModelCompileResult> result =
      CompileModel(*m, testing::ScratchDirUntilTestEnds("compile_plain"), options);
  ASSERT_TRUE(result.ok()) << result.status();
  for (const CompiledKernel& k : result->compiled.kernels) {
    EXPECT_EQ(k.schedule.kind, "unscheduled") << k.task;
  }
}

// A model compiles for a GPU this machine may lack: one cubin per task with its launch
// manifest beside it, no weights to pack, and the plan records the cuda target.
TEST(CompileTest, ACudaTargetWritesACubinAndItsManifestPerTask) {
#if !TESSERA_WITH_CUDA
  GTEST_SKIP() << "built without CUDA";
#endif
  absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath("cnn.onnx"));
  ASSERT_TRUE(m.ok()) << m.status();
  ModelCompileOptions options;
  options.target = *ResolveTarget("cuda -arch=sm_80");
  const std::string dir = testing::ScratchDirUntilTestEnds("compile_cuda") + "/out";
  absl::StatusOr<ModelCompileResult> result = CompileModel(*m, dir, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE(result->warnings.empty());
  absl::StatusOr<CompiledModel> back = ReadCompiledModel(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(absl::StartsWith(back->target, "cuda -arch=sm_80")) << back->target;
  ASSERT_EQ(back->kernels.size(), m->tasks.size());
  for (const CompiledKernel& k : back->kernels) {
    EXPECT_EQ(k.schedule.kind, "default") << k.task;
    EXPECT_FALSE(k.prepack.has_value()) << k.task;
    EXPECT_TRUE(absl::EndsWith(k.artifact, ".cubin")) << k.artifact;
    absl::StatusOr<CudaModuleFile> manifest = ReadCudaManifest(dir + "/" + k.artifact);
    ASSERT_TRUE(manifest.ok()) << manifest.status();
    EXPECT_EQ(manifest->arch, "sm_80");
    ASSERT_FALSE(manifest->kernels.empty()) << k.task;
    EXPECT_EQ(manifest->kernels[0].name, k.symbol);
  }
}

// What the GPU runs, checked without one: every task of the test models scheduled by the cuda
// default rules, put in place of its functions, and the model run by the interpreter matches
// onnxruntime's outputs.
TEST(CompileTest, GpuSchedulesOfTheTestModelsMatchOnnxruntime) {
  const Target cuda = *ResolveTarget("cuda -arch=sm_80");
  for (const std::string name : {"cnn", "encoder", "decoder"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<LoadedModel> m = LoadModel(testing::ModelDataPath(name + ".onnx"));
    ASSERT_TRUE(m.ok()) << m.status();
    IRModule tasks;
    for (const ExtractedTask& t : m->tasks) tasks.Update(t.func.WithName(t.name));
    std::vector<DefaultScheduleEntry> rules;
    absl::StatusOr<IRModule> scheduled =
        ApplyDefaultSchedule(tasks, cuda, DefaultRulesFor(cuda), &rules);
    ASSERT_TRUE(scheduled.ok()) << scheduled.status();
    for (const DefaultScheduleEntry& d : rules) EXPECT_FALSE(d.rule.empty()) << d.function;
    FusedGraph on_gpu = m->fused;
    for (const ExtractedTask& t : m->tasks) {
      absl::StatusOr<PrimFunc> f = scheduled->Lookup(t.name);
      ASSERT_TRUE(f.ok()) << f.status();
      for (int i : t.functions) on_gpu.functions[i].func = *f;
    }
    testing::TestModel expected = testing::LoadTestModel(name);
    absl::StatusOr<std::vector<NDArray>> out = InterpretModel(m->graph, on_gpu, {expected.input});
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    absl::StatusOr<Comparison> c = Compare((*out)[0], expected.expected, 1e-4, 1e-4);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->ok()) << "max abs error " << c->max_abs_error;
  }
}

}  // namespace
}  // namespace tessera
