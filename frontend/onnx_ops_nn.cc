// Neural-network ONNX operators: Conv (N-d, groups, strides, pads, dilations), ConvTranspose,
// Gemm, MatMul (batched, broadcasting, 1-D operands), BatchNormalization (inference; folded
// into a per-channel scale and shift at import), MaxPool / AveragePool / GlobalAveragePool.
// Written as TOPI writes them: a padding stage where there is padding, then the reduction.
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "frontend/onnx_import_internal.h"

namespace tessera {
namespace onnx_internal {
namespace {

Expr Const(DataType t, double v) { return MakeConst(t, v); }

// Conv and pool window geometry for `spatial` dimensions.
struct Window {
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end, out;
};

absl::StatusOr<Window> ReadWindow(NodeContext* ctx, const std::vector<int64_t>& in_spatial,
                                  std::vector<int64_t> kernel, bool ceil_mode) {
  const size_t n = in_spatial.size();
  Window w;
  w.kernel = std::move(kernel);
  TESSERA_ASSIGN_OR_RETURN(w.strides, ctx->Ints("strides", std::vector<int64_t>(n, 1)));
  TESSERA_ASSIGN_OR_RETURN(w.dilations, ctx->Ints("dilations", std::vector<int64_t>(n, 1)));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                           ctx->Ints("pads", std::vector<int64_t>(2 * n, 0)));
  TESSERA_ASSIGN_OR_RETURN(std::string auto_pad, ctx->String("auto_pad", "NOTSET"));
  if (w.kernel.size() != n || w.strides.size() != n || w.dilations.size() != n ||
      pads.size() != 2 * n) {
    return ctx->Error(absl::StrCat("kernel, strides, dilations or pads do not match the ", n,
                                   " spatial dimensions"));
  }
  w.pads_begin.assign(pads.begin(), pads.begin() + n);
  w.pads_end.assign(pads.begin() + n, pads.end());
  for (size_t d = 0; d < n; ++d) {
    if (w.strides[d] <= 0 || w.dilations[d] <= 0 || w.kernel[d] <= 0) {
      return ctx->Error("non-positive kernel, stride or dilation");
    }
    const int64_t eff = (w.kernel[d] - 1) * w.dilations[d] + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t out = (in_spatial[d] + w.strides[d] - 1) / w.strides[d];
      const int64_t total = std::max<int64_t>(0, (out - 1) * w.strides[d] + eff - in_spatial[d]);
      w.pads_begin[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.pads_end[d] = total - w.pads_begin[d];
    } else if (auto_pad == "VALID") {
      w.pads_begin[d] = w.pads_end[d] = 0;
    } else if (auto_pad != "NOTSET") {
      return ctx->Unsupported(absl::StrCat("unsupported attribute auto_pad=", auto_pad));
    }
    const int64_t span = in_spatial[d] + w.pads_begin[d] + w.pads_end[d] - eff;
    if (span < 0) return ctx->Error("the window is larger than the padded input");
    int64_t out = span / w.strides[d] + 1;
    if (ceil_mode && span % w.strides[d] != 0) {
      out += 1;
      // A last window starting in the end padding is dropped (PyTorch/ONNX rule).
      if ((out - 1) * w.strides[d] >= in_spatial[d] + w.pads_begin[d]) out -= 1;
    }
    w.out.push_back(out);
  }
  return w;
}

// The input padded by `w` (and by extra end padding when ceil_mode windows reach past it)
// with zeros (or the lowest value of the type), as a compute stage; the input itself when nothing
// is padded. Its spatial dimensions are the last ones, or follow the batch when `channels_last`.
Tensor Pad(const Tensor& x, const Window& w, bool lowest, bool channels_last, TensorNamer* namer) {
  const int n = static_cast<int>(w.out.size());
  const int lead = channels_last ? 1 : x.ndim() - n;
  std::vector<int64_t> shape = x.shape();
  bool any = false;
  std::vector<int64_t> end_pad(n);
  for (int d = 0; d < n; ++d) {
    const int64_t need = (w.out[d] - 1) * w.strides[d] + (w.kernel[d] - 1) * w.dilations[d] + 1;
    end_pad[d] = need - x.shape()[lead + d] - w.pads_begin[d];
    shape[lead + d] = need;
    any = any || w.pads_begin[d] != 0 || end_pad[d] != 0;
  }
  if (!any) return x;
  return Compute(
      shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx(i.begin(), i.end());
        Expr inside;
        for (int d = 0; d < n; ++d) {
          Expr src = Expr(i[lead + d]) - Expr(w.pads_begin[d]);
          idx[lead + d] = src;
          Expr ok = And(GE(src, Expr(0)), LT(src, Expr(x.shape()[lead + d])));
          inside = inside.defined() ? And(inside, ok) : ok;
        }
        return Select(inside, x(idx), lowest ? MinValue(x.dtype()) : Const(x.dtype(), 0));
      },
      (*namer)("pad_temp"));
}

absl::Status ConvertConv(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(
      ctx->CheckAttrs({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}));
  if (ctx->num_inputs() < 2 || !ctx->has_input(0) || !ctx->has_input(1)) {
    return ctx->Error("expects inputs X and W");
  }
  const std::vector<int64_t>& xs = ctx->shape(0);
  const std::vector<int64_t>& ws = ctx->shape(1);
  if (xs.size() < 3 || ws.size() != xs.size()) {
    return ctx->Error(absl::StrCat("X [", absl::StrJoin(xs, ", "), "] and W [",
                                   absl::StrJoin(ws, ", "), "] are not N, C, spatial..."));
  }
  TESSERA_ASSIGN_OR_RETURN(int64_t groups, ctx->Int("group", 1));
  const int64_t c_in = xs[1], m = ws[0], cg = ws[1];
  if (groups <= 0 || c_in % groups != 0 || m % groups != 0 || cg * groups != c_in) {
    return ctx->Error(absl::StrCat("group ", groups, " does not fit ", c_in, " input and ", m,
                                   " output channels (W has ", cg, " per group)"));
  }
  std::vector<int64_t> in_spatial(xs.begin() + 2, xs.end());
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> ks, ctx->Ints("kernel_shape", kernel));
  if (ks != kernel) return ctx->Error("kernel_shape does not match W");
  TESSERA_ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, in_spatial, kernel, false));
  const bool bias = ctx->has_input(2);
  std::vector<int> inputs = {ctx->input(0), ctx->input(1)};
  if (bias) inputs.push_back(ctx->input(2));
  std::vector<int64_t> out_shape = {xs[0], m};
  out_shape.insert(out_shape.end(), w.out.begin(), w.out.end());
  const int64_t m_per_group = m / groups;
  // NCHW: (n, m, spatial.. | rc, kernel..) over weights [m, rc, kernel..]. Channels-last:
  // (n, spatial.., m | kernel.., rc) over weights [kernel.., rc, m], as the C2D and DEP workloads
  // compute, without rc where a group has one input channel (depthwise).
  auto conv = [w, cg, m_per_group, groups, bias](std::vector<int64_t> out_shape,
                                                 bool channels_last) -> OpCompute {
    return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
      const Tensor& x = ops[0].tensor;
      const Operand& weight = ops[1];
      Tensor padded = Pad(x, w, /*lowest=*/false, channels_last, namer);
      const int n = static_cast<int>(w.out.size());
      const int first_spatial = channels_last ? 1 : 2;
      const int channel_axis = channels_last ? n + 1 : 1;
      const char* names[] = {"rz", "ry", "rx"};
      std::vector<IterVar> kernel;
      for (int d = 0; d < n; ++d) {
        kernel.push_back(
            ReduceAxis(w.kernel[d], n <= 3 ? names[3 - n + d] : absl::StrCat("rk", d)));
      }
      std::optional<IterVar> rc;
      if (!channels_last || cg > 1) rc = ReduceAxis(cg, "rc");
      std::vector<IterVar> red = kernel;
      if (rc.has_value()) red.insert(channels_last ? red.end() : red.begin(), *rc);
      Tensor result = Compute(
          out_shape,
          [&](const std::vector<Var>& i) {
            const Var& out_channel = i[channel_axis];
            Expr rc_var = rc.has_value() ? Expr(rc->var) : Expr(0);
            Expr channel = channels_last && groups == 1
                               ? rc_var
                               : FloorDiv(Expr(out_channel), Expr(m_per_group)) * Expr(cg) + rc_var;
            std::vector<Expr> window, taps;  // input positions and kernel offsets, per dim
            for (int d = 0; d < n; ++d) {
              window.push_back(Expr(i[first_spatial + d]) * Expr(w.strides[d]) +
                               Expr(kernel[d].var) * Expr(w.dilations[d]));
              taps.push_back(kernel[d].var);
            }
            std::vector<Expr> xi = {i[0]}, wi;
            if (channels_last) {
              xi.insert(xi.end(), window.begin(), window.end());
              xi.push_back(channel);
              wi = taps;
              wi.push_back(rc_var);
              wi.push_back(out_channel);
            } else {
              xi.push_back(channel);
              xi.insert(xi.end(), window.begin(), window.end());
              wi = {out_channel, rc_var};
              wi.insert(wi.end(), taps.begin(), taps.end());
            }
            return Sum(padded(xi) * weight(wi), red);
          },
          (*namer)("conv"));
      if (!bias) return result;
      const Operand& b = ops[2];
      return Compute(
          out_shape,
          [&](const std::vector<Var>& i) { return result(Exprs(i)) + b({i[channel_axis]}); },
          (*namer)("T_add"));
    };
  };
  ChannelsLastForm channels_last;
  if (xs.size() == 4 && ctx->value(1).is_constant()) {
    channels_last.compute = conv(ChannelsLastShape(out_shape), true);
    channels_last.inputs = {ChannelsLastInput::kPermuted, ChannelsLastInput::kHwio};
    if (bias) channels_last.inputs.push_back(ChannelsLastInput::kUnchanged);
    channels_last.conv2d =
        Conv2dWindow{{w.kernel[0], w.kernel[1]},       {w.strides[0], w.strides[1]},
                     {w.dilations[0], w.dilations[1]}, {w.pads_begin[0], w.pads_begin[1]},
                     {w.pads_end[0], w.pads_end[1]},   groups};
  }
  return ctx->Compute(OpPattern::kAnchor, inputs, out_shape, ctx->value(0).dtype,
                      conv(out_shape, false), 0, std::move(channels_last));
}

