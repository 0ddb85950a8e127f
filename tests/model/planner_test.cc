#include "model/planner.h"

#include "gtest/gtest.h"
#include "tests/model/model_testing.h"

namespace tessera {
namespace {

using testing::Planned;
using testing::PlanOf;

TEST(PlannerTest, CallsFollowTheFusedFunctionsAndTheirTasks) {
  Planned p = PlanOf("cnn");
  ASSERT_EQ(p.plan.calls.size(), 6u);
  EXPECT_EQ(p.plan.calls[2].task, p.plan.calls[3].task);  // the two identical conv blocks
  EXPECT_EQ(p.plan.calls[2].function, "fused_conv_batch_normalization_relu_2");
  ASSERT_EQ(p.plan.inputs.size(), 1u);
  EXPECT_EQ(p.plan.inputs[0].first, "x");
  ASSERT_EQ(p.plan.outputs.size(), 1u);
  EXPECT_EQ(p.plan.outputs[0].second.shape, (std::vector<int64_t>{1, 10}));
}

TEST(PlannerTest, IntermediatesShareTheArena) {
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

TEST(PlannerTest, WeightsBlobHoldsTheConstantsAtTheirOffsets) {
  Planned p = PlanOf("decoder");
  const std::string weights = WeightsBlob(p.model.graph, p.plan);
  EXPECT_EQ(static_cast<int64_t>(weights.size()), p.plan.weights_bytes);
}

}  // namespace
}  // namespace tessera
