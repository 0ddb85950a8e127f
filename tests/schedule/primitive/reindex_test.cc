// ReIndex: the copy stage follows the block's iteration order, outputs match the unscheduled
// program, and invalid uses fail with an error that leaves the schedule unchanged.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/printer.h"
#include "ir/verify.h"
#include "schedule/schedule.h"
#include "tests/schedule/primitive/cache_testing.h"

namespace tessera {
namespace {

using cache_testing::BlockNamed;
using cache_testing::ExpectCBackendMatches;
using cache_testing::ExpectCorrect;
using cache_testing::ExpectRejected;
using cache_testing::Gmm;
using cache_testing::ReadNames;
using cache_testing::RootAlloc;
using cache_testing::SmallC2d;

TEST(ReIndexTest, GmmReadABuildsAndRuns) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<BlockRV> r = sch.ReIndex(c, 1, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*sch.BlockName(*r), "A_reindex");
  EXPECT_EQ(AllBlockNames(sch.func()), (std::vector<std::string>{"root", "A_reindex", "C"}));
  std::string text = PrintFunc(sch.func());
  EXPECT_NE(text.find("A_reindex[v_b, v_i, v_k]"), std::string::npos) << text;
  ExpectCorrect(sch, func);
  ExpectCBackendMatches(func, sch.func());
}

TEST(ReIndexTest, GmmWriteC) {
  PrimFunc func = Gmm();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<BlockRV> r = sch.ReIndex(c, 0, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(AllBlockNames(sch.func()), (std::vector<std::string>{"root", "C", "C_reindex"}));
  Block cb = BlockNamed(sch, "C");
  EXPECT_EQ(cb->writes[0].buffer.name(), "C_reindex");
  EXPECT_EQ(ReadNames(cb)[0], "C_reindex");
  ExpectCorrect(sch, func);
}

TEST(ReIndexTest, PermutedWeightFollowsIterationOrder) {
  // weight[v_rh, v_rw, v_rc, v_co]: the reindexed buffer follows the block's iteration order
  // (co, rh, rw, rc).
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV conv = *sch.GetBlock("conv2d_nhwc");
  ASSERT_TRUE(sch.ReIndex(conv, 2, 0).ok());
  Buffer w = RootAlloc(sch.func(), "weight_reindex");
  ASSERT_TRUE(w.defined());
  std::vector<int64_t> shape;
  for (const Expr& e : w.shape()) shape.push_back(*AsConstInt(e));
  EXPECT_EQ(shape, (std::vector<int64_t>{4, 3, 3, 3}));
  ExpectCorrect(sch, func);
}

TEST(ReIndexTest, RejectsBadUses) {
  PrimFunc func = SmallC2d();
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad = *sch.GetBlock("PadInput");
  BlockRV conv = *sch.GetBlock("conv2d_nhwc");
  PrimFunc before = sch.func();
  size_t n = sch.trace().size();
  // The padding block reads its input under a guard, out of bounds elsewhere.
  ExpectRejected(sch.ReIndex(pad, 0, 0).status(), "may fall outside the buffer", sch, before, n);
  ExpectRejected(sch.ReIndex(conv, 0, 2).status(),
                 "reindex: buffer_index_type 2 is neither 0 (read) nor 1 (write)", sch, before, n);
  ExpectRejected(sch.ReIndex(conv, 3, 0).status(),
                 "reindex: buffer_index 3 is out of range for block conv2d_nhwc, which reads 3 "
                 "buffers",
                 sch, before, n);
  ExpectRejected(sch.ReIndex(conv, 0, 0).status(),
                 "reindex: block conv2d_nhwc also writes buffer conv2d_nhwc", sch, before, n);
}

TEST(ReIndexTest, RejectsDifferentIndices) {
  // C[i, j] = A[i, j] + A[j, i]: two accesses of A at different indices.
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(4), Expr(4)});
  Buffer c = Buffer::Make("C", DataType::Float32(), {Expr(4), Expr(4)});
  Var i("i"), j("j"), vi("v_i"), vj("v_j");
  BlockNode node;
  node.name = "C";
  node.iter_vars = {IterVar{vi, Range{Expr(0), Expr(4)}, IterKind::kSpatial},
                    IterVar{vj, Range{Expr(0), Expr(4)}, IterKind::kSpatial}};
  node.reads = {BufferRegion{a, {Range{Expr(0), Expr(4)}, Range{Expr(0), Expr(4)}}}};
  node.writes = {BufferRegion{c, {Range{vi, Expr(1)}, Range{vj, Expr(1)}}}};
  node.body = BufferStore(c, a.Load({vi, vj}) + a.Load({vj, vi}), {vi, vj});
  Stmt nest = For(i, Expr(4), ForKind::kSerial,
                  For(j, Expr(4), ForKind::kSerial, BlockRealize({i, j}, True(), MakeBlock(node))));
  BlockNode root;
  root.name = "root";
  root.body = nest;
  PrimFunc func = PrimFunc::Make("main", {a, c}, BlockRealize({}, True(), MakeBlock(root)));
  ASSERT_TRUE(VerifyWellFormed(func).ok());
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  ExpectRejected(
      sch.ReIndex(block, 0, 0).status(),
      "reindex: block C accesses buffer A at different indices [v_i, v_j] and [v_j, v_i]", sch,
      func, sch.trace().size());
}

}  // namespace
}  // namespace tessera
