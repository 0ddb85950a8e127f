#include "frontend/onnx_import.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "onnx/onnx_pb.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace {

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using testing::ExpectMatchesOnnxRuntime;

TEST(OnnxImportTest, CnnMatchesOnnxRuntime) { ExpectMatchesOnnxRuntime("cnn"); }
TEST(OnnxImportTest, EncoderMatchesOnnxRuntime) { ExpectMatchesOnnxRuntime("encoder"); }
TEST(OnnxImportTest, DecoderMatchesOnnxRuntime) { ExpectMatchesOnnxRuntime("decoder"); }
// Grouped strided conv, pools with padding, Concat/Slice/Split/Gather/Expand/Where, reductions
// with axes inputs (opset 18), shape arithmetic, Gemm alpha/beta, Cast.
TEST(OnnxImportTest, OtherOperatorsMatchOnnxRuntime) { ExpectMatchesOnnxRuntime("ops"); }
// Gelu (both forms, opset 20), Sub, Neg, Abs, Reciprocal, Log, Max, Min, Equal, Less, ReduceMin,
// ReduceMean, ReduceSumSquare, LogSoftmax, GlobalMaxPool, Range, ConstantOfShape, Dropout.
TEST(OnnxImportTest, MoreOperatorsMatchOnnxRuntime) { ExpectMatchesOnnxRuntime("ops2"); }
TEST(OnnxImportTest, ConvTransposeMatchesOnnxRuntime) { ExpectMatchesOnnxRuntime("upsample"); }
// float16 weights, activations and output (rounded on every store, as onnxruntime does).
TEST(OnnxImportTest, Float16ModelMatchesOnnxRuntime) { ExpectMatchesOnnxRuntime("mlp16", 2e-3); }

TEST(OnnxImportTest, CnnGraphHasNodesViewsAndConstants) {
  absl::StatusOr<Graph> graph = ImportOnnxFile(testing::ModelDataPath("cnn.onnx"));
  ASSERT_TRUE(graph.ok()) << graph.status();
  // 13 ONNX nodes; Flatten becomes a view, not a node.
  EXPECT_EQ(graph->nodes.size(), 12u);
  ASSERT_EQ(graph->inputs.size(), 1u);
  EXPECT_EQ(graph->values[graph->inputs[0]].shape, (std::vector<int64_t>{1, 3, 16, 16}));
  ASSERT_EQ(graph->outputs.size(), 1u);
  EXPECT_EQ(graph->values[graph->outputs[0]].shape, (std::vector<int64_t>{1, 10}));
  int views = 0;
  for (const GraphValue& v : graph->values) views += v.alias_of >= 0 ? 1 : 0;
  EXPECT_EQ(views, 1);
}

// A one-node model: x [1, 4] float -> op -> y.
onnx::ModelProto OneNode(const std::string& op_type, int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  onnx::GraphProto* g = m.mutable_graph();
  onnx::ValueInfoProto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 4}) {
    x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::NodeProto* n = g->add_node();
  n->set_name("the_node");
  n->set_op_type(op_type);
  n->add_input("x");
  n->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

absl::Status ImportProto(const onnx::ModelProto& m) {
  return ImportOnnxBytes(m.SerializeAsString(), "m.onnx").status();
}

TEST(OnnxImportTest, OneReluImports) {
  absl::StatusOr<Graph> g = ImportOnnxBytes(OneNode("Relu").SerializeAsString(), "m.onnx");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->nodes.size(), 1u);
  EXPECT_EQ(g->nodes[0].op_type, "Relu");
}

TEST(OnnxImportTest, UnsupportedOperatorNamesTheNode) {
  absl::Status s = ImportProto(OneNode("NonMaxSuppression"));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "m.onnx: node 'the_node' (NonMaxSuppression): unsupported operator");
}

TEST(OnnxImportTest, UnsupportedAttributeNamesTheNode) {
  onnx::ModelProto m = OneNode("Relu");
  onnx::AttributeProto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("frobnicate");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  absl::Status s = ImportProto(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "m.onnx: node 'the_node' (Relu): unsupported attribute frobnicate");
}

TEST(OnnxImportTest, UnsupportedAttributeValueNamesTheNode) {
  onnx::ModelProto m = OneNode("Gelu", 20);
  onnx::AttributeProto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("approximate");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("cubic");
  absl::Status s = ImportProto(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "m.onnx: node 'the_node' (Gelu): unsupported attribute approximate=cubic");
}

TEST(OnnxImportTest, DynamicDimensionIsAnError) {
  onnx::ModelProto m = OneNode("Relu");
  auto* dim = m.mutable_graph()
                  ->mutable_input(0)
                  ->mutable_type()
                  ->mutable_tensor_type()
                  ->mutable_shape()
                  ->mutable_dim(0);
  dim->set_dim_param("batch");
  absl::Status s = ImportProto(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "m.onnx: input x has a dynamic dimension [batch, 4] (static shapes only: export "
            "with fixed sizes, or give the input's shape)");
}

