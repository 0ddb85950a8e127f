// Tests of frontend/winograd.cc: which convolutions are rewritten, into which nodes, and that the
// rewritten graph, fused as a compiled model is, computes the convolution (interpreter), and its
// kernels compiled with the CPU defaults compute their functions (C backend).
#include "frontend/winograd.h"

#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "frontend/channels_last.h"
#include "frontend/fuse_ops.h"
#include "frontend/onnx_import.h"
#include "gtest/gtest.h"
#include "model/reference.h"
#include "tests/frontend/model_testing.h"
#include "tests/frontend/onnx_ops_testing.h"
#include "tests/rules/default_schedule_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using onnx_testing::OneNodeModel;

Conv2dWindow Window3x3(int64_t stride = 1, int64_t pad = 1) {
  return Conv2dWindow{{3, 3}, {stride, stride}, {1, 1}, {pad, pad}, {pad, pad}, 1};
}

TEST(WinogradTest, OnlyWideUnitStrideThreeByThreeConvolutionsOnFourPixelTiles) {
  const DataType f32 = DataType::Float32();
  // ResNet-18's 56 x 56 x 64 stage.
  EXPECT_TRUE(WantsWinograd(Window3x3(), {1, 56, 56, 64}, {3, 3, 64, 64}, f32));
  EXPECT_FALSE(WantsWinograd(Window3x3(/*stride=*/2), {1, 56, 56, 64}, {3, 3, 64, 64}, f32));
  EXPECT_FALSE(WantsWinograd(Window3x3(1, /*pad=*/0), {1, 56, 56, 64}, {3, 3, 64, 64}, f32));
  EXPECT_FALSE(WantsWinograd(Window3x3(), {1, 56, 56, 64}, {3, 3, 64, 64}, DataType::Float16()));
  // 14 x 14 takes 16 tiles (the last row and column cropped); 7 x 7 and 8 x 8 only 4.
  EXPECT_TRUE(WantsWinograd(Window3x3(), {1, 14, 14, 256}, {3, 3, 256, 256}, f32));
  EXPECT_FALSE(WantsWinograd(Window3x3(), {1, 8, 8, 256}, {3, 3, 256, 256}, f32));
  EXPECT_FALSE(WantsWinograd(Window3x3(), {1, 7, 7, 512}, {3, 3, 512, 512}, f32));
  // The small CNN's 32 -> 32 and the U-Net's 96 -> 32, but not an image's 3 channels or 16.
  EXPECT_TRUE(WantsWinograd(Window3x3(), {1, 32, 32, 32}, {3, 3, 32, 32}, f32));
  EXPECT_TRUE(WantsWinograd(Window3x3(), {1, 128, 128, 96}, {3, 3, 96, 32}, f32));
  EXPECT_FALSE(WantsWinograd(Window3x3(), {1, 64, 64, 3}, {3, 3, 3, 64}, f32));
  EXPECT_FALSE(WantsWinograd(Window3x3(), {1, 64, 64, 64}, {3, 3, 64, 16}, f32));
  Conv2dWindow grouped = Window3x3();
  grouped.groups = 2;
  EXPECT_FALSE(WantsWinograd(grouped, {1, 56, 56, 64}, {3, 3, 32, 64}, f32));
  Conv2dWindow five = Window3x3();
  five.kernel = {5, 5};
  EXPECT_FALSE(WantsWinograd(five, {1, 56, 56, 64}, {5, 5, 64, 64}, f32));
}

onnx_testing::Tensor Random(std::vector<int64_t> shape, std::mt19937* rng) {
  onnx_testing::Tensor t{std::move(shape), {}};
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t i = 0; i < n; ++i) t.values.push_back(u(*rng));
  return t;
}

// The model imported, moved channels-last, and rewritten.
struct Rewritten {
  Graph imported, nhwc, graph;
};
Rewritten Rewrite(const OneNodeModel& m, int64_t fold_padding_bytes = kFoldPaddingBytes) {
  Rewritten r;
  absl::StatusOr<Graph> imported = ImportOnnxBytes(m.Bytes(), "m.onnx");
  EXPECT_TRUE(imported.ok()) << imported.status();
  if (!imported.ok()) return r;
  r.imported = *imported;
  absl::StatusOr<Graph> nhwc = ConvertToChannelsLast(r.imported);
  EXPECT_TRUE(nhwc.ok()) << nhwc.status();
  if (!nhwc.ok()) return r;
  r.nhwc = *nhwc;
  absl::StatusOr<Graph> graph = RewriteWinogradConvolutions(r.nhwc, fold_padding_bytes);
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (graph.ok()) r.graph = *graph;
  return r;
}

// A convolution with bias, 2 x 32 x H x W -> 64 channels: 16 x 16 in 32 tiles of 4 x 4, and
// 10 x 14 in 24 tiles whose last row and column are cropped; the input padded by a kernel of its
// own, or (`in_place`: a threshold of 0 bytes) read in place by the transform.
class WinogradShapeTest : public ::testing::TestWithParam<std::tuple<int64_t, int64_t, bool>> {};

