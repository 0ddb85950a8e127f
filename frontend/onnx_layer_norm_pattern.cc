// LayerNorm as exporters write it below opset 17 (PyTorch, GPT-2 and BERT exports):
//
//   m = ReduceMean(x, axes=[-1]);  c = Sub(x, m);  v = ReduceMean(Pow(c, 2), axes=[-1])
//   n = Div(c, Sqrt(Add(v, eps)));  y = Add(Mul(n, gamma), beta)
//
// is imported as one LayerNormalization(x, gamma, beta, axis=-1, epsilon=eps) node: one
// row-reduction kernel instead of two reductions (the second reading `c`, which two nodes use)
// and their elementwise epilogues. Matched on the NodeProtos, where attributes and constants
// can be read: every intermediate value is read only by the next node of the pattern (`c` by
// Pow and Div), eps and the exponent are scalar constants, gamma and beta 1-D initializers.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontend/onnx_import_internal.h"

namespace tessera {
namespace onnx_internal {
namespace {

class LayerNormMatcher {
 public:
  explicit LayerNormMatcher(const onnx::GraphProto& g) : g_(g) {
    for (const onnx::TensorProto& t : g.initializer()) initializers_[t.name()] = &t;
    for (int n = 0; n < g.node_size(); ++n) {
      for (const std::string& in : g.node(n).input()) readers_[in].push_back(n);
      if (g.node(n).op_type() == "Constant" && g.node(n).attribute_size() == 1 &&
          g.node(n).attribute(0).name() == "value" && g.node(n).output_size() == 1) {
        constants_[g.node(n).output(0)] = &g.node(n).attribute(0).t();
      }
    }
    for (const onnx::ValueInfoProto& out : g.output()) outputs_.insert(out.name());
  }

  // The pattern starting at node `r` (the first ReduceMean): the matched node indices, the
  // LayerNormalization node replacing them (placed where the last one was).
  std::optional<std::pair<std::vector<int>, onnx::NodeProto>> Match(int r) const {
    const onnx::NodeProto& mean = g_.node(r);
    if (!ReducesLastAxis(mean)) return std::nullopt;
    const std::string& x = mean.input(0);
    const int sub = Only(r, "Sub");
    if (sub < 0 || In(sub, 0) != x || In(sub, 1) != mean.output(0)) return std::nullopt;
    const std::string& c = g_.node(sub).output(0);
    const std::vector<int>* c_readers = Readers(c);
    if (c_readers == nullptr || c_readers->size() != 2) return std::nullopt;
    int pow = -1, div = -1;
    for (int n : *c_readers) {
      if (g_.node(n).op_type() == "Pow" && In(n, 0) == c) pow = n;
      if (g_.node(n).op_type() == "Div" && In(n, 0) == c) div = n;
    }
    if (pow < 0 || div < 0 || Scalar(In(pow, 1)) != std::optional<double>(2.0)) {
      return std::nullopt;
    }
    const int var = Only(pow, "ReduceMean");
    if (var < 0 || !ReducesLastAxis(g_.node(var))) return std::nullopt;
    const int add = Only(var, "Add");
    if (add < 0) return std::nullopt;
    const std::optional<double> eps = Scalar(Other(add, g_.node(var).output(0)));
    const int sqrt = Only(add, "Sqrt");
    if (!eps.has_value() || sqrt < 0 || Only(sqrt, "Div") != div ||
        In(div, 1) != g_.node(sqrt).output(0)) {
      return std::nullopt;
    }
    const int scale = Only(div, "Mul");
    if (scale < 0) return std::nullopt;
    const std::string gamma = Other(scale, g_.node(div).output(0));
    const int shift = Only(scale, "Add");
    if (shift < 0) return std::nullopt;
    const std::string beta = Other(shift, g_.node(scale).output(0));
    if (!IsVector(gamma) || !IsVector(beta)) return std::nullopt;
    onnx::NodeProto ln;
    ln.set_name(g_.node(shift).name());
    ln.set_op_type("LayerNormalization");
    ln.add_input(x);
    ln.add_input(gamma);
    ln.add_input(beta);
    ln.add_output(g_.node(shift).output(0));
    onnx::AttributeProto* axis = ln.add_attribute();
    axis->set_name("axis");
    axis->set_type(onnx::AttributeProto::INT);
    axis->set_i(-1);
    onnx::AttributeProto* epsilon = ln.add_attribute();
    epsilon->set_name("epsilon");
    epsilon->set_type(onnx::AttributeProto::FLOAT);
    epsilon->set_f(static_cast<float>(*eps));
    return std::make_pair(std::vector<int>{r, sub, pow, var, add, sqrt, div, scale, shift}, ln);
  }

