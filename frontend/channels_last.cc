#include "frontend/channels_last.h"

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace tessera {
namespace {

// A permutation of four axes: axis d of the result is axis [d] of its source.
using Permutation = std::array<int, 4>;
constexpr Permutation kToNhwc = {0, 2, 3, 1};
constexpr Permutation kToNchw = {0, 3, 1, 2};
constexpr Permutation kToHwio = {2, 3, 1, 0};  // [O, I, KH, KW] -> [KH, KW, I, O]

std::vector<int64_t> Permuted(std::vector<int64_t> shape, const Permutation& perm) {
  while (shape.size() < 4) shape.insert(shape.begin(), 1);  // numpy's alignment
  return {shape[perm[0]], shape[perm[1]], shape[perm[2]], shape[perm[3]]};
}

NDArray PermuteConstant(const NDArray& data, const Permutation& perm) {
  std::vector<int64_t> in = data.shape();
  while (in.size() < 4) in.insert(in.begin(), 1);
  const std::vector<int64_t> out = Permuted(in, perm);
  std::array<int64_t, 4> in_strides;
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    in_strides[d] = stride;
    stride *= in[d];
  }
  NDArray result = NDArray::Empty(data.dtype(), out);
  int64_t flat = 0;
  for (int64_t a = 0; a < out[0]; ++a) {
    for (int64_t b = 0; b < out[1]; ++b) {
      for (int64_t c = 0; c < out[2]; ++c) {
        for (int64_t d = 0; d < out[3]; ++d) {
          const int64_t from = a * in_strides[perm[0]] + b * in_strides[perm[1]] +
                               c * in_strides[perm[2]] + d * in_strides[perm[3]];
          result.SetFlat(flat++, data.GetFlat(from));
        }
      }
    }
  }
  return result;
}

OpCompute TransposeCompute(std::vector<int64_t> out_shape, Permutation perm) {
  return [out_shape, perm](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        out_shape,
        [&](const std::vector<Var>& i) {
          std::vector<Expr> index(4);
          for (int d = 0; d < 4; ++d) index[perm[d]] = i[d];
          return ops[0].tensor(index);
        },
        (*namer)("T_transpose"));
  };
}

// An NCHW value whose NHWC form holds its elements in the same order (one channel, or one
// pixel: a global pool's result).
bool SameOrderInNhwc(const std::vector<int64_t>& nchw) {
  return nchw[1] == 1 || nchw[2] * nchw[3] == 1;
}

class Converter {
 public:
  explicit Converter(const Graph& graph) : in_(graph), out_(graph) {
    out_.nodes.clear();
    nhwc_.assign(graph.values.size(), -1);
    available_.assign(graph.values.size(), false);
    for (size_t v = 0; v < graph.values.size(); ++v) {
      available_[v] = graph.values[v].producer < 0 && graph.values[v].alias_of < 0;
    }
  }

  absl::StatusOr<Graph> Run() && {
    for (const GraphNode& node : in_.nodes) TESSERA_RETURN_IF_ERROR(Convert(node));
    for (int out : in_.outputs) TESSERA_RETURN_IF_ERROR(Nchw(out).status());
    return Compact();
  }

