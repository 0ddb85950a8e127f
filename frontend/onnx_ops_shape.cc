// Data-movement and shape ONNX operators. Views (no kernel, shared storage): Reshape, Flatten,
// Squeeze, Unsqueeze, Identity, Dropout (inference). Injective computes: Transpose, Concat,
// Slice, Split, Gather, Expand, Pad (constant mode), Tile. Import-time constants: Constant,
// ConstantOfShape, Shape (static shapes), and Range when its inputs are constant.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "frontend/onnx_import_internal.h"

namespace tessera {
namespace onnx_internal {

namespace {

int64_t Product(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

absl::Status ConvertReshape(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"allowzero"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t allowzero, ctx->Int("allowzero", 0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> target, ctx->ConstInts(1));
  const std::vector<int64_t>& in = ctx->shape(0);
  int infer = -1;
  int64_t known = 1;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == 0 && !allowzero) {
      if (d >= in.size()) return ctx->Error("shape 0 refers past the input's rank");
      target[d] = in[d];
    }
    if (target[d] == -1) {
      if (infer >= 0) return ctx->Error("more than one -1 in the shape");
      infer = static_cast<int>(d);
    } else if (target[d] <= 0) {
      return ctx->Unsupported(absl::StrCat("shape extent ", target[d]));
    } else {
      known *= target[d];
    }
  }
  if (infer >= 0) target[infer] = Product(in) / known;
  if (Product(target) != Product(in)) {
    return ctx->Error(absl::StrCat("cannot reshape [", absl::StrJoin(in, ", "), "] to [",
                                   absl::StrJoin(target, ", "), "]"));
  }
  return ctx->View(ctx->input(0), target);
}

absl::Status ConvertFlatten(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axis"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t axis_attr, ctx->Int("axis", 1));
  const std::vector<int64_t>& in = ctx->shape(0);
  const int rank = static_cast<int>(in.size());
  if (axis_attr < -rank || axis_attr > rank) return ctx->Error("axis out of range");
  const int axis = static_cast<int>(axis_attr < 0 ? axis_attr + rank : axis_attr);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < rank; ++d) (d < axis ? outer : inner) *= in[d];
  return ctx->View(ctx->input(0), {outer, inner});
}

absl::StatusOr<std::vector<int64_t>> AxesOf(NodeContext* ctx) {
  if (ctx->opset() >= 13) {
    if (!ctx->has_input(1)) return std::vector<int64_t>{};
    return ctx->ConstInts(1);
  }
  return ctx->Ints("axes", {});
}

absl::Status ConvertSqueeze(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axes"}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(ctx));
  const std::vector<int64_t>& in = ctx->shape(0);
  const int rank = static_cast<int>(in.size());
  std::vector<bool> drop(rank, axes.empty());
  if (!axes.empty()) {
    for (int64_t a : axes) {
      TESSERA_ASSIGN_OR_RETURN(int d, ctx->Axis(a, rank));
      if (in[d] != 1) return ctx->Error(absl::StrCat("axis ", a, " has extent ", in[d], ", not 1"));
      drop[d] = true;
    }
  }
  std::vector<int64_t> out;
  for (int d = 0; d < rank; ++d) {
    if (!(drop[d] && in[d] == 1)) out.push_back(in[d]);
  }
  return ctx->View(ctx->input(0), out);
}

absl::Status ConvertUnsqueeze(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axes"}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, AxesOf(ctx));
  const std::vector<int64_t>& in = ctx->shape(0);
  const int rank = static_cast<int>(in.size() + axes.size());
  std::vector<bool> unit(rank, false);
  for (int64_t a : axes) {
    TESSERA_ASSIGN_OR_RETURN(int d, ctx->Axis(a, rank));
    unit[d] = true;
  }
  std::vector<int64_t> out;
  for (int d = 0, src = 0; d < rank; ++d) out.push_back(unit[d] ? 1 : in[src++]);
  return ctx->View(ctx->input(0), out);
}

absl::Status ConvertIdentity(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  return ctx->View(ctx->input(0), ctx->shape(0));
}

absl::Status ConvertDropout(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"seed", "ratio"}));
  if (ctx->output_count() > 1) return ctx->Unsupported("the mask output");
  if (ctx->has_input(2)) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> training, ctx->ConstInts(2));
    if (!training.empty() && training[0] != 0) return ctx->Unsupported("training_mode=true");
  }
  return ctx->View(ctx->input(0), ctx->shape(0));
}