 private:
  const std::vector<int>* Readers(const std::string& value) const {
    auto it = readers_.find(value);
    return it == readers_.end() || outputs_.count(value) ? nullptr : &it->second;
  }

  // Input `i` of node `n` ("" when it has none).
  const std::string& In(int n, int i) const {
    static const std::string* none = new std::string();
    return i < g_.node(n).input_size() ? g_.node(n).input(i) : *none;
  }

  // The one node reading node `n`'s output, when it is a `op_type` and nothing else reads it;
  // -1 otherwise.
  int Only(int n, const char* op_type) const {
    if (g_.node(n).output_size() != 1) return -1;
    const std::vector<int>* readers = Readers(g_.node(n).output(0));
    if (readers == nullptr || readers->size() != 1) return -1;
    const onnx::NodeProto& next = g_.node(readers->front());
    return next.op_type() == op_type && next.output_size() == 1 ? readers->front() : -1;
  }

  // The input of two-input node `n` that is not `value` ("" when neither or both are).
  std::string Other(int n, const std::string& value) const {
    const onnx::NodeProto& node = g_.node(n);
    if (node.input_size() != 2 || (node.input(0) == value) == (node.input(1) == value)) return "";
    return node.input(0) == value ? node.input(1) : node.input(0);
  }

  const onnx::TensorProto* ConstantTensor(const std::string& name) const {
    auto init = initializers_.find(name);
    if (init != initializers_.end()) return init->second;
    auto c = constants_.find(name);
    return c == constants_.end() ? nullptr : c->second;
  }

  std::optional<double> Scalar(const std::string& name) const {
    const onnx::TensorProto* t = ConstantTensor(name);
    if (t == nullptr) return std::nullopt;
    absl::StatusOr<NDArray> a = ConstantFromProto(*t, "");
    if (!a.ok() || a->size() != 1 || !a->dtype().is_float()) return std::nullopt;
    return a->GetFlat(0);
  }

  bool IsVector(const std::string& name) const {
    auto init = initializers_.find(name);
    return init != initializers_.end() && init->second->dims_size() == 1;
  }

  // ReduceMean over axis -1 with keepdims (axes as the attribute, or from opset 18 as an input).
  bool ReducesLastAxis(const onnx::NodeProto& node) const {
    if (node.op_type() != "ReduceMean" || node.input_size() < 1) return false;
    std::optional<std::vector<int64_t>> axes;
    for (const onnx::AttributeProto& a : node.attribute()) {
      if (a.name() == "keepdims" && a.i() != 1) return false;
      if (a.name() == "axes") axes = std::vector<int64_t>(a.ints().begin(), a.ints().end());
      if (a.name() != "keepdims" && a.name() != "axes") return false;
    }
    if (node.input_size() == 2) {
      const onnx::TensorProto* t = ConstantTensor(node.input(1));
      absl::StatusOr<NDArray> a = t == nullptr ? absl::StatusOr<NDArray>(absl::NotFoundError(""))
                                               : ConstantFromProto(*t, "");
      if (!a.ok() || a->size() != 1) return false;
      axes = std::vector<int64_t>{static_cast<int64_t>(a->GetFlat(0))};
    }
    return axes == std::vector<int64_t>{-1};
  }

  const onnx::GraphProto& g_;
  std::map<std::string, const onnx::TensorProto*> initializers_;
  std::map<std::string, const onnx::TensorProto*> constants_;
  std::map<std::string, std::vector<int>> readers_;
  std::set<std::string> outputs_;
};

}  // namespace

std::vector<ImportNode> ImportNodes(const onnx::GraphProto& g,
                                    std::vector<std::unique_ptr<onnx::NodeProto>>* synthetic) {
  LayerNormMatcher matcher(g);
  std::map<int, const onnx::NodeProto*> replaced_at;  // last matched node -> its replacement
  std::set<int> removed;
  for (int n = 0; n < g.node_size(); ++n) {
    if (removed.count(n)) continue;
    auto match = matcher.Match(n);
    if (!match.has_value()) continue;
    synthetic->push_back(std::make_unique<onnx::NodeProto>(std::move(match->second)));
    removed.insert(match->first.begin(), match->first.end());
    replaced_at[match->first.back()] = synthetic->back().get();
  }
  std::vector<ImportNode> nodes;
  for (int n = 0; n < g.node_size(); ++n) {
    auto replacement = replaced_at.find(n);
    if (replacement != replaced_at.end()) {
      nodes.push_back({replacement->second, n});
    } else if (!removed.count(n)) {
      nodes.push_back({&g.node(n), n});
    }
  }
  return nodes;
}

}  // namespace onnx_internal
}  // namespace tessera
