// Which arguments are model files, --input-shape parsing (errors name the value), and loading a
// model into tasks.
#include "model/load.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(LoadTest, OnlyOnnxFilesAreModels) {
  EXPECT_TRUE(IsModelPath("net.onnx"));
  EXPECT_TRUE(IsModelPath("models/cnn.onnx"));
  EXPECT_FALSE(IsModelPath("GMM"));
  EXPECT_FALSE(IsModelPath("gmm.ir"));
}

TEST(LoadTest, InputShapesParseNamesAndExtents) {
  absl::StatusOr<InputShapes> shapes = ParseInputShapes({"x=1,3,16,16", "scalar="});
  ASSERT_TRUE(shapes.ok()) << shapes.status();
  EXPECT_EQ(shapes->at("x"), (std::vector<int64_t>{1, 3, 16, 16}));
  EXPECT_TRUE(shapes->at("scalar").empty());
}

TEST(LoadTest, MalformedOrRepeatedInputShapesAreNamed) {
  EXPECT_EQ(ParseInputShapes({"x=1,0"}).status().message(),
            "--input-shape x=1,0: expected NAME=D0,D1,... with positive extents");
  EXPECT_EQ(ParseInputShapes({"=4"}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseInputShapes({"x=1", "x=2"}).status().message(), "--input-shape: x is given twice");
}

TEST(LoadTest, LoadModelExtractsWeightedTasks) {
  absl::StatusOr<LoadedModel> model =
      LoadModel(std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/cnn.onnx");
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_FALSE(model->tasks.empty());
  EXPECT_GT(model->total_flops, 0);
  EXPECT_FALSE(model->fused.functions.empty());
}

TEST(LoadTest, AMissingModelIsAnErrorNamingIt) {
  absl::StatusOr<LoadedModel> model = LoadModel("/nonexistent/net.onnx");
  ASSERT_FALSE(model.ok());
  EXPECT_NE(std::string(model.status().message()).find("/nonexistent/net.onnx"), std::string::npos)
      << model.status();
}

}  // namespace
}  // namespace tessera
