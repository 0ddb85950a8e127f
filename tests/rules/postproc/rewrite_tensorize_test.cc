// RewriteTensorize (rules/postproc/rewrite_tensorize.cc). On schedules built by hand with the
// annotations the schedule rules produce: what it rewrites or rejects (with the reason), and that
// the result computes what the unscheduled function computes and replays from its trace JSON.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "schedule/tensor_intrin.h"
#include "tests/codegen/test_funcs.h"
#include "tests/rules/postproc_testing.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

using postproc_testing::Contains;
using postproc_testing::Cpu;
using postproc_testing::Cuda;
using postproc_testing::Make;
using postproc_testing::RunPostprocs;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

// C[i] += int32(A[i, k]) * int32(B[i, k]): the k loop split by 4 and blockized matches dp4a.
TEST(RewriteTensorizeTest, AnnotatedBlockIsTensorizedAndUnannotated) {
  const DataType i8 = DataType::Int8(), i32 = DataType::Int32();
  Buffer a = Buffer::Make("A", i8, {Expr(8), Expr(16)});
  Buffer b = Buffer::Make("B", i8, {Expr(8), Expr(16)});
  Buffer c = Buffer::Make("C", i32, {Expr(8)});
  Var i("i"), k("k"), vi("vi"), vk("vk");
  BlockNode block;
  block.name = "C";
  block.iter_vars = {IterVar{vi, Range{Expr(0), Expr(8)}, IterKind::kSpatial},
                     IterVar{vk, Range{Expr(0), Expr(16)}, IterKind::kReduction}};
  block.reads = {BufferRegion{c, {Range{vi, Expr(1)}}},
                 BufferRegion{a, {Range{vi, Expr(1)}, Range{vk, Expr(1)}}},
                 BufferRegion{b, {Range{vi, Expr(1)}, Range{vk, Expr(1)}}}};
  block.writes = {BufferRegion{c, {Range{vi, Expr(1)}}}};
  block.init = BufferStore(c, IntImm(i32, 0), {vi});
  block.body = BufferStore(
      c, c.Load({vi}) + Cast(i32, a.Load({vi, vk})) * Cast(i32, b.Load({vi, vk})), {vi});
  Stmt nest =
      For(i, Expr(8), ForKind::kSerial,
          For(k, Expr(16), ForKind::kSerial, BlockRealize({i, k}, True(), MakeBlock(block))));
  PrimFunc func = testing_funcs::MakeFunc("main", {a, b, c}, nest);
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> ks = *sch.Split(loops[1], {InstValue(), InstValue::Int(4)});
  BlockRV outer = *sch.Blockize(ks[1]);
  ASSERT_TRUE(sch.Annotate(outer, attr::kAutoTensorize, InstValue::String(kDp4a)).ok());
  absl::Status s = RunPostprocs(
      &sch, {Make(NewRewriteReductionBlock, Cuda()), Make(NewRewriteTensorize, Cuda())});
  ASSERT_TRUE(s.ok()) << s;
  std::string text = PrintFunc(sch.func());
  EXPECT_TRUE(Contains(text, "\"__dp4a\"")) << text;
  EXPECT_FALSE(Contains(text, attr::kAutoTensorize)) << text;
  absl::Status replay = testing::CheckReplay(sch, func);
  EXPECT_TRUE(replay.ok()) << replay;
}

TEST(RewriteTensorizeTest, BlockThatDoesNotMatchStaysCorrect) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  ASSERT_TRUE(
      sch.Annotate(*sch.GetBlock("C"), attr::kAutoTensorize, InstValue::String(kDp4a)).ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(NewRewriteTensorize, Cpu())}).ok());
  EXPECT_EQ((*sch.Get(*sch.GetBlock("C")))->annotations.count(attr::kAutoTensorize), 0u);
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
}

}  // namespace
}  // namespace tessera
