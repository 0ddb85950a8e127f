#include "model/reference.h"

#include "gtest/gtest.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace {

TEST(ReferenceTest, InterpretedModelMatchesOnnxruntime) {
  testing::TestModel m = testing::LoadTestModel("cnn");
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  absl::StatusOr<std::vector<NDArray>> out = InterpretModel(m.graph, *fused, {m.input});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_TRUE(Compare((*out)[0], m.expected, 1e-4, 1e-4)->ok());
  EXPECT_EQ(InterpretModel(m.graph, *fused, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReferenceTest, SmallModelsAreCheckedByTheInterpreter) {
  testing::TestModel m = testing::LoadTestModel("mlp16");
  absl::StatusOr<ModelReferenceOutputs> ref =
      ComputeReference(testing::ModelDataPath("mlp16.onnx"), {}, {m.input});
  ASSERT_TRUE(ref.ok()) << ref.status();
  EXPECT_EQ(ref->how, "the interpreter on the unfused graph");
  ASSERT_EQ(ref->outputs.size(), 1u);
  // A float16 model: within 2e-3 of onnxruntime (docs/models.md).
  EXPECT_TRUE(Compare(ref->outputs[0], m.expected, 2e-3, 2e-3)->ok());
  EXPECT_EQ(ComputeReference("/nonexistent/m.onnx", {}, {}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera
