#include "frontend/channels_last.h"

#include <string>
#include <vector>

#include "frontend/fuse_ops.h"
#include "gtest/gtest.h"
#include "ir/ndarray.h"
#include "model/reference.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace {

using testing::LoadTestModel;

int CountNodes(const Graph& graph, const std::string& op_type) {
  int n = 0;
  for (const GraphNode& node : graph.nodes) n += node.op_type == op_type ? 1 : 0;
  return n;
}

// The converted graph, fused as a compiled model is, computes what onnxruntime computed.
void ExpectChannelsLastMatchesOnnxRuntime(const std::string& name) {
  SCOPED_TRACE(name);
  testing::TestModel m = LoadTestModel(name);
  absl::StatusOr<Graph> graph = ConvertToChannelsLast(m.graph);
  ASSERT_TRUE(graph.ok()) << graph.status();
  testing::ExpectFusedMatchesOnnxRuntime(*graph, m);
}

TEST(ChannelsLastTest, CnnMatchesOnnxRuntime) { ExpectChannelsLastMatchesOnnxRuntime("cnn"); }
// Grouped and strided convolutions, average and max pools, and a pool's NCHW result read by
// other operators.
TEST(ChannelsLastTest, OtherOperatorsMatchOnnxRuntime) {
  ExpectChannelsLastMatchesOnnxRuntime("ops2");
}
TEST(ChannelsLastTest, ConvTransposeModelMatchesOnnxRuntime) {
  ExpectChannelsLastMatchesOnnxRuntime("upsample");
}
TEST(ChannelsLastTest, UnetBlockMatchesOnnxRuntime) {
  ExpectChannelsLastMatchesOnnxRuntime("unet");
}
TEST(ChannelsLastTest, EncoderMatchesOnnxRuntime) {
  ExpectChannelsLastMatchesOnnxRuntime("encoder");
}

// The CNN (conv-bn-relu, max pool, two conv-bn-relu, global pool, flatten, gemm) is converted
// once at its input: every convolution, batch norm, relu and pool computes NHWC, the weights
// are [KH, KW, I, O] constants, and the global pool's 1 x 1 result is viewed as NCHW by
// Flatten without a transpose back.
TEST(ChannelsLastTest, CnnIsTransposedOnceAtItsInput) {
  testing::TestModel m = LoadTestModel("cnn");
  absl::StatusOr<Graph> graph = ConvertToChannelsLast(m.graph);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), m.graph.nodes.size() + 1);
  EXPECT_EQ(CountNodes(*graph, "Transpose"), 1);
  EXPECT_EQ(graph->nodes[0].op_type, "Transpose");
  EXPECT_EQ(graph->values[graph->nodes[0].output].shape, (std::vector<int64_t>{1, 16, 16, 3}));
  for (const GraphNode& node : graph->nodes) {
    const GraphValue& out = graph->values[node.output];
    if (node.op_type == "Conv") {
      const GraphValue& in = graph->values[node.inputs[0]];
      const GraphValue& weight = graph->values[node.inputs[1]];
      EXPECT_EQ(out.shape.back(), 8) << node.name;  // channels last
      EXPECT_EQ(weight.shape, (std::vector<int64_t>{3, 3, in.shape[3], 8})) << node.name;
      EXPECT_TRUE(weight.is_constant());
    }
    if (node.op_type == "GlobalAveragePool") {
      EXPECT_EQ(out.shape, (std::vector<int64_t>{1, 1, 1, 8}));
    }
  }
  // Inputs and outputs keep their names and shapes; the NCHW weights are gone.
  ASSERT_EQ(graph->inputs.size(), 1u);
  EXPECT_EQ(graph->values[graph->inputs[0]].name, "x");
  EXPECT_EQ(graph->values[graph->inputs[0]].shape, (std::vector<int64_t>{1, 3, 16, 16}));
  EXPECT_EQ(graph->values[graph->outputs[0]].name, "y");
  int constants = 0, original = 0;
  for (const GraphValue& v : graph->values) constants += v.is_constant() ? 1 : 0;
  for (size_t v = 0; v < m.graph.values.size(); ++v) {
    original += m.graph.values[v].is_constant() && m.graph.Uses(static_cast<int>(v)) > 0 ? 1 : 0;
  }
  EXPECT_EQ(constants, original);
}

// A model without convolutions or pools computes as it did (only values nothing reads, such
// as a Reshape's folded shape, are dropped).
TEST(ChannelsLastTest, EncoderIsUnchanged) {
  testing::TestModel m = LoadTestModel("encoder");
  absl::StatusOr<Graph> graph = ConvertToChannelsLast(m.graph);
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), m.graph.nodes.size());
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    EXPECT_EQ(graph->nodes[i].op_type, m.graph.nodes[i].op_type);
    EXPECT_EQ(graph->values[graph->nodes[i].output].shape,
              m.graph.values[m.graph.nodes[i].output].shape);
  }
}

// The U-Net block (conv, pool, conv, Resize, Concat with the skip, conv) computes NHWC from
// its input's transpose to its output's: the Resize and the Concat have channels-last forms.
TEST(ChannelsLastTest, UnetBlockIsTransposedOnlyAtItsEnds) {
  testing::TestModel m = LoadTestModel("unet");
  absl::StatusOr<Graph> graph = ConvertToChannelsLast(m.graph);
  ASSERT_TRUE(graph.ok()) << graph.status();
  EXPECT_EQ(CountNodes(*graph, "Transpose"), 2);
  EXPECT_EQ(graph->nodes.front().op_type, "Transpose");
  EXPECT_EQ(graph->nodes.back().op_type, "Transpose");
  for (const GraphNode& node : graph->nodes) {
    if (node.op_type == "Resize" || node.op_type == "Concat") {
      EXPECT_EQ(graph->values[node.output].shape.back(), node.op_type == "Resize" ? 16 : 24);
    }
  }
}

}  // namespace
}  // namespace tessera
