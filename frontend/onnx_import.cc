#include "frontend/onnx_import.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "frontend/onnx_import_internal.h"

namespace tessera {
namespace onnx_internal {

// ---- NodeContext ------------------------------------------------------------------------

absl::Status NodeContext::Error(const std::string& what) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", name_, "' (", node_->op_type(), "): ", what));
}

absl::Status NodeContext::Unsupported(const std::string& what) const {
  return absl::UnimplementedError(
      absl::StrCat("node '", name_, "' (", node_->op_type(), "): ", what));
}

const onnx::AttributeProto* NodeContext::FindAttr(const std::string& name) const {
  for (const onnx::AttributeProto& a : node_->attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int NodeContext::output_count() const {
  int n = 0;
  for (const std::string& out : node_->output()) n += out.empty() ? 0 : 1;
  return n;
}

bool NodeContext::HasAttr(const std::string& name) const { return FindAttr(name) != nullptr; }

absl::StatusOr<int64_t> NodeContext::Int(const std::string& name, int64_t default_value) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr) return default_value;
  if (a->type() != onnx::AttributeProto::INT)
    return Error(absl::StrCat("attribute ", name, " is not an int"));
  return a->i();
}

absl::StatusOr<float> NodeContext::Float(const std::string& name, float default_value) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr) return default_value;
  if (a->type() != onnx::AttributeProto::FLOAT) {
    return Error(absl::StrCat("attribute ", name, " is not a float"));
  }
  return a->f();
}

absl::StatusOr<std::string> NodeContext::String(const std::string& name,
                                                std::string default_value) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr) return default_value;
  if (a->type() != onnx::AttributeProto::STRING) {
    return Error(absl::StrCat("attribute ", name, " is not a string"));
  }
  return a->s();
}

