// Tests of frontend/onnx_ops_resize.cc: Resize models of tests/frontend/data against
// onnxruntime (every nearest and coordinate mode, linear, scales and sizes, opsets 11, 13 and
// 19), one-node models against values worked out by hand, and the attributes it refuses.
#include <string>

#include "gtest/gtest.h"
#include "tests/frontend/model_testing.h"
#include "tests/frontend/onnx_ops_testing.h"

namespace tessera {
namespace {

using onnx_testing::ExpectTensor;
using onnx_testing::OneNodeModel;
using onnx_testing::Tensor;
using testing::ExpectMatchesOnnxRuntime;

// Twelve Resize nodes over x [1, 2, 5, 7] (make_models.py: make_resize).
TEST(OnnxOpsResizeTest, NearestAndLinearModesMatchOnnxRuntime) {
  ExpectMatchesOnnxRuntime("resize", 1e-5);
}
// Empty roi (an initializer and a Constant node) and empty scales beside sizes, opset 11.
TEST(OnnxOpsResizeTest, OpsetElevenEmptyInputsMatchOnnxRuntime) {
  ExpectMatchesOnnxRuntime("resize11", 1e-5);
}
// axes, half_pixel_symmetric, explicit antialias=0 and keep_aspect_ratio_policy, opset 19.
TEST(OnnxOpsResizeTest, OpsetNineteenAxesMatchOnnxRuntime) {
  ExpectMatchesOnnxRuntime("resize19", 1e-5);
}

TEST(OnnxOpsResizeTest, NearestDoublesEachPixel) {
  OneNodeModel m("Resize");
  m.Input("x", {1, 1, 2, 2}).Omitted().Constant("scales", {{4}, {1, 1, 2, 2}});
  m.StringAttr("mode", "nearest").StringAttr("coordinate_transformation_mode", "asymmetric");
  ExpectTensor(m.Run({{{1, 1, 2, 2}, {1, 2, 3, 4}}}),
               {{1, 1, 4, 4}, {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}});
}

TEST(OnnxOpsResizeTest, LinearAlignCornersInterpolatesBetweenTheEnds) {
  OneNodeModel m("Resize");
  m.Input("x", {1, 1, 2, 2}).Omitted().Omitted().Constant("sizes", {{4}, {1, 1, 3, 3}}, true);
  m.StringAttr("mode", "linear").StringAttr("coordinate_transformation_mode", "align_corners");
  ExpectTensor(m.Run({{{1, 1, 2, 2}, {0, 2, 4, 6}}}), {{1, 1, 3, 3}, {0, 1, 2, 2, 3, 4, 4, 5, 6}});
}

TEST(OnnxOpsResizeTest, ScalesOfOneAreAView) {
  OneNodeModel m("Resize");
  m.Input("x", {1, 3}).Omitted().Constant("scales", {{2}, {1, 1}});
  ExpectTensor(m.Run({{{1, 3}, {1, 2, 3}}}), {{1, 3}, {1, 2, 3}});
}

void ExpectRefused(OneNodeModel& m, const std::string& message) {
  absl::StatusOr<NDArray> out = m.Run({{{1, 1, 2, 2}, {1, 2, 3, 4}}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(), "m.onnx: node 'the_node' (Resize): " + message);
}

TEST(OnnxOpsResizeTest, RefusesWhatItDoesNotCompute) {
  OneNodeModel cubic("Resize");
  cubic.Input("x", {1, 1, 2, 2}).Omitted().Constant("scales", {{4}, {1, 1, 2, 2}});
  cubic.StringAttr("mode", "cubic");
  ExpectRefused(cubic, "unsupported attribute mode=cubic");
  OneNodeModel crop("Resize");
  crop.Input("x", {1, 1, 2, 2}).Constant("roi", {{8}, {0, 0, 0, 0, 1, 1, 1, 1}});
  crop.Constant("scales", {{4}, {1, 1, 2, 2}});
  crop.StringAttr("coordinate_transformation_mode", "tf_crop_and_resize");
  ExpectRefused(crop, "unsupported attribute coordinate_transformation_mode=tf_crop_and_resize");
  OneNodeModel antialias("Resize", 18);
  antialias.Input("x", {1, 1, 2, 2}).Omitted().Constant("scales", {{4}, {1, 1, 0.5, 0.5}});
  antialias.StringAttr("mode", "linear").IntAttr("antialias", 1);
  ExpectRefused(antialias, "unsupported attribute antialias=1");
  OneNodeModel runtime_scales("Resize");
  runtime_scales.Input("x", {1, 1, 2, 2}).Omitted().Input("s", {4});
  absl::StatusOr<NDArray> out =
      runtime_scales.Run({{{1, 1, 2, 2}, {1, 2, 3, 4}}, {{4}, {1, 1, 2, 2}}});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().message(),
            "m.onnx: node 'the_node' (Resize): input 2 (s) must be a constant");
  OneNodeModel neither("Resize");
  neither.Input("x", {1, 1, 2, 2});
  ExpectRefused(neither, "neither scales nor sizes is given");
}

}  // namespace
}  // namespace tessera