// ConvTranspose as a convolution of the zero-dilated, padded input with the flipped kernel:
// the input is spread `stride` apart, padded by (k_eff - 1 - pad) on each side (plus
// output_padding at the end), and Y[o] = sum X'[o + k * dilation] * W[c, m, K - 1 - k].
absl::Status ConvertConvTranspose(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs(
      {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "pads", "strides"}));
  if (ctx->num_inputs() < 2 || !ctx->has_input(0) || !ctx->has_input(1)) {
    return ctx->Error("expects inputs X and W");
  }
  TESSERA_ASSIGN_OR_RETURN(std::string auto_pad, ctx->String("auto_pad", "NOTSET"));
  if (auto_pad != "NOTSET") {
    return ctx->Unsupported(absl::StrCat("unsupported attribute auto_pad=", auto_pad));
  }
  if (ctx->HasAttr("output_shape")) return ctx->Unsupported("unsupported attribute output_shape");
  const std::vector<int64_t> xs = ctx->shape(0), ws = ctx->shape(1);
  if (xs.size() < 3 || ws.size() != xs.size())
    return ctx->Error("X and W are not N, C, spatial...");
  const int n = static_cast<int>(xs.size()) - 2;
  TESSERA_ASSIGN_OR_RETURN(int64_t groups, ctx->Int("group", 1));
  const int64_t c_in = xs[1], m_per_group = ws[1];
  if (groups <= 0 || ws[0] != c_in || c_in % groups != 0) {
    return ctx->Error(absl::StrCat("W [", absl::StrJoin(ws, ", "), "] does not fit ", c_in,
                                   " input channels in ", groups, " groups"));
  }
  const int64_t cg = c_in / groups, m = m_per_group * groups;
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                           ctx->Ints("strides", std::vector<int64_t>(n, 1)));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dil,
                           ctx->Ints("dilations", std::vector<int64_t>(n, 1)));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                           ctx->Ints("pads", std::vector<int64_t>(2 * n, 0)));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> out_pad,
                           ctx->Ints("output_padding", std::vector<int64_t>(n, 0)));
  if (static_cast<int>(strides.size()) != n || static_cast<int>(dil.size()) != n ||
      static_cast<int>(pads.size()) != 2 * n || static_cast<int>(out_pad.size()) != n) {
    return ctx->Error("strides, dilations, pads or output_padding do not match the spatial rank");
  }
  std::vector<int64_t> out_shape = {xs[0], m}, begin(n), padded(n), kernel(n);
  for (int d = 0; d < n; ++d) {
    kernel[d] = ws[2 + d];
    const int64_t eff = (kernel[d] - 1) * dil[d] + 1;
    if (strides[d] <= 0 || dil[d] <= 0 || pads[d] > eff - 1 || pads[n + d] > eff - 1 + out_pad[d]) {
      return ctx->Unsupported("pads larger than the dilated kernel, or a non-positive stride");
    }
    begin[d] = eff - 1 - pads[d];
    const int64_t out = (xs[2 + d] - 1) * strides[d] + out_pad[d] + eff - pads[d] - pads[n + d];
    if (out <= 0) return ctx->Error("empty output");
    out_shape.push_back(out);
    padded[d] = out + eff - 1;
  }
  std::vector<int> inputs = {ctx->input(0), ctx->input(1)};
  const bool bias = ctx->has_input(2);
  if (bias) inputs.push_back(ctx->input(2));
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    const Operand& x = ops[0];
    const Operand& w = ops[1];
    std::vector<int64_t> pshape = {xs[0], c_in};
    pshape.insert(pshape.end(), padded.begin(), padded.end());
    Tensor dilated = Compute(
        pshape,
        [&](const std::vector<Var>& i) {
          std::vector<Expr> idx = {i[0], i[1]};
          Expr inside;
          for (int d = 0; d < n; ++d) {
            Expr p = Expr(i[2 + d]) - Expr(begin[d]);
            Expr ok = And(And(GE(p, Expr(0)), LT(p, Expr((xs[2 + d] - 1) * strides[d] + 1))),
                          EQ(FloorMod(p, Expr(strides[d])), Expr(0)));
            inside = inside.defined() ? And(inside, ok) : ok;
            idx.push_back(FloorDiv(p, Expr(strides[d])));
          }
          return Select(inside, x(idx), MakeConst(x.dtype, 0));
        },
        (*namer)("data_dilate"));
    std::vector<IterVar> red = {ReduceAxis(cg, "rc")};
    for (int d = 0; d < n; ++d) red.push_back(ReduceAxis(kernel[d], absl::StrCat("rk", d)));
    Tensor conv = Compute(
        out_shape,
        [&](const std::vector<Var>& i) {
          Expr group = FloorDiv(Expr(i[1]), Expr(m_per_group));
          std::vector<Expr> xi = {i[0], group * Expr(cg) + Expr(red[0].var)};
          std::vector<Expr> wi = {group * Expr(cg) + Expr(red[0].var),
                                  FloorMod(Expr(i[1]), Expr(m_per_group))};
          for (int d = 0; d < n; ++d) {
            xi.push_back(Expr(i[2 + d]) + Expr(red[1 + d].var) * Expr(dil[d]));
            wi.push_back(Expr(kernel[d] - 1) - Expr(red[1 + d].var));
          }
          return Sum(dilated(xi) * w(wi), red);
        },
        (*namer)("conv_transpose"));
    if (!bias) return conv;
    return Compute(
        out_shape, [&](const std::vector<Var>& i) { return conv(Exprs(i)) + ops[2]({i[1]}); },
        (*namer)("T_add"));
  };
  return ctx->Compute(OpPattern::kAnchor, inputs, out_shape, ctx->value(0).dtype, compute);
}

