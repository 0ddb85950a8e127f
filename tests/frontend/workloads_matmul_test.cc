// Tests of frontend/workloads_matmul.cc: GMM (float32, float16 accumulating in float16 or, asked,
// float16 and bfloat16 in float32, int8 accumulating exactly in int32), TBG, GEMV and
// DENSE_BIAS_RELU against hand-written loop nests
// (tests/frontend/workloads_testing.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
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

TEST(WorkloadsMatmulTest, Gmm) {
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

TEST(WorkloadsMatmulTest, GmmFloat16AccumulatesInFloat16) {
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

// With acc=float32 the 16-bit operands are widened, the sums run in float32 and C is float32:
// over K = 40 the result is the float32 sum of the exact products, where float16 sums round at
// every step.
TEST(WorkloadsMatmulTest, Float16AndBfloat16GmmAccumulateInFloat32WhenAsked) {
  for (const std::string dtype : {"float16", "bfloat16"}) {
    SCOPED_TRACE(dtype);
    std::vector<NDArray> a = RunWorkload("GMM", {{"M", 4}, {"N", 3}, {"K", 40}}, dtype, "float32");
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(a[2].dtype(), DataType::Float32());
    NDArray expected = Expected(a[2], [&](const std::vector<int64_t>& i) {
      float acc = 0;
      for (int64_t k = 0; k < 40; ++k) {
        acc +=
            static_cast<float>(At(a[0], {0, i[1], k})) * static_cast<float>(At(a[1], {0, k, i[2]}));
      }
      return acc;
    });
    absl::StatusOr<Comparison> cmp = Compare(a[2], expected, 1e-6, 1e-6);
    ASSERT_TRUE(cmp.ok());
    EXPECT_TRUE(cmp->ok()) << cmp->mismatches << " mismatches, max abs error "
                           << cmp->max_abs_error;
  }
}

// Every product and dense convolution that lists float32 as an accumulator builds in both
// 16-bit dtypes with it: the output in float32, each product's operands cast.
TEST(WorkloadsMatmulTest, WiderAccumulatorsGiveFloat32Outputs) {
  int widened = 0;
  for (const WorkloadInfo& w : ListWorkloads()) {
    for (const std::string& acc : w.accumulators) {
      if (acc == kTf32) continue;  // float32's (below)
      for (const std::string dtype : {"float16", "bfloat16"}) {
        if (std::find(w.dtypes.begin(), w.dtypes.end(), dtype) == w.dtypes.end()) continue;
        absl::StatusOr<PrimFunc> f = MakeWorkload(w.name, {}, dtype, acc);
        ASSERT_TRUE(f.ok()) << w.name << " " << dtype << ": " << f.status();
        EXPECT_EQ(f->params().back().dtype().ToString(), acc) << w.name << " " << dtype;
        EXPECT_EQ(f->params().front().dtype().ToString(), dtype) << w.name;
        ++widened;
      }
    }
  }
  // GMM, LINEAR, TBG, GEMV, DENSE_BIAS_RELU, C1D, C2D, C3D, DIL, GRP.
  EXPECT_EQ(widened, 20);
}

// Every product and dense convolution multiplies float32 at TF32 when asked: both operands of its
// product rounded (round_tf32), the output float32, labelled "tf32".
TEST(WorkloadsMatmulTest, Tf32RoundsBothOperandsOfEveryProduct) {
  int rounded = 0;
  for (const WorkloadInfo& w : ListWorkloads()) {
    if (std::find(w.accumulators.begin(), w.accumulators.end(), kTf32) == w.accumulators.end()) {
      continue;
    }
    absl::StatusOr<PrimFunc> f = MakeWorkload(w.name, {}, "float32", kTf32);
    ASSERT_TRUE(f.ok()) << w.name << ": " << f.status();
    EXPECT_EQ(f->params().back().dtype(), DataType::Float32()) << w.name;
    int calls = 0;
    PostOrderVisitExprs(f->body(), [&](const Expr& e) {
      const auto* call = e.as<CallNode>();
      calls += call != nullptr && call->op == CallOp::kRoundTf32;
    });
    EXPECT_EQ(calls, 2) << w.name;
    ++rounded;
  }
  EXPECT_EQ(rounded, 10);
  EXPECT_EQ(PrecisionName("float32", kTf32), "tf32");
}

// GMM at TF32 against the float32 sums of the rounded operands' products (the interpreter's
// round_tf32 is ir/expr.h's RoundToTf32).
TEST(WorkloadsMatmulTest, GmmTf32SumsProductsOfRoundedOperands) {
  std::vector<NDArray> a = RunWorkload("GMM", {{"M", 4}, {"N", 3}, {"K", 40}}, "float32", kTf32);
  ASSERT_EQ(a.size(), 3u);
  auto tf32 = [](double x) { return static_cast<double>(RoundToTf32(static_cast<float>(x))); };
  ExpectClose(
      a[2],
      Expected(
          a[2],
          [&](const std::vector<int64_t>& i) {
            float s = 0;
            for (int64_t k = 0; k < 40; ++k) {
              s += static_cast<float>(tf32(At(a[0], {0, i[1], k})) * tf32(At(a[1], {0, k, i[2]})));
            }
            return static_cast<double>(s);
          }),
      "GMM tf32");
}

TEST(WorkloadsMatmulTest, AccumulatorsOutsideTheListAreRefused) {
  absl::Status wider32 = MakeWorkload("GMM", {}, "float32", "float16").status();
  EXPECT_EQ(wider32.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(wider32.message(),
            "GMM: cannot accumulate float32 in 'float16' (float32 accumulates in its own dtype)");
  absl::Status int8 = MakeWorkload("GMM", {}, "int8", "float32").status();
  EXPECT_EQ(int8.code(), absl::StatusCode::kInvalidArgument);
  absl::Status depthwise = MakeWorkload("DEP", {}, "float16", "float32").status();
  EXPECT_EQ(depthwise.message(),
            "DEP: cannot accumulate float16 in 'float32' (float16 accumulates in its own dtype)");
  absl::Status unknown = MakeWorkload("GMM", {}, "float16", "float64").status();
  EXPECT_EQ(unknown.message(),
            "GMM: cannot accumulate float16 in 'float64' (float16 and bfloat16 may accumulate in "
            "float32)");
  EXPECT_EQ(MakeWorkload("GMM", {}, "float16", kTf32).status().message(),
            "GMM: cannot multiply float16 at tf32 (tf32 rounds float32 operands)");
  EXPECT_EQ(MakeWorkload("DEP", {}, "float32", kTf32).status().message(),
            "DEP: cannot multiply float32 at tf32 (only products and convolutions take tf32)");
  // The dtype itself is its own accumulator, named or not.
  EXPECT_TRUE(MakeWorkload("GMM", {}, "float16", "float16").ok());
  EXPECT_TRUE(MakeWorkload("SFM", {}, "float32", "float32").ok());
}

TEST(WorkloadsMatmulTest, Int8GmmAccumulatesExactlyInInt32) {
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

TEST(WorkloadsMatmulTest, Tbg) {
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

TEST(WorkloadsMatmulTest, GemvAndDenseBiasRelu) {
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

}  // namespace
}  // namespace tessera