absl::Status ConvertTranspose(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"perm"}));
  const std::vector<int64_t> in = ctx->shape(0);
  const int rank = static_cast<int>(in.size());
  std::vector<int64_t> def;
  for (int d = rank - 1; d >= 0; --d) def.push_back(d);
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ctx->Ints("perm", def));
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int d = 0; d < rank; ++d) {
    if (static_cast<int>(sorted.size()) != rank || sorted[d] != d) {
      return ctx->Error(
          absl::StrCat("perm [", absl::StrJoin(perm, ", "), "] is not a permutation"));
    }
  }
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(in[p]);
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        FuncShape(out),
        [&](const std::vector<Var>& i) {
          std::vector<Expr> idx(rank);
          for (int d = 0; d < rank; ++d) idx[perm[d]] = i[d];
          if (rank == 0) idx.push_back(Expr(0));
          return ops[0](idx);
        },
        (*namer)("T_transpose"));
  };
  return ctx->Compute(OpPattern::kInjective, {ctx->input(0)}, out, ctx->value(0).dtype, compute);
}

absl::Status ConvertConcat(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axis"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t axis_attr, ctx->Int("axis", 0));
  const int rank = ctx->rank(0);
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx->Axis(axis_attr, rank));
  std::vector<int64_t> out = ctx->shape(0);
  std::vector<int64_t> offsets = {0};
  std::vector<int> inputs = {ctx->input(0)};
  for (int k = 1; k < ctx->num_inputs(); ++k) {
    const std::vector<int64_t>& s = ctx->shape(k);
    for (int d = 0; d < rank; ++d) {
      if (d != axis && (static_cast<int>(s.size()) != rank || s[d] != out[d])) {
        return ctx->Error("inputs differ outside the concatenation axis");
      }
    }
    offsets.push_back(out[axis]);
    out[axis] += s[axis];
    inputs.push_back(ctx->input(k));
  }
  // Channels-last: a rank-4 concatenation along the same axis of the NHWC tensors.
  auto concat = [offsets](std::vector<int64_t> shape, int axis) -> OpCompute {
    return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
      return Compute(
          shape,
          [&](const std::vector<Var>& i) {
            Expr result;
            for (int k = 0; k < static_cast<int>(ops.size()); ++k) {
              std::vector<Expr> idx = Exprs(i);
              idx[axis] = Expr(i[axis]) - Expr(offsets[k]);
              Expr v = ops[k](idx);
              result =
                  result.defined() ? Select(GE(Expr(i[axis]), Expr(offsets[k])), v, result) : v;
            }
            return result;
          },
          (*namer)("T_concat"));
    };
  };
  ChannelsLastForm channels_last;
  if (rank == 4) {
    const int nhwc_axis[] = {0, 3, 1, 2};
    channels_last = {concat(ChannelsLastShape(out), nhwc_axis[axis]),
                     std::vector<ChannelsLastInput>(inputs.size(), ChannelsLastInput::kPermuted)};
  }
  return ctx->Compute(OpPattern::kInjective, inputs, out, ctx->value(0).dtype, concat(out, axis), 0,
                      std::move(channels_last));
}

// out[..., i, ...] = in[..., start + i * step, ...] on each sliced axis.
absl::Status SliceCompute(NodeContext* ctx, const std::vector<int64_t>& starts,
                          const std::vector<int64_t>& steps, const std::vector<int64_t>& out,
                          int index) {
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        FuncShape(out),
        [&](const std::vector<Var>& i) {
          std::vector<Expr> idx;
          for (size_t d = 0; d < starts.size(); ++d) {
            idx.push_back(steps[d] == 1 && starts[d] == 0
                              ? Expr(i[d])
                              : Expr(starts[d]) + Expr(i[d]) * Expr(steps[d]));
          }
          return ops[0](idx);
        },
        (*namer)("T_strided_slice"));
  };
  return ctx->Compute(OpPattern::kInjective, {ctx->input(0)}, out, ctx->value(0).dtype, compute,
                      index);
}