// MatMul of A [..., M, K] and B [..., K, N] with numpy batch broadcasting; 1-D operands get a
// unit dimension that the result drops.
absl::Status ConvertMatMul(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  if (ctx->num_inputs() != 2) return ctx->Error("expects 2 inputs");
  std::vector<int64_t> a = ctx->shape(0), b = ctx->shape(1);
  if (a.empty() || b.empty()) return ctx->Error("rank-0 operand");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (b[b.size() - 2] != k) {
    return ctx->Error(absl::StrCat("inner dimensions differ: [", absl::StrJoin(ctx->shape(0), ", "),
                                   "] x [", absl::StrJoin(ctx->shape(1), ", "), "]"));
  }
  std::vector<int64_t> batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> batch, BroadcastShapes(*ctx, batch_a, batch_b));
  std::vector<int64_t> out = batch;
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  std::vector<int64_t> func_out = FuncShape(out);
  const int nb = static_cast<int>(batch.size());
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    IterVar r = ReduceAxis(k, "k");
    return Compute(
        func_out,
        [&](const std::vector<Var>& i) {
          // Output indices: batch..., [i], [j].
          Expr row = a_vec ? Expr(0) : Expr(i[nb]);
          Expr col = b_vec ? Expr(0) : Expr(i[nb + (a_vec ? 0 : 1)]);
          auto operand = [&](const Operand& op, Expr x, Expr y, bool vec_first, bool vec_last) {
            std::vector<Expr> idx;
            const int op_batch = op.ndim() - (vec_first || vec_last ? 1 : 2);
            for (int d = 0; d < op_batch; ++d) {
              // A broadcast dimension reads index 0; one of extent 1 in the result too reads
              // its iteration variable, so that the block stays einsum-like and PadEinsum can
              // pad its rows to whole register tiles (LLaMA's [1, 128, 2048] x [2048, 5632]).
              const int out_d = nb - op_batch + d;
              idx.push_back(op.shape[d] == 1 && batch[out_d] != 1 ? Expr(0) : Expr(i[out_d]));
            }
            if (!vec_first) idx.push_back(x);
            if (!vec_last) idx.push_back(y);
            return op(idx);
          };
          Expr lhs = operand(ops[0], row, r.var, a_vec, false);
          Expr rhs = operand(ops[1], r.var, col, false, b_vec);
          return Sum(lhs * rhs, {r});
        },
        (*namer)("T_matmul"));
  };
  return ctx->Compute(OpPattern::kAnchor, {ctx->input(0), ctx->input(1)}, out, ctx->value(0).dtype,
                      compute);
}

