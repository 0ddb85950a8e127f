// ONNX Resize (opsets 11 to 21): modes nearest and linear, the output given by `scales` or
// `sizes` (constants; opset 18's `axes` too). Every output index of a resized axis reads an input
// position known at import, so the converter computes each axis's map once, in float32 as
// onnxruntime computes it (its GetOriginalCoordinateFromResizedCoordinate and nearest rounding),
// and gives it to the kernel as a small constant table: the input index (int32) and, for
// linear, the weight of the next input element. Axes that keep their extent and map onto
// themselves (N and C of an image) read the input directly. Linear interpolates along every
// resized axis (bilinear for an NCHW image). A rank-4 Resize that keeps N and C has a
// channels-last form (frontend/channels_last.h): the same tables over an NHWC input.
#include <algorithm>
#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "frontend/onnx_import_internal.h"

namespace tessera {
namespace onnx_internal {
namespace {

enum class ResizeCoordinates {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfHalfPixelForNn,
};
enum class ResizeRounding { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

// The input coordinate that output index `x` of an axis stands for.
float ResizeSource(ResizeCoordinates mode, float x, float scale, float out_len, float in_len) {
  switch (mode) {
    case ResizeCoordinates::kHalfPixel:
      return (x + 0.5f) / scale - 0.5f;
    case ResizeCoordinates::kHalfPixelSymmetric: {
      const float adjustment = out_len / (scale * in_len);
      const float offset = in_len / 2 * (1 - adjustment);
      return offset + (x + 0.5f) / scale - 0.5f;
    }
    case ResizeCoordinates::kPytorchHalfPixel:
      return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case ResizeCoordinates::kAlignCorners:
      return out_len == 1 ? 0.0f : x * (in_len - 1) / (out_len - 1);
    case ResizeCoordinates::kAsymmetric:
      return x / scale;
    case ResizeCoordinates::kTfHalfPixelForNn:
      return (x + 0.5f) / scale;
  }
  return 0.0f;
}

int64_t ResizeRound(ResizeRounding mode, float v) {
  switch (mode) {
    case ResizeRounding::kRoundPreferFloor:
      if (v == static_cast<float>(static_cast<int64_t>(v)) + 0.5f) {
        return static_cast<int64_t>(std::floor(v));
      }
      return static_cast<int64_t>(std::round(v));
    case ResizeRounding::kRoundPreferCeil:
      return static_cast<int64_t>(std::round(v));
    case ResizeRounding::kFloor:
      return static_cast<int64_t>(std::floor(v));
    case ResizeRounding::kCeil:
      return static_cast<int64_t>(std::ceil(v));
  }
  return 0;
}

// One axis's map: per output index the input index (nearest; linear: the lower neighbour) and,
// for linear, the weight of the upper neighbour.
struct ResizeAxisMap {
  bool identity = true;
  std::vector<int32_t> index;
  std::vector<float> weight;
};

ResizeAxisMap MapAxis(bool linear, ResizeCoordinates coordinates, ResizeRounding rounding,
                      float scale, int64_t in, int64_t out) {
  ResizeAxisMap map;
  map.identity = in == out;
  for (int64_t x = 0; x < out; ++x) {
    const float v = ResizeSource(coordinates, static_cast<float>(x), scale, static_cast<float>(out),
                                 static_cast<float>(in));
    int64_t index;
    float weight = 0;
    if (linear) {
      const float clamped = std::max(0.0f, std::min(v, static_cast<float>(in - 1)));
      index = std::min(static_cast<int64_t>(clamped), in - 1);
      if (index + 1 < in) weight = clamped - static_cast<float>(index);
    } else {
      index = std::clamp<int64_t>(ResizeRound(rounding, v), 0, in - 1);
    }
    map.identity = map.identity && index == x && weight == 0;
    map.index.push_back(static_cast<int32_t>(index));
    map.weight.push_back(weight);
  }
  return map;
}

template <typename T>
NDArray ResizeTable(DataType dtype, const std::vector<T>& values) {
  NDArray table = NDArray::Empty(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) table.SetFlat(static_cast<int64_t>(i), values[i]);
  return table;
}

// The kernel: operands x, then per resized axis its index table (and weight table for linear).
// `position[d]` is the axis of the computed tensors that holds the model's axis d (NCHW: d;
// NHWC: 0, 3, 1, 2).
OpCompute ResizeCompute(std::vector<int64_t> out, std::vector<int> position,
                        std::vector<int64_t> in, std::vector<bool> resized, bool linear) {
  return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    return Compute(
        out,
        [&](const std::vector<Var>& i) {
          const int rank = static_cast<int>(in.size());
          std::vector<Expr> index(rank), weight(rank);
          for (int d = 0, k = 1; d < rank; ++d) {
            const Var& v = i[position[d]];
            if (!resized[d]) {
              index[position[d]] = v;
              continue;
            }
            index[position[d]] = Cast(DataType::Index(), ops[k++]({v}));
            if (linear) weight[d] = ops[k++]({v});
          }
          if (!linear) return ops[0](index);
          // Interpolates along the resized axes in turn: (1 - w) * lower + w * upper.
          std::function<Expr(int, std::vector<Expr>)> lerp = [&](int d,
                                                                 std::vector<Expr> at) -> Expr {
            while (d < rank && !resized[d]) ++d;
            if (d == rank) return ops[0](at);
            const int p = position[d];
            Expr lower = lerp(d + 1, at);
            at[p] = Min(at[p] + Expr(1), Expr(in[d] - 1));
            Expr upper = lerp(d + 1, at);
            const Expr& w = weight[d];
            return (MakeConst(w.dtype(), 1) - w) * lower + w * upper;
          };
          return lerp(0, index);
        },
        (*namer)("T_resize"));
  };
}

// A string attribute among `choices` (the first is its default), as its value.
template <typename T, size_t N>
absl::StatusOr<T> ResizeChoice(const NodeContext* ctx, const std::string& attr,
                               const std::pair<const char*, T> (&choices)[N]) {
  TESSERA_ASSIGN_OR_RETURN(std::string name, ctx->String(attr, choices[0].first));
  for (const auto& [choice, value] : choices) {
    if (name == choice) return value;
  }
  return ctx->Unsupported(absl::StrCat("unsupported attribute ", attr, "=", name));
}

absl::Status ConvertResize(NodeContext* ctx) {
  TESSERA_RETURN_IF_ERROR(ctx->CheckAttrs(
      {"antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
       "extrapolation_value", "keep_aspect_ratio_policy", "mode", "nearest_mode"}));
  if (!ctx->has_input(0)) return ctx->Error("expects input X");
  static const std::pair<const char*, bool> kModes[] = {{"nearest", false}, {"linear", true}};
  static const std::pair<const char*, ResizeCoordinates> kCoordinates[] = {
      {"half_pixel", ResizeCoordinates::kHalfPixel},
      {"half_pixel_symmetric", ResizeCoordinates::kHalfPixelSymmetric},
      {"pytorch_half_pixel", ResizeCoordinates::kPytorchHalfPixel},
      {"align_corners", ResizeCoordinates::kAlignCorners},
      {"asymmetric", ResizeCoordinates::kAsymmetric},
      {"tf_half_pixel_for_nn", ResizeCoordinates::kTfHalfPixelForNn},
  };
  static const std::pair<const char*, ResizeRounding> kRoundings[] = {
      {"round_prefer_floor", ResizeRounding::kRoundPreferFloor},
      {"round_prefer_ceil", ResizeRounding::kRoundPreferCeil},
      {"floor", ResizeRounding::kFloor},
      {"ceil", ResizeRounding::kCeil},
  };
  TESSERA_ASSIGN_OR_RETURN(const bool linear, ResizeChoice(ctx, "mode", kModes));
  TESSERA_ASSIGN_OR_RETURN(ResizeCoordinates coordinates,
                           ResizeChoice(ctx, "coordinate_transformation_mode", kCoordinates));
  TESSERA_ASSIGN_OR_RETURN(ResizeRounding rounding, ResizeChoice(ctx, "nearest_mode", kRoundings));
  TESSERA_ASSIGN_OR_RETURN(int64_t antialias, ctx->Int("antialias", 0));
  if (antialias != 0) return ctx->Unsupported("unsupported attribute antialias=1");
  TESSERA_ASSIGN_OR_RETURN(std::string policy, ctx->String("keep_aspect_ratio_policy", "stretch"));
  if (policy != "stretch") {
    return ctx->Unsupported(
        absl::StrCat("unsupported attribute keep_aspect_ratio_policy=", policy));
  }
  const std::vector<int64_t> in = ctx->shape(0);
  const int rank = static_cast<int>(in.size());
  if (rank == 0) return ctx->Error("X is a scalar");
  if (linear && !ctx->value(0).dtype.is_float()) {
    return ctx->Unsupported("linear interpolation of a non-floating-point input");
  }
  std::vector<int64_t> all(rank);
  for (int d = 0; d < rank; ++d) all[d] = d;
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ctx->Ints("axes", all));
  for (int64_t& a : axes) {
    TESSERA_ASSIGN_OR_RETURN(int axis, ctx->Axis(a, rank));
    a = axis;
  }
  const bool has_scales = ctx->has_input(2), has_sizes = ctx->has_input(3);
  if (has_scales == has_sizes) {
    return ctx->Error(has_scales ? "both scales and sizes are given"
                                 : "neither scales nor sizes is given");
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<double> given,
                           has_scales ? ctx->ConstDoubles(2) : ctx->ConstDoubles(3));
  if (given.size() != axes.size()) {
    return ctx->Error(absl::StrCat(has_scales ? "scales" : "sizes", " has ", given.size(),
                                   " elements for ", axes.size(), " axes"));
  }
  std::vector<float> scales(rank, 1.0f);
  std::vector<int64_t> out = in;
  for (size_t k = 0; k < axes.size(); ++k) {
    const int64_t d = axes[k];
    if (has_scales) {
      scales[d] = static_cast<float>(given[k]);
      out[d] = static_cast<int64_t>(std::floor(scales[d] * static_cast<float>(in[d])));
    } else {
      out[d] = static_cast<int64_t>(given[k]);
      scales[d] = static_cast<float>(out[d]) / static_cast<float>(in[d]);
    }
    if (!(scales[d] > 0) || out[d] <= 0) {
      return ctx->Error(absl::StrCat("axis ", d, " of extent ", in[d], " would be resized to ",
                                     out[d], " (scale ", scales[d], ")"));
    }
  }
  std::vector<int> inputs = {ctx->input(0)};
  std::vector<bool> resized(rank, false);
  for (int d = 0; d < rank; ++d) {
    ResizeAxisMap map = MapAxis(linear, coordinates, rounding, scales[d], in[d], out[d]);
    if (map.identity) continue;
    resized[d] = true;
    inputs.push_back(
        ctx->NewConstant(ResizeTable(DataType::Int32(), map.index), absl::StrCat("index", d)));
    if (linear) {
      inputs.push_back(ctx->NewConstant(ResizeTable(ctx->value(0).dtype, map.weight),
                                        absl::StrCat("weight", d)));
    }
  }
  // A Resize that changes nothing (scales of 1) is a view.
  if (inputs.size() == 1) return ctx->View(ctx->input(0), out);
  std::vector<int> nchw(rank);
  for (int d = 0; d < rank; ++d) nchw[d] = d;
  ChannelsLastForm channels_last;
  if (rank == 4 && !resized[0] && !resized[1]) {
    channels_last.compute =
        ResizeCompute(ChannelsLastShape(out), {0, 3, 1, 2}, in, resized, linear);
    channels_last.inputs.assign(inputs.size(), ChannelsLastInput::kUnchanged);
    channels_last.inputs[0] = ChannelsLastInput::kPermuted;
  }
  return ctx->Compute(OpPattern::kInjective, inputs, out, ctx->value(0).dtype,
                      ResizeCompute(out, nchw, in, resized, linear), 0, std::move(channels_last));
}

}  // namespace

std::vector<ConverterRow> ResizeConverters() { return {{"Resize", ConvertResize}}; }

}  // namespace onnx_internal
}  // namespace tessera