absl::Status ConvertSlice(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  const std::vector<int64_t> in = ctx->shape(0);
  const int rank = static_cast<int>(in.size());
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> starts, ctx->ConstInts(1));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> ends, ctx->ConstInts(2));
  std::vector<int64_t> axes, steps;
  if (ctx->has_input(3)) {
    TESSERA_ASSIGN_OR_RETURN(axes, ctx->ConstInts(3));
  } else {
    for (size_t d = 0; d < starts.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  }
  if (ctx->has_input(4)) {
    TESSERA_ASSIGN_OR_RETURN(steps, ctx->ConstInts(4));
  } else {
    steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return ctx->Error("starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> start_of(rank, 0), step_of(rank, 1), out = in;
  for (size_t k = 0; k < axes.size(); ++k) {
    TESSERA_ASSIGN_OR_RETURN(int d, ctx->Axis(axes[k], rank));
    const int64_t n = in[d], step = steps[k];
    if (step == 0) return ctx->Error("step 0");
    auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
      if (v < 0) v += n;
      return std::max(lo, std::min(hi, v));
    };
    int64_t s = step > 0 ? clamp(starts[k], 0, n) : clamp(starts[k], 0, n - 1);
    int64_t e = step > 0 ? clamp(ends[k], 0, n) : clamp(ends[k], -1, n - 1);
    if (step < 0 && ends[k] < -n) e = -1;
    const int64_t len = step > 0 ? (e - s + step - 1) / step : (s - e + (-step) - 1) / (-step);
    if (len <= 0) return ctx->Unsupported("slice of no elements");
    start_of[d] = s;
    step_of[d] = step;
    out[d] = len;
  }
  return SliceCompute(ctx, start_of, step_of, out, 0);
}

absl::Status ConvertSplit(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axis", "split", "num_outputs"}));
  const std::vector<int64_t> in = ctx->shape(0);
  const int rank = static_cast<int>(in.size());
  TESSERA_ASSIGN_OR_RETURN(int64_t axis_attr, ctx->Int("axis", 0));
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx->Axis(axis_attr, rank));
  std::vector<int64_t> split;
  if (ctx->opset() >= 13 && ctx->has_input(1)) {
    TESSERA_ASSIGN_OR_RETURN(split, ctx->ConstInts(1));
  } else if (ctx->opset() < 13) {
    TESSERA_ASSIGN_OR_RETURN(split, ctx->Ints("split", {}));
  }
  const int outputs = ctx->node().output_size();
  if (split.empty()) {
    const int64_t chunk = (in[axis] + outputs - 1) / outputs;
    for (int k = 0; k < outputs; ++k) {
      split.push_back(std::min(chunk, in[axis] - chunk * k));
    }
  }
  if (static_cast<int>(split.size()) != outputs)
    return ctx->Error("split sizes do not match the outputs");
  int64_t offset = 0;
  for (int k = 0; k < outputs; ++k) {
    std::vector<int64_t> starts(rank, 0), steps(rank, 1), out = in;
    starts[axis] = offset;
    out[axis] = split[k];
    offset += split[k];
    if (ctx->node().output(k).empty()) continue;
    TESSERA_RETURN_IF_ERROR(SliceCompute(ctx, starts, steps, out, k));
  }
  if (offset != in[axis]) return ctx->Error("split sizes do not add up to the axis extent");
  return absl::OkStatus();
}

absl::Status ConvertGather(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"axis"}));
  const std::vector<int64_t> data = ctx->shape(0);
  const std::vector<int64_t> indices = ctx->shape(1);
  const int rank = static_cast<int>(data.size());
  TESSERA_ASSIGN_OR_RETURN(int64_t axis_attr, ctx->Int("axis", 0));
  TESSERA_ASSIGN_OR_RETURN(int axis, ctx->Axis(axis_attr, rank));
  if (ctx->value(1).dtype.is_float()) return ctx->Error("indices are not integers");
  std::vector<int64_t> out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  const int q = static_cast<int>(indices.size());
  const int64_t n = data[axis];
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        FuncShape(out),
        [&](const std::vector<Var>& i) {
          std::vector<Expr> ii;
          for (int d = 0; d < q; ++d) ii.push_back(i[axis + d]);
          if (ii.empty()) ii.push_back(Expr(0));
          Expr k = Cast(DataType::Index(), ops[1](ii));
          k = Select(LT(k, Expr(0)), k + Expr(n), k);
          std::vector<Expr> idx;
          for (int d = 0; d < axis; ++d) idx.push_back(i[d]);
          idx.push_back(k);
          for (int d = axis + 1; d < rank; ++d) idx.push_back(i[d - 1 + q]);
          return ops[0](idx);
        },
        (*namer)("T_take"));
  };
  return ctx->Compute(OpPattern::kInjective, {ctx->input(0), ctx->input(1)}, out,
                      ctx->value(0).dtype, compute);
}