absl::Status ConvertGemm(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"alpha", "beta", "transA", "transB"}));
  if (ctx->num_inputs() < 2 || ctx->rank(0) != 2 || ctx->rank(1) != 2) {
    return ctx->Error("expects 2-D A and B");
  }
  TESSERA_ASSIGN_OR_RETURN(float alpha, ctx->Float("alpha", 1.0f));
  TESSERA_ASSIGN_OR_RETURN(float beta, ctx->Float("beta", 1.0f));
  TESSERA_ASSIGN_OR_RETURN(int64_t trans_a, ctx->Int("transA", 0));
  TESSERA_ASSIGN_OR_RETURN(int64_t trans_b, ctx->Int("transB", 0));
  const int64_t m = trans_a ? ctx->shape(0)[1] : ctx->shape(0)[0];
  const int64_t k = trans_a ? ctx->shape(0)[0] : ctx->shape(0)[1];
  const int64_t kb = trans_b ? ctx->shape(1)[1] : ctx->shape(1)[0];
  const int64_t n = trans_b ? ctx->shape(1)[0] : ctx->shape(1)[1];
  if (k != kb) return ctx->Error(absl::StrCat("inner dimensions differ: ", k, " and ", kb));
  const bool has_c = ctx->has_input(2) && beta != 0.0f;
  std::vector<int> inputs = {ctx->input(0), ctx->input(1)};
  if (has_c) {
    TESSERA_RETURN_IF_ERROR(BroadcastShapes(*ctx, {m, n}, ctx->shape(2)).status());
    inputs.push_back(ctx->input(2));
  }
  const std::vector<int64_t> out = {m, n};
  OpCompute compute = [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    IterVar r = ReduceAxis(k, "k");
    const DataType t = ops[0].dtype;
    Tensor mm = Compute(
        out,
        [&](const std::vector<Var>& i) {
          Expr lhs = trans_a ? ops[0]({r.var, i[0]}) : ops[0]({i[0], r.var});
          Expr rhs = trans_b ? ops[1]({i[1], r.var}) : ops[1]({r.var, i[1]});
          return Sum(lhs * rhs, {r});
        },
        (*namer)("T_matmul"));
    if (!has_c && alpha == 1.0f) return mm;
    return Compute(
        out,
        [&](const std::vector<Var>& i) {
          Expr y = mm(Exprs(i));
          if (alpha != 1.0f) y = y * Const(t, alpha);
          if (has_c) {
            Expr c = ops[2].Broadcast(i);
            y = y + (beta == 1.0f ? c : c * Const(t, beta));
          }
          return y;
        },
        (*namer)("T_add"));
  };
  return ctx->Compute(OpPattern::kAnchor, inputs, out, ctx->value(0).dtype, compute);
}