TEST(OnnxImportTest, GivenInputShapeFixesADynamicDimension) {
  onnx::ModelProto m = OneNode("Relu");
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_param("batch");
  OnnxImportOptions options;
  options.input_shapes["x"] = {8, 4};
  absl::StatusOr<Graph> g = ImportOnnxBytes(m.SerializeAsString(), "m.onnx", options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->values[g->outputs[0]].shape, (std::vector<int64_t>{8, 4}));
  // The fixed dimension 4 cannot change, the rank neither, and the name must be an input.
  options.input_shapes["x"] = {8, 5};
  EXPECT_EQ(ImportOnnxBytes(m.SerializeAsString(), "m.onnx", options).status().message(),
            "m.onnx: input x: the given extent 5 of dimension 1 does not fit [batch, 4]");
  options.input_shapes["x"] = {8};
  EXPECT_EQ(ImportOnnxBytes(m.SerializeAsString(), "m.onnx", options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.input_shapes = {{"x", {8, 4}}, {"nope", {1}}};
  EXPECT_EQ(ImportOnnxBytes(m.SerializeAsString(), "m.onnx", options).status().message(),
            "m.onnx: a shape is given for nope, which is not a graph input");
}

TEST(OnnxImportTest, OpsetOutOfRangeIsAnError) {
  absl::Status s = ImportProto(OneNode("Relu", 7));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(s.message(), "m.onnx: opset 7 is outside the supported range [11, 21]");
  EXPECT_EQ(ImportProto(OneNode("Relu", 22)).code(), absl::StatusCode::kUnimplemented);
}

TEST(OnnxImportTest, NotOnnxIsAnError) {
  absl::StatusOr<Graph> g = ImportOnnxBytes("this is a text file, not a model\n", "notes.txt");
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(g.status().message().find("notes.txt: not an ONNX model"), std::string::npos)
      << g.status();
  EXPECT_EQ(ImportOnnxBytes("", "empty.onnx").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ImportOnnxFile("/nonexistent/m.onnx").status().code(), absl::StatusCode::kNotFound);
}

TEST(OnnxImportTest, TruncatedFileIsAnErrorAtEveryLength) {
  const std::string bytes = ReadBytes(testing::ModelDataPath("cnn.onnx"));
  ASSERT_GT(bytes.size(), 1000u);
  // Cut anywhere: a clean error, never a crash or a model that imports.
  for (size_t len = 0; len < bytes.size(); len += 97) {
    absl::StatusOr<Graph> g = ImportOnnxBytes(bytes.substr(0, len), "cut.onnx");
    EXPECT_FALSE(g.ok()) << "cut at " << len;
    EXPECT_NE(g.status().message().find("cut.onnx"), std::string::npos) << g.status();
  }
}

TEST(OnnxImportTest, UndefinedInputNamesTheNode) {
  onnx::ModelProto m = OneNode("Add");
  m.mutable_graph()->mutable_node(0)->add_input("nowhere");
  absl::Status s = ImportProto(m);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "m.onnx: node 'the_node' (Add): input nowhere is not defined before the node");
}

TEST(OnnxImportTest, ShapeArithmeticIsFoldedAtImport) {
  // y = Reshape(x, Concat(Shape(x)[0:1], [-1])) : the shape input is computed, then folded.
  onnx::ModelProto m = OneNode("Shape");
  onnx::GraphProto* g = m.mutable_graph();
  g->mutable_node(0)->set_output(0, "s");
  onnx::TensorProto* idx = g->add_initializer();
  idx->set_name("zero");
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_int64_data(0);  // rank 0
  onnx::TensorProto* minus1 = g->add_initializer();
  minus1->set_name("minus1");
  minus1->set_data_type(onnx::TensorProto::INT64);
  minus1->add_dims(1);
  minus1->add_int64_data(-1);
  onnx::NodeProto* gather = g->add_node();
  gather->set_op_type("Gather");
  gather->add_input("s");
  gather->add_input("zero");
  gather->add_output("n");
  onnx::NodeProto* unsq = g->add_node();
  unsq->set_op_type("Unsqueeze");
  unsq->add_input("n");
  unsq->add_input("axes");
  unsq->add_output("n1");
  onnx::TensorProto* axes = g->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(0);
  onnx::NodeProto* cat = g->add_node();
  cat->set_op_type("Concat");
  cat->add_input("n1");
  cat->add_input("minus1");
  cat->add_output("shape");
  onnx::AttributeProto* axis = cat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  onnx::NodeProto* reshape = g->add_node();
  reshape->set_op_type("Reshape");
  reshape->add_input("x");
  reshape->add_input("shape");
  reshape->add_output("r");
  onnx::NodeProto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("r");
  relu->add_output("y");
  absl::StatusOr<Graph> graph = ImportOnnxBytes(m.SerializeAsString(), "m.onnx");
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->nodes.size(), 1u);  // only the Relu computes at run time
  EXPECT_EQ(graph->values[graph->outputs[0]].shape, (std::vector<int64_t>{1, 4}));
}

}  // namespace
}  // namespace tessera