TEST_P(WinogradShapeTest, RewrittenConvolutionComputesTheConvolution) {
  const auto [height, width, in_place] = GetParam();
  std::mt19937 rng(7);
  OneNodeModel m("Conv");
  m.Input("x", {2, 32, height, width})
      .Constant("w", Random({64, 32, 3, 3}, &rng))
      .Constant("b", Random({64}, &rng))
      .IntsAttr("pads", {1, 1, 1, 1});
  const Rewritten r = Rewrite(m, in_place ? 0 : kFoldPaddingBytes);
  const Graph* imported = &r.imported;
  const Graph* graph = &r.graph;
  std::vector<std::string> ops;
  for (const GraphNode& node : graph->nodes) ops.push_back(node.op_type);
  std::vector<std::string> expected_ops = {"Transpose",    "WinogradPad",    "WinogradInput",
                                           "WinogradGemm", "WinogradOutput", "Transpose"};
  if (in_place) expected_ops.erase(expected_ops.begin() + 1);
  EXPECT_EQ(ops, expected_ops);
  // The transformed weights: 36 points x 32 x 64, a constant.
  for (const GraphNode& node : graph->nodes) {
    if (node.op_type != "WinogradGemm") continue;
    const GraphValue& u = graph->values[node.inputs[1]];
    EXPECT_TRUE(u.is_constant());
    EXPECT_EQ(u.shape, (std::vector<int64_t>{36, 32, 64}));
  }

  absl::StatusOr<FusedGraph> fused = FuseGraph(*graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  // The padding, the transform, the GEMM and the output transform (with the bias) are kernels
  // of their own.
  EXPECT_EQ(fused->functions.size(), expected_ops.size());
  absl::StatusOr<FusedGraph> unfused = FuseGraph(*imported, {/*fuse=*/false});
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  const onnx_testing::Tensor x = Random({2, 32, height, width}, &rng);
  NDArray input = NDArray::Empty(DataType::Float32(), x.shape);
  for (size_t i = 0; i < x.values.size(); ++i) input.SetFlat(i, x.values[i]);
  absl::StatusOr<std::vector<NDArray>> expected = InterpretModel(*imported, *unfused, {input});
  ASSERT_TRUE(expected.ok()) << expected.status();
  absl::StatusOr<std::vector<NDArray>> actual = InterpretModel(*graph, *fused, {input});
  ASSERT_TRUE(actual.ok()) << actual.status();
  absl::StatusOr<Comparison> cmp = Compare((*actual)[0], (*expected)[0], 1e-4, 1e-4);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << "max abs error " << cmp->max_abs_error;

  // Each kernel as a model compiles it (the CPU default, the C backend: the transforms' selects
  // expanded, the in-place transform's clamped loads) computes what its function computes.
  const Target cpu = default_schedule_testing::CpuTarget();
  for (const FusedFunction& kernel : fused->functions) {
    SCOPED_TRACE(kernel.name);
    const PrimFunc scheduled = default_schedule_testing::ApplyToModule(kernel.func, cpu).second;
    const absl::Status same = testing::CheckCBackendMatches(kernel.func, scheduled, /*seed=*/5);
    EXPECT_TRUE(same.ok()) << same;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, WinogradShapeTest,
                         ::testing::Values(std::tuple<int64_t, int64_t, bool>{16, 16, false},
                                           std::tuple<int64_t, int64_t, bool>{10, 14, false},
                                           std::tuple<int64_t, int64_t, bool>{16, 16, true},
                                           std::tuple<int64_t, int64_t, bool>{10, 14, true}));

// A ResNet basic block of 32 -> 64 channels on 14 x 14 (tests/frontend/data/make_models.py):
// both 3x3 convolutions rewritten, the model still computes what onnxruntime computed.
TEST(WinogradTest, ResidualBlockMatchesOnnxRuntime) {
  testing::TestModel m = testing::LoadTestModel("resblock");
  absl::StatusOr<Graph> nhwc = ConvertToChannelsLast(m.graph);
  ASSERT_TRUE(nhwc.ok()) << nhwc.status();
  absl::StatusOr<Graph> graph = RewriteWinogradConvolutions(*nhwc);
  ASSERT_TRUE(graph.ok()) << graph.status();
  int gemms = 0;
  for (const GraphNode& node : graph->nodes) gemms += node.op_type == "WinogradGemm";
  EXPECT_EQ(gemms, 2);
  testing::ExpectFusedMatchesOnnxRuntime(*graph, m);
}

// Convolutions it does not want stay as they are.
TEST(WinogradTest, OtherConvolutionsAreLeftAlone) {
  std::mt19937 rng(3);
  OneNodeModel m("Conv");
  m.Input("x", {1, 32, 16, 16})
      .Constant("w", Random({64, 32, 3, 3}, &rng))
      .IntsAttr("pads", {1, 1, 1, 1})
      .IntsAttr("strides", {2, 2});
  const Rewritten r = Rewrite(m);
  const Graph* nhwc = &r.nhwc;
  const Graph* graph = &r.graph;
  ASSERT_EQ(graph->nodes.size(), nhwc->nodes.size());
  for (size_t n = 0; n < graph->nodes.size(); ++n) {
    EXPECT_EQ(graph->nodes[n].op_type, nhwc->nodes[n].op_type);
  }
}

}  // namespace
}  // namespace tessera