absl::Status ConvertBatchNorm(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({"epsilon", "momentum", "training_mode", "spatial"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t training, ctx->Int("training_mode", 0));
  if (training != 0) return ctx->Unsupported("unsupported attribute training_mode=1");
  TESSERA_ASSIGN_OR_RETURN(float eps, ctx->Float("epsilon", 1e-5f));
  if (ctx->num_inputs() != 5 || ctx->rank(0) < 2)
    return ctx->Error("expects X, scale, B, mean, var");
  const int64_t c = ctx->shape(0)[1];
  std::vector<std::vector<double>> p;
  for (int i = 1; i <= 4; ++i) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<double> v, ctx->ConstDoubles(i));
    if (static_cast<int64_t>(v.size()) != c) {
      return ctx->Error(
          absl::StrCat("input ", i, " has ", v.size(), " elements for ", c, " channels"));
    }
    p.push_back(std::move(v));
  }
  // y = x * a + b with a = scale / sqrt(var + eps), b = B - mean * a (per channel).
  std::vector<int64_t> shape(ctx->rank(0) - 1, 1);
  shape[0] = c;
  const DataType t = ctx->value(0).dtype;
  NDArray a = NDArray::Empty(t, shape), b = NDArray::Empty(t, shape);
  for (int64_t i = 0; i < c; ++i) {
    const double s = p[0][i] / std::sqrt(p[3][i] + static_cast<double>(eps));
    a.SetFlat(i, s);
    b.SetFlat(i, p[1][i] - p[2][i] * s);
  }
  const int a_id = ctx->NewConstant(std::move(a), "scale");
  const int b_id = ctx->NewConstant(std::move(b), "shift");
  auto batch_norm = [](std::vector<int64_t> out) -> OpCompute {
    return [out](const std::vector<Operand>& ops, TensorNamer* namer) {
      return Compute(
          out,
          [&](const std::vector<Var>& i) {
            return ops[0].Broadcast(i) * ops[1].Broadcast(i) + ops[2].Broadcast(i);
          },
          (*namer)("T_batch_norm"));
    };
  };
  const std::vector<int64_t> out = ctx->shape(0);
  ChannelsLastForm channels_last;
  if (out.size() == 4) {
    channels_last = {batch_norm(ChannelsLastShape(out)),
                     std::vector<ChannelsLastInput>(3, ChannelsLastInput::kPermuted)};
  }
  return ctx->Compute(OpPattern::kElementwise, {ctx->input(0), a_id, b_id}, out, t, batch_norm(out),
                      0, std::move(channels_last));
}

