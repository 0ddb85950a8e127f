// Each workload at a small shape, run by the interpreter, against an independent hand-written
// loop nest computing the operator's textbook definition.
#include <algorithm>
#include <cmath>
#include <functional>
#include <initializer_list>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/random.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace tessera {
namespace {

using Shape = std::map<std::string, int64_t>;

// Row-major element access by multi-index.
int64_t Flat(const NDArray& a, std::initializer_list<int64_t> index) {
  int64_t flat = 0, d = 0;
  for (int64_t i : index) flat = flat * a.shape()[d++] + i;
  return flat;
}
double At(const NDArray& a, std::initializer_list<int64_t> index) {
  return a.GetFlat(Flat(a, index));
}

// Builds the workload, fills every parameter with random values (outputs too: init must
// overwrite them), runs the interpreter and returns the arguments.
std::vector<NDArray> RunWorkload(const std::string& name, const Shape& shape,
                                 const std::string& dtype = "float32") {
  absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape, dtype);
  EXPECT_TRUE(f.ok()) << name << ": " << f.status();
  if (!f.ok()) return {};
  std::vector<NDArray> args;
  Random rng(17);
  for (const Buffer& p : f->params()) {
    std::vector<int64_t> dims;
    for (const Expr& e : p.shape()) dims.push_back(*AsConstInt(e));
    args.push_back(NDArray::Empty(p.dtype(), dims));
    args.back().FillRandom(&rng);
  }
  std::vector<NDArray*> ptrs;
  for (NDArray& a : args) ptrs.push_back(&a);
  absl::Status s = Interpret(*f, ptrs);
  EXPECT_TRUE(s.ok()) << name << ": " << s;
  return args;
}

