#include "frontend/model_plan.h"

#include "gtest/gtest.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace {

struct Planned {
  testing::TestModel model;
  FusedGraph fused;
  std::vector<ExtractedTask> tasks;
  ModelPlan plan;
};

Planned PlanOf(const std::string& name) {
  Planned p;
  p.model = testing::LoadTestModel(name);
  absl::StatusOr<FusedGraph> fused = FuseGraph(p.model.graph);
  EXPECT_TRUE(fused.ok()) << fused.status();
  if (!fused.ok()) return p;
  p.fused = *fused;
  p.tasks = ExtractTasks(p.fused);
  p.plan = PlanModel(p.model.graph, p.fused, p.tasks);
  return p;
}

TEST(ModelPlanTest, CallsFollowTheFusedFunctionsAndTheirTasks) {
  Planned p = PlanOf("cnn");
  ASSERT_EQ(p.plan.calls.size(), 6u);
  EXPECT_EQ(p.plan.calls[2].task, p.plan.calls[3].task);  // the two identical conv blocks
  EXPECT_EQ(p.plan.calls[2].function, "fused_conv_batch_normalization_relu_2");
  ASSERT_EQ(p.plan.inputs.size(), 1u);
  EXPECT_EQ(p.plan.inputs[0].first, "x");
  ASSERT_EQ(p.plan.outputs.size(), 1u);
  EXPECT_EQ(p.plan.outputs[0].second.shape, (std::vector<int64_t>{1, 10}));
}

TEST(ModelPlanTest, IntermediatesShareTheArena) {
  Planned p = PlanOf("encoder");
  EXPECT_GT(p.plan.arena_bytes, 0);
  EXPECT_LT(p.plan.arena_bytes, p.plan.unshared_bytes);
  // No two intermediates that one call touches overlap in the arena.
  for (const PlanCall& c : p.plan.calls) {
    for (size_t a = 0; a < c.args.size(); ++a) {
      for (size_t b = a + 1; b < c.args.size(); ++b) {
        const PlanStorage& x = p.plan.storages[c.args[a].storage];
        const PlanStorage& y = p.plan.storages[c.args[b].storage];
        if (x.kind != StorageKind::kIntermediate || y.kind != StorageKind::kIntermediate) continue;
        if (c.args[a].storage == c.args[b].storage) continue;
        EXPECT_TRUE(x.offset + x.bytes <= y.offset || y.offset + y.bytes <= x.offset)
            << c.function << ": " << x.name << " and " << y.name;
      }
    }
  }
}

TEST(ModelPlanTest, JsonRoundTrips) {
  Planned p = PlanOf("decoder");
  absl::StatusOr<ModelPlan> back = PlanFromJson(PlanToJson(p.plan));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PlanToJson(*back), PlanToJson(p.plan));
  nlohmann::json broken = PlanToJson(p.plan);
  broken.erase("calls");
  EXPECT_EQ(PlanFromJson(broken).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ModelPlanTest, ExecutesWithTheWeightsBlob) {
  Planned p = PlanOf("decoder");
  std::string weights = WeightsBlob(p.model.graph, p.plan);
  EXPECT_EQ(static_cast<int64_t>(weights.size()), p.plan.weights_bytes);
  EXPECT_FALSE(PlanMemory::Create(p.plan, weights.substr(1)).ok());
  absl::StatusOr<PlanMemory> memory = PlanMemory::Create(p.plan, weights);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_FALSE(memory->SetInput(0, NDArray::Empty(DataType::Float32(), {3})).ok());
  ASSERT_TRUE(memory->SetInput(0, p.model.input).ok());
  int calls = 0;
  ASSERT_TRUE(ExecutePlan(p.plan, &*memory, [&](int call, const std::vector<void*>& args) {
                EXPECT_EQ(call, calls++);
                EXPECT_EQ(args.size(), p.fused.functions[call].func.params().size());
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(calls, static_cast<int>(p.fused.functions.size()));
}

}  // namespace
}  // namespace tessera
