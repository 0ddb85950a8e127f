// Convolution workloads in channels-last layouts, after TVM's te_workload.py: C1D (NLC),
// C2D (NHWC), C3D (NDHWC), DIL and GRP (C2D with dilation / groups), DEP (depthwise),
// T2D (transposed), CAP (capsule) and CBR (conv2d + bias + batch norm + relu). Padding is a
// separate stage "PadInput" with select(in_bounds, input, 0), as topi.nn.pad builds it, and
// is left out when there is none. float16 versions compute and accumulate in float16.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "frontend/compute.h"
#include "frontend/workloads_internal.h"

namespace tessera {
namespace workloads_internal {
namespace {

// Pads the spatial dimensions `dims` of `input` by `before[i]` / `after[i]` elements of `fill`
// (zeros unless given).
Tensor Pad(const Tensor& input, const std::vector<int>& dims, const std::vector<int64_t>& before,
           const std::vector<int64_t>& after, Expr fill = Expr(0)) {
  std::vector<int64_t> shape = input.shape();
  bool any = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    shape[dims[i]] += before[i] + after[i];
    any = any || before[i] != 0 || after[i] != 0;
  }
  if (!any) return input;
  return Compute(
      shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> index(v.begin(), v.end());
        Expr in_bounds;
        for (size_t i = 0; i < dims.size(); ++i) {
          const int d = dims[i];
          index[d] = v[d] - Expr(before[i]);
          Expr cond = And(GE(v[d], Expr(before[i])), LT(v[d], Expr(before[i] + input.shape()[d])));
          in_bounds = in_bounds.defined() ? And(in_bounds, cond) : cond;
        }
        return Select(in_bounds, input(index), fill);
      },
      "PadInput");
}

// Checks that a dilated kernel fits in its padded input along one spatial dimension.
absl::Status CheckKernelFits(const std::string& workload, const std::string& dim, int64_t size,
                             int64_t kernel, int64_t padding, int64_t dilation) {
  const int64_t span = (kernel - 1) * dilation + 1;
  const int64_t padded = size + 2 * padding;
  if (span <= padded) return absl::OkStatus();
  const std::string what = dilation == 1 ? absl::StrCat("kernel ", kernel)
                                         : absl::StrCat("dilated kernel ", span, " (kernel ",
                                                        kernel, ", dilation ", dilation, ")");
  return absl::InvalidArgumentError(absl::StrCat(workload, ": ", what, " larger than padded input ",
                                                 padded, " (", dim, "=", size,
                                                 ", padding=", padding, ")"));
}

// A channels-last convolution with `sizes.size()` spatial dimensions (1, 2 or 3).
struct ConvSpec {
  std::string workload;                 // for messages
  std::vector<std::string> dim_names;   // "H", "W"
  std::vector<std::string> axis_names;  // output spatial axes "h", "w"
  std::vector<std::string> red_names;   // kernel axes "rh", "rw"
  int64_t batch, in_channels, out_channels, kernel, stride, padding, dilation, groups;
  std::vector<int64_t> sizes;
  std::string input_name = "inputs", weight_name = "weight", output_name;
};

struct ConvTensors {
  Tensor input, weight, output;
};

// `acc`: what the taps are summed in (the output's dtype).
absl::StatusOr<ConvTensors> Conv(const ConvSpec& c, DataType dtype, DataType acc) {
  const int nd = static_cast<int>(c.sizes.size());
  for (int i = 0; i < nd; ++i) {
    TESSERA_RETURN_IF_ERROR(
        CheckKernelFits(c.workload, c.dim_names[i], c.sizes[i], c.kernel, c.padding, c.dilation));
  }
  for (auto [what, value] : {std::pair<const char*, int64_t>{"CI", c.in_channels},
                             std::pair<const char*, int64_t>{"CO", c.out_channels}}) {
    if (value % c.groups != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(c.workload, ": groups ", c.groups, " does not divide ", what, "=", value));
    }
  }
  std::vector<int64_t> in_shape = {c.batch};
  in_shape.insert(in_shape.end(), c.sizes.begin(), c.sizes.end());
  in_shape.push_back(c.in_channels);
  const int64_t ci_per_group = c.in_channels / c.groups;
  const int64_t co_per_group = c.out_channels / c.groups;
  std::vector<int64_t> w_shape(nd, c.kernel);
  w_shape.push_back(ci_per_group);
  w_shape.push_back(c.out_channels);
  ConvTensors t;
  t.input = Placeholder(in_shape, dtype, c.input_name);
  t.weight = Placeholder(w_shape, dtype, c.weight_name);

