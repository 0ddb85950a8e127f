// VerifyGpuCode: scheduled functions within the target's limits pass; too many threads, too
// much shared memory (measured after compaction), too many virtual threads, unbound
// computation, inconsistent thread extents and misplaced blockIdx loops fail with messages that
// name the limit, the value and the kernel.
#include "codegen/verify_gpu.h"

#include <string>
#include <vector>

#include "codegen/lower_gpu.h"
#include "gtest/gtest.h"
#include "tests/codegen/gpu_schedules.h"

namespace tessera {
namespace {

using gpu_testing::GmmTiling;
using gpu_testing::Loops;
using gpu_testing::Ok;

Target Cuda(const std::string& extra = "") {
  absl::StatusOr<Target> t = Target::Parse("cuda -arch=sm_90 " + extra);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

void ExpectRejected(const absl::Status& s, const std::string& message) {
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(std::string(s.message()).find(message), std::string::npos)
      << "expected '" << message << "' in: " << s;
}

TEST(VerifyGpuTest, AcceptsTiledGmm) {
  Schedule sch = gpu_testing::ScheduleGmm(GmmTiling{});
  absl::Status s = VerifyGpuCode(sch.func(), Cuda());
  EXPECT_TRUE(s.ok()) << s;
}

TEST(VerifyGpuTest, AcceptsLoweredFunction) {
  Schedule sch = gpu_testing::ScheduleGmm(GmmTiling{});
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(sch.func(), Cuda());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  EXPECT_FALSE(HasBlocks(*lowered));
  absl::Status s = VerifyGpuCode(*lowered, Cuda());
  EXPECT_TRUE(s.ok()) << s;
}

TEST(VerifyGpuTest, RejectsTooManyThreadsPerBlock) {
  Schedule sch = gpu_testing::ScheduleElementwise(64, 64, 2048, 1);
  ExpectRejected(VerifyGpuCode(sch.func(), Cuda()),
                 "verify_gpu: 2048 threads per block exceed max_threads_per_block=1024 in "
                 "kernel main_kernel0");
}

TEST(VerifyGpuTest, UsesTheTargetsThreadLimit) {
  Schedule sch = gpu_testing::ScheduleElementwise(64, 64, 512, 1);
  EXPECT_TRUE(VerifyGpuCode(sch.func(), Cuda()).ok());
  ExpectRejected(VerifyGpuCode(sch.func(), Cuda("-max_threads_per_block=256")),
                 "512 threads per block exceed max_threads_per_block=256");
}

TEST(VerifyGpuTest, RejectsTooMuchSharedMemory) {
  GmmTiling t;
  t.k_tile = 128;  // two 64 x 128 float tiles: 64 KiB
  t.copy_lanes = 32;
  Schedule sch = gpu_testing::ScheduleGmm(t);
  ExpectRejected(VerifyGpuCode(sch.func(), Cuda("-max_shared_memory_per_block=49152")),
                 "verify_gpu: 65536 bytes of shared memory exceed "
                 "max_shared_memory_per_block=49152 in kernel main_kernel0");
}

TEST(VerifyGpuTest, CountsCompactedSharedMemory) {
  Schedule sch = gpu_testing::ScheduleGmm(GmmTiling{});
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(sch.func(), Cuda());
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<std::vector<GpuKernelInfo>> kernels = SplitKernels(*lowered);
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  ASSERT_EQ(kernels->size(), 1u);
  EXPECT_EQ((*kernels)[0].shared_bytes, 2 * 64 * 16 * 4);
  ExpectRejected(VerifyGpuCode(sch.func(), Cuda("-max_shared_memory_per_block=4000")),
                 "8192 bytes of shared memory exceed max_shared_memory_per_block=4000");
}

TEST(VerifyGpuTest, RejectsUnboundBlock) {
  PrimFunc func = *MakeWorkload("ELEMENTWISE", {{"M", 8}, {"N", 8}});
  ExpectRejected(VerifyGpuCode(func, Cuda()), "verify_gpu: block C is not bound to threads");
}

TEST(VerifyGpuTest, RejectsTooManyVirtualThreads) {
  Schedule sch = gpu_testing::ScheduleVthread(256, 16);
  ExpectRejected(VerifyGpuCode(sch.func(), Cuda()),
                 "verify_gpu: 16 virtual threads exceed the limit 8 in kernel main_kernel0");
}

TEST(VerifyGpuTest, RejectsInconsistentThreadExtents) {
  // Lowered form: one kernel with two threadIdx.x loops of different extents.
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(4 * 64)});
  Var bx("bx"), t1("t1"), t2("t2");
  Stmt first = For(t1, Expr(32), ForKind::kThreadBinding,
                   BufferStore(a, FloatImm(DataType::Float32(), 1.0), {bx * Expr(64) + t1}),
                   "threadIdx.x");
  Stmt second = For(t2, Expr(64), ForKind::kThreadBinding,
                    BufferStore(a, FloatImm(DataType::Float32(), 2.0), {bx * Expr(64) + t2}),
                    "threadIdx.x");
  Stmt kernel = For(bx, Expr(4), ForKind::kThreadBinding, SeqStmt({first, second}), "blockIdx.x");
  PrimFunc func = PrimFunc::Make("f", {a}, kernel);
  ExpectRejected(VerifyGpuCode(func, Cuda()),
                 "verify_gpu: threadIdx.x has extents 32 and 64 in kernel f_kernel0");
}

TEST(VerifyGpuTest, RejectsBlockIdxUnderSerialLoop) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(64)});
  Var tx("tx"), i("i"), bx("bx");
  Stmt store = BufferStore(a, FloatImm(DataType::Float32(), 1.0), {i * Expr(16) + bx * Expr(4) + tx});
  Stmt kernel =
      For(tx, Expr(4), ForKind::kThreadBinding,
          For(i, Expr(4), ForKind::kSerial,
              For(bx, Expr(4), ForKind::kThreadBinding, store, "blockIdx.x")),
          "threadIdx.x");
  PrimFunc func = PrimFunc::Make("f", {a}, kernel);
  ExpectRejected(VerifyGpuCode(func, Cuda()),
                 "verify_gpu: loop bx bound to blockIdx.x is nested in a loop that is not bound "
                 "to threads in kernel f_kernel0");
}

TEST(VerifyGpuTest, RejectsCpuTarget) {
  Schedule sch = gpu_testing::ScheduleElementwise(64, 64, 32, 1);
  ExpectRejected(VerifyGpuCode(sch.func(), *Target::Parse("cpu")), "is not a cuda target");
}

}  // namespace
}  // namespace tessera