// Pad (constant mode, opset >= 11: pads and the optional constant value are inputs, which must
// be constants; negative pads crop) and Tile (repeats an input constant).
absl::Status ConvertPad(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"mode"}));
  TESSERA_ASSIGN_OR_RETURN(std::string mode, ctx->String("mode", "constant"));
  if (mode != "constant")
    return ctx->Unsupported(absl::StrCat("unsupported attribute mode=", mode));
  if (ctx->has_input(3)) return ctx->Unsupported("the axes input");
  const std::vector<int64_t> in = ctx->shape(0);
  const int rank = static_cast<int>(in.size());
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ctx->ConstInts(1));
  if (static_cast<int>(pads.size()) != 2 * rank) {
    return ctx->Error(absl::StrCat(pads.size(), " pads for rank ", rank));
  }
  double fill = 0;
  if (ctx->has_input(2)) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<double> v, ctx->ConstDoubles(2));
    if (!v.empty()) fill = v[0];
  }
  std::vector<int64_t> out(rank);
  for (int d = 0; d < rank; ++d) {
    out[d] = in[d] + pads[d] + pads[rank + d];
    if (out[d] <= 0) return ctx->Unsupported("pads that leave no elements");
  }
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        FuncShape(out),
        [&](const std::vector<Var>& i) {
          if (rank == 0) return ops[0]({Expr(0)});
          std::vector<Expr> idx;
          Expr inside;
          for (int d = 0; d < rank; ++d) {
            Expr src = Expr(i[d]) - Expr(pads[d]);
            idx.push_back(src);
            Expr ok = And(GE(src, Expr(0)), LT(src, Expr(in[d])));
            inside = inside.defined() ? And(inside, ok) : ok;
          }
          return Select(inside, ops[0](idx), MakeConst(ops[0].dtype, fill));
        },
        (*namer)("T_pad"));
  };
  return ctx->Compute(OpPattern::kInjective, {ctx->input(0)}, out, ctx->value(0).dtype, compute);
}

absl::Status ConvertTile(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  const std::vector<int64_t> in = ctx->shape(0);
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> repeats, ctx->ConstInts(1));
  if (repeats.size() != in.size()) {
    return ctx->Error(absl::StrCat(repeats.size(), " repeats for rank ", in.size()));
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (repeats[d] <= 0) return ctx->Unsupported("non-positive repeats");
    out.push_back(in[d] * repeats[d]);
  }
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        FuncShape(out),
        [&](const std::vector<Var>& i) {
          std::vector<Expr> idx;
          for (size_t d = 0; d < in.size(); ++d) {
            idx.push_back(repeats[d] == 1 ? Expr(i[d]) : FloorMod(Expr(i[d]), Expr(in[d])));
          }
          if (idx.empty()) idx.push_back(Expr(0));
          return ops[0](idx);
        },
        (*namer)("T_tile"));
  };
  return ctx->Compute(OpPattern::kInjective, {ctx->input(0)}, out, ctx->value(0).dtype, compute);
}

absl::Status ConvertExpand(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> target, ctx->ConstInts(1));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> out, BroadcastShapes(*ctx, ctx->shape(0), target));
  OpCompute compute = [out](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        FuncShape(out), [&](const std::vector<Var>& i) { return ops[0].Broadcast(i); },
        (*namer)("T_broadcast_to"));
  };
  return ctx->Compute(OpPattern::kElementwise, {ctx->input(0)}, out, ctx->value(0).dtype, compute);
}