absl::Status ConvertPool(NodeContext* ctx, bool is_max) {
  TESSERA_RETURN_IF_ERROR(
      ctx->CheckAttrs({"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape",
                       "pads", "storage_order", "strides"}));
  if (ctx->output_count() > 1) return ctx->Unsupported("the Indices output is not supported");
  TESSERA_ASSIGN_OR_RETURN(int64_t storage_order, ctx->Int("storage_order", 0));
  if (storage_order != 0) return ctx->Unsupported("unsupported attribute storage_order=1");
  const std::vector<int64_t>& xs = ctx->shape(0);
  if (xs.size() < 3) return ctx->Error("expects N, C, spatial...");
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ctx->Ints("kernel_shape", {}));
  TESSERA_ASSIGN_OR_RETURN(int64_t ceil_mode, ctx->Int("ceil_mode", 0));
  TESSERA_ASSIGN_OR_RETURN(int64_t include_pad, ctx->Int("count_include_pad", 0));
  if (!is_max && ctx->HasAttr("dilations")) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> dil, ctx->Ints("dilations", {}));
    for (int64_t d : dil) {
      if (d != 1) return ctx->Unsupported("AveragePool with dilations");
    }
  }
  std::vector<int64_t> in_spatial(xs.begin() + 2, xs.end());
  TESSERA_ASSIGN_OR_RETURN(Window w, ReadWindow(ctx, in_spatial, kernel, ceil_mode != 0));
  std::vector<int64_t> out_shape = {xs[0], xs[1]};
  out_shape.insert(out_shape.end(), w.out.begin(), w.out.end());
  auto pool = [=](std::vector<int64_t> out, bool channels_last) -> OpCompute {
    return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
      const Tensor& x = ops[0].tensor;
      const DataType t = x.dtype();
      const int n = static_cast<int>(w.out.size());
      const int first_spatial = channels_last ? 1 : 2;
      const int channel_axis = channels_last ? n + 1 : 1;
      // Max pads with the lowest value; average pads with zeros and divides by the count.
      Tensor padded = Pad(x, w, /*lowest=*/is_max, channels_last, namer);
      std::vector<IterVar> red;
      for (int d = 0; d < n; ++d) red.push_back(ReduceAxis(w.kernel[d], absl::StrCat("rv", d)));
      auto window = [&](const std::vector<Var>& i) {
        std::vector<Expr> idx = {i[0]};
        if (!channels_last) idx.push_back(i[channel_axis]);
        for (int d = 0; d < n; ++d) {
          idx.push_back(Expr(i[first_spatial + d]) * Expr(w.strides[d]) +
                        Expr(red[d].var) * Expr(w.dilations[d]));
        }
        if (channels_last) idx.push_back(i[channel_axis]);
        return padded(idx);
      };
      if (is_max) {
        return Compute(
            out, [&](const std::vector<Var>& i) { return MaxReduce(window(i), red); },
            (*namer)("pool_max"));
      }
      Tensor sum = Compute(
          out, [&](const std::vector<Var>& i) { return Sum(window(i), red); },
          (*namer)("pool_sum"));
      return Compute(
          out,
          [&](const std::vector<Var>& i) {
            Expr count;
            for (int d = 0; d < n; ++d) {
              Expr start = Expr(i[first_spatial + d]) * Expr(w.strides[d]) - Expr(w.pads_begin[d]);
              Expr end = start + Expr(w.kernel[d]);
              Expr c = include_pad ? Min(end, Expr(in_spatial[d] + w.pads_end[d])) -
                                         Max(start, Expr(-w.pads_begin[d]))
                                   : Min(end, Expr(in_spatial[d])) - Max(start, Expr(0));
              count = count.defined() ? count * c : c;
            }
            return Div(sum(Exprs(i)), Cast(t, count));
          },
          (*namer)("pool_avg"));
    };
  };
  ChannelsLastForm channels_last;
  if (xs.size() == 4) {
    channels_last = {pool(ChannelsLastShape(out_shape), true), {ChannelsLastInput::kPermuted}};
  }
  return ctx->Compute(OpPattern::kAnchor, {ctx->input(0)}, out_shape, ctx->value(0).dtype,
                      pool(out_shape, false), 0, std::move(channels_last));
}

