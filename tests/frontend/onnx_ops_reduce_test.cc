// Tests of frontend/onnx_ops_reduce.cc: reductions (axes as input or attribute by opset,
// keepdims), softmax and log-softmax, and layer normalization imported from one-node models
// and run by the interpreter against values worked out by hand.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/frontend/onnx_ops_testing.h"

namespace tessera {
namespace {

using onnx_testing::ExpectTensor;
using onnx_testing::OneNodeModel;
using onnx_testing::Tensor;

const Tensor kMatrix{{2, 3}, {1, 2, 3, 4, 5, 6}};

TEST(OnnxOpsReduceTest, ReduceSumTakesAxesAsAnInputFromOpset13) {
  OneNodeModel keep("ReduceSum", 13);
  keep.Input("x", {2, 3}).Constant("axes", {{1}, {1}}, /*int64=*/true);
  ExpectTensor(keep.Run({kMatrix}), {{2, 1}, {6, 15}});
  OneNodeModel drop("ReduceSum", 13);
  drop.Input("x", {2, 3}).Constant("axes", {{1}, {0}}, /*int64=*/true).IntAttr("keepdims", 0);
  ExpectTensor(drop.Run({kMatrix}), {{3}, {5, 7, 9}});
}

TEST(OnnxOpsReduceTest, ReduceMaxAndMeanTakeAxesAsAnAttributeBeforeOpset18) {
  OneNodeModel max("ReduceMax", 13);
  max.Input("x", {2, 3}).IntsAttr("axes", {-1}).IntAttr("keepdims", 0);
  ExpectTensor(max.Run({kMatrix}), {{2}, {3, 6}});
  OneNodeModel mean("ReduceMean", 13);
  mean.Input("x", {2, 3}).IntsAttr("axes", {0});
  ExpectTensor(mean.Run({kMatrix}), {{1, 3}, {2.5, 3.5, 4.5}});
}

TEST(OnnxOpsReduceTest, NoAxesReducesEverything) {
  OneNodeModel m("ReduceSumSquare", 13);
  m.Input("x", {2, 3});
  ExpectTensor(m.Run({kMatrix}), {{1, 1}, {1 + 4 + 9 + 16 + 25 + 36}});
}

TEST(OnnxOpsReduceTest, AxesAttributeIsRefusedWhereItIsAnInput) {
  OneNodeModel m("ReduceSum", 13);
  m.Input("x", {2, 3}).IntsAttr("axes", {1});
  absl::StatusOr<NDArray> out = m.Run({kMatrix});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(out.status().message()).find("axes is an input from this opset"),
            std::string::npos)
      << out.status();
}

TEST(OnnxOpsReduceTest, SoftmaxAndLogSoftmaxOverTheLastAxis) {
  Tensor expected{{2, 3}, {}};
  Tensor expected_log{{2, 3}, {}};
  for (int row = 0; row < 2; ++row) {
    double sum = 0;
    for (int j = 0; j < 3; ++j) sum += std::exp(kMatrix.values[row * 3 + j]);
    for (int j = 0; j < 3; ++j) {
      expected.values.push_back(std::exp(kMatrix.values[row * 3 + j]) / sum);
      expected_log.values.push_back(kMatrix.values[row * 3 + j] - std::log(sum));
    }
  }
  OneNodeModel softmax("Softmax", 13);
  softmax.Input("x", {2, 3});
  ExpectTensor(softmax.Run({kMatrix}), expected);
  OneNodeModel log_softmax("LogSoftmax", 13);
  log_softmax.Input("x", {2, 3});
  ExpectTensor(log_softmax.Run({kMatrix}), expected_log);
}

TEST(OnnxOpsReduceTest, LayerNormalizationNormalizesEachRowThenScalesAndShifts) {
  OneNodeModel m("LayerNormalization", 17);
  m.Input("x", {2, 3}).Constant("scale", {{3}, {1, 2, 3}}).Constant("bias", {{3}, {0, 1, 0}});
  m.FloatAttr("epsilon", 0);
  // Each row is mean +- 1 around its middle: variance 2/3.
  const double s = 1 / std::sqrt(2.0 / 3.0);
  ExpectTensor(m.Run({kMatrix}), {{2, 3}, {-s, 1, 3 * s, -s, 1, 3 * s}});
}

}  // namespace
}  // namespace tessera