// `expected` is filled element by element by `fn(flat index, multi-index)`.
NDArray Expected(const NDArray& like,
                 const std::function<double(const std::vector<int64_t>&)>& fn) {
  NDArray out = NDArray::Empty(like.dtype(), like.shape());
  const int n = static_cast<int>(like.shape().size());
  std::vector<int64_t> index(n, 0);
  for (int64_t flat = 0; flat < like.size(); ++flat) {
    out.SetFlat(flat, fn(index));
    for (int d = n - 1; d >= 0; --d) {
      if (++index[d] < like.shape()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

void ExpectClose(const NDArray& actual, const NDArray& expected, const std::string& what) {
  absl::StatusOr<Comparison> cmp = Compare(actual, expected);
  ASSERT_TRUE(cmp.ok()) << what << ": " << cmp.status();
  EXPECT_TRUE(cmp->ok()) << what << ": " << cmp->mismatches << " mismatches, first at "
                         << cmp->first_mismatch << ", max abs error " << cmp->max_abs_error;
}

TEST(WorkloadsReferenceTest, Gmm) {
  std::vector<NDArray> a = RunWorkload("GMM", {{"B", 2}, {"M", 5}, {"N", 6}, {"K", 7}});
  ASSERT_EQ(a.size(), 3u);
  ExpectClose(a[2],
              Expected(a[2],
                       [&](const std::vector<int64_t>& i) {
                         double s = 0;
                         for (int64_t k = 0; k < 7; ++k)
                           s += At(a[0], {i[0], i[1], k}) * At(a[1], {i[0], k, i[2]});
                         return s;
                       }),
              "GMM");
}

TEST(WorkloadsReferenceTest, GmmFloat16AccumulatesInFloat16) {
  std::vector<NDArray> a = RunWorkload("GMM", {{"M", 4}, {"N", 3}, {"K", 40}}, "float16");
  ASSERT_EQ(a.size(), 3u);
  NDArray expected = Expected(a[2], [&](const std::vector<int64_t>& i) {
    double acc = 0;
    for (int64_t k = 0; k < 40; ++k) {
      acc =
          RoundToDType(DataType::Float16(), acc + At(a[0], {0, i[1], k}) * At(a[1], {0, k, i[2]}));
    }
    return acc;
  });
  ExpectClose(a[2], expected, "GMM float16");
  absl::StatusOr<Comparison> cmp = Compare(a[2], expected, 0, 0);
  EXPECT_TRUE(cmp.ok() && cmp->ok()) << "float16 rounding differs from per-step rounding";
}

TEST(WorkloadsReferenceTest, Int8GmmAccumulatesExactlyInInt32) {
  std::vector<NDArray> a = RunWorkload("GMM", {{"M", 3}, {"N", 4}, {"K", 300}}, "int8");
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[2].dtype(), DataType::Int32());
  NDArray expected = Expected(a[2], [&](const std::vector<int64_t>& i) {
    int64_t s = 0;
    for (int64_t k = 0; k < 300; ++k)
      s += int64_t(At(a[0], {0, i[1], k})) * int64_t(At(a[1], {0, k, i[2]}));
    return double(s);
  });
  absl::StatusOr<Comparison> cmp = Compare(a[2], expected, 0, 0);
  ASSERT_TRUE(cmp.ok());
  EXPECT_TRUE(cmp->ok());
}

// Direct 2-D convolution, NHWC input, (K, K, CI/groups, CO) weight.
NDArray Conv2dReference(const NDArray& in, const NDArray& w, const NDArray& like, int64_t stride,
                        int64_t pad, int64_t dil, int64_t groups) {
  const int64_t H = in.shape()[1], W = in.shape()[2], K = w.shape()[0], cig = w.shape()[2];
  const int64_t cog = like.shape()[3] / groups;
  return Expected(like, [&](const std::vector<int64_t>& o) {
    double s = 0;
    const int64_t g = o[3] / cog;
    for (int64_t kh = 0; kh < K; ++kh) {
      for (int64_t kw = 0; kw < K; ++kw) {
        const int64_t y = o[1] * stride + kh * dil - pad, x = o[2] * stride + kw * dil - pad;
        if (y < 0 || y >= H || x < 0 || x >= W) continue;
        for (int64_t c = 0; c < cig; ++c) {
          s += At(in, {o[0], y, x, g * cig + c}) * At(w, {kh, kw, c, o[3]});
        }
      }
    }
    return s;
  });
}

TEST(WorkloadsReferenceTest, C2dWithStrideAndPadding) {
  Shape s = {{"N", 2},  {"H", 7}, {"W", 6},      {"CI", 3},
             {"CO", 4}, {"K", 3}, {"stride", 2}, {"padding", 1}};
  std::vector<NDArray> a = RunWorkload("C2D", s);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[2].shape(), (std::vector<int64_t>{2, 4, 3, 4}));
  ExpectClose(a[2], Conv2dReference(a[0], a[1], a[2], 2, 1, 1, 1), "C2D");
}

TEST(WorkloadsReferenceTest, DilAndGrp) {
  std::vector<NDArray> d = RunWorkload("DIL", {{"H", 9},
                                               {"W", 8},
                                               {"CI", 2},
                                               {"CO", 3},
                                               {"K", 3},
                                               {"stride", 1},
                                               {"padding", 2},
                                               {"dilation", 2}});
  ASSERT_EQ(d.size(), 3u);
  ExpectClose(d[2], Conv2dReference(d[0], d[1], d[2], 1, 2, 2, 1), "DIL");
  std::vector<NDArray> g = RunWorkload("GRP", {{"H", 6},
                                               {"W", 6},
                                               {"CI", 4},
                                               {"CO", 6},
                                               {"K", 3},
                                               {"stride", 2},
                                               {"padding", 1},
                                               {"groups", 2}});
  ASSERT_EQ(g.size(), 3u);
  ExpectClose(g[2], Conv2dReference(g[0], g[1], g[2], 2, 1, 1, 2), "GRP");
}

TEST(WorkloadsReferenceTest, C2dWithoutPaddingHasNoPadStage) {
  std::vector<NDArray> a = RunWorkload(
      "C2D", {{"H", 5}, {"W", 5}, {"CI", 2}, {"CO", 2}, {"K", 2}, {"stride", 1}, {"padding", 0}});
  ASSERT_EQ(a.size(), 3u);
  ExpectClose(a[2], Conv2dReference(a[0], a[1], a[2], 1, 0, 1, 1), "C2D no padding");
  absl::StatusOr<PrimFunc> f = MakeWorkload("C2D", {{"H", 5}, {"W", 5}, {"K", 2}, {"padding", 0}});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->root_block()->alloc_buffers.empty());
}

TEST(WorkloadsReferenceTest, C1d) {
  std::vector<NDArray> a = RunWorkload(
      "C1D", {{"N", 2}, {"L", 9}, {"CI", 3}, {"CO", 2}, {"K", 3}, {"stride", 2}, {"padding", 1}});
  ASSERT_EQ(a.size(), 3u);
  ExpectClose(a[2],
              Expected(a[2],
                       [&](const std::vector<int64_t>& o) {
                         double s = 0;
                         for (int64_t k = 0; k < 3; ++k) {
                           const int64_t x = o[1] * 2 + k - 1;
                           if (x < 0 || x >= 9) continue;
                           for (int64_t c = 0; c < 3; ++c)
                             s += At(a[0], {o[0], x, c}) * At(a[1], {k, c, o[2]});
                         }
                         return s;
                       }),
              "C1D");
}

TEST(WorkloadsReferenceTest, C3d) {
  std::vector<NDArray> a = RunWorkload("C3D", {{"D", 4},
                                               {"H", 5},
                                               {"W", 4},
                                               {"CI", 2},
                                               {"CO", 3},
                                               {"K", 3},
                                               {"stride", 2},
                                               {"padding", 1}});
  ASSERT_EQ(a.size(), 3u);
  ExpectClose(
      a[2],
      Expected(a[2],
               [&](const std::vector<int64_t>& o) {
                 double s = 0;
                 for (int64_t kd = 0; kd < 3; ++kd)
                   for (int64_t kh = 0; kh < 3; ++kh)
                     for (int64_t kw = 0; kw < 3; ++kw) {
                       const int64_t z = o[1] * 2 + kd - 1, y = o[2] * 2 + kh - 1,
                                     x = o[3] * 2 + kw - 1;
                       if (z < 0 || z >= 4 || y < 0 || y >= 5 || x < 0 || x >= 4) continue;
                       for (int64_t c = 0; c < 2; ++c)
                         s += At(a[0], {o[0], z, y, x, c}) * At(a[1], {kd, kh, kw, c, o[4]});
                     }
                 return s;
               }),
      "C3D");
}

TEST(WorkloadsReferenceTest, Dep) {
  for (int64_t stride : {1, 2}) {
    std::vector<NDArray> a = RunWorkload(
        "DEP", {{"H", 6}, {"W", 5}, {"C", 3}, {"K", 3}, {"stride", stride}, {"padding", 1}});
    ASSERT_EQ(a.size(), 3u);
    ExpectClose(a[2],
                Expected(a[2],
                         [&](const std::vector<int64_t>& o) {
                           double s = 0;
                           for (int64_t kh = 0; kh < 3; ++kh)
                             for (int64_t kw = 0; kw < 3; ++kw) {
                               const int64_t y = o[1] * stride + kh - 1, x = o[2] * stride + kw - 1;
                               if (y < 0 || y >= 6 || x < 0 || x >= 5) continue;
                               s += At(a[0], {o[0], y, x, o[3]}) * At(a[1], {kh, kw, o[3]});
                             }
                           return s;
                         }),
                "DEP stride " + std::to_string(stride));
  }
}

// Transposed convolution by its definition: every input pixel scatters the kernel into the
// output at (i * stride + k - padding).
TEST(WorkloadsReferenceTest, T2d) {
  for (auto [stride, pad, k] :
       {std::tuple<int64_t, int64_t, int64_t>{2, 1, 4}, {1, 0, 3}, {2, 0, 3}, {3, 2, 4}}) {
    const int64_t H = 3, W = 4, CI = 2, CO = 3;
    std::vector<NDArray> a = RunWorkload("T2D", {{"H", H},
                                                 {"W", W},
                                                 {"CI", CI},
                                                 {"CO", CO},
                                                 {"K", k},
                                                 {"stride", stride},
                                                 {"padding", pad}});
    ASSERT_EQ(a.size(), 3u);
    const int64_t OH = (H - 1) * stride - 2 * pad + k, OW = (W - 1) * stride - 2 * pad + k;
    ASSERT_EQ(a[2].shape(), (std::vector<int64_t>{1, OH, OW, CO}));
    NDArray expected = NDArray::Empty(DataType::Float32(), {1, OH, OW, CO});
    std::vector<double> acc(expected.size(), 0.0);
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x)
        for (int64_t kh = 0; kh < k; ++kh)
          for (int64_t kw = 0; kw < k; ++kw) {
            const int64_t oy = y * stride + kh - pad, ox = x * stride + kw - pad;
            if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
            for (int64_t ci = 0; ci < CI; ++ci)
              for (int64_t co = 0; co < CO; ++co)
                acc[Flat(expected, {0, oy, ox, co})] +=
                    At(a[0], {0, y, x, ci}) * At(a[1], {kh, kw, ci, co});
          }
    for (int64_t e = 0; e < expected.size(); ++e) expected.SetFlat(e, acc[e]);
    ExpectClose(a[2], expected,
                "T2D stride " + std::to_string(stride) + " padding " + std::to_string(pad));
  }
}

