// The oneDNN anchor computes what Tessera's workloads compute: each supported workload at a
// small shape (odd sizes, padding, stride 2) through oneDNN, against Tessera's reference
// interpreter on the same inputs, in Tessera's layouts.
#include "bench/anchors/dnnl_anchor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "base/random.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/interpreter.h"

namespace tessera {
namespace anchors {
namespace {

// Max |oneDNN - interpreter| over the output of `workload` at `params` in `dtype` (summed in
// `acc`). The anchor takes float32 arguments: bfloat16 inputs are passed as the floats they hold.
double MaxErrorAgainstInterpreter(const std::string& workload, const ShapeParams& params,
                                  const std::string& dtype = "float32",
                                  const std::string& acc = "") {
  absl::StatusOr<PrimFunc> func = MakeWorkload(workload, params, dtype, acc);
  EXPECT_TRUE(func.ok()) << func.status();
  if (!func.ok()) return 1e30;
  std::vector<NDArray> args;
  Random rng(5);
  for (const Buffer& p : func->params()) {
    std::vector<int64_t> dims;
    for (const Expr& e : p.shape()) dims.push_back(*AsConstInt(e));
    args.push_back(NDArray::Empty(p.dtype(), dims));
    args.back().FillRandom(&rng);
  }
  std::vector<NDArray> expected;
  for (const NDArray& a : args) expected.push_back(a.Clone());
  std::vector<NDArray*> expected_ptrs;
  for (NDArray& a : expected) expected_ptrs.push_back(&a);
  absl::Status interpreted = Interpret(*func, expected_ptrs);
  EXPECT_TRUE(interpreted.ok()) << interpreted;
  std::vector<std::vector<float>> floats;
  std::vector<float*> ptrs;
  for (const NDArray& a : args) {
    floats.emplace_back(a.size());
    for (int64_t i = 0; i < a.size(); ++i) floats.back()[i] = static_cast<float>(a.GetFlat(i));
  }
  for (std::vector<float>& f : floats) ptrs.push_back(f.data());
  absl::Status ran = DnnlRun(workload, params, ptrs, dtype);
  EXPECT_TRUE(ran.ok()) << ran;
  const std::vector<float>& got = floats.back();
  const NDArray& want = expected.back();
  double worst = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    // An int8 product's int32 results are written into the output's storage as they are.
    int32_t as_int;
    std::memcpy(&as_int, &got[i], sizeof as_int);
    const double value = dtype == "int8" ? as_int : got[i];
    worst = std::max(worst, std::fabs(value - want.GetFlat(i)));
  }
  return worst;
}

TEST(DnnlAnchorTest, MatrixProductsMatchTheInterpreter) {
  EXPECT_LT(MaxErrorAgainstInterpreter("GMM", {{"B", 1}, {"M", 7}, {"N", 13}, {"K", 9}}), 1e-4);
  EXPECT_LT(MaxErrorAgainstInterpreter("DENSE_BIAS_RELU", {{"M", 5}, {"N", 11}, {"K", 6}}), 1e-4);
  EXPECT_LT(MaxErrorAgainstInterpreter("GEMV", {{"M", 17}, {"K", 10}}), 1e-4);
  // The inner product with its weight reordered into oneDNN's own layout first.
  EXPECT_LT(MaxErrorAgainstInterpreter("LINEAR", {{"M", 7}, {"N", 40}, {"K", 19}}), 1e-4);
}

// A 3 x 3 convolution with padding at odd sizes, in the narrower types below.
const ShapeParams kSmallPaddedConv = {{"N", 1},  {"H", 9}, {"W", 7},      {"CI", 6},
                                      {"CO", 5}, {"K", 3}, {"stride", 1}, {"padding", 1}};

// bfloat16 inputs summed in float32, as bench_shapes times them against Tessera's bfloat16
// products: the same products, sums in another order.
TEST(DnnlAnchorTest, Bfloat16LinearAndConvolutionMatchTheInterpreter) {
  EXPECT_LT(
      MaxErrorAgainstInterpreter("LINEAR", {{"M", 7}, {"N", 40}, {"K", 19}}, "bfloat16", "float32"),
      1e-4);
  EXPECT_LT(MaxErrorAgainstInterpreter("C2D", kSmallPaddedConv, "bfloat16", "float32"), 1e-4);
  EXPECT_FALSE(DnnlSupports("GMM", "bfloat16"));
}

// int8 inputs summed in int32: exact.
TEST(DnnlAnchorTest, Int8ProductsAndConvolutionMatchTheInterpreter) {
  EXPECT_EQ(MaxErrorAgainstInterpreter("GMM", {{"B", 1}, {"M", 7}, {"N", 13}, {"K", 9}}, "int8"),
            0);
  EXPECT_EQ(MaxErrorAgainstInterpreter("LINEAR", {{"M", 7}, {"N", 40}, {"K", 19}}, "int8"), 0);
  EXPECT_EQ(MaxErrorAgainstInterpreter("C2D", kSmallPaddedConv, "int8"), 0);
  EXPECT_FALSE(DnnlSupports("GEMV", "int8"));
}

TEST(DnnlAnchorTest, ConvolutionsMatchTheInterpreter) {
  EXPECT_LT(MaxErrorAgainstInterpreter("C2D", {{"N", 1},
                                               {"H", 9},
                                               {"W", 7},
                                               {"CI", 5},
                                               {"CO", 6},
                                               {"K", 3},
                                               {"stride", 1},
                                               {"padding", 1}}),
            1e-4);
  EXPECT_LT(MaxErrorAgainstInterpreter("C2D", {{"N", 2},
                                               {"H", 8},
                                               {"W", 8},
                                               {"CI", 4},
                                               {"CO", 3},
                                               {"K", 3},
                                               {"stride", 2},
                                               {"padding", 0}}),
            1e-4);
  EXPECT_LT(MaxErrorAgainstInterpreter("DEP", {{"N", 1},
                                               {"H", 6},
                                               {"W", 5},
                                               {"C", 8},
                                               {"K", 3},
                                               {"stride", 1},
                                               {"padding", 1},
                                               {"dilation", 1}}),
            1e-4);
}

TEST(DnnlAnchorTest, TimesASupportedWorkloadAndRefusesOthers) {
  absl::StatusOr<double> secs = DnnlSeconds("GMM", {{"M", 16}, {"N", 16}, {"K", 16}}, 1);
  ASSERT_TRUE(secs.ok()) << secs.status();
  EXPECT_GT(*secs, 0);
  EXPECT_FALSE(DnnlSupports("SFM"));
  absl::StatusOr<double> softmax = DnnlSeconds("SFM", {{"M", 4}, {"N", 4}}, 1);
  EXPECT_EQ(softmax.status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace anchors
}  // namespace tessera
