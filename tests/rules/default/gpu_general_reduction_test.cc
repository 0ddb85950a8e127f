// Tests of rules/default/gpu_general_reduction.cc (the "GeneralReduction" default rule):
// softmax, layer norm and RMS norm get one thread block per row whose threads share every
// stage; the schedules pass the GPU checks and compute what the workloads compute; transposes
// and element-wise functions are left to the next rule.
#include "frontend/workload_spec.h"
#include "gtest/gtest.h"
#include "rules/default/rule_factories.h"
#include "tests/rules/default/gpu_rule_testing.h"

namespace tessera {
namespace {

using dlight::NewGpuGeneralReductionRule;
using gpu_rule_testing::ExpectDeclines;
using gpu_rule_testing::ExpectSchedulesCorrectly;

TEST(GpuGeneralReductionRuleTest, RowWiseChainsAreScheduledAndCorrect) {
  DefaultRulePtr rule = NewGpuGeneralReductionRule();
  EXPECT_EQ(rule->name(), "GeneralReduction");
  for (const char* workload : {"SFM", "LAYER_NORM", "RMS_NORM"}) {
    SCOPED_TRACE(workload);
    ExpectSchedulesCorrectly(*rule, workload);
  }
}

// An exporter's RMS norm: ReduceMean with keepdims leaves a unit dimension between the row and
// the reduction ([1, 16, 1] over 32), which the last block iterates as the row's 32 elements.
// The rows are the 16, not 16 x 1.
TEST(GpuGeneralReductionRuleTest, AReductionThatKeepsItsDimensionsIsOneRowPerBlock) {
  absl::StatusOr<SpecFunction> rms = ParseWorkloadText(R"(@prim_func
def rms_norm_keepdims(
    x: Buffer((1, 16, 32), "float32"),
    gamma: Buffer((32,), "float32"),
    y: Buffer((1, 16, 32), "float32"),
):
    with block("root"):
        T_sum = alloc_buffer((1, 16, 1), "float32")
        for i0 in range(1):
            for i1 in range(16):
                for i2 in range(1):
                    for k in range(32):
                        with block("T_sum"):
                            v0 = axis.spatial(1, i0)
                            v1 = axis.spatial(16, i1)
                            v2 = axis.spatial(1, i2)
                            vk = axis.reduce(32, k)
                            reads(T_sum[v0, v1, v2], x[v0, v1, vk])
                            writes(T_sum[v0, v1, v2])
                            with init():
                                T_sum[v0, v1, v2] = float32(0.0)
                            T_sum[v0, v1, v2] = T_sum[v0, v1, v2] + x[v0, v1, vk] * x[v0, v1, vk]
        for j0 in range(1):
            for j1 in range(16):
                for j2 in range(32):
                    with block("y"):
                        w0 = axis.spatial(1, j0)
                        w1 = axis.spatial(16, j1)
                        w2 = axis.spatial(32, j2)
                        reads(x[w0, w1, w2], T_sum[w0, w1, 0], gamma[w2])
                        writes(y[w0, w1, w2])
                        y[w0, w1, w2] = x[w0, w1, w2] / sqrt(T_sum[w0, w1, 0] * float32(0.03125) + float32(1e-06)) * gamma[w2]
)");
  ASSERT_TRUE(rms.ok()) << rms.status();
  std::optional<Schedule> sch =
      ExpectSchedulesCorrectly(*NewGpuGeneralReductionRule(), rms->func, "rms_norm_keepdims");
  ASSERT_TRUE(sch.has_value());
  EXPECT_EQ(gpu_rule_testing::BoundThreads(sch->func())["blockIdx.x"], 16);
}

TEST(GpuGeneralReductionRuleTest, LeavesTransposesAndElementwiseToTheNextRule) {
  DefaultRulePtr rule = NewGpuGeneralReductionRule();
  for (const char* workload : {"TRANSPOSE", "ELEMENTWISE"}) ExpectDeclines(*rule, workload);
}

}  // namespace
}  // namespace tessera