absl::Status ConvertShape(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"start", "end"}));
  const std::vector<int64_t>& in = ctx->shape(0);
  const int64_t rank = static_cast<int64_t>(in.size());
  TESSERA_ASSIGN_OR_RETURN(int64_t start, ctx->Int("start", 0));
  TESSERA_ASSIGN_OR_RETURN(int64_t end, ctx->Int("end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::max<int64_t>(0, std::min(rank, start));
  end = std::max<int64_t>(start, std::min(rank, end));
  if (end == start) return ctx->Unsupported("an empty shape slice");
  NDArray a = NDArray::Empty(DataType::Int64(), {end - start});
  for (int64_t d = start; d < end; ++d) static_cast<int64_t*>(a.data())[d - start] = in[d];
  return ctx->Constant(std::move(a), {end - start});
}

absl::Status ConvertConstant(NodeContext* ctx) {
  if (ctx->node().attribute_size() != 1) return ctx->Error("expects exactly one attribute");
  const onnx::AttributeProto& a = ctx->node().attribute(0);
  if (a.name() == "value") {
    if (std::find(a.t().dims().begin(), a.t().dims().end(), 0) != a.t().dims().end()) {
      return ctx->EmptyConstant();
    }
    absl::StatusOr<NDArray> t = ConstantFromProto(a.t(), "Constant");
    if (!t.ok()) return ctx->Unsupported(std::string(t.status().message()));
    std::vector<int64_t> shape(a.t().dims().begin(), a.t().dims().end());
    return ctx->Constant(std::move(*t), shape);
  }
  if (a.name() == "value_float" || a.name() == "value_int") {
    const bool f = a.name() == "value_float";
    NDArray v = NDArray::Empty(f ? DataType::Float32() : DataType::Int64(), {1});
    v.SetFlat(0, f ? a.f() : static_cast<double>(a.i()));
    if (!f) static_cast<int64_t*>(v.data())[0] = a.i();
    return ctx->Constant(std::move(v), {});
  }
  if (a.name() == "value_floats" || a.name() == "value_ints") {
    const bool f = a.name() == "value_floats";
    const int64_t n = f ? a.floats_size() : a.ints_size();
    if (n == 0) return ctx->EmptyConstant();
    NDArray v = NDArray::Empty(f ? DataType::Float32() : DataType::Int64(), {n});
    for (int64_t i = 0; i < n; ++i) {
      if (f) {
        v.SetFlat(i, a.floats(static_cast<int>(i)));
      } else {
        static_cast<int64_t*>(v.data())[i] = a.ints(static_cast<int>(i));
      }
    }
    return ctx->Constant(std::move(v), {n});
  }
  return ctx->Unsupported(absl::StrCat("unsupported attribute ", a.name()));
}

absl::Status ConvertConstantOfShape(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"value"}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> shape, ctx->ConstInts(0));
  DataType dtype = DataType::Float32();
  double fill = 0;
  for (const onnx::AttributeProto& a : ctx->node().attribute()) {
    absl::StatusOr<NDArray> t = ConstantFromProto(a.t(), "ConstantOfShape value");
    if (!t.ok()) return ctx->Unsupported(std::string(t.status().message()));
    dtype = t->dtype();
    fill = t->GetFlat(0);
  }
  for (int64_t d : shape) {
    if (d <= 0) return ctx->Unsupported("an empty or negative shape");
  }
  NDArray v = NDArray::Empty(dtype, shape);
  for (int64_t i = 0; i < v.size(); ++i) v.SetFlat(i, fill);
  return ctx->Constant(std::move(v), shape);
}

absl::Status ConvertRange(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> start, ctx->ConstDoubles(0));
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> limit, ctx->ConstDoubles(1));
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> delta, ctx->ConstDoubles(2));
  if (delta.at(0) == 0) return ctx->Error("delta 0");
  const int64_t n =
      static_cast<int64_t>(std::max(0.0, std::ceil((limit.at(0) - start.at(0)) / delta.at(0))));
  if (n == 0) return ctx->Unsupported("an empty range");
  NDArray v = NDArray::Empty(ctx->value(0).dtype, {n});
  for (int64_t i = 0; i < n; ++i) v.SetFlat(i, start[0] + static_cast<double>(i) * delta[0]);
  if (v.dtype() == DataType::Int64()) {
    for (int64_t i = 0; i < n; ++i) {
      static_cast<int64_t*>(v.data())[i] =
          static_cast<int64_t>(start[0]) + i * static_cast<int64_t>(delta[0]);
    }
  }
  return ctx->Constant(std::move(v), {n});
}

}  // namespace

std::vector<ConverterRow> ShapeConverters() {
  return {
      {"Concat", ConvertConcat},
      {"Constant", ConvertConstant},
      {"ConstantOfShape", ConvertConstantOfShape},
      {"Dropout", ConvertDropout},
      {"Expand", ConvertExpand},
      {"Flatten", ConvertFlatten},
      {"Gather", ConvertGather},
      {"Identity", ConvertIdentity},
      {"Pad", ConvertPad},
      {"Range", ConvertRange},
      {"Reshape", ConvertReshape},
      {"Shape", ConvertShape},
      {"Slice", ConvertSlice},
      {"Split", ConvertSplit},
      {"Squeeze", ConvertSqueeze},
      {"Tile", ConvertTile},
      {"Transpose", ConvertTranspose},
      {"Unsqueeze", ConvertUnsqueeze},
  };
}

}  // namespace onnx_internal
}  // namespace tessera