  std::vector<int> dims;
  for (int i = 0; i < nd; ++i) dims.push_back(i + 1);
  Tensor padded =
      Pad(t.input, dims, std::vector<int64_t>(nd, c.padding), std::vector<int64_t>(nd, c.padding));
  std::vector<int64_t> out_shape = {c.batch};
  for (int i = 0; i < nd; ++i) {
    out_shape.push_back((c.sizes[i] + 2 * c.padding - (c.kernel - 1) * c.dilation - 1) / c.stride +
                        1);
  }
  out_shape.push_back(c.out_channels);
  std::vector<IterVar> red;
  for (int i = 0; i < nd; ++i) red.push_back(ReduceAxis(c.kernel, c.red_names[i]));
  IterVar rc = ReduceAxis(ci_per_group, "rc");
  std::vector<IterVar> axes = red;
  axes.push_back(rc);
  std::vector<std::string> names = {"n"};
  names.insert(names.end(), c.axis_names.begin(), c.axis_names.end());
  names.push_back("co");
  t.output = Compute(
      out_shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> in_index = {v[0]}, w_index;
        for (int i = 0; i < nd; ++i) {
          in_index.push_back(v[i + 1] * Expr(c.stride) + red[i].var * Expr(c.dilation));
          w_index.push_back(red[i].var);
        }
        const Var& co = v[nd + 1];
        in_index.push_back(c.groups == 1
                               ? Expr(rc.var)
                               : FloorDiv(co, Expr(co_per_group)) * Expr(ci_per_group) + rc.var);
        w_index.push_back(rc.var);
        w_index.push_back(co);
        return Sum(Widened(padded(in_index), acc) * Widened(t.weight(w_index), acc), axes);
      },
      c.output_name, {}, names);
  return t;
}

ConvSpec Conv2dSpec(const std::string& workload, const ShapeMap& s) {
  ConvSpec c;
  c.workload = workload;
  c.dim_names = {"H", "W"};
  c.axis_names = {"h", "w"};
  c.red_names = {"rh", "rw"};
  c.batch = s.at("N");
  c.sizes = {s.at("H"), s.at("W")};
  c.in_channels = s.at("CI");
  c.out_channels = s.at("CO");
  c.kernel = s.at("K");
  c.stride = s.at("stride");
  c.padding = s.at("padding");
  c.dilation = s.count("dilation") ? s.at("dilation") : 1;
  c.groups = s.count("groups") ? s.at("groups") : 1;
  c.output_name = "conv2d_nhwc";
  return c;
}

absl::StatusOr<PrimFunc> FinishConv(const ConvSpec& spec, DataType dtype, DataType acc) {
  TESSERA_ASSIGN_OR_RETURN(ConvTensors t, Conv(spec, dtype, acc));
  // The weights of a dense convolution are a layer's: layout-free.
  return WithLayoutFree(CreatePrimFunc(kFunctionName, {t.input, t.weight, t.output}), {1});
}

