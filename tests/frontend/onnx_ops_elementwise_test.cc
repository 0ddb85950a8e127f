// Tests of frontend/onnx_ops_elementwise.cc: element-wise ONNX operators imported from one-node
// models and run by the interpreter against values worked out by hand (broadcasting, attributes,
// constant bounds), and the errors for what they refuse.
#include <cmath>
#include <string>

#include "gtest/gtest.h"
#include "tests/frontend/onnx_ops_testing.h"

namespace tessera {
namespace {

using onnx_testing::ExpectTensor;
using onnx_testing::OneNodeModel;
using onnx_testing::Tensor;

TEST(OnnxOpsElementwiseTest, AddBroadcastsARowOverAMatrix) {
  OneNodeModel m("Add");
  m.Input("a", {2, 3}).Input("b", {3});
  ExpectTensor(m.Run({{{2, 3}, {1, 2, 3, 4, 5, 6}}, {{3}, {10, 20, 30}}}),
               {{2, 3}, {11, 22, 33, 14, 25, 36}});
}

TEST(OnnxOpsElementwiseTest, SubAndDivKeepTheOperandOrder) {
  OneNodeModel sub("Sub");
  sub.Input("a", {2}).Input("b", {2});
  ExpectTensor(sub.Run({{{2}, {5, 1}}, {{2}, {2, 4}}}), {{2}, {3, -3}});
  OneNodeModel div("Div");
  div.Input("a", {2}).Input("b", {2});
  ExpectTensor(div.Run({{{2}, {6, 1}}, {{2}, {3, 4}}}), {{2}, {2, 0.25}});
}

TEST(OnnxOpsElementwiseTest, LeakyReluUsesItsAlpha) {
  OneNodeModel m("LeakyRelu");
  m.Input("x", {4}).FloatAttr("alpha", 0.5f);
  ExpectTensor(m.Run({{{4}, {-4, -1, 0, 3}}}), {{4}, {-2, -0.5, 0, 3}});
}

TEST(OnnxOpsElementwiseTest, ClipTakesItsBoundsFromConstantInputs) {
  OneNodeModel m("Clip");
  m.Input("x", {4}).Constant("lo", {{}, {-1}}).Constant("hi", {{}, {2}});
  ExpectTensor(m.Run({{{4}, {-3, -0.5, 1.5, 7}}}), {{4}, {-1, -0.5, 1.5, 2}});
}

TEST(OnnxOpsElementwiseTest, UnaryMathFollowsTheDefinitions) {
  const Tensor x{{3}, {0.25, 1, 4}};
  struct Case {
    const char* op;
    double (*fn)(double);
  };
  for (const Case& c : {Case{"Sqrt", [](double v) { return std::sqrt(v); }},
                        Case{"Exp", [](double v) { return std::exp(v); }},
                        Case{"Log", [](double v) { return std::log(v); }},
                        Case{"Reciprocal", [](double v) { return 1 / v; }},
                        Case{"Neg", [](double v) { return -v; }},
                        Case{"Sigmoid", [](double v) { return 1 / (1 + std::exp(-v)); }},
                        Case{"Tanh", [](double v) { return std::tanh(v); }}}) {
    SCOPED_TRACE(c.op);
    OneNodeModel m(c.op);
    m.Input("x", {3});
    Tensor expected{{3}, {}};
    for (double v : x.values) expected.values.push_back(c.fn(v));
    ExpectTensor(m.Run({x}), expected);
  }
}

// Exponents 2 and 3 become products, 0.5 a sqrt, others a pow call.
TEST(OnnxOpsElementwiseTest, PowByAConstantExponent) {
  for (double e : {2.0, 3.0, 0.5, 1.5}) {
    SCOPED_TRACE(e);
    OneNodeModel m("Pow");
    m.Input("x", {3}).Constant("e", {{}, {e}});
    const bool integer = e == std::floor(e);
    const Tensor x{{3}, {integer ? -2.0 : 0.25, 1, 4}};
    Tensor expected{{3}, {}};
    for (double v : x.values) expected.values.push_back(std::pow(v, e));
    ExpectTensor(m.Run({x}), expected);
  }
}

TEST(OnnxOpsElementwiseTest, ShapesThatDoNotBroadcastNameTheNode) {
  OneNodeModel m("Mul");
  m.Input("a", {2, 3}).Input("b", {2});
  absl::StatusOr<NDArray> out = m.Run({{{2, 3}, {1, 2, 3, 4, 5, 6}}, {{2}, {1, 2}}});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(std::string(out.status().message()).find("node 'the_node' (Mul)"), std::string::npos)
      << out.status();
}

}  // namespace
}  // namespace tessera
