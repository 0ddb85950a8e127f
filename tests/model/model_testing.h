// Helpers of the model tests: a test model (tests/frontend/data) fused, its tasks and plan.
#ifndef TESSERA_TESTS_MODEL_MODEL_TESTING_H_
#define TESSERA_TESTS_MODEL_MODEL_TESTING_H_

#include <string>
#include <vector>

#include "frontend/fuse_ops.h"
#include "frontend/task_extraction.h"
#include "gtest/gtest.h"
#include "model/planner.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace testing {

struct Planned {
  TestModel model;
  FusedGraph fused;
  std::vector<ExtractedTask> tasks;
  ModelPlan plan;
};

// Loads NAME (LoadTestModel), fuses and plans it; fails the test on error.
inline Planned PlanOf(const std::string& name) {
  Planned p;
  p.model = LoadTestModel(name);
  absl::StatusOr<FusedGraph> fused = FuseGraph(p.model.graph);
  EXPECT_TRUE(fused.ok()) << fused.status();
  if (!fused.ok()) return p;
  p.fused = *fused;
  p.tasks = ExtractTasks(p.fused);
  p.plan = PlanModel(p.model.graph, p.fused, p.tasks);
  return p;
}

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_MODEL_MODEL_TESTING_H_