absl::StatusOr<PrimFunc> BuildC1d(const ShapeMap& s, DataType dtype, DataType acc) {
  ConvSpec c;
  c.workload = "C1D";
  c.dim_names = {"L"};
  c.axis_names = {"l"};
  c.red_names = {"rl"};
  c.batch = s.at("N");
  c.sizes = {s.at("L")};
  c.in_channels = s.at("CI");
  c.out_channels = s.at("CO");
  c.kernel = s.at("K");
  c.stride = s.at("stride");
  c.padding = s.at("padding");
  c.dilation = 1;
  c.groups = 1;
  c.output_name = "conv1d_nlc";
  return FinishConv(c, dtype, acc);
}

absl::StatusOr<PrimFunc> BuildC2d(const ShapeMap& s, DataType dtype, DataType acc) {
  return FinishConv(Conv2dSpec("C2D", s), dtype, acc);
}
absl::StatusOr<PrimFunc> BuildDil(const ShapeMap& s, DataType dtype, DataType acc) {
  return FinishConv(Conv2dSpec("DIL", s), dtype, acc);
}
absl::StatusOr<PrimFunc> BuildGrp(const ShapeMap& s, DataType dtype, DataType acc) {
  return FinishConv(Conv2dSpec("GRP", s), dtype, acc);
}

absl::StatusOr<PrimFunc> BuildC3d(const ShapeMap& s, DataType dtype, DataType acc) {
  ConvSpec c = Conv2dSpec("C3D", s);
  c.dim_names = {"D", "H", "W"};
  c.axis_names = {"d", "h", "w"};
  c.red_names = {"rd", "rh", "rw"};
  c.sizes = {s.at("D"), s.at("H"), s.at("W")};
  c.output_name = "conv3d_ndhwc";
  return FinishConv(c, dtype, acc);
}

absl::StatusOr<PrimFunc> BuildDep(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t n = s.at("N"), h = s.at("H"), w = s.at("W"), ch = s.at("C"), k = s.at("K"),
                stride = s.at("stride"), pad = s.at("padding"), dil = s.at("dilation");
  TESSERA_RETURN_IF_ERROR(CheckKernelFits("DEP", "H", h, k, pad, dil));
  TESSERA_RETURN_IF_ERROR(CheckKernelFits("DEP", "W", w, k, pad, dil));
  Tensor input = Placeholder({n, h, w, ch}, dtype, "inputs");
  Tensor weight = Placeholder({k, k, ch}, dtype, "weight");
  Tensor padded = Pad(input, {1, 2}, {pad, pad}, {pad, pad});
  const int64_t oh = (h + 2 * pad - (k - 1) * dil - 1) / stride + 1;
  const int64_t ow = (w + 2 * pad - (k - 1) * dil - 1) / stride + 1;
  IterVar rh = ReduceAxis(k, "rh"), rw = ReduceAxis(k, "rw");
  Tensor out =
      Compute({n, oh, ow, ch},
              [&](const std::vector<Var>& v) {
                Expr y = v[1] * Expr(stride) + rh.var * Expr(dil);
                Expr x = v[2] * Expr(stride) + rw.var * Expr(dil);
                return Sum(padded({v[0], y, x, v[3]}) * weight({rh.var, rw.var, v[3]}), {rh, rw});
              },
              "depth_conv2d_nhwc", {}, {"n", "h", "w", "c"});
  return CreatePrimFunc(kFunctionName, {input, weight, out});
}

