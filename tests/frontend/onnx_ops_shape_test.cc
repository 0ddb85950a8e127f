// Tests of frontend/onnx_ops_shape.cc: data-movement ONNX operators (transpose, concat, slice,
// gather, reshape) imported from one-node models and run by the interpreter against values
// worked out by hand, and the shapes they refuse.
#include <string>

#include "gtest/gtest.h"
#include "tests/frontend/onnx_ops_testing.h"

namespace tessera {
namespace {

using onnx_testing::ExpectTensor;
using onnx_testing::OneNodeModel;
using onnx_testing::Tensor;

const Tensor kMatrix{{2, 3}, {1, 2, 3, 4, 5, 6}};

TEST(OnnxOpsShapeTest, TransposeReversesTheAxesByDefault) {
  OneNodeModel m("Transpose");
  m.Input("x", {2, 3});
  ExpectTensor(m.Run({kMatrix}), {{3, 2}, {1, 4, 2, 5, 3, 6}});
}

TEST(OnnxOpsShapeTest, ConcatJoinsAlongItsAxis) {
  OneNodeModel m("Concat");
  m.Input("a", {2, 3}).Input("b", {2, 1}).IntAttr("axis", 1);
  ExpectTensor(m.Run({kMatrix, {{2, 1}, {7, 8}}}), {{2, 4}, {1, 2, 3, 7, 4, 5, 6, 8}});
}

TEST(OnnxOpsShapeTest, SliceWithNegativeEndAndStep) {
  OneNodeModel m("Slice");
  m.Input("x", {2, 3})
      .Constant("starts", {{1}, {0}}, /*int64=*/true)
      .Constant("ends", {{1}, {-1}}, /*int64=*/true)
      .Constant("axes", {{1}, {1}}, /*int64=*/true);
  ExpectTensor(m.Run({kMatrix}), {{2, 2}, {1, 2, 4, 5}});
  OneNodeModel stepped("Slice");
  stepped.Input("x", {2, 3})
      .Constant("starts", {{1}, {0}}, /*int64=*/true)
      .Constant("ends", {{1}, {3}}, /*int64=*/true)
      .Constant("axes", {{1}, {1}}, /*int64=*/true)
      .Constant("steps", {{1}, {2}}, /*int64=*/true);
  ExpectTensor(stepped.Run({kMatrix}), {{2, 2}, {1, 3, 4, 6}});
}

TEST(OnnxOpsShapeTest, GatherPicksRowsByConstantIndices) {
  OneNodeModel m("Gather");
  m.Input("x", {2, 3}).Constant("indices", {{3}, {1, 0, 1}}, /*int64=*/true);
  ExpectTensor(m.Run({kMatrix}), {{3, 3}, {4, 5, 6, 1, 2, 3, 4, 5, 6}});
}

TEST(OnnxOpsShapeTest, ReshapeInfersTheMinusOneExtent) {
  OneNodeModel m("Reshape");
  m.Input("x", {2, 3}).Constant("shape", {{2}, {3, -1}}, /*int64=*/true);
  ExpectTensor(m.Run({kMatrix}), {{3, 2}, {1, 2, 3, 4, 5, 6}});
}

TEST(OnnxOpsShapeTest, ReshapeToAnotherSizeNamesBothShapes) {
  OneNodeModel m("Reshape");
  m.Input("x", {2, 3}).Constant("shape", {{2}, {4, 2}}, /*int64=*/true);
  absl::StatusOr<NDArray> out = m.Run({kMatrix});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(out.status().message()).find("cannot reshape [2, 3] to [4, 2]"),
            std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace tessera
