// Internals of the ONNX importer shared by the operator files (onnx_ops_*.cc): the context a
// converter works in and the attribute helpers. Each operator file exports a table of
// (op type, converter) rows; onnx_import.cc concatenates them (no static registration).
#ifndef TESSERA_FRONTEND_ONNX_IMPORT_INTERNAL_H_
#define TESSERA_FRONTEND_ONNX_IMPORT_INTERNAL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "frontend/model_graph.h"
#include "onnx/onnx_pb.h"

namespace tessera {
namespace onnx_internal {

// What a converter sees: the node, its resolved inputs, the graph being built.
class NodeContext {
 public:
  // `names` maps value names to ids; outputs are added to it.
  NodeContext(Graph* graph, std::map<std::string, int>* names, const onnx::NodeProto* node,
              std::string node_name, int opset, std::vector<int> inputs)
      : graph_(graph),
        names_(names),
        node_(node),
        name_(std::move(node_name)),
        opset_(opset),
        inputs_(std::move(inputs)) {}

  const onnx::NodeProto& node() const { return *node_; }
  const std::string& op_type() const { return node_->op_type(); }
  int opset() const { return opset_; }
  Graph* graph() { return graph_; }

  // Inputs: value ids; -1 for an omitted optional input.
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[i] >= 0; }
  int input(int i) const { return inputs_[i]; }
  const GraphValue& value(int i) const { return graph_->values[inputs_[i]]; }
  const std::vector<int64_t>& shape(int i) const { return value(i).shape; }
  int rank(int i) const { return static_cast<int>(shape(i).size()); }
  // Number of named (used) outputs of the node.
  int output_count() const;

  // kInvalidArgument naming the node: "node 'conv1' (Conv): <what>".
  absl::Status Error(const std::string& what) const;
  absl::Status Unsupported(const std::string& what) const;  // kUnimplemented, same form

  // Attributes. Missing: the default. A present attribute of the wrong type is an error.
  absl::StatusOr<int64_t> Int(const std::string& name, int64_t default_value) const;
  absl::StatusOr<float> Float(const std::string& name, float default_value) const;
  absl::StatusOr<std::string> String(const std::string& name, std::string default_value) const;
  absl::StatusOr<std::vector<int64_t>> Ints(const std::string& name,
                                            std::vector<int64_t> default_value) const;
  bool HasAttr(const std::string& name) const;
  // Errors unless every attribute of the node is in `known`: an unsupported attribute is never
  // silently ignored.
  absl::Status CheckAttrs(const std::vector<std::string>& known) const;

  // Input `i` must be a constant (e.g. Reshape's shape); its elements as integers / doubles.
  absl::StatusOr<std::vector<int64_t>> ConstInts(int i) const;
  absl::StatusOr<std::vector<double>> ConstDoubles(int i) const;
  // Normalizes a possibly negative axis of a rank-`rank` tensor; errors when out of range.
  absl::StatusOr<int> Axis(int64_t axis, int rank) const;

  // Results. Output `index` of the node (index 0 unless a converter produces several).
  // Compute: adds a node (or folds it into a constant when every input is constant), with the
  // operator's channels-last form where it has one.
  absl::Status Compute(OpPattern pattern, std::vector<int> inputs, std::vector<int64_t> shape,
                       DataType dtype, OpCompute compute, int index = 0,
                       ChannelsLastForm channels_last = {});
  // A view of value `of` with another shape (same number of elements).
  absl::Status View(int of, std::vector<int64_t> shape, int index = 0);
  absl::Status Constant(NDArray data, std::vector<int64_t> shape, int index = 0);
  // An empty constant (a zero extent), which exporters write for an optional input they leave
  // out (Resize's roi, opset 11's scales beside sizes): the nodes reading it see an omitted
  // input (-1), as for an input named "".
  absl::Status EmptyConstant(int index = 0);
  // A constant made by the converter (e.g. folded batch-norm scales), named
  // "<node name>/<suffix>"; returns its value id.
  int NewConstant(NDArray data, const std::string& suffix);

 private:
  absl::StatusOr<int> NewValue(int index, std::vector<int64_t> shape, DataType dtype);
  const onnx::AttributeProto* FindAttr(const std::string& name) const;

  Graph* graph_;
  std::map<std::string, int>* names_;
  const onnx::NodeProto* node_;
  std::string name_;
  int opset_;
  std::vector<int> inputs_;
};

using Converter = absl::Status (*)(NodeContext* ctx);
struct ConverterRow {
  const char* op_type;
  Converter convert;
};

std::vector<ConverterRow> ElementwiseConverters();
std::vector<ConverterRow> NnConverters();
std::vector<ConverterRow> ReduceConverters();
std::vector<ConverterRow> ResizeConverters();
std::vector<ConverterRow> ShapeConverters();

// The nodes to convert, in order: the graph's, except that the LayerNorms exporters write out
// (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add) become one LayerNormalization
// node each, held in `synthetic` (frontend/onnx_layer_norm_pattern.cc). `index` is the node's
// position in the file (the last matched node's for a replacement), for default names.
struct ImportNode {
  const onnx::NodeProto* node;
  int index;
};
std::vector<ImportNode> ImportNodes(const onnx::GraphProto& g,
                                    std::vector<std::unique_ptr<onnx::NodeProto>>* synthetic);

// Helpers for converters.
// Rank-0 values are held as shape {1} inside functions.
std::vector<int64_t> FuncShape(const std::vector<int64_t>& shape);
// numpy broadcasting of two shapes; error (via ctx) when they do not broadcast.
absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const NodeContext& ctx,
                                                     const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b);
// The ONNX element type as a DataType; kUnimplemented for types Tessera does not compute in.
absl::StatusOr<DataType> FromOnnxType(int32_t elem_type);
// A TensorProto (initializer, Constant value) as an NDArray; `where` prefixes errors.
absl::StatusOr<NDArray> ConstantFromProto(const onnx::TensorProto& t, const std::string& where);

}  // namespace onnx_internal
}  // namespace tessera

#endif  // TESSERA_FRONTEND_ONNX_IMPORT_INTERNAL_H_