// Max pooling, NHWC (ResNet's 3 x 3 stride-2 pool after its stem): the padding holds the
// dtype's lowest value, so it never wins a window.
absl::StatusOr<PrimFunc> BuildMaxPool(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t n = s.at("N"), h = s.at("H"), w = s.at("W"), ch = s.at("C"), k = s.at("K"),
                stride = s.at("stride"), pad = s.at("padding");
  TESSERA_RETURN_IF_ERROR(CheckKernelFits("MAX_POOL", "H", h, k, pad, 1));
  TESSERA_RETURN_IF_ERROR(CheckKernelFits("MAX_POOL", "W", w, k, pad, 1));
  Tensor input = Placeholder({n, h, w, ch}, dtype, "inputs");
  Tensor padded = Pad(input, {1, 2}, {pad, pad}, {pad, pad}, MinValue(dtype));
  const int64_t oh = (h + 2 * pad - k) / stride + 1;
  const int64_t ow = (w + 2 * pad - k) / stride + 1;
  IterVar rh = ReduceAxis(k, "rh"), rw = ReduceAxis(k, "rw");
  Tensor out = Compute({n, oh, ow, ch},
                       [&](const std::vector<Var>& v) {
                         return MaxReduce(padded({v[0], v[1] * Expr(stride) + rh.var,
                                                  v[2] * Expr(stride) + rw.var, v[3]}),
                                          {rh, rw});
                       },
                       "pool_max", {}, {"n", "h", "w", "c"});
  return CreatePrimFunc(kFunctionName, {input, out});
}

// Transposed convolution, computed as TVM's conv2d_transpose_nhwc does: pad the input,
// dilate it by the stride inside the reduction (select on index % stride == 0), and run a
// stride-1 convolution with the flipped kernel.
absl::StatusOr<PrimFunc> BuildT2d(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t n = s.at("N"), h = s.at("H"), w = s.at("W"), ci = s.at("CI"), co = s.at("CO"),
                k = s.at("K"), stride = s.at("stride"), pad = s.at("padding");
  if (pad > k - 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("T2D: padding ", pad, " must be smaller than kernel ", k));
  }
  const int64_t oh = (h - 1) * stride - 2 * pad + k;
  const int64_t ow = (w - 1) * stride - 2 * pad + k;
  if (oh < 1 || ow < 1) {
    return absl::InvalidArgumentError(absl::StrCat("T2D: output ", oh, "x", ow, " is empty (H=", h,
                                                   ", W=", w, ", stride=", stride,
                                                   ", padding=", pad, ", K=", k, ")"));
  }
  Tensor input = Placeholder({n, h, w, ci}, dtype, "inputs");
  Tensor weight = Placeholder({k, k, ci, co}, dtype, "weight");
  const int64_t back = k - 1 - pad;  // padding of the equivalent direct convolution
  const int64_t before = (back + stride - 1) / stride;
  Tensor padded = Pad(input, {1, 2}, {before, before}, {before, before});
  const int64_t border = (stride - back % stride) % stride;
  IterVar rh = ReduceAxis(k, "rh"), rw = ReduceAxis(k, "rw"), rc = ReduceAxis(ci, "rc");
  Tensor out =
      Compute({n, oh, ow, co},
              [&](const std::vector<Var>& v) {
                Expr y = v[1] + rh.var + Expr(border);
                Expr x = v[2] + rw.var + Expr(border);
                Expr value;
                if (stride == 1) {
                  value = padded({v[0], y, x, rc.var});
                } else {
                  Expr s_ = Expr(stride);
                  Expr on_grid = And(EQ(FloorMod(y, s_), Expr(0)), EQ(FloorMod(x, s_), Expr(0)));
                  value = Select(on_grid, padded({v[0], FloorDiv(y, s_), FloorDiv(x, s_), rc.var}),
                                 Expr(0));
                }
                Expr wv = weight({Expr(k - 1) - rh.var, Expr(k - 1) - rw.var, rc.var, v[3]});
                return Sum(value * wv, {rh, rw, rc});
              },
              "conv2d_transpose_nhwc", {}, {"n", "h", "w", "co"});
  return CreatePrimFunc(kFunctionName, {input, weight, out});
}

