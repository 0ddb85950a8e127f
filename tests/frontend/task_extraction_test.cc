#include "frontend/task_extraction.h"

#include "gtest/gtest.h"
#include "ir/flops.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace {

std::vector<int> Weights(const std::vector<ExtractedTask>& tasks) {
  std::vector<int> w;
  for (const ExtractedTask& t : tasks) w.push_back(t.weight);
  return w;
}

std::vector<ExtractedTask> TasksOf(const std::string& name, FusedGraph* fused = nullptr) {
  testing::TestModel m = testing::LoadTestModel(name);
  absl::StatusOr<FusedGraph> f = FuseGraph(m.graph);
  EXPECT_TRUE(f.ok()) << f.status();
  if (!f.ok()) return {};
  if (fused != nullptr) *fused = *f;
  return ExtractTasks(*f);
}

TEST(TaskExtractionTest, CnnDedupesTheTwoIdenticalConvBlocks) {
  FusedGraph fused;
  std::vector<ExtractedTask> tasks = TasksOf("cnn", &fused);
  ASSERT_EQ(tasks.size(), 5u);
  EXPECT_EQ(Weights(tasks), (std::vector<int>{1, 1, 2, 1, 1}));
  EXPECT_EQ(tasks[2].functions, (std::vector<int>{2, 3}));
  // conv 8->8 3x3 on 8x8 with bias, batch norm and relu: 2*8*8*8*8*9 + epilogue.
  EXPECT_GE(tasks[2].flops, 2.0 * 8 * 8 * 8 * 8 * 9);
  EXPECT_EQ(tasks[2].flops, EstimateFlops(fused.functions[3].func));
}

TEST(TaskExtractionTest, EncoderSharesProjectionsTransposesAndLayerNorms) {
  std::vector<ExtractedTask> tasks = TasksOf("encoder");
  ASSERT_EQ(tasks.size(), 11u);
  // q/k/v projections (x3), the two head-split transposes of q and v (x2), the two layer norms.
  EXPECT_EQ(Weights(tasks), (std::vector<int>{3, 2, 1, 1, 1, 1, 1, 1, 2, 1, 1}));
  int total = 0;
  for (const ExtractedTask& t : tasks) total += t.weight;
  EXPECT_EQ(total, 15);
}

TEST(TaskExtractionTest, DecoderTaskWeightsCoverEveryFunction) {
  FusedGraph fused;
  std::vector<ExtractedTask> tasks = TasksOf("decoder", &fused);
  int total = 0;
  for (const ExtractedTask& t : tasks) total += t.weight;
  EXPECT_EQ(total, static_cast<int>(fused.functions.size()));
  EXPECT_LT(tasks.size(), fused.functions.size());
}

}  // namespace
}  // namespace tessera
