// Tests of frontend/onnx_layer_norm_pattern.cc: a LayerNorm written out as exporters write it
// is imported as one LayerNormalization node, fused as one function, and computes what
// onnxruntime computed; a look-alike with Pow by 3 is imported node by node.
#include <string>

#include "frontend/fuse_ops.h"
#include "gtest/gtest.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace {

int CountOps(const Graph& graph, const std::string& op_type) {
  int n = 0;
  for (const GraphNode& node : graph.nodes) n += node.op_type == op_type ? 1 : 0;
  return n;
}

TEST(OnnxLayerNormPatternTest, WrittenOutLayerNormIsOneNode) {
  testing::TestModel m = testing::LoadTestModel("layernorm");
  // The first LayerNorm's nine nodes are one; the look-alike keeps its two ReduceMeans.
  EXPECT_EQ(CountOps(m.graph, "LayerNormalization"), 1);
  EXPECT_EQ(CountOps(m.graph, "ReduceMean"), 2);
  EXPECT_EQ(m.graph.nodes.size(), 1u + 1u + 9u);  // LayerNormalization, Relu, the look-alike
  absl::StatusOr<FusedGraph> fused = FuseGraph(m.graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  // One row-reduction function, with the Relu after it as its epilogue.
  ASSERT_EQ(fused->functions[0].nodes.size(), 2u);
  EXPECT_EQ(m.graph.nodes[fused->functions[0].nodes[0]].op_type, "LayerNormalization");
  EXPECT_EQ(m.graph.nodes[fused->functions[0].nodes[1]].op_type, "Relu");
}

TEST(OnnxLayerNormPatternTest, MatchesOnnxRuntime) {
  testing::ExpectMatchesOnnxRuntime("layernorm");
}

}  // namespace
}  // namespace tessera