absl::StatusOr<PrimFunc> BuildCap(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  const int64_t n = s.at("N"), h = s.at("H"), w = s.at("W"), ci = s.at("CI"), co = s.at("CO"),
                k = s.at("K"), stride = s.at("stride"), pad = s.at("padding"),
                cap = s.at("capsule");
  TESSERA_RETURN_IF_ERROR(CheckKernelFits("CAP", "H", h, k, pad, 1));
  TESSERA_RETURN_IF_ERROR(CheckKernelFits("CAP", "W", w, k, pad, 1));
  Tensor input = Placeholder({n, h, w, cap, cap, ci}, dtype, "inputs");
  Tensor weight = Placeholder({k, k, cap, cap, ci, co}, dtype, "weight");
  Tensor padded = Pad(input, {1, 2}, {pad, pad}, {pad, pad});
  const int64_t oh = (h + 2 * pad - k) / stride + 1, ow = (w + 2 * pad - k) / stride + 1;
  IterVar rh = ReduceAxis(k, "rh"), rw = ReduceAxis(k, "rw"), cap_k = ReduceAxis(cap, "cap_k"),
          rc = ReduceAxis(ci, "rc");
  Tensor out = Compute({n, oh, ow, cap, cap, co},
                       [&](const std::vector<Var>& v) {
                         Expr y = v[1] * Expr(stride) + rh.var, x = v[2] * Expr(stride) + rw.var;
                         return Sum(padded({v[0], y, x, v[3], cap_k.var, rc.var}) *
                                        weight({rh.var, rw.var, cap_k.var, v[4], rc.var, v[5]}),
                                    {rh, rw, cap_k, rc});
                       },
                       "conv2d_capsule_nhwijc", {}, {"n", "h", "w", "cap_i", "cap_j", "co"});
  return CreatePrimFunc(kFunctionName, {input, weight, out});
}

absl::StatusOr<PrimFunc> BuildCbr(const ShapeMap& s, DataType dtype, DataType /*acc*/) {
  ConvSpec c = Conv2dSpec("CBR", s);
  c.input_name = "data";
  c.weight_name = "kernel";
  TESSERA_ASSIGN_OR_RETURN(ConvTensors t, Conv(c, dtype, dtype));
  const std::vector<int64_t> shape = t.output.shape();
  const int64_t co = c.out_channels;
  Tensor bias = Placeholder({co}, dtype, "bias");
  Tensor scale = Placeholder({co}, dtype, "bn_scale");
  Tensor offset = Placeholder({co}, dtype, "bn_offset");
  const std::vector<std::string> names = {"i", "j", "k", "l"};
  auto epilogue = [&](const Tensor& in, const Tensor& param, bool multiply, const char* name) {
    return Compute(
        shape,
        [&](const std::vector<Var>& v) {
          Expr x = in({v[0], v[1], v[2], v[3]}), p = param({v[3]});
          return multiply ? x * p : x + p;
        },
        name, {}, names);
  };
  Tensor biased = epilogue(t.output, bias, false, "bias_add");
  Tensor scaled = epilogue(biased, scale, true, "bn_mul");
  Tensor shifted = epilogue(scaled, offset, false, "bn_add");
  Tensor relu = Compute(
      shape,
      [&](const std::vector<Var>& v) {
        return Max(shifted({v[0], v[1], v[2], v[3]}), Expr(0));
      },
      "T_relu", {}, names);
  return CreatePrimFunc(kFunctionName, {t.input, t.weight, bias, scale, offset, relu});
}

std::vector<WorkloadParam> Conv2dParams(int64_t n, int64_t h, int64_t w, int64_t ci, int64_t co,
                                        int64_t k, int64_t stride, int64_t pad) {
  return {{"N", n, "batch"},
          {"H", h, "input height"},
          {"W", w, "input width"},
          {"CI", ci, "input channels"},
          {"CO", co, "output channels"},
          {"K", k, "kernel size (square)"},
          {"stride", stride, "stride"},
          {"padding", pad, "zero padding on each side"}};
}

template <typename... Extra>
std::vector<WorkloadParam> With(std::vector<WorkloadParam> params, Extra... extra) {
  (params.push_back(extra), ...);
  return params;
}

}  // namespace

