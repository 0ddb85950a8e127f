// VerifyGPUCode (rules/postproc/verify_gpu_code.cc): what it rejects, with the reason.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "tests/rules/postproc_testing.h"

namespace tessera {
namespace {

using postproc_testing::Contains;
using postproc_testing::Cuda;
using postproc_testing::CudaPostprocs;
using postproc_testing::Make;
using postproc_testing::RunPostprocs;
using postproc_testing::Workload;

TEST(VerifyGPUCodeTest, RejectsA2048ThreadBlockWithTheReason) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 64}, {"N", 64}});
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  LoopRV fused = *sch.Fuse(loops);
  std::vector<LoopRV> parts = *sch.Split(fused, {InstValue(), InstValue::Int(2048)});
  ASSERT_TRUE(sch.Bind(parts[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind(parts[1], "threadIdx.x").ok());
  absl::Status s = RunPostprocs(&sch, CudaPostprocs());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()),
                       "VerifyGPUCode: verify_gpu: 2048 threads per block exceed "
                       "max_threads_per_block=1024"))
      << s;
}

TEST(VerifyGPUCodeTest, RejectsThreadsOutsideTheAnnotatedBounds) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 64}, {"N", 64}});
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  ASSERT_TRUE(sch.Bind(loops[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind(loops[1], "threadIdx.x").ok());
  ASSERT_TRUE(sch.Annotate(c, attr::kThreadExtentLowInclusive, InstValue::Int(128)).ok());
  ASSERT_TRUE(sch.Annotate(c, attr::kThreadExtentHighInclusive, InstValue::Int(1024)).ok());
  absl::Status s = RunPostprocs(&sch, {Make(NewVerifyGPUCode, Cuda())});
  EXPECT_TRUE(Contains(std::string(s.message()),
                       "64 threads per block in block C are outside the annotated bounds "
                       "[128, 1024]"))
      << s;
}

TEST(VerifyGPUCodeTest, RejectsVectorAccessesOver16Bytes) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 64}, {"N", 64}});
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> j = *sch.Split(loops[1], {InstValue(), InstValue::Int(8)});
  ASSERT_TRUE(sch.Bind(loops[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind(j[0], "threadIdx.x").ok());
  ASSERT_TRUE(sch.Vectorize(j[1]).ok());
  absl::Status s = RunPostprocs(&sch, {Make(NewVerifyGPUCode, Cuda())});
  EXPECT_TRUE(Contains(std::string(s.message()), "8 x 4 bytes")) << s;
  EXPECT_TRUE(Contains(std::string(s.message()), "16-byte vector limit")) << s;
}

}  // namespace
}  // namespace tessera
