#include "frontend/fuse_ops.h"

#include "gtest/gtest.h"
#include "ir/prepack.h"
#include "model/reference.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace {

using testing::LoadTestModel;

std::vector<std::vector<std::string>> GroupOps(const Graph& graph, const FusedGraph& fused) {
  std::vector<std::vector<std::string>> out;
  for (const FusedFunction& f : fused.functions) {
    std::vector<std::string> ops;
    for (int n : f.nodes) ops.push_back(graph.nodes[n].op_type);
    out.push_back(ops);
  }
  return out;
}

TEST(FuseOpsTest, CnnFusesBatchNormAndReluIntoConv) {
  testing::TestModel m = LoadTestModel("cnn");
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  using V = std::vector<std::string>;
  EXPECT_EQ(GroupOps(m.graph, *fused), (std::vector<V>{{"Conv", "BatchNormalization", "Relu"},
                                                       {"MaxPool"},
                                                       {"Conv", "BatchNormalization", "Relu"},
                                                       {"Conv", "BatchNormalization", "Relu"},
                                                       {"GlobalAveragePool"},
                                                       {"Gemm"}}));
  // Parameters: the input, the weights, the folded scale/shift, the result.
  EXPECT_EQ(fused->functions[0].func.params().size(), 6u);
  EXPECT_EQ(fused->functions[0].args.back(),
            m.graph.nodes[fused->functions[0].nodes.back()].output);
}

TEST(FuseOpsTest, EncoderFusesEpiloguesAndElementwiseChains) {
  testing::TestModel m = LoadTestModel("encoder");
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  using V = std::vector<std::string>;
  std::vector<V> groups = GroupOps(m.graph, *fused);
  ASSERT_EQ(groups.size(), 15u);
  EXPECT_EQ(groups[0], (V{"MatMul", "Add"}));  // q projection + bias
  EXPECT_EQ(groups[1], (V{"Transpose"}));      // after a reshape view
  EXPECT_EQ(groups[6], (V{"MatMul", "Div"}));  // scores / sqrt(d)
  EXPECT_EQ(groups[7], (V{"Softmax"}));
  EXPECT_EQ(groups[10], (V{"MatMul", "Add", "Add"}));  // output projection + residual
  EXPECT_EQ(groups[11], (V{"LayerNormalization"}));
  // The FFN's first projection with its bias and the whole GELU, whose input is read twice.
  EXPECT_EQ(groups[12], (V{"MatMul", "Add", "Div", "Erf", "Add", "Mul", "Mul"}));
  EXPECT_EQ(groups[13], (V{"MatMul", "Add", "Add"}));
}

// Values read by several nodes that meet again fuse as one group: RMS norm's x (squared and
// divided), SwiGLU's gate (sigmoid(g) * g) with the projection that computes it.
TEST(FuseOpsTest, DecoderFusesDiamonds) {
  testing::TestModel m = LoadTestModel("decoder");
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  using V = std::vector<std::string>;
  std::vector<V> groups = GroupOps(m.graph, *fused);
  ASSERT_EQ(groups.size(), 16u);
  EXPECT_EQ(groups[0], (V{"Pow", "ReduceMean", "Add", "Sqrt", "Div", "Mul"}));
  EXPECT_EQ(groups[13], (V{"MatMul", "Sigmoid", "Mul"}));
  EXPECT_EQ(groups[14], (V{"MatMul", "Mul"}));
}

// Initializers are a model's weights: the parameters they are bound to are layout-free
// (ir/prepack.h), so schedules may pack them once; activations are not.
TEST(FuseOpsTest, ParametersBoundToInitializersAreLayoutFree) {
  testing::TestModel m = LoadTestModel("encoder");
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  // q projection + bias: X, W (initializer), bias (initializer), result.
  const FusedFunction& q = fused->functions[0];
  ASSERT_EQ(q.args.size(), 4u);
  EXPECT_EQ(LayoutFreeParamIndices(q.func), (std::vector<int>{1, 2}));
  // scores / sqrt(d): two activations (the divisor is a scalar immediate).
  EXPECT_TRUE(LayoutFreeParamIndices(fused->functions[6].func).empty());
  for (const FusedFunction& f : fused->functions) {
    for (int i : LayoutFreeParamIndices(f.func)) {
      EXPECT_TRUE(m.graph.values[f.args[i]].is_constant()) << f.name << " parameter " << i;
    }
  }
}

TEST(FuseOpsTest, NoFuseGivesOneFunctionPerNode) {
  testing::TestModel m = LoadTestModel("decoder");
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph, {/*fuse=*/false});
  ASSERT_TRUE(fused.ok()) << fused.status();
  ASSERT_EQ(fused->functions.size(), m.graph.nodes.size());
  for (size_t i = 0; i < fused->functions.size(); ++i) {
    EXPECT_EQ(fused->functions[i].nodes, (std::vector<int>{static_cast<int>(i)}));
  }
}

// The fused functions compute what the model computes: interpreter vs onnxruntime.
void ExpectFusedMatchesOnnxRuntime(const std::string& name) {
  testing::TestModel m = LoadTestModel(name);
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_LT(fused->functions.size(), m.graph.nodes.size());
  absl::StatusOr<std::vector<NDArray>> out = InterpretModel(m.graph, *fused, {m.input});
  ASSERT_TRUE(out.ok()) << out.status();
  absl::StatusOr<Comparison> cmp = Compare((*out)[0], m.expected, 1e-4, 1e-4);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << name << ": max abs error " << cmp->max_abs_error;
}

TEST(FuseOpsTest, FusedCnnMatchesOnnxRuntime) { ExpectFusedMatchesOnnxRuntime("cnn"); }
TEST(FuseOpsTest, FusedEncoderMatchesOnnxRuntime) { ExpectFusedMatchesOnnxRuntime("encoder"); }
TEST(FuseOpsTest, FusedDecoderMatchesOnnxRuntime) { ExpectFusedMatchesOnnxRuntime("decoder"); }
TEST(FuseOpsTest, FusedOtherOperatorsMatchOnnxRuntime) { ExpectFusedMatchesOnnxRuntime("ops"); }
TEST(FuseOpsTest, FusedMoreOperatorsMatchOnnxRuntime) { ExpectFusedMatchesOnnxRuntime("ops2"); }
TEST(FuseOpsTest, FusedConvTransposeMatchesOnnxRuntime) {
  ExpectFusedMatchesOnnxRuntime("upsample");
}

}  // namespace
}  // namespace tessera
