#include "model/compiled_model.h"

#include <fstream>

#include "gtest/gtest.h"
#include "tests/model/model_testing.h"
#include "tests/testing/scoped_temp_dir.h"

namespace tessera {
namespace {

CompiledModel SmallModel() {
  CompiledModel m;
  m.target = "cpu";
  m.input_shapes = {{"x", {1, 4}}};
  m.plan = testing::PlanOf("cnn").plan;
  for (size_t t = 0; t < 5; ++t) {
    CompiledKernel k;
    k.task = "task" + std::to_string(t);
    k.artifact = "kernels/k" + std::to_string(t) + ".so";
    k.symbol = "k" + std::to_string(t);
    m.kernels.push_back(k);
  }
  m.kernels[0].schedule.kind = "tuned";
  m.kernels[0].schedule.record = 7;
  m.kernels[0].schedule.record_seconds = 1.5e-6;
  m.kernels[1].schedule.kind = "default";
  m.kernels[1].schedule.rule = "CpuDefault";
  m.kernels[2].prepack = KernelPrepack{"k2_prepack", {1}, "k2_prepacked", {0, -1, 2}, {256}};
  return m;
}

TEST(CompiledModelTest, WhatIsWrittenReadsBack) {
  const std::string dir = testing::ScratchDirUntilTestEnds("compiled_model");
  const CompiledModel m = SmallModel();
  ASSERT_TRUE(WriteCompiledModel(dir, m).ok());
  absl::StatusOr<CompiledModel> back = ReadCompiledModel(dir);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->target, "cpu");
  EXPECT_EQ(back->input_shapes, m.input_shapes);
  ASSERT_EQ(back->kernels.size(), 5u);
  EXPECT_EQ(back->kernels[0].schedule.record, 7);
  EXPECT_EQ(back->kernels[1].schedule.rule, "CpuDefault");
  ASSERT_TRUE(back->kernels[2].prepack.has_value());
  EXPECT_EQ(back->kernels[2].prepack->kernel_args, (std::vector<int>{0, -1, 2}));
  EXPECT_EQ(PlanToJson(back->plan), PlanToJson(m.plan));
  // Written again, byte for byte the same file.
  const std::string again = testing::ScratchDirUntilTestEnds("compiled_model_again");
  ASSERT_TRUE(WriteCompiledModel(again, *back).ok());
  std::ifstream a(dir + "/plan.json"), b(again + "/plan.json");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
            std::string(std::istreambuf_iterator<char>(b), {}));
}

TEST(CompiledModelTest, WhatIsNotAPlanIsNamed) {
  EXPECT_EQ(ReadCompiledModel("/nonexistent").status().message(),
            "cannot read /nonexistent/plan.json");
  const std::string dir = testing::ScratchDirUntilTestEnds("compiled_model_bad");
  std::ofstream(dir + "/plan.json") << R"({"format": "other", "plan": {}, "kernels": []})";
  EXPECT_EQ(ReadCompiledModel(dir).status().message(),
            dir + "/plan.json: format 'other', this runtime reads tessera-model-plan-1");
  // A call whose task has no kernel.
  CompiledModel m = SmallModel();
  m.kernels.pop_back();
  ASSERT_TRUE(WriteCompiledModel(dir, m).ok());
  absl::Status s = ReadCompiledModel(dir).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("has no kernel"), std::string::npos) << s;
}

}  // namespace
}  // namespace tessera
