// Helpers of the ONNX operator tests (onnx_ops_{elementwise,nn,reduce,shape}_test.cc): a
// one-node model built in memory (float inputs, constant initializers, attributes), imported
// with the real importer and run unfused by the interpreter, so that each converter is checked
// against values worked out by hand.
#ifndef TESSERA_TESTS_FRONTEND_ONNX_OPS_TESTING_H_
#define TESSERA_TESTS_FRONTEND_ONNX_OPS_TESTING_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/fuse_ops.h"
#include "frontend/onnx_import.h"
#include "gtest/gtest.h"
#include "ir/ndarray.h"
#include "model/reference.h"
#include "onnx/onnx_pb.h"

namespace tessera {
namespace onnx_testing {

// A float32 tensor: its shape and its values in row-major order.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> values;
};

// One node `op_type` (opset `opset`) reading `inputs` (graph inputs, float32) and then
// `constants` (initializers: float32, or int64 when `int64` is set), writing "y".
class OneNodeModel {
 public:
  explicit OneNodeModel(const std::string& op_type, int opset = 13) {
    model_.set_ir_version(8);
    model_.add_opset_import()->set_version(opset);
    node_ = model_.mutable_graph()->add_node();
    node_->set_name("the_node");
    node_->set_op_type(op_type);
    node_->add_output("y");
    model_.mutable_graph()->add_output()->set_name("y");
  }

  // A graph input named `name` of `shape`, also the node's next input.
  OneNodeModel& Input(const std::string& name, const std::vector<int64_t>& shape) {
    onnx::ValueInfoProto* x = model_.mutable_graph()->add_input();
    x->set_name(name);
    onnx::TypeProto::Tensor* type = x->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : shape) type->mutable_shape()->add_dim()->set_dim_value(d);
    node_->add_input(name);
    return *this;
  }
  // An initializer, also the node's next input.
  OneNodeModel& Constant(const std::string& name, const Tensor& t, bool int64 = false) {
    onnx::TensorProto* c = model_.mutable_graph()->add_initializer();
    c->set_name(name);
    for (int64_t d : t.shape) c->add_dims(d);
    c->set_data_type(int64 ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    for (double v : t.values) {
      if (int64) {
        c->add_int64_data(static_cast<int64_t>(v));
      } else {
        c->add_float_data(static_cast<float>(v));
      }
    }
    node_->add_input(name);
    return *this;
  }
  // An omitted optional input (the name "").
  OneNodeModel& Omitted() {
    node_->add_input("");
    return *this;
  }
  OneNodeModel& StringAttr(const std::string& name, const std::string& v) {
    onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::STRING);
    a->set_s(v);
    return *this;
  }
  OneNodeModel& IntAttr(const std::string& name, int64_t v) {
    onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }
  OneNodeModel& FloatAttr(const std::string& name, float v) {
    onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::FLOAT);
    a->set_f(v);
    return *this;
  }
  OneNodeModel& IntsAttr(const std::string& name, const std::vector<int64_t>& v) {
    onnx::AttributeProto* a = Attr(name, onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }

  // The model as an .onnx file holds it.
  std::string Bytes() const { return model_.SerializeAsString(); }

  // Imports the model and runs it on `inputs` (in Input order); the output "y".
  absl::StatusOr<NDArray> Run(const std::vector<Tensor>& inputs) const {
    absl::StatusOr<Graph> graph = ImportOnnxBytes(Bytes(), "m.onnx");
    if (!graph.ok()) return graph.status();
    absl::StatusOr<FusedGraph> unfused = FuseGraph(*graph, {/*fuse=*/false});
    if (!unfused.ok()) return unfused.status();
    std::vector<NDArray> arrays;
    for (const Tensor& t : inputs) {
      arrays.push_back(NDArray::Empty(DataType::Float32(), t.shape));
      for (size_t i = 0; i < t.values.size(); ++i) arrays.back().SetFlat(i, t.values[i]);
    }
    absl::StatusOr<std::vector<NDArray>> out = InterpretModel(*graph, *unfused, arrays);
    if (!out.ok()) return out.status();
    if (out->size() != 1) return absl::InternalError("expected one output");
    return (*out)[0];
  }

 private:
  onnx::AttributeProto* Attr(const std::string& name, onnx::AttributeProto::AttributeType type) {
    onnx::AttributeProto* a = node_->add_attribute();
    a->set_name(name);
    a->set_type(type);
    return a;
  }

  onnx::ModelProto model_;
  onnx::NodeProto* node_;
};

// Expects `actual` to have `expected`'s shape and values (to float precision).
inline void ExpectTensor(const absl::StatusOr<NDArray>& actual, const Tensor& expected) {
  ASSERT_TRUE(actual.ok()) << actual.status();
  ASSERT_EQ(actual->shape(), expected.shape);
  ASSERT_EQ(actual->size(), static_cast<int64_t>(expected.values.size()));
  for (size_t i = 0; i < expected.values.size(); ++i) {
    EXPECT_NEAR(actual->GetFlat(i), expected.values[i], 1e-5 * (1 + std::abs(expected.values[i])))
        << "element " << i;
  }
}

}  // namespace onnx_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_FRONTEND_ONNX_OPS_TESTING_H_