std::vector<WorkloadDef> ConvWorkloads() {
  const std::vector<std::string> fp = {"float32", "float16"};
  // The dense convolutions (one Conv reduction, nothing after it) also take bfloat16 and may
  // sum 16-bit floats in float32.
  const std::vector<std::string> dense_fp = {"float32", "float16", "bfloat16"};
  // The 2-D one also int8, summed in int32 (a quantized layer's).
  std::vector<std::string> dense_int8 = dense_fp;
  dense_int8.push_back("int8");
  return {
      {{"C1D",
        "1-D convolution, NLC layout",
        {{"N", 1, "batch"},
         {"L", 256, "input length"},
         {"CI", 64, "input channels"},
         {"CO", 128, "output channels"},
         {"K", 3, "kernel size"},
         {"stride", 2, "stride"},
         {"padding", 1, "zero padding on each side"}},
        dense_fp,
        kFloat32Accumulation},
       BuildC1d},
      {{"C2D", "2-D convolution, NHWC layout (ResNet-18's first layer)",
        With(Conv2dParams(1, 224, 224, 3, 64, 7, 2, 3), WorkloadParam{"dilation", 1, "dilation"}),
        dense_int8, kFloat32Accumulation},
       BuildC2d},
      {{"C3D",
        "3-D convolution, NDHWC layout",
        {{"N", 1, "batch"},
         {"D", 16, "input depth"},
         {"H", 32, "input height"},
         {"W", 32, "input width"},
         {"CI", 3, "input channels"},
         {"CO", 64, "output channels"},
         {"K", 7, "kernel size (cubic)"},
         {"stride", 2, "stride"},
         {"padding", 3, "zero padding on each side"},
         {"dilation", 1, "dilation"}},
        dense_fp,
        kFloat32Accumulation},
       BuildC3d},
      {{"DEP",
        "depthwise 2-D convolution, NHWC layout (MobileNet)",
        {{"N", 1, "batch"},
         {"H", 112, "input height"},
         {"W", 112, "input width"},
         {"C", 32, "channels"},
         {"K", 3, "kernel size (square)"},
         {"stride", 1, "stride"},
         {"padding", 1, "zero padding on each side"},
         {"dilation", 1, "dilation"}},
        fp},
       BuildDep},
      {{"MAX_POOL",
        "2-D max pooling, NHWC layout (ResNet after its stem)",
        {{"N", 1, "batch"},
         {"H", 112, "input height"},
         {"W", 112, "input width"},
         {"C", 64, "channels"},
         {"K", 3, "window size (square)"},
         {"stride", 2, "stride"},
         {"padding", 1, "padding on each side (the lowest value)"}},
        fp},
       BuildMaxPool},
      {{"DIL", "dilated 2-D convolution, NHWC layout",
        With(Conv2dParams(1, 224, 224, 3, 64, 7, 2, 3), WorkloadParam{"dilation", 2, "dilation"}),
        dense_fp, kFloat32Accumulation},
       BuildDil},
      {{"GRP", "grouped 2-D convolution, NHWC layout",
        With(Conv2dParams(1, 56, 56, 64, 128, 3, 2, 1), WorkloadParam{"groups", 4, "groups"}),
        dense_fp, kFloat32Accumulation},
       BuildGrp},
      {{"T2D", "transposed 2-D convolution, NHWC layout (DCGAN)",
        Conv2dParams(1, 4, 4, 512, 256, 4, 2, 1), fp},
       BuildT2d},
      {{"CAP", "capsule 2-D convolution, NHWIJC layout (matrix capsules)",
        With(Conv2dParams(1, 16, 16, 32, 32, 3, 2, 1),
             WorkloadParam{"capsule", 4, "capsule matrix size"}),
        fp},
       BuildCap},
      {{"CBR", "conv2d + bias + batch norm (scale, shift) + relu, NHWC, one block each",
        Conv2dParams(1, 224, 224, 3, 64, 7, 2, 3), fp},
       BuildCbr},
  };
}

}  // namespace workloads_internal
}  // namespace tessera
