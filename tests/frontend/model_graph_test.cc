// Tests of frontend/model_graph.cc: pattern names, unique tensor names, views, uses and scalar
// constants of a graph, numpy broadcasting of operands, and constant folding by the interpreter.
#include "frontend/model_graph.h"

#include <string>
#include <vector>

#include "frontend/compute.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

NDArray Floats(std::vector<int64_t> shape, const std::vector<double>& values) {
  NDArray a = NDArray::Empty(DataType::Float32(), std::move(shape));
  for (size_t i = 0; i < values.size(); ++i) a.SetFlat(i, values[i]);
  return a;
}

GraphValue ConstantValue(const std::string& name, std::vector<int64_t> shape,
                         const std::vector<double>& values) {
  GraphValue v;
  v.name = name;
  v.dtype = DataType::Float32();
  v.shape = shape;
  v.constant = Floats(shape.empty() ? std::vector<int64_t>{1} : shape, values);
  return v;
}

TEST(ModelGraphTest, PatternsAreNamedAndOrderedByHowTheyFuse) {
  EXPECT_STREQ(OpPatternName(OpPattern::kElementwise), "elementwise");
  EXPECT_STREQ(OpPatternName(OpPattern::kInjective), "injective");
  EXPECT_STREQ(OpPatternName(OpPattern::kReduction), "reduction");
  EXPECT_STREQ(OpPatternName(OpPattern::kAnchor), "anchor");
  EXPECT_LT(OpPattern::kElementwise, OpPattern::kInjective);
  EXPECT_LT(OpPattern::kReduction, OpPattern::kAnchor);
}

TEST(ModelGraphTest, TensorNamerNumbersRepeatedNames) {
  TensorNamer namer;
  EXPECT_EQ(namer("T_add"), "T_add");
  EXPECT_EQ(namer("T_mul"), "T_mul");
  EXPECT_EQ(namer("T_add"), "T_add_1");
  EXPECT_EQ(namer("T_add"), "T_add_2");
  EXPECT_EQ(namer("T_mul"), "T_mul_1");
}

TEST(ModelGraphTest, ViewsCountAsUsesOfWhatTheyView) {
  Graph g;
  GraphValue x;
  x.name = "x";
  x.dtype = DataType::Float32();
  x.shape = {2, 3};
  x.is_input = true;
  GraphValue view = x;
  view.name = "x_flat";
  view.shape = {6};
  view.is_input = false;
  view.alias_of = 0;
  GraphValue y = view;
  y.name = "y";
  y.alias_of = -1;
  y.producer = 0;
  g.values = {x, view, ConstantValue("two", {}, {2}), y};
  GraphNode node;
  node.name = "mul";
  node.op_type = "Mul";
  node.pattern = OpPattern::kElementwise;
  node.inputs = {1, 2};
  node.output = 3;
  g.nodes = {node};
  g.inputs = {0};
  g.outputs = {3, 1};  // the view is also an output
  EXPECT_EQ(g.Root(1), 0);
  EXPECT_EQ(g.Root(0), 0);
  EXPECT_EQ(g.Uses(0), 2);  // the node's input and the graph output, both through the view
  EXPECT_EQ(g.Uses(1), 2);
  EXPECT_EQ(g.Uses(3), 1);
  EXPECT_TRUE(g.IsScalarConstant(2));
  EXPECT_FALSE(g.IsScalarConstant(0));
  EXPECT_EQ(g.values[0].num_elements(), 6);
}

TEST(ModelGraphTest, BroadcastAlignsTrailingAxesAndReadsUnitAxesAtZero) {
  Operand row;
  row.tensor = Placeholder({1, 3}, DataType::Float32(), "row");
  row.dtype = DataType::Float32();
  row.shape = {1, 3};
  Var i("i"), j("j"), k("k");
  Expr e = row.Broadcast({i, j, k});
  const auto* load = e.as<BufferLoadNode>();
  ASSERT_NE(load, nullptr);
  ASSERT_EQ(load->indices.size(), 2u);
  EXPECT_TRUE(IsConstInt(load->indices[0], 0));
  EXPECT_TRUE(load->indices[1].same_as(k));
  Operand scalar;
  scalar.scalar = 2.5;
  scalar.dtype = DataType::Float32();
  const auto* imm = scalar.Broadcast({i}).as<FloatImmNode>();
  ASSERT_NE(imm, nullptr);
  EXPECT_EQ(imm->value, 2.5);
}

TEST(ModelGraphTest, EvaluateConstantRunsTheComputeOnConstants) {
  GraphValue a = ConstantValue("a", {2}, {1, 2});
  GraphValue b = ConstantValue("b", {}, {10});  // rank 0: held as {1}
  OpCompute add = [](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        {2}, [&](const std::vector<Var>& i) { return ops[0].Broadcast(i) + ops[1].Broadcast(i); },
        (*namer)("T_add"));
  };
  absl::StatusOr<NDArray> sum = EvaluateConstant({&a, &b}, add);
  ASSERT_TRUE(sum.ok()) << sum.status();
  ASSERT_EQ(sum->shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(sum->GetFlat(0), 11);
  EXPECT_EQ(sum->GetFlat(1), 12);
}

TEST(ModelGraphTest, EvaluateConstantRefusesAnInputThatIsNotConstant) {
  GraphValue a = ConstantValue("a", {2}, {1, 2});
  GraphValue x;
  x.name = "x";
  x.dtype = DataType::Float32();
  x.shape = {2};
  OpCompute first = [](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        {2}, [&](const std::vector<Var>& i) { return ops[0].Broadcast(i); }, (*namer)("T_copy"));
  };
  absl::StatusOr<NDArray> out = EvaluateConstant({&a, &x}, first);
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().message(), "constant folding: input x is not a constant");
}

}  // namespace
}  // namespace tessera
