#include "frontend/winograd.h"

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

// F(4x4, 3x3) on the points 0, 1, -1, 2, -2 and infinity (Lavin and Gray): input transform
// B^T (6 x 6), kernel transform G (6 x 3), output transform A^T (4 x 6).
constexpr int kAlpha = 6;  // input tile
constexpr int kTile = 4;   // output tile
constexpr int kPoints = kAlpha * kAlpha;
constexpr double kBT[kAlpha][kAlpha] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0},
                                        {0, 4, -4, -1, 1, 0}, {0, -2, -1, 2, 1, 0},
                                        {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
constexpr double kG[kAlpha][3] = {{1.0 / 4, 0, 0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
constexpr double kAT[kTile][kAlpha] = {
    {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};

// U[e, c, o] = sum over the kernel's (a, b) of G[eta][a] * w[a, b, c, o] * G[nu][b], from
// weights [3, 3, C, O], in double.
NDArray KernelTransform(const NDArray& w) {
  const int64_t c_in = w.shape()[2], c_out = w.shape()[3];
  NDArray u = NDArray::Empty(DataType::Float32(), {kPoints, c_in, c_out});
  for (int e = 0; e < kPoints; ++e) {
    const double* g_eta = kG[e / kAlpha];
    const double* g_nu = kG[e % kAlpha];
    for (int64_t c = 0; c < c_in; ++c) {
      for (int64_t o = 0; o < c_out; ++o) {
        double sum = 0;
        for (int a = 0; a < 3; ++a) {
          for (int b = 0; b < 3; ++b) {
            sum += g_eta[a] * g_nu[b] * w.GetFlat(((a * 3 + b) * c_in + c) * c_out + o);
          }
        }
        u.SetFlat((e * c_in + c) * c_out + o, sum);
      }
    }
  }
  return u;
}

Expr F32(double v) { return MakeConst(DataType::Float32(), v); }

// The sum of `terms` as a balanced tree: independent additions, where a chain would make each
// wait for the one before (the compiler may not reassociate float sums).
Expr TreeSum(std::vector<Expr> terms) {
  while (terms.size() > 1) {
    std::vector<Expr> next;
    for (size_t i = 0; i + 1 < terms.size(); i += 2) next.push_back(terms[i] + terms[i + 1]);
    if (terms.size() % 2 == 1) next.push_back(terms.back());
    terms = std::move(next);
  }
  return terms.front();
}

// sum_k coefficients[k] * values[k] over the nonzero coefficients, with no multiplication
// for a coefficient of +-1.
Expr Combination(const std::vector<double>& coefficients, const std::vector<Expr>& values) {
  std::vector<Expr> plus, minus;
  for (size_t k = 0; k < coefficients.size(); ++k) {
    const double c = coefficients[k];
    if (c == 1) {
      plus.push_back(values[k]);
    } else if (c == -1) {
      minus.push_back(values[k]);
    } else if (c != 0) {
      plus.push_back(F32(c) * values[k]);
    }
  }
  if (plus.empty()) return -TreeSum(std::move(minus));
  if (minus.empty()) return TreeSum(std::move(plus));
  return TreeSum(std::move(plus)) - TreeSum(std::move(minus));
}

// select(point == 0, cases[0], select(point == 1, cases[1], ...)): one expression per point,
// which code generation expands per unrolled point (codegen/unroll_selects.h).
Expr SelectCase(const Expr& point, const std::vector<Expr>& cases) {
  Expr chosen = cases.back();
  for (int k = static_cast<int>(cases.size()) - 2; k >= 0; --k) {
    chosen = Select(EQ(point, Expr(k)), cases[k], chosen);
  }
  return chosen;
}

// The tiles of an output [N, H, W, O]: p = (n * TH + th) * TW + tw.
struct Tiles {
  int64_t n, th, tw;
  int64_t rows = 0;  // rows of V and M per point: count(), or a few more (PointRows)
  int64_t count() const { return n * th * tw; }
};

// The rows of V and M per point: the tiles, plus up to 3 more where that spreads the 36 points'
// rows (read together by the output transform, written together by the input transform) over
// more of the L1 cache's 64 sets of 64-byte lines. At a stride that is a multiple of 4 KiB they
// all share one set: the U-Net's 64 x 64 x 64 output transform (36 points 64 KiB apart) ran
// 149 us against 51-58 for ResNet-18's 56 x 56 x 64. The extra rows repeat the last tile.
int64_t PointRows(int64_t tiles, int64_t c_in, int64_t c_out) {
  auto distinct_sets = [](int64_t rows, int64_t channels) {
    std::set<int64_t> sets;
    for (int64_t e = 0; e < kPoints; ++e) sets.insert(e * rows * channels * 4 / 64 % 64);
    return static_cast<int64_t>(sets.size());
  };
  int64_t best = tiles, best_sets = 0;
  for (int64_t rows = tiles; rows < tiles + 4; ++rows) {
    const int64_t sets = std::min(distinct_sets(rows, c_in), distinct_sets(rows, c_out));
    if (sets > best_sets) {
      best = rows;
      best_sets = sets;
    }
  }
  return best;
}

// The input padded by one pixel on every side and up to whole tiles (inputs: x): a kernel of its
// own, so that the transform reads every window unconditionally and vectorizes.
OpCompute PadCompute(std::vector<int64_t> padded_shape, int64_t height, int64_t width) {
  return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    const Tensor& x = ops[0].tensor;
    return Compute(
        padded_shape,
        [&](const std::vector<Var>& i) {
          const Expr row = Expr(i[1]) - Expr(1), col = Expr(i[2]) - Expr(1);
          const Expr inside = And(And(GE(row, Expr(0)), LT(row, Expr(height))),
                                  And(GE(col, Expr(0)), LT(col, Expr(width))));
          return Select(inside, x({i[0], row, col, i[3]}), F32(0));
        },
        (*namer)("winograd_pad"));
  };
}

// V[e, p, c] (inputs: the padded input, or with `height` > 0 the input [N, height, width, C]
// itself, whose windows the transform reads clamped into the image and multiplied by 0 outside
// it: a factor per tile, but index clamps in every load).
OpCompute InputCompute(Tiles tiles, int64_t channels, int64_t height, int64_t width) {
  return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    const Tensor& x = ops[0].tensor;
    return Compute({kPoints, tiles.rows, channels},
                   [&](const std::vector<Var>& i) {
                     const Expr p = tiles.rows > tiles.count()
                                        ? Min(Expr(i[1]), Expr(tiles.count() - 1))
                                        : Expr(i[1]);
                     const Expr n = FloorDiv(p, Expr(tiles.th * tiles.tw));
                     const Expr th = FloorMod(FloorDiv(p, Expr(tiles.tw)), Expr(tiles.th));
                     const Expr tw = FloorMod(p, Expr(tiles.tw));
                     // Window row a of tile t: row 4 t + a of the padded input, or row
                     // 4 t + a - 1 of the input, clamped, with a factor 0 where it is outside.
                     auto at = [&](const Expr& t, int a, int64_t tiles_along, int64_t extent,
                                   Expr* mask) {
                       if (height == 0) return t * Expr(kTile) + Expr(a);
                       const Expr pos = t * Expr(kTile) + Expr(a - 1);
                       const bool low = a - 1 < 0;
                       const bool high = kTile * (tiles_along - 1) + a - 1 >= extent;
                       if (!low && !high) return pos;
                       Expr inside;
                       if (low) inside = GE(pos, Expr(0));
                       if (high) {
                         inside = inside.defined() ? And(inside, LT(pos, Expr(extent)))
                                                   : LT(pos, Expr(extent));
                       }
                       const Expr factor = Select(inside, F32(1), F32(0));
                       *mask = mask->defined() ? *mask * factor : factor;
                       return Min(Max(pos, Expr(0)), Expr(extent - 1));
                     };
                     std::vector<Expr> window;  // [a * 6 + b]
                     for (int a = 0; a < kAlpha; ++a) {
                       for (int b = 0; b < kAlpha; ++b) {
                         Expr mask;
                         const Expr row = at(th, a, tiles.th, height, &mask);
                         const Expr col = at(tw, b, tiles.tw, width, &mask);
                         const Expr value = x({n, row, col, i[2]});
                         window.push_back(mask.defined() ? value * mask : value);
                       }
                     }
                     std::vector<Expr> points;
                     for (int e = 0; e < kPoints; ++e) {
                       std::vector<double> coefficients;
                       for (int a = 0; a < kAlpha; ++a) {
                         for (int b = 0; b < kAlpha; ++b) {
                           coefficients.push_back(kBT[e / kAlpha][a] * kBT[e % kAlpha][b]);
                         }
                       }
                       points.push_back(Combination(coefficients, window));
                     }
                     return SelectCase(i[0], points);
                   },
                   (*namer)("winograd_input"), {}, {"e", "p", "c"});
  };
}

// M[e, p, o] = sum_c V[e, p, c] * U[e, c, o] (inputs: V, U).
OpCompute GemmCompute(int64_t tiles, int64_t c_in, int64_t c_out) {
  return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    const Tensor& v = ops[0].tensor;
    const Tensor& u = ops[1].tensor;
    const IterVar rc = ReduceAxis(c_in, "rc");
    return Compute({kPoints, tiles, c_out},
                   [&](const std::vector<Var>& i) {
                     return Sum(v({i[0], i[1], rc.var}) * u({i[0], rc.var, i[2]}), {rc});
                   },
                   (*namer)("winograd_gemm"), {}, {"e", "p", "o"});
  };
}

// y[n, h, w, o] from M (inputs: M, then the bias if any).
OpCompute OutputCompute(Tiles tiles, std::vector<int64_t> out_shape, bool bias) {
  return [=](const std::vector<Operand>& ops, TensorNamer* namer) {
    const Tensor& m = ops[0].tensor;
    return Compute(
        out_shape,
        [&](const std::vector<Var>& i) {
          const Expr k(kTile);
          const Expr p = (Expr(i[0]) * Expr(tiles.th) + FloorDiv(i[1], k)) * Expr(tiles.tw) +
                         FloorDiv(i[2], k);
          std::vector<Expr> points;
          for (int e = 0; e < kPoints; ++e) points.push_back(m({Expr(e), p, i[3]}));
          std::vector<Expr> rows;
          for (int r = 0; r < kTile; ++r) {
            std::vector<Expr> columns;
            for (int c = 0; c < kTile; ++c) {
              std::vector<double> coefficients;
              for (int e = 0; e < kPoints; ++e) {
                coefficients.push_back(kAT[r][e / kAlpha] * kAT[c][e % kAlpha]);
              }
              columns.push_back(Combination(coefficients, points));
            }
            rows.push_back(SelectCase(FloorMod(i[2], k), columns));
          }
          Expr y = SelectCase(FloorMod(i[1], k), rows);
          if (bias) y = y + ops[1]({i[3]});
          return y;
        },
        (*namer)("winograd_output"));
  };
}

class Rewriter {
 public:
  Rewriter(const Graph& graph, int64_t fold_padding_bytes)
      : graph_(graph), fold_padding_bytes_(fold_padding_bytes) {
    graph_.nodes.clear();
  }

  Graph Run(const Graph& in) && {
    for (const GraphNode& node : in.nodes) {
      if (Eligible(node)) {
        Rewrite(node);
      } else {
        graph_.nodes.push_back(node);
      }
    }
    for (GraphValue& value : graph_.values) value.producer = -1;
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      graph_.values[graph_.nodes[n].output].producer = static_cast<int>(n);
    }
    return std::move(graph_);
  }

 private:
  bool Eligible(const GraphNode& node) const {
    if (!node.conv2d.has_value() || node.inputs.size() < 2) return false;
    const GraphValue& x = graph_.values[node.inputs[0]];
    const GraphValue& w = graph_.values[node.inputs[1]];
    return w.is_constant() && WantsWinograd(*node.conv2d, x.shape, w.shape, x.dtype) &&
           w.dtype == x.dtype;
  }

  int AddValue(std::string name, std::vector<int64_t> shape, NDArray constant = {}) {
    GraphValue value;
    value.name = std::move(name);
    value.dtype = DataType::Float32();
    value.shape = std::move(shape);
    value.constant = std::move(constant);
    graph_.values.push_back(std::move(value));
    return static_cast<int>(graph_.values.size()) - 1;
  }

  void AddNode(const GraphNode& conv, const std::string& op_type, OpPattern pattern,
               std::vector<int> inputs, int output, OpCompute compute) {
    GraphNode node;
    node.name = absl::StrCat(conv.name, "/", op_type);
    node.op_type = op_type;
    node.pattern = pattern;
    node.inputs = std::move(inputs);
    node.output = output;
    node.compute = std::move(compute);
    graph_.nodes.push_back(std::move(node));
  }

  void Rewrite(const GraphNode& conv) {
    const std::vector<int64_t> x = graph_.values[conv.inputs[0]].shape;
    const GraphValue& w = graph_.values[conv.inputs[1]];
    const std::vector<int64_t> out = graph_.values[conv.output].shape;
    const int64_t c_in = x[3], c_out = out[3];
    Tiles tiles{out[0], (out[1] + kTile - 1) / kTile, (out[2] + kTile - 1) / kTile};
    tiles.rows = PointRows(tiles.count(), c_in, c_out);
    const int u = AddValue(absl::StrCat(w.name, ":winograd"), {kPoints, c_in, c_out},
                           KernelTransform(w.constant));
    const int v = AddValue(absl::StrCat(conv.name, ":winograd_input"), {kPoints, tiles.rows, c_in});
    const int m = AddValue(absl::StrCat(conv.name, ":winograd_gemm"), {kPoints, tiles.rows, c_out});
    // Anchors, each a kernel of its own: the padding joined to the U-Net's Resize+Concat ran
    // 638-695 us against 174 + 238 apart, and the transform joined to the padding would inline
    // it again (conditional loads, which the compiler does not vectorize).
    if (x[0] * x[1] * x[2] * x[3] * 4 > fold_padding_bytes_) {  // read in place
      AddNode(conv, "WinogradInput", OpPattern::kAnchor, {conv.inputs[0]}, v,
              InputCompute(tiles, c_in, x[1], x[2]));
    } else {
      const int padded = AddValue(absl::StrCat(conv.name, ":winograd_pad"),
                                  {x[0], tiles.th * kTile + 2, tiles.tw * kTile + 2, c_in});
      AddNode(conv, "WinogradPad", OpPattern::kAnchor, {conv.inputs[0]}, padded,
              PadCompute(graph_.values[padded].shape, x[1], x[2]));
      AddNode(conv, "WinogradInput", OpPattern::kAnchor, {padded}, v,
              InputCompute(tiles, c_in, 0, 0));
    }
    AddNode(conv, "WinogradGemm", OpPattern::kAnchor, {v, u}, m,
            GemmCompute(tiles.rows, c_in, c_out));
    std::vector<int> inputs = {m};
    const bool bias = conv.inputs.size() > 2 && conv.inputs[2] >= 0;
    if (bias) inputs.push_back(conv.inputs[2]);
    AddNode(conv, "WinogradOutput", OpPattern::kAnchor, std::move(inputs), conv.output,
            OutputCompute(tiles, out, bias));
  }

  Graph graph_;
  int64_t fold_padding_bytes_;
};

}  // namespace

bool WantsWinograd(const Conv2dWindow& window, const std::vector<int64_t>& input_nhwc,
                   const std::vector<int64_t>& weights_hwio, DataType dtype) {
  const std::array<int64_t, 2> one = {1, 1}, three = {3, 3};
  if (dtype != DataType::Float32() || window.kernel != three || window.strides != one ||
      window.dilations != one || window.pads_begin != one || window.pads_end != one ||
      window.groups != 1 || input_nhwc.size() != 4 || weights_hwio.size() != 4) {
    return false;
  }
  const int64_t h = input_nhwc[1], w = input_nhwc[2];
  return input_nhwc[3] >= kMinWinogradInputChannels &&
         weights_hwio[3] >= kMinWinogradOutputChannels &&
         input_nhwc[0] * ((h + kTile - 1) / kTile) * ((w + kTile - 1) / kTile) >= kMinWinogradTiles;
}

absl::StatusOr<Graph> RewriteWinogradConvolutions(const Graph& graph, int64_t fold_padding_bytes) {
  return Rewriter(graph, fold_padding_bytes).Run(graph);
}

}  // namespace tessera
