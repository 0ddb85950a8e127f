// Tests of frontend/workloads_norm.cc: NRM, REDUCE_SUM, SFM, LAYER_NORM, RMS_NORM, TRANSPOSE
// and ELEMENTWISE against hand-written loop nests (tests/frontend/workloads_testing.h).
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

TEST(WorkloadsNormTest, NrmAndReduceSum) {
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

TEST(WorkloadsNormTest, Sfm) {
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

TEST(WorkloadsNormTest, LayerNormAndRmsNorm) {
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

TEST(WorkloadsNormTest, TransposeAndElementwise) {
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

}  // namespace
}  // namespace tessera