TEST(WorkloadsReferenceTest, Cap) {
  std::vector<NDArray> a = RunWorkload("CAP", {{"H", 5},
                                               {"W", 4},
                                               {"CI", 2},
                                               {"CO", 2},
                                               {"K", 3},
                                               {"stride", 2},
                                               {"padding", 1},
                                               {"capsule", 2}});
  ASSERT_EQ(a.size(), 3u);
  ExpectClose(a[2],
              Expected(a[2],
                       [&](const std::vector<int64_t>& o) {
                         double s = 0;
                         for (int64_t kh = 0; kh < 3; ++kh)
                           for (int64_t kw = 0; kw < 3; ++kw) {
                             const int64_t y = o[1] * 2 + kh - 1, x = o[2] * 2 + kw - 1;
                             if (y < 0 || y >= 5 || x < 0 || x >= 4) continue;
                             for (int64_t ck = 0; ck < 2; ++ck)
                               for (int64_t c = 0; c < 2; ++c)
                                 s += At(a[0], {o[0], y, x, o[3], ck, c}) *
                                      At(a[1], {kh, kw, ck, o[4], c, o[5]});
                           }
                         return s;
                       }),
              "CAP");
}

TEST(WorkloadsReferenceTest, Cbr) {
  std::vector<NDArray> a = RunWorkload(
      "CBR", {{"H", 6}, {"W", 6}, {"CI", 3}, {"CO", 4}, {"K", 3}, {"stride", 1}, {"padding", 1}});
  ASSERT_EQ(a.size(), 6u);  // data, kernel, bias, bn_scale, bn_offset, out
  NDArray conv = Conv2dReference(a[0], a[1], a[5], 1, 1, 1, 1);
  ExpectClose(a[5],
              Expected(a[5],
                       [&](const std::vector<int64_t>& o) {
                         const int64_t c = o[3];
                         double v =
                             (conv.GetFlat(Flat(conv, {o[0], o[1], o[2], c})) + At(a[2], {c})) *
                                 At(a[3], {c}) +
                             At(a[4], {c});
                         return std::max(v, 0.0);
                       }),
              "CBR");
}

