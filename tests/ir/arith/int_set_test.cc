// Tests of ir/arith/int_set.h (EvalSet, EvalRegion, UnionRegion, access region detection).
#include "ir/arith/int_set.h"

#include <vector>

#include "gtest/gtest.h"
#include "ir/arith/simplify.h"
#include "tests/ir/arith/arith_test_util.h"

namespace tessera {
namespace arith {
namespace {

using testing::Str;

#define EXPECT_EXPR_EQ(got, expected) \
  EXPECT_TRUE(ExprDeepEqual(got, expected)) << "got " << Str(got) << ", expected " << Str(expected)

void ExpectRange(const Range& r, const Expr& min, const Expr& extent) {
  EXPECT_EXPR_EQ(r.min, min);
  EXPECT_EXPR_EQ(r.extent, extent);
}

VarRangeMap Domains(std::initializer_list<std::pair<Var, int64_t>> extents) {
  VarRangeMap dom;
  for (const auto& [var, extent] : extents) dom[var] = Range{Expr(0), Expr(extent)};
  return dom;
}

TEST(EvalSetTest, ConstantRangesOfLinearIndex) {
  Var i("i"), j("j");
  IntSet s = EvalSet(i * 8 + j, Domains({{i, 4}, {j, 8}}));
  ASSERT_TRUE(s.IsBounded());
  EXPECT_EXPR_EQ(s.min(), Expr(0));
  EXPECT_EXPR_EQ(s.max(), Expr(31));
}

TEST(EvalSetTest, SymbolicMinWhenOuterVarIsFixed) {
  Var i0("i0"), j("j");
  IntSet s = EvalSet(i0 * 8 + j, Domains({{j, 8}}));
  EXPECT_EXPR_EQ(s.min(), i0 * 8);
  EXPECT_EXPR_EQ(s.max(), i0 * 8 + 7);
  EXPECT_EXPR_EQ(s.ToRange().extent, Expr(8));
}

TEST(EvalSetTest, NegativeScaleSwapsEnds) {
  Var i("i");
  IntSet s = EvalSet(Expr(10) - i * 2, Domains({{i, 4}}));
  EXPECT_EXPR_EQ(s.min(), Expr(4));
  EXPECT_EXPR_EQ(s.max(), Expr(10));
}

TEST(EvalSetTest, FloorDivAndFloorModOfFusedIndex) {
  Var f("f");
  VarRangeMap dom = Domains({{f, 4096}});
  IntSet div = EvalSet(FloorDiv(f, 64), dom);
  EXPECT_EXPR_EQ(div.min(), Expr(0));
  EXPECT_EXPR_EQ(div.max(), Expr(63));
  IntSet mod = EvalSet(FloorMod(f, 64), dom);
  EXPECT_EXPR_EQ(mod.min(), Expr(0));
  EXPECT_EXPR_EQ(mod.max(), Expr(63));
}

TEST(EvalSetTest, FloorModWithinOnePeriodIsExact) {
  Var i0("i0"), j("j");
  // i0*8 + j with j < 4 stays within one period of 8: floormod is [0, 3].
  IntSet s = EvalSet(FloorMod(i0 * 8 + j, 8), Domains({{j, 4}}));
  EXPECT_EXPR_EQ(s.min(), Expr(0));
  EXPECT_EXPR_EQ(s.max(), Expr(3));
}

TEST(EvalSetTest, SimplifiesBeforeRelaxing) {
  Var i("i"), j("j");
  // Without simplification this would relax to [-31, 31].
  IntSet s = EvalSet((i * 8 + j) - i * 8, Domains({{i, 4}, {j, 8}}));
  EXPECT_EXPR_EQ(s.min(), Expr(0));
  EXPECT_EXPR_EQ(s.max(), Expr(7));
}

TEST(EvalSetTest, MinMaxAndSelect) {
  Var i("i"), n("n");
  VarRangeMap dom = Domains({{i, 10}});
  IntSet m = EvalSet(Min(i, 5), dom);
  EXPECT_EXPR_EQ(m.min(), Expr(0));
  EXPECT_EXPR_EQ(m.max(), Expr(5));
  IntSet sel = EvalSet(Select(LT(i, n), i, i + 20), dom);
  EXPECT_EXPR_EQ(sel.min(), Expr(0));
  EXPECT_EXPR_EQ(sel.max(), Expr(29));
}

TEST(EvalSetTest, NonAffineIsUnbounded) {
  Var i("i"), j("j");
  IntSet s = EvalSet(i * j, Domains({{i, 4}, {j, 4}}));
  EXPECT_TRUE(s.IsEverything());
  Buffer a = Buffer::Make("A", DataType::Int64(), {Expr(16)});
  EXPECT_TRUE(EvalSet(a.Load({i}), Domains({{i, 4}})).IsEverything());
}

TEST(EvalSetTest, UnionIsTheHull) {
  Var x("x");
  IntSet u = Union(IntSet::Interval(x * 8, x * 8 + 3), IntSet::Interval(x * 8 + 2, x * 8 + 9));
  EXPECT_EXPR_EQ(u.min(), x * 8);
  EXPECT_EXPR_EQ(u.max(), x * 8 + 9);
  EXPECT_FALSE(Union(IntSet::Everything(), IntSet::SinglePoint(Expr(1))).HasLowerBound());
}

// Every value an expression takes over the domains lies in its EvalSet interval.
TEST(EvalSetRandomTest, IntervalsContainAllValues) {
  Random rng(5);
  Var x("x"), y("y"), z("z");
  VarRangeMap dom = Domains({{x, 8}, {y, 5}, {z, 3}});
  testing::ExprGenerator gen(&rng, {x, y, z});
  int bounded = 0;
  for (int n = 0; n < 300; ++n) {
    Expr e = gen.Gen(static_cast<int>(rng.UniformInt(1, 5)));
    IntSet set = EvalSet(e, dom);
    if (!set.IsBounded()) continue;
    const int64_t* lo = AsConstInt(set.min());
    const int64_t* hi = AsConstInt(set.max());
    ASSERT_TRUE(lo != nullptr && hi != nullptr) << Str(e) << ": " << Str(set.min());
    ++bounded;
    for (int64_t a = 0; a < 8; ++a) {
      for (int64_t b = 0; b < 5; ++b) {
        for (int64_t c = 0; c < 3; ++c) {
          int64_t v = testing::Eval(e, {{x.get(), a}, {y.get(), b}, {z.get(), c}});
          ASSERT_TRUE(*lo <= v && v <= *hi)
              << Str(e) << " = " << v << " outside [" << *lo << ", " << *hi << "]";
        }
      }
    }
  }
  EXPECT_GT(bounded, 150);
}

TEST(EvalRegionTest, TiledLoopNest) {
  // for i0, j0 (outer tiles fixed), for i1 in [0, 8), j1 in [0, 4): A[i0*8 + i1, j0*4 + j1]
  Var i0("i0"), i1("i1"), j0("j0"), j1("j1");
  absl::StatusOr<std::vector<Range>> region =
      EvalRegion({i0 * 8 + i1, j0 * 4 + j1}, Domains({{i1, 8}, {j1, 4}}));
  ASSERT_TRUE(region.ok()) << region.status();
  ASSERT_EQ(region->size(), 2u);
  ExpectRange((*region)[0], i0 * 8, Expr(8));
  ExpectRange((*region)[1], j0 * 4, Expr(4));
}

TEST(EvalRegionTest, ConvolutionWindow) {
  // Input rows read by output rows h in [h0*4, h0*4 + 4) with kernel r in [0, 3).
  Var h0("h0"), h1("h1"), r("r");
  absl::StatusOr<std::vector<Range>> region =
      EvalRegion({h0 * 4 + h1 + r}, Domains({{h1, 4}, {r, 3}}));
  ASSERT_TRUE(region.ok());
  ExpectRange((*region)[0], h0 * 4, Expr(6));
}

TEST(EvalRegionTest, UnboundedIndexIsAnError) {
  Var i("i"), j("j");
  absl::StatusOr<std::vector<Range>> region = EvalRegion({i, i * j}, Domains({{i, 4}, {j, 4}}));
  ASSERT_FALSE(region.ok());
  EXPECT_EQ(region.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(region.status().message()).find("index 1"), std::string::npos);
}

TEST(UnionRegionTest, HullPerDimension) {
  Var x("x");
  std::vector<Range> a = {Range{x * 8, Expr(4)}, Range{Expr(0), Expr(2)}};
  std::vector<Range> b = {Range{x * 8 + 4, Expr(4)}, Range{Expr(1), Expr(4)}};
  std::vector<Range> u = UnionRegion(a, b);
  ExpectRange(u[0], x * 8, Expr(8));
  ExpectRange(u[1], Expr(0), Expr(5));
}

class AccessRegionTest : public ::testing::Test {
 protected:
  Buffer a = Buffer::Make("A", DataType::Float32(), {Expr(64), Expr(64)});
  Buffer b = Buffer::Make("B", DataType::Float32(), {Expr(64), Expr(64)});
  Buffer c = Buffer::Make("C", DataType::Float32(), {Expr(64), Expr(64)});
};

TEST_F(AccessRegionTest, LoopsInsideAreRelaxed) {
  // for i1 in 8: for j1 in 8: C[i0*8 + i1, j1] = A[i0*8 + i1, j1] + B[j1, i0*8 + i1]
  Var i0("i0"), i1("i1"), j1("j1");
  Expr row = i0 * 8 + i1;
  Stmt body = For(i1, Expr(8), ForKind::kSerial,
                  For(j1, Expr(8), ForKind::kSerial,
                      BufferStore(c, a.Load({row, j1}) + b.Load({j1, row}), {row, j1})));
  BufferAccessRegions regions = DetectBufferAccessRegions(body, {});
  ASSERT_EQ(regions.reads.size(), 2u);
  ASSERT_EQ(regions.writes.size(), 1u);
  EXPECT_TRUE(regions.reads[0].buffer.same_as(a));
  ExpectRange(regions.reads[0].region[0], i0 * 8, Expr(8));
  ExpectRange(regions.reads[0].region[1], Expr(0), Expr(8));
  EXPECT_TRUE(regions.reads[1].buffer.same_as(b));
  ExpectRange(regions.reads[1].region[1], i0 * 8, Expr(8));
  EXPECT_TRUE(regions.writes[0].buffer.same_as(c));
  ExpectRange(regions.writes[0].region[0], i0 * 8, Expr(8));
}

TEST_F(AccessRegionTest, OnlyListedBuffersAreCollected) {
  Var i1("i1");
  Stmt body = For(i1, Expr(8), ForKind::kSerial,
                  BufferStore(c, a.Load({i1, Expr(0)}) + b.Load({Expr(0), i1}), {i1, Expr(1)}));
  BufferAccessRegions regions = DetectBufferAccessRegions(body, {}, nullptr, {}, {b});
  ASSERT_EQ(regions.reads.size(), 1u);
  EXPECT_TRUE(regions.reads[0].buffer.same_as(b));
  ExpectRange(regions.reads[0].region[1], Expr(0), Expr(8));
  EXPECT_TRUE(regions.writes.empty());
}

TEST_F(AccessRegionTest, RelaxMapAndUnionOfAccesses) {
  Var i("i");
  Stmt body = BufferStore(c, a.Load({i, Expr(0)}) + a.Load({i + 2, Expr(5)}), {i, Expr(0)});
  BufferAccessRegions regions = DetectBufferAccessRegions(body, Domains({{i, 4}}));
  ASSERT_EQ(regions.reads.size(), 1u);
  ExpectRange(regions.reads[0].region[0], Expr(0), Expr(6));
  ExpectRange(regions.reads[0].region[1], Expr(0), Expr(6));
  ExpectRange(regions.writes[0].region[0], Expr(0), Expr(4));
}

TEST_F(AccessRegionTest, UnboundedDimensionCoversTheBuffer) {
  Var i("i"), j("j");
  Stmt body = BufferStore(c, a.Load({i * j, j}), {i, j});
  BufferAccessRegions regions = DetectBufferAccessRegions(body, Domains({{i, 4}, {j, 4}}));
  ExpectRange(regions.reads[0].region[0], Expr(0), Expr(64));
  ExpectRange(regions.reads[0].region[1], Expr(0), Expr(4));
}

TEST_F(AccessRegionTest, BlockRegionsStayInIterVarsAndSkipAllocs) {
  // block: vi, vk; local scratch T; for k1 in 4: T[0] = A[vi, vk*4 + k1]; C[vi, 0] = T[0]
  Var vi("vi"), vk("vk"), k1("k1");
  Buffer t = Buffer::Make("T", DataType::Float32(), {Expr(1)}, "local");
  BlockNode node;
  node.name = "blk";
  node.iter_vars = {IterVar{vi, Range{Expr(0), Expr(64)}, IterKind::kSpatial},
                    IterVar{vk, Range{Expr(0), Expr(16)}, IterKind::kReduction}};
  node.alloc_buffers = {t};
  node.init = BufferStore(c, FloatImm(DataType::Float32(), 0.0), {vi, Expr(0)});
  node.body = SeqStmt(
      {For(k1, Expr(4), ForKind::kSerial, BufferStore(t, a.Load({vi, vk * 4 + k1}), {Expr(0)})),
       BufferStore(c, c.Load({vi, Expr(0)}) + t.Load({Expr(0)}), {vi, Expr(0)})});
  BufferAccessRegions regions = DetectBlockAccessRegions(MakeBlock(node));
  ASSERT_EQ(regions.reads.size(), 2u);
  EXPECT_TRUE(regions.reads[0].buffer.same_as(a));
  ExpectRange(regions.reads[0].region[0], vi, Expr(1));
  ExpectRange(regions.reads[0].region[1], vk * 4, Expr(4));
  EXPECT_TRUE(regions.reads[1].buffer.same_as(c));
  ASSERT_EQ(regions.writes.size(), 1u);
  EXPECT_TRUE(regions.writes[0].buffer.same_as(c));
  ExpectRange(regions.writes[0].region[0], vi, Expr(1));
}

TEST_F(AccessRegionTest, NestedBlockUsesItsDeclaredRegions) {
  // for i1 in 8: block(vi = i0*8 + i1) reads A[vi, 0:64], writes C[vi, 0:64]
  Var i0("i0"), i1("i1"), vi("vi");
  BlockNode node;
  node.name = "inner";
  node.iter_vars = {IterVar{vi, Range{Expr(0), Expr(64)}, IterKind::kSpatial}};
  node.reads = {BufferRegion{a, {Range{vi, Expr(1)}, Range{Expr(0), Expr(64)}}}};
  node.writes = {BufferRegion{c, {Range{vi, Expr(1)}, Range{Expr(0), Expr(64)}}}};
  node.body = Evaluate(Expr(0));
  Stmt body =
      For(i1, Expr(8), ForKind::kSerial, BlockRealize({i0 * 8 + i1}, True(), MakeBlock(node)));
  BufferAccessRegions regions = DetectBufferAccessRegions(body, {});
  ASSERT_EQ(regions.reads.size(), 1u);
  ExpectRange(regions.reads[0].region[0], i0 * 8, Expr(8));
  ExpectRange(regions.reads[0].region[1], Expr(0), Expr(64));
  ExpectRange(regions.writes[0].region[0], i0 * 8, Expr(8));
}

}  // namespace
}  // namespace arith
}  // namespace tessera