 private:
  bool WantsChannelsLast(const GraphNode& node) const {
    const ChannelsLastForm& form = node.channels_last;
    if (!form.compute || form.inputs.size() != node.inputs.size()) return false;
    bool nhwc_input = false, convolution = false;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      const GraphValue& value = out_.values[v];
      switch (form.inputs[i]) {
        case ChannelsLastInput::kPermuted:
          if (value.shape.size() > 4 || (!value.is_constant() && value.shape.size() != 4)) {
            return false;
          }
          nhwc_input = nhwc_input || nhwc_[v] >= 0;
          break;
        case ChannelsLastInput::kHwio:
          if (!value.is_constant() || value.shape.size() != 4) return false;
          convolution = true;
          break;
        case ChannelsLastInput::kUnchanged:
          break;
      }
    }
    // A convolution is worth a transpose of its input; anything else runs in the layout its
    // data comes in.
    return nhwc_input || convolution;
  }

  absl::Status Convert(const GraphNode& node) {
    GraphNode copy = node;
    copy.channels_last = {};
    if (!WantsChannelsLast(node)) {
      for (int& in : copy.inputs) {
        TESSERA_ASSIGN_OR_RETURN(in, Nchw(in));
      }
      out_.nodes.push_back(std::move(copy));
      available_[node.output] = true;
      return absl::OkStatus();
    }
    copy.compute = node.channels_last.compute;
    copy.conv2d = node.channels_last.conv2d;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      int& in = copy.inputs[i];
      switch (node.channels_last.inputs[i]) {
        case ChannelsLastInput::kPermuted:
          if (out_.values[in].is_constant()) {
            in = PermutedConstant(in, kToNhwc, "nhwc");
          } else {
            TESSERA_ASSIGN_OR_RETURN(in, Nhwc(in));
          }
          break;
        case ChannelsLastInput::kHwio:
          in = PermutedConstant(in, kToHwio, "hwio");
          break;
        case ChannelsLastInput::kUnchanged:
          TESSERA_ASSIGN_OR_RETURN(in, Nchw(in));
          break;
      }
    }
    copy.output = NewValue(out_.values[node.output], kToNhwc, "nhwc");
    nhwc_[node.output] = copy.output;
    out_.nodes.push_back(std::move(copy));
    return absl::OkStatus();
  }

  int NewValue(const GraphValue& like, const Permutation& perm, const std::string& suffix) {
    GraphValue value;
    value.name = absl::StrCat(like.name, ":", suffix);
    value.dtype = like.dtype;
    value.shape = Permuted(like.shape, perm);
    out_.values.push_back(std::move(value));
    nhwc_.push_back(-1);
    available_.push_back(true);
    return static_cast<int>(out_.values.size()) - 1;
  }

  int PermutedConstant(int v, const Permutation& perm, const std::string& suffix) {
    auto key = std::make_pair(v, perm);
    for (const auto& [done, id] : permuted_constants_) {
      if (done == key) return id;
    }
    const int id = NewValue(out_.values[v], perm, suffix);
    out_.values[id].constant = PermuteConstant(out_.values[v].constant, perm);
    permuted_constants_.emplace_back(key, id);
    return id;
  }

  void AddTranspose(int source, int output, const Permutation& perm, std::string name) {
    GraphNode transpose;
    transpose.name = std::move(name);
    transpose.op_type = "Transpose";
    transpose.pattern = OpPattern::kInjective;
    transpose.inputs = {source};
    transpose.output = output;
    transpose.compute = TransposeCompute(out_.values[output].shape, perm);
    out_.nodes.push_back(std::move(transpose));
  }

  // The NHWC form of value `v`, transposed from its NCHW form the first time it is needed.
  absl::StatusOr<int> Nhwc(int v) {
    if (nhwc_[v] >= 0) return nhwc_[v];
    TESSERA_ASSIGN_OR_RETURN(int source, Nchw(v));
    const int id = NewValue(out_.values[v], kToNhwc, "nhwc");
    AddTranspose(source, id, kToNhwc, absl::StrCat(out_.values[v].name, ":to_nhwc"));
    nhwc_[v] = id;
    return id;
  }

  // `v` itself, after making sure that its (root's) NCHW form is computed: transposed back
  // from the NHWC form, or a view of it where the order of the elements is the same.
  absl::StatusOr<int> Nchw(int v) {
    const int root = out_.Root(v);
    if (available_[root]) return v;
    const int nhwc = nhwc_[root];
    if (nhwc < 0) {
      return absl::InternalError(
          absl::StrCat("channels-last: value ", out_.values[root].name, " is computed nowhere"));
    }
    available_[root] = true;
    if (SameOrderInNhwc(out_.values[root].shape)) {
      for (GraphValue& value : out_.values) {
        if (value.alias_of == root) value.alias_of = nhwc;
      }
      out_.values[root].alias_of = nhwc;
      return v;
    }
    AddTranspose(nhwc, root, kToNchw, absl::StrCat(out_.values[root].name, ":to_nchw"));
    return v;
  }

  // Producers renumbered, and the values nothing reads or writes any more dropped.
  absl::StatusOr<Graph> Compact() {
    std::vector<bool> used(out_.values.size(), false);
    auto use = [&](int v) {
      used[v] = true;
      used[out_.Root(v)] = true;
    };
    for (int v : out_.inputs) use(v);
    for (int v : out_.outputs) use(v);
    for (const GraphNode& node : out_.nodes) {
      for (int v : node.inputs) use(v);
      use(node.output);
    }
    std::vector<int> id(out_.values.size(), -1);
    Graph graph;
    for (size_t v = 0; v < out_.values.size(); ++v) {
      if (!used[v]) continue;
      id[v] = static_cast<int>(graph.values.size());
      graph.values.push_back(std::move(out_.values[v]));
    }
    for (GraphValue& value : graph.values) {
      value.producer = -1;
      if (value.alias_of >= 0) value.alias_of = id[value.alias_of];
    }
    for (GraphNode& node : out_.nodes) {
      for (int& v : node.inputs) v = id[v];
      node.output = id[node.output];
      graph.values[node.output].producer = static_cast<int>(graph.nodes.size());
      graph.nodes.push_back(std::move(node));
    }
    for (int v : out_.inputs) graph.inputs.push_back(id[v]);
    for (int v : out_.outputs) graph.outputs.push_back(id[v]);
    return graph;
  }

  const Graph& in_;
  Graph out_;
  std::vector<int> nhwc_;        // per value: the id of its NHWC form, or -1
  std::vector<bool> available_;  // per value: its NCHW form is computed (or needs no node)
  std::vector<std::pair<std::pair<int, Permutation>, int>> permuted_constants_;
};

}  // namespace

absl::StatusOr<Graph> ConvertToChannelsLast(const Graph& graph) { return Converter(graph).Run(); }

}  // namespace tessera
