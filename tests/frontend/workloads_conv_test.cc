// Tests of frontend/workloads_conv.cc: every convolution (C1D, C2D, C3D, DEP, DIL, GRP, T2D,
// CAP, CBR; float16 too) against hand-written loop nests (tests/frontend/workloads_testing.h),
// the shapes they refuse, and TVM's block names.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"
#include "tests/frontend/workloads_testing.h"

namespace tessera {
namespace {

using workloads_testing::At;
using workloads_testing::ExpectClose;
using workloads_testing::Expected;
using workloads_testing::Flat;
using workloads_testing::RunWorkload;
using workloads_testing::Shape;

std::string MessageOf(const absl::Status& s) { return std::string(s.message()); }

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

TEST(WorkloadsConvTest, C2dWithStrideAndPadding) {
  Shape s = {{"N", 2},  {"H", 7}, {"W", 6},      {"CI", 3},
             {"CO", 4}, {"K", 3}, {"stride", 2}, {"padding", 1}};
  std::vector<NDArray> a = RunWorkload("C2D", s);
  ASSERT_EQ(a.size(), 3u);
  EXPECT_EQ(a[2].shape(), (std::vector<int64_t>{2, 4, 3, 4}));
  ExpectClose(a[2], Conv2dReference(a[0], a[1], a[2], 2, 1, 1, 1), "C2D");
}

TEST(WorkloadsConvTest, DilAndGrp) {
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

TEST(WorkloadsConvTest, C2dWithoutPaddingHasNoPadStage) {
  std::vector<NDArray> a = RunWorkload(
      "C2D", {{"H", 5}, {"W", 5}, {"CI", 2}, {"CO", 2}, {"K", 2}, {"stride", 1}, {"padding", 0}});
  ASSERT_EQ(a.size(), 3u);
  ExpectClose(a[2], Conv2dReference(a[0], a[1], a[2], 1, 0, 1, 1), "C2D no padding");
  absl::StatusOr<PrimFunc> f = MakeWorkload("C2D", {{"H", 5}, {"W", 5}, {"K", 2}, {"padding", 0}});
  ASSERT_TRUE(f.ok());
  EXPECT_TRUE(f->root_block()->alloc_buffers.empty());
}

TEST(WorkloadsConvTest, C1d) {
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

TEST(WorkloadsConvTest, C3d) {
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

TEST(WorkloadsConvTest, Dep) {
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
TEST(WorkloadsConvTest, T2d) {
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

TEST(WorkloadsConvTest, Cap) {
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

TEST(WorkloadsConvTest, Cbr) {
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

TEST(WorkloadsConvTest, Float16ConvolutionsRunAndStayClose) {
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

TEST(WorkloadsConvTest, RejectsKernelLargerThanPaddedInput) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("C2D", {{"H", 2}, {"K", 7}, {"padding", 1}});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MessageOf(f.status()), "C2D: kernel 7 larger than padded input 4 (H=2, padding=1)");
  f = MakeWorkload("DIL", {{"H", 8}, {"W", 8}, {"K", 3}, {"padding", 0}, {"dilation", 4}});
  EXPECT_EQ(MessageOf(f.status()),
            "DIL: dilated kernel 9 (kernel 3, dilation 4) larger than padded input 8 (H=8, "
            "padding=0)");
  f = MakeWorkload("C1D", {{"L", 2}, {"K", 5}, {"padding", 0}});
  EXPECT_EQ(MessageOf(f.status()), "C1D: kernel 5 larger than padded input 2 (L=2, padding=0)");
}

TEST(WorkloadsConvTest, RejectsGroupsThatDoNotDivideChannels) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GRP", {{"CI", 6}, {"groups", 4}});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MessageOf(f.status()), "GRP: groups 4 does not divide CI=6");
}

TEST(WorkloadsConvTest, RejectsTransposedConvPaddingAtLeastKernel) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("T2D", {{"K", 3}, {"padding", 3}});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MessageOf(f.status()), "T2D: padding 3 must be smaller than kernel 3");
}

TEST(WorkloadsConvTest, Conv2dBlocksFollowTvmNames) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("CBR", {{"H", 8}, {"W", 8}, {"K", 3}, {"padding", 1}});
  ASSERT_TRUE(f.ok()) << f.status();
  std::vector<std::string> blocks;
  for (const Stmt& s : f->root_block()->body.as<SeqStmtNode>()->seq) {
    const Stmt* cur = &s;
    while (const auto* loop = cur->as<ForNode>()) cur = &loop->body;
    blocks.push_back(cur->as<BlockRealizeNode>()->block->name);
  }
  EXPECT_EQ(blocks, (std::vector<std::string>{"PadInput", "conv2d_nhwc", "bias_add", "bn_mul",
                                              "bn_add", "T_relu"}));
  std::vector<std::string> params;
  for (const Buffer& b : f->params()) params.push_back(b.name());
  EXPECT_EQ(params, (std::vector<std::string>{"data", "kernel", "bias", "bn_scale", "bn_offset",
                                              "T_relu"}));
}

}  // namespace
}  // namespace tessera
