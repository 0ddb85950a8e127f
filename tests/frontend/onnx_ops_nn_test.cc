// Tests of frontend/onnx_ops_nn.cc: MatMul, Gemm, Conv and pooling imported from one-node models
// and run by the interpreter against values worked out by hand, and the shapes they refuse.
#include <string>

#include "frontend/task_extraction.h"
#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/frontend/onnx_ops_testing.h"

namespace tessera {
namespace {

using onnx_testing::ExpectTensor;
using onnx_testing::OneNodeModel;
using onnx_testing::Tensor;

TEST(OnnxOpsNnTest, MatMulOfTwoMatrices) {
  OneNodeModel m("MatMul");
  m.Input("a", {2, 3}).Constant("b", {{3, 2}, {1, 0, 0, 1, 1, 1}});
  // [1 2 3; 4 5 6] x [1 0; 0 1; 1 1]
  ExpectTensor(m.Run({{{2, 3}, {1, 2, 3, 4, 5, 6}}}), {{2, 2}, {4, 5, 10, 11}});
}

// A batch dimension of extent 1 in the result reads its iteration variable, not the broadcast
// index 0, so the product stays einsum-like: PadEinsum can pad its rows to whole register tiles
// (LLaMA's [1, 128, 2048] x [2048, 5632] ran 8 x 1 tiles at 126 GFLOP/s on Zen 3 without, 173
// padded to 6 x 2). A batch that broadcasts still reads index 0.
TEST(OnnxOpsNnTest, MatMulOfABatchOfOneStaysEinsumLike) {
  OneNodeModel m("MatMul");
  m.Input("a", {1, 3, 2}).Constant("b", {{2, 2}, {1, 0, 1, 1}});
  // [1 2; 3 4; 5 6] x [1 0; 1 1]
  ExpectTensor(m.Run({{{1, 3, 2}, {1, 2, 3, 4, 5, 6}}}), {{1, 3, 2}, {3, 2, 7, 4, 11, 6}});
  absl::StatusOr<Graph> graph = ImportOnnxBytes(m.Bytes(), "m.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  absl::StatusOr<FusedGraph> fused = FuseGraph(*graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  std::vector<ExtractedTask> tasks = ExtractTasks(*fused);
  ASSERT_EQ(tasks.size(), 1u);
  Schedule sch = Schedule::Create(tasks[0].func, /*seed=*/0);
  absl::StatusOr<BlockRV> block = sch.GetBlock("T_matmul");
  ASSERT_TRUE(block.ok()) << block.status();
  absl::Status padded = sch.PadEinsum(*block, {1, 4, 1, 1});
  EXPECT_TRUE(padded.ok()) << padded;

  OneNodeModel broadcast("MatMul");
  broadcast.Input("a", {2, 1, 2}).Constant("b", {{1, 2, 2}, {1, 0, 1, 1}});
  ExpectTensor(broadcast.Run({{{2, 1, 2}, {1, 2, 3, 4}}}), {{2, 1, 2}, {3, 2, 7, 4}});
}

TEST(OnnxOpsNnTest, GemmTransposesScalesAndAddsTheBias) {
  OneNodeModel m("Gemm");
  m.Input("a", {1, 2})
      .Constant("b", {{3, 2}, {1, 2, 3, 4, 5, 6}})  // used transposed: 2 x 3
      .Constant("c", {{3}, {1, 1, 1}});
  m.IntAttr("transB", 1).FloatAttr("alpha", 2).FloatAttr("beta", 0.5f);
  // a x b^T = [1 1] x [1 3 5; 2 4 6] = [3 7 11]; 2 * that + 0.5.
  ExpectTensor(m.Run({{{1, 2}, {1, 1}}}), {{1, 3}, {6.5, 14.5, 22.5}});
}

TEST(OnnxOpsNnTest, ConvWithPaddingSumsTheWindow) {
  OneNodeModel m("Conv");
  m.Input("x", {1, 1, 2, 2})
      .Constant("w", {{1, 1, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}})
      .IntsAttr("pads", {1, 1, 1, 1});
  // A 3x3 window of ones over a zero-padded 2x2 input covers all of it at every position.
  ExpectTensor(m.Run({{{1, 1, 2, 2}, {1, 2, 3, 4}}}), {{1, 1, 2, 2}, {10, 10, 10, 10}});
}

TEST(OnnxOpsNnTest, MaxPoolAndAveragePoolOverTwoByTwoWindows) {
  const Tensor x{{1, 1, 2, 4}, {1, 5, 2, 0, 3, 4, 8, 6}};
  OneNodeModel max("MaxPool");
  max.Input("x", {1, 1, 2, 4}).IntsAttr("kernel_shape", {2, 2}).IntsAttr("strides", {2, 2});
  ExpectTensor(max.Run({x}), {{1, 1, 1, 2}, {5, 8}});
  OneNodeModel avg("AveragePool");
  avg.Input("x", {1, 1, 2, 4}).IntsAttr("kernel_shape", {2, 2}).IntsAttr("strides", {2, 2});
  ExpectTensor(avg.Run({x}), {{1, 1, 1, 2}, {13 / 4.0, 16 / 4.0}});
}

TEST(OnnxOpsNnTest, GlobalAveragePoolKeepsBatchAndChannels) {
  OneNodeModel m("GlobalAveragePool");
  m.Input("x", {1, 2, 1, 2});
  ExpectTensor(m.Run({{{1, 2, 1, 2}, {1, 3, 10, 20}}}), {{1, 2, 1, 1}, {2, 15}});
}

TEST(OnnxOpsNnTest, ConvOfMismatchedRanksNamesTheShapes) {
  OneNodeModel m("Conv");
  m.Input("x", {1, 1, 4, 4}).Constant("w", {{1, 1, 3}, {1, 1, 1}});
  absl::StatusOr<NDArray> out = m.Run({{{1, 1, 4, 4}, std::vector<double>(16, 1)}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(out.status().message()).find("are not N, C, spatial..."), std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace tessera