absl::Status ConvertMaxPool(NodeContext* ctx) { return ConvertPool(ctx, true); }
absl::Status ConvertAveragePool(NodeContext* ctx) { return ConvertPool(ctx, false); }

absl::Status ConvertGlobalPool(NodeContext* ctx, bool is_max) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs({}));
  const std::vector<int64_t> xs = ctx->shape(0);
  if (xs.size() < 3) return ctx->Error("expects N, C, spatial...");
  std::vector<int64_t> out_shape = {xs[0], xs[1]};
  out_shape.resize(xs.size(), 1);
  int64_t count = 1;
  for (size_t d = 2; d < xs.size(); ++d) count *= xs[d];
  auto global_pool = [=](std::vector<int64_t> out, bool channels_last) -> OpCompute {
    return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
      std::vector<IterVar> red;
      for (size_t d = 2; d < xs.size(); ++d) {
        red.push_back(ReduceAxis(xs[d], absl::StrCat("rv", d - 2)));
      }
      auto elem = [&](const std::vector<Var>& i) {
        const Var& channel = channels_last ? i.back() : i[1];
        std::vector<Expr> idx = {i[0]};
        if (!channels_last) idx.push_back(channel);
        for (const IterVar& r : red) idx.push_back(r.var);
        if (channels_last) idx.push_back(channel);
        return ops[0](idx);
      };
      if (is_max) {
        return Compute(
            out, [&](const std::vector<Var>& i) { return MaxReduce(elem(i), red); },
            (*namer)("T_global_max"));
      }
      Tensor sum = Compute(
          out, [&](const std::vector<Var>& i) { return Sum(elem(i), red); },
          (*namer)("T_global_sum"));
      return Compute(
          out,
          [&](const std::vector<Var>& i) {
            return sum(Exprs(i)) * Const(ops[0].dtype, 1.0 / static_cast<double>(count));
          },
          (*namer)("T_global_avg"));
    };
  };
  ChannelsLastForm channels_last;
  if (xs.size() == 4) {
    channels_last = {global_pool(ChannelsLastShape(out_shape), true),
                     {ChannelsLastInput::kPermuted}};
  }
  return ctx->Compute(OpPattern::kReduction, {ctx->input(0)}, out_shape, ctx->value(0).dtype,
                      global_pool(out_shape, false), 0, std::move(channels_last));
}

absl::Status ConvertGlobalAveragePool(NodeContext* ctx) { return ConvertGlobalPool(ctx, false); }
absl::Status ConvertGlobalMaxPool(NodeContext* ctx) { return ConvertGlobalPool(ctx, true); }

}  // namespace

std::vector<ConverterRow> NnConverters() {
  return {
      {"AveragePool", ConvertAveragePool},
      {"BatchNormalization", ConvertBatchNorm},
      {"Conv", ConvertConv},
      {"ConvTranspose", ConvertConvTranspose},
      {"Gemm", ConvertGemm},
      {"GlobalAveragePool", ConvertGlobalAveragePool},
      {"GlobalMaxPool", ConvertGlobalMaxPool},
      {"MatMul", ConvertMatMul},
      {"MaxPool", ConvertMaxPool},
  };
}

}  // namespace onnx_internal
}  // namespace tessera