TEST(WorkloadsReferenceTest, Tbg) {
  std::vector<NDArray> a =
      RunWorkload("TBG", {{"batch", 2}, {"seq_len", 5}, {"n_head", 3}, {"n_dim", 4}});
  ASSERT_EQ(a.size(), 3u);
  ExpectClose(a[2],
              Expected(a[2],
                       [&](const std::vector<int64_t>& o) {
                         double s = 0;
                         for (int64_t d = 0; d < 4; ++d)
                           s += At(a[0], {o[0], o[2], o[1], d}) * At(a[1], {o[0], o[3], o[1], d});
                         return s;
                       }),
              "TBG");
}

TEST(WorkloadsReferenceTest, GemvAndDenseBiasRelu) {
  std::vector<NDArray> g = RunWorkload("GEMV", {{"M", 5}, {"K", 9}});
  ASSERT_EQ(g.size(), 3u);
  ExpectClose(g[2],
              Expected(g[2],
                       [&](const std::vector<int64_t>& o) {
                         double s = 0;
                         for (int64_t k = 0; k < 9; ++k) s += At(g[0], {o[0], k}) * At(g[1], {k});
                         return s;
                       }),
              "GEMV");
  std::vector<NDArray> d = RunWorkload("DENSE_BIAS_RELU", {{"M", 3}, {"N", 5}, {"K", 6}});
  ASSERT_EQ(d.size(), 4u);
  ExpectClose(d[3],
              Expected(d[3],
                       [&](const std::vector<int64_t>& o) {
                         double s = At(d[2], {o[1]});
                         for (int64_t k = 0; k < 6; ++k)
                           s += At(d[0], {o[0], k}) * At(d[1], {o[1], k});
                         return std::max(s, 0.0);
                       }),
              "DENSE_BIAS_RELU");
}