absl::StatusOr<std::vector<int64_t>> NodeContext::Ints(const std::string& name,
                                                       std::vector<int64_t> default_value) const {
  const onnx::AttributeProto* a = FindAttr(name);
  if (a == nullptr) return default_value;
  if (a->type() != onnx::AttributeProto::INTS) {
    return Error(absl::StrCat("attribute ", name, " is not a list of ints"));
  }
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

absl::Status NodeContext::CheckAttrs(const std::vector<std::string>& known) const {
  for (const onnx::AttributeProto& a : node_->attribute()) {
    if (std::find(known.begin(), known.end(), a.name()) == known.end()) {
      return Unsupported(absl::StrCat("unsupported attribute ", a.name()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> NodeContext::ConstInts(int i) const {
  if (!has_input(i)) return Error(absl::StrCat("input ", i, " is missing"));
  const GraphValue& v = value(i);
  if (!v.is_constant()) {
    return Unsupported(
        absl::StrCat("input ", i, " (", v.name, ") must be a constant (known at import)"));
  }
  std::vector<int64_t> out;
  for (int64_t k = 0; k < v.constant.size(); ++k) {
    out.push_back(static_cast<int64_t>(v.constant.GetFlat(k)));
  }
  return out;
}

absl::StatusOr<std::vector<double>> NodeContext::ConstDoubles(int i) const {
  if (!has_input(i)) return Error(absl::StrCat("input ", i, " is missing"));
  const GraphValue& v = value(i);
  if (!v.is_constant()) {
    return Unsupported(absl::StrCat("input ", i, " (", v.name, ") must be a constant"));
  }
  std::vector<double> out;
  for (int64_t k = 0; k < v.constant.size(); ++k) out.push_back(v.constant.GetFlat(k));
  return out;
}

absl::StatusOr<int> NodeContext::Axis(int64_t axis, int rank) const {
  if (axis < -rank || axis >= std::max(rank, 1)) {
    return Error(absl::StrCat("axis ", axis, " out of range for rank ", rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

absl::StatusOr<int> NodeContext::NewValue(int index, std::vector<int64_t> shape, DataType dtype) {
  if (index >= node_->output_size() || node_->output(index).empty()) {
    return Error(absl::StrCat("output ", index, " is not named"));
  }
  for (int64_t d : shape) {
    if (d <= 0) {
      return Unsupported(absl::StrCat("output ", node_->output(index), " would have extent ", d,
                                      " (empty tensors are not supported)"));
    }
  }
  const std::string& name = node_->output(index);
  if (names_->count(name)) return Error(absl::StrCat("value ", name, " is defined twice"));
  GraphValue v;
  v.name = name;
  v.shape = std::move(shape);
  v.dtype = dtype;
  graph_->values.push_back(std::move(v));
  int id = static_cast<int>(graph_->values.size()) - 1;
  (*names_)[name] = id;
  return id;
}

absl::Status NodeContext::Compute(OpPattern pattern, std::vector<int> inputs,
                                  std::vector<int64_t> shape, DataType dtype, OpCompute compute,
                                  int index, ChannelsLastForm channels_last) {
  bool all_constant = true;
  for (int in : inputs) all_constant = all_constant && graph_->values[in].is_constant();
  if (all_constant) {
    std::vector<const GraphValue*> values;
    for (int in : inputs) values.push_back(&graph_->values[in]);
    absl::StatusOr<NDArray> folded = EvaluateConstant(values, compute);
    if (!folded.ok()) return Error(absl::StrCat("constant folding: ", folded.status().message()));
    return Constant(std::move(*folded), std::move(shape), index);
  }
  TESSERA_ASSIGN_OR_RETURN(int out, NewValue(index, std::move(shape), dtype));
  GraphNode node;
  node.name = name_;
  node.op_type = node_->op_type();
  node.pattern = pattern;
  node.inputs = std::move(inputs);
  node.output = out;
  node.compute = std::move(compute);
  node.channels_last = std::move(channels_last);
  graph_->nodes.push_back(std::move(node));
  graph_->values[out].producer = static_cast<int>(graph_->nodes.size()) - 1;
  return absl::OkStatus();
}

absl::Status NodeContext::View(int of, std::vector<int64_t> shape, int index) {
  const GraphValue& src = graph_->values[of];
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != src.num_elements()) {
    return Error(absl::StrCat("cannot view ", src.num_elements(), " elements as ", n));
  }
  if (src.is_constant()) {
    NDArray copy = src.constant.Clone();
    return Constant(std::move(copy), std::move(shape), index);
  }
  const int root = graph_->Root(of);
  const DataType dtype = src.dtype;
  TESSERA_ASSIGN_OR_RETURN(int out, NewValue(index, std::move(shape), dtype));
  graph_->values[out].alias_of = root;
  return absl::OkStatus();
}

absl::Status NodeContext::Constant(NDArray data, std::vector<int64_t> shape, int index) {
  TESSERA_ASSIGN_OR_RETURN(int out, NewValue(index, shape, data.dtype()));
  NDArray shaped = NDArray::Empty(data.dtype(), shape);
  if (shaped.size() != data.size()) {
    return Error(absl::StrCat("constant of ", data.size(), " elements for shape [",
                              absl::StrJoin(shape, ", "), "]"));
  }
  std::memcpy(shaped.data(), data.data(), static_cast<size_t>(data.nbytes()));
  graph_->values[out].constant = std::move(shaped);
  return absl::OkStatus();
}

absl::Status NodeContext::EmptyConstant(int index) {
  if (index >= node_->output_size() || node_->output(index).empty()) {
    return Error(absl::StrCat("output ", index, " is not named"));
  }
  const std::string& name = node_->output(index);
  if (names_->count(name)) return Error(absl::StrCat("value ", name, " is defined twice"));
  (*names_)[name] = -1;
  return absl::OkStatus();
}

int NodeContext::NewConstant(NDArray data, const std::string& suffix) {
  GraphValue v;
  v.name = absl::StrCat(name_, "/", suffix);
  v.dtype = data.dtype();
  v.shape = data.shape();
  v.constant = std::move(data);
  graph_->values.push_back(std::move(v));
  return static_cast<int>(graph_->values.size()) - 1;
}

// ---- helpers ----------------------------------------------------------------------------

std::vector<int64_t> FuncShape(const std::vector<int64_t>& shape) {
  return shape.empty() ? std::vector<int64_t>{1} : shape;
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const NodeContext& ctx,
                                                     const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return ctx.Error(absl::StrCat("shapes [", absl::StrJoin(a, ", "), "] and [",
                                    absl::StrJoin(b, ", "), "] do not broadcast"));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

absl::StatusOr<DataType> FromOnnxType(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return DataType::Float32();
    case onnx::TensorProto::FLOAT16:
      return DataType::Float16();
    case onnx::TensorProto::DOUBLE:
      return DataType::Float64();
    case onnx::TensorProto::INT64:
      return DataType::Int64();
    case onnx::TensorProto::INT32:
      return DataType::Int32();
    case onnx::TensorProto::INT8:
      return DataType::Int8();
    case onnx::TensorProto::UINT8:
      return DataType::UInt8();
    case onnx::TensorProto::BOOL:
      return DataType::Bool();
    default:
      return absl::UnimplementedError(absl::StrCat(
          "unsupported element type ",
          onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(elem_type))));
  }
}

}  // namespace onnx_internal

namespace {

using onnx_internal::ConverterRow;
using onnx_internal::NodeContext;

const std::map<std::string, onnx_internal::Converter>& ConverterTable() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, onnx_internal::Converter>();
    for (auto rows : {onnx_internal::ElementwiseConverters(), onnx_internal::NnConverters(),
                      onnx_internal::ReduceConverters(), onnx_internal::ResizeConverters(),
                      onnx_internal::ShapeConverters()}) {
      for (const ConverterRow& r : rows) (*t)[r.op_type] = r.convert;
    }
    return t;
  }();
  return *table;
}

}  // namespace

// An initializer or Constant value as an NDArray.
absl::StatusOr<NDArray> onnx_internal::ConstantFromProto(const onnx::TensorProto& t,
                                                         const std::string& where) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    return absl::UnimplementedError(
        absl::StrCat(where, ": tensor ", t.name(), " keeps its data in an external file"));
  }
  absl::StatusOr<DataType> dtype = onnx_internal::FromOnnxType(t.data_type());
  if (!dtype.ok())
    return absl::UnimplementedError(
        absl::StrCat(where, ": tensor ", t.name(), ": ", dtype.status().message()));
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape) {
    if (d < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": tensor ", t.name(), " has a negative dimension"));
    if (d == 0)
      return absl::UnimplementedError(absl::StrCat(where, ": tensor ", t.name(), " is empty"));
  }
  NDArray a = NDArray::Empty(*dtype, shape);
  const int64_t n = a.size();
  auto mismatch = [&](int64_t have) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tensor ", t.name(), " holds ", have,
                                                   " elements for shape of ", n,
                                                   " (truncated file?)"));
  };
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != a.nbytes()) {
      return mismatch(static_cast<int64_t>(t.raw_data().size()) / std::max(1, dtype->bytes()));
    }
    std::memcpy(a.data(), t.raw_data().data(), t.raw_data().size());
    return a;
  }
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (t.float_data_size() != n) return mismatch(t.float_data_size());
      for (int64_t i = 0; i < n; ++i) a.SetFlat(i, t.float_data(i));
      break;
    case onnx::TensorProto::DOUBLE:
      if (t.double_data_size() != n) return mismatch(t.double_data_size());
      for (int64_t i = 0; i < n; ++i) a.SetFlat(i, t.double_data(i));
      break;
    case onnx::TensorProto::INT64:
      if (t.int64_data_size() != n) return mismatch(t.int64_data_size());
      for (int64_t i = 0; i < n; ++i) static_cast<int64_t*>(a.data())[i] = t.int64_data(i);
      break;
    case onnx::TensorProto::FLOAT16: {
      if (t.int32_data_size() != n) return mismatch(t.int32_data_size());
      for (int64_t i = 0; i < n; ++i) {
        static_cast<uint16_t*>(a.data())[i] = static_cast<uint16_t>(t.int32_data(i));
      }
      break;
    }
    default:  // INT32, INT8, UINT8, BOOL: int32_data
      if (t.int32_data_size() != n) return mismatch(t.int32_data_size());
      for (int64_t i = 0; i < n; ++i) a.SetFlat(i, t.int32_data(i));
      break;
  }
  return a;
}

