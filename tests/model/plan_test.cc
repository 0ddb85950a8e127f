#include "model/plan.h"

#include "gtest/gtest.h"
#include "tests/model/model_testing.h"

namespace tessera {
namespace {

using testing::Planned;
using testing::PlanOf;

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