TEST(WorkloadsReferenceTest, NrmAndReduceSum) {
  std::vector<NDArray> n = RunWorkload("NRM", {{"B", 2}, {"M", 3}, {"N", 4}});
  ASSERT_EQ(n.size(), 2u);
  ExpectClose(n[1],
              Expected(n[1],
                       [&](const std::vector<int64_t>& o) {
                         double s = 0;
                         for (int64_t i = 0; i < 3; ++i)
                           for (int64_t j = 0; j < 4; ++j) s += std::pow(At(n[0], {o[0], i, j}), 2);
                         return std::sqrt(s);
                       }),
              "NRM");
  std::vector<NDArray> r = RunWorkload("REDUCE_SUM", {{"M", 3}, {"N", 7}});
  ASSERT_EQ(r.size(), 2u);
  ExpectClose(r[1],
              Expected(r[1],
                       [&](const std::vector<int64_t>& o) {
                         double s = 0;
                         for (int64_t j = 0; j < 7; ++j) s += At(r[0], {o[0], j});
                         return s;
                       }),
              "REDUCE_SUM");
}

TEST(WorkloadsReferenceTest, Sfm) {
  std::vector<NDArray> a = RunWorkload("SFM", {{"M", 3}, {"N", 7}});
  ASSERT_EQ(a.size(), 2u);
  ExpectClose(a[1],
              Expected(a[1],
                       [&](const std::vector<int64_t>& o) {
                         double denom = 0;
                         for (int64_t j = 0; j < 7; ++j) denom += std::exp(At(a[0], {o[0], j}));
                         return std::exp(At(a[0], {o[0], o[1]})) / denom;
                       }),
              "SFM");
}