namespace {

using onnx_internal::ConstantFromProto;

std::string ShapeText(const onnx::TypeProto& type) {
  std::vector<std::string> dims;
  for (const auto& d : type.tensor_type().shape().dim()) {
    dims.push_back(d.has_dim_value() ? absl::StrCat(d.dim_value())
                                     : (d.dim_param().empty() ? "?" : d.dim_param()));
  }
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

absl::StatusOr<Graph> ImportModel(const onnx::ModelProto& model, const std::string& label,
                                  const OnnxImportOptions& options) {
  if (!model.has_graph() || model.graph().node_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": not an ONNX model (no graph with nodes)"));
  }
  int opset = -1;
  for (const onnx::OperatorSetIdProto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  }
  if (opset < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": the model imports no version of the default ONNX opset"));
  }
  if (opset < kMinOnnxOpset || opset > kMaxOnnxOpset) {
    return absl::UnimplementedError(absl::StrCat(label, ": opset ", opset,
                                                 " is outside the supported range [", kMinOnnxOpset,
                                                 ", ", kMaxOnnxOpset, "]"));
  }
  const onnx::GraphProto& g = model.graph();
  Graph graph;
  std::map<std::string, int> names;
  for (const onnx::TensorProto& t : g.initializer()) {
    if (std::find(t.dims().begin(), t.dims().end(), 0) != t.dims().end()) {
      names[t.name()] = -1;  // empty: stands for an omitted input (NodeContext::EmptyConstant)
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(NDArray data,
                             ConstantFromProto(t, absl::StrCat(label, ": initializer")));
    GraphValue v;
    v.name = t.name();
    v.dtype = data.dtype();
    v.shape = data.shape();
    v.constant = std::move(data);
    names[t.name()] = static_cast<int>(graph.values.size());
    graph.values.push_back(std::move(v));
  }
  for (const onnx::ValueInfoProto& in : g.input()) {
    if (names.count(in.name())) continue;  // an initializer listed as an input (IR < 4)
    if (!in.type().has_tensor_type()) {
      return absl::UnimplementedError(
          absl::StrCat(label, ": input ", in.name(), " is not a tensor"));
    }
    absl::StatusOr<DataType> dtype =
        onnx_internal::FromOnnxType(in.type().tensor_type().elem_type());
    if (!dtype.ok()) {
      return absl::UnimplementedError(
          absl::StrCat(label, ": input ", in.name(), ": ", dtype.status().message()));
    }
    GraphValue v;
    v.name = in.name();
    v.dtype = *dtype;
    v.is_input = true;
    auto given = options.input_shapes.find(in.name());
    if (given != options.input_shapes.end()) {
      // The caller's shape replaces the file's; a declared rank must agree, declared fixed
      // dimensions too.
      const bool declared = in.type().tensor_type().has_shape();
      const auto& dims = in.type().tensor_type().shape().dim();
      if (declared && dims.size() != static_cast<int>(given->second.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat(label, ": input ", in.name(), " has rank ", dims.size(), " ",
                         ShapeText(in.type()), ", the given shape has ", given->second.size()));
      }
      for (size_t d = 0; d < given->second.size(); ++d) {
        const int64_t extent = given->second[d];
        if (extent <= 0 || (declared && dims[static_cast<int>(d)].has_dim_value() &&
                            dims[static_cast<int>(d)].dim_value() != extent)) {
          return absl::InvalidArgumentError(
              absl::StrCat(label, ": input ", in.name(), ": the given extent ", extent,
                           " of dimension ", d, " does not fit ", ShapeText(in.type())));
        }
      }
      v.shape = given->second;
    } else {
      if (!in.type().tensor_type().has_shape()) {
        return absl::InvalidArgumentError(absl::StrCat(
            label, ": input ", in.name(), " has no shape (static shapes only: give its shape)"));
      }
      for (const auto& d : in.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() <= 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              label, ": input ", in.name(), " has a dynamic dimension ", ShapeText(in.type()),
              " (static shapes only: export with fixed sizes, or give the input's shape)"));
        }
        v.shape.push_back(d.dim_value());
      }
    }
    names[in.name()] = static_cast<int>(graph.values.size());
    graph.inputs.push_back(static_cast<int>(graph.values.size()));
    graph.values.push_back(std::move(v));
  }
  const auto& table = ConverterTable();
  std::vector<std::unique_ptr<onnx::NodeProto>> synthetic;
  for (const onnx_internal::ImportNode& import : onnx_internal::ImportNodes(g, &synthetic)) {
    const onnx::NodeProto& node = *import.node;
    const int n = import.index;
    std::string node_name =
        node.name().empty() ? absl::StrCat(node.op_type(), "_", n) : node.name();
    auto fail = [&](absl::StatusCode code, const std::string& what) {
      return absl::Status(
          code, absl::StrCat(label, ": node '", node_name, "' (", node.op_type(), "): ", what));
    };
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      return fail(absl::StatusCode::kUnimplemented,
                  absl::StrCat("operator domain ", node.domain(), " is not supported"));
    }
    auto it = table.find(node.op_type());
    if (it == table.end()) {
      return fail(absl::StatusCode::kUnimplemented, "unsupported operator");
    }
    std::vector<int> inputs;
    for (const std::string& in : node.input()) {
      if (in.empty()) {
        inputs.push_back(-1);
        continue;
      }
      auto v = names.find(in);
      if (v == names.end()) {
        return fail(absl::StatusCode::kInvalidArgument,
                    absl::StrCat("input ", in, " is not defined before the node"));
      }
      inputs.push_back(v->second);
    }
    NodeContext ctx(&graph, &names, &node, node_name, opset, std::move(inputs));
    absl::Status s = it->second(&ctx);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat(label, ": ", s.message()));
    if (node.output_size() > 0 && !node.output(0).empty() && !names.count(node.output(0))) {
      return fail(absl::StatusCode::kInternal, "the converter produced no output");
    }
  }
  for (const onnx::ValueInfoProto& out : g.output()) {
    auto v = names.find(out.name());
    if (v == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": graph output ", out.name(), " is never computed"));
    }
    if (v->second < 0) {
      return absl::UnimplementedError(
          absl::StrCat(label, ": graph output ", out.name(), " is an empty tensor"));
    }
    graph.outputs.push_back(v->second);
  }
  for (const auto& [name, shape] : options.input_shapes) {
    bool found = false;
    for (int in : graph.inputs) found = found || graph.values[in].name == name;
    if (!found) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, ": a shape is given for ", name, ", which is not a graph input"));
    }
  }
  if (graph.outputs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": the graph has no outputs"));
  }
  return graph;
}

}  // namespace

absl::StatusOr<Graph> ImportOnnxBytes(const std::string& bytes, const std::string& label,
                                      const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(label, ": not an ONNX model (the protobuf does not parse; truncated?)"));
  }
  return ImportModel(model, label, options);
}

absl::StatusOr<Graph> ImportOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read model file ", path));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ImportOnnxBytes(buffer.str(), path, options);
}

std::vector<std::string> SupportedOnnxOperators() {
  std::vector<std::string> ops;
  for (const auto& [name, convert] : ConverterTable()) ops.push_back(name);
  return ops;
}

}  // namespace tessera