TEST(WorkloadsReferenceTest, LayerNormAndRmsNorm) {
  const int64_t m = 3, n = 8;
  std::vector<NDArray> a = RunWorkload("LAYER_NORM", {{"M", m}, {"N", n}});
  ASSERT_EQ(a.size(), 4u);  // A, gamma, beta, out
  ExpectClose(a[3],
              Expected(a[3],
                       [&](const std::vector<int64_t>& o) {
                         double mean = 0, var = 0;
                         for (int64_t j = 0; j < n; ++j) mean += At(a[0], {o[0], j}) / n;
                         for (int64_t j = 0; j < n; ++j)
                           var += std::pow(At(a[0], {o[0], j}) - mean, 2) / n;
                         return (At(a[0], {o[0], o[1]}) - mean) / std::sqrt(var + 1e-5) *
                                    At(a[1], {o[1]}) +
                                At(a[2], {o[1]});
                       }),
              "LAYER_NORM");
  std::vector<NDArray> r = RunWorkload("RMS_NORM", {{"M", m}, {"N", n}});
  ASSERT_EQ(r.size(), 3u);
  ExpectClose(r[2],
              Expected(r[2],
                       [&](const std::vector<int64_t>& o) {
                         double ms = 0;
                         for (int64_t j = 0; j < n; ++j) ms += std::pow(At(r[0], {o[0], j}), 2) / n;
                         return At(r[0], {o[0], o[1]}) / std::sqrt(ms + 1e-5) * At(r[1], {o[1]});
                       }),
              "RMS_NORM");
}

TEST(WorkloadsReferenceTest, TransposeAndElementwise) {
  std::vector<NDArray> t = RunWorkload("TRANSPOSE", {{"M", 3}, {"N", 5}});
  ASSERT_EQ(t.size(), 2u);
  ExpectClose(t[1],
              Expected(t[1],
                       [&](const std::vector<int64_t>& o) {
                         return At(t[0], {o[1], o[0]});
                       }),
              "TRANSPOSE");
  std::vector<NDArray> e = RunWorkload("ELEMENTWISE", {{"M", 3}, {"N", 5}});
  ASSERT_EQ(e.size(), 3u);
  ExpectClose(e[2],
              Expected(e[2],
                       [&](const std::vector<int64_t>& o) {
                         return std::max(At(e[0], {o[0], o[1]}) * 2 + At(e[1], {o[0], o[1]}), 0.0);
                       }),
              "ELEMENTWISE");
}

TEST(WorkloadsReferenceTest, Float16ConvolutionsRunAndStayClose) {
  // Small float16 runs of every convolution; compared against float32 with float16 tolerance.
  for (const char* name : {"C1D", "C2D", "DEP", "T2D", "CAP"}) {
    absl::StatusOr<WorkloadInfo> info = FindWorkload(name);
    ASSERT_TRUE(info.ok());
    Shape s;
    for (const WorkloadParam& p : info->params) s[p.name] = p.default_value;
    for (const char* big : {"L", "H", "W"})
      if (s.count(big)) s[big] = 5;
    for (const char* ch : {"CI", "CO", "C"})
      if (s.count(ch)) s[ch] = 2;
    s["K"] = 3;
    s["padding"] = 1;
    s["stride"] = 1;
    if (s.count("capsule")) s["capsule"] = 2;
    std::vector<NDArray> h = RunWorkload(name, s, "float16");
    std::vector<NDArray> f = RunWorkload(name, s, "float32");
    ASSERT_EQ(h.size(), f.size()) << name;
    NDArray widened = NDArray::Empty(DataType::Float32(), h.back().shape());
    for (int64_t e = 0; e < widened.size(); ++e) widened.SetFlat(e, h.back().GetFlat(e));
    // Inputs differ in rounding only (same seed), so results agree to float16 precision.
    absl::StatusOr<Comparison> cmp = Compare(widened, f.back(), 2e-2, 2e-2);
    ASSERT_TRUE(cmp.ok());
    EXPECT_TRUE(cmp->ok()) << name << " max abs error " << cmp->max_abs_error;
  }
}

}  // namespace
}  // namespace tessera
