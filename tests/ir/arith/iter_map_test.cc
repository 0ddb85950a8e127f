// Tests of ir/arith/iter_map.h: fused and split iterators, combinations, predicates,
// surjective maps, rejections with explanations, and IterMapSimplify.
#include "ir/arith/iter_map.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/arith/simplify.h"
#include "tests/ir/arith/arith_test_util.h"

namespace tessera {
namespace arith {
namespace {

using testing::Str;

VarRangeMap Domains(std::initializer_list<std::pair<Var, int64_t>> extents) {
  VarRangeMap dom;
  for (const auto& [var, extent] : extents) dom[var] = Range{Expr(0), Expr(extent)};
  return dom;
}

// Expects exactly one split in `sum` and returns it.
IterSplitExpr OnlySplit(const IterSumExpr& sum) {
  EXPECT_EQ(sum.args.size(), 1u);
  return sum.args.empty() ? IterSplitExpr{} : sum.args[0];
}

void ExpectSplit(const IterSplitExpr& s, int64_t lower_factor, int64_t extent, int64_t scale) {
  EXPECT_EQ(s.lower_factor, lower_factor);
  EXPECT_EQ(s.extent, extent);
  EXPECT_EQ(s.scale, scale);
}

void ExpectError(const absl::StatusOr<std::vector<IterSumExpr>>& result, const std::string& text) {
  ASSERT_FALSE(result.ok()) << "expected an error containing '" << text << "'";
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(result.status().message()).find(text), std::string::npos)
      << result.status().message();
}

TEST(IterMapTest, SingleVariablesAreIdentitySplits) {
  Var i("i"), j("j");
  auto result = DetectIterMap({i, j}, Domains({{i, 4}, {j, 8}}));
  ASSERT_TRUE(result.ok()) << result.status();
  IterSplitExpr s = OnlySplit((*result)[0]);
  ASSERT_TRUE(s.source->is_input());
  EXPECT_TRUE(s.source->var.same_as(i));
  ExpectSplit(s, 1, 4, 1);
}

TEST(IterMapTest, RecognizesFusedIterator) {
  Var i0("i0"), i1("i1");
  auto result = DetectIterMap({i0 * 8 + i1}, Domains({{i0, 4}, {i1, 8}}));
  ASSERT_TRUE(result.ok()) << result.status();
  IterSplitExpr s = OnlySplit((*result)[0]);
  ExpectSplit(s, 1, 32, 1);
  ASSERT_FALSE(s.source->is_input());
  EXPECT_EQ(s.source->extent, 32);
  const IterSumExpr& fused = s.source->sum;
  ASSERT_EQ(fused.args.size(), 2u);
  EXPECT_TRUE(fused.args[0].source->var.same_as(i0));  // outermost first
  ExpectSplit(fused.args[0], 1, 4, 8);
  EXPECT_TRUE(fused.args[1].source->var.same_as(i1));
  ExpectSplit(fused.args[1], 1, 8, 1);
  EXPECT_EQ(IterMarkName(s.source), "(i0*8 + i1)");
}

TEST(IterMapTest, RecognizesSplitOfIterator) {
  Var f("f");
  auto result = DetectIterMap({FloorDiv(f, 64), FloorMod(f, 64)}, Domains({{f, 4096}}));
  ASSERT_TRUE(result.ok()) << result.status();
  IterSplitExpr outer = OnlySplit((*result)[0]);
  IterSplitExpr inner = OnlySplit((*result)[1]);
  EXPECT_EQ(outer.source, inner.source);
  EXPECT_TRUE(outer.source->var.same_as(f));
  ExpectSplit(outer, 64, 64, 1);
  ExpectSplit(inner, 1, 64, 1);
}

TEST(IterMapTest, SplitOfFusedIteratorSharesTheMark) {
  Var i0("i0"), i1("i1");
  Expr fused = i0 * 16 + i1;
  auto result =
      DetectIterMap({FloorDiv(fused, 4), FloorMod(fused, 4)}, Domains({{i0, 4}, {i1, 16}}));
  ASSERT_TRUE(result.ok()) << result.status();
  IterSplitExpr outer = OnlySplit((*result)[0]);
  IterSplitExpr inner = OnlySplit((*result)[1]);
  EXPECT_EQ(outer.source, inner.source);
  EXPECT_EQ(outer.source->extent, 64);
  ExpectSplit(outer, 4, 16, 1);
  ExpectSplit(inner, 1, 4, 1);
}

TEST(IterMapTest, ThreeLevelSplit) {
  Var f("f");
  auto result = DetectIterMap({FloorDiv(f, 32), FloorMod(FloorDiv(f, 4), 8), FloorMod(f, 4)},
                              Domains({{f, 128}}));
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectSplit(OnlySplit((*result)[0]), 32, 4, 1);
  ExpectSplit(OnlySplit((*result)[1]), 4, 8, 1);
  ExpectSplit(OnlySplit((*result)[2]), 1, 4, 1);
}

TEST(IterMapTest, SplitThenFuseCollapsesToTheOriginal) {
  Var f("f");
  auto result = DetectIterMap({FloorDiv(f, 8) * 8 + FloorMod(f, 8)}, Domains({{f, 64}}));
  ASSERT_TRUE(result.ok()) << result.status();
  IterSplitExpr s = OnlySplit((*result)[0]);
  EXPECT_TRUE(s.source->var.same_as(f));
  ExpectSplit(s, 1, 64, 1);
}

TEST(IterMapTest, ScaledFusionAndConstantBase) {
  Var i("i"), j("j");
  // (i*4 + j)*2 + 3 with j < 4: a fused iterator of extent 32, scale 2, base 3.
  auto result = DetectIterMap({i * 8 + j * 2 + 3}, Domains({{i, 8}, {j, 4}}));
  ASSERT_TRUE(result.ok()) << result.status();
  IterSplitExpr s = OnlySplit((*result)[0]);
  ExpectSplit(s, 1, 32, 2);
  EXPECT_TRUE(IsConstInt((*result)[0].base, 3));
}

TEST(IterMapTest, ExtentOneIteratorsVanish) {
  Var i("i"), u("u");
  auto result = DetectIterMap({i + u * 5}, Domains({{i, 8}, {u, 1}}));
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectSplit(OnlySplit((*result)[0]), 1, 8, 1);
}

TEST(IterMapTest, ConstantIndexHasNoSplits) {
  Var i("i"), n("n");
  auto result = DetectIterMap({i, n + 2}, Domains({{i, 8}}));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_TRUE((*result)[1].args.empty());
  EXPECT_TRUE(ExprDeepEqual((*result)[1].base, n + 2));
}

TEST(IterMapTest, PredicateBoundsFusedIterator) {
  Var i0("i0"), i1("i1");
  Expr fused = i0 * 8 + i1;
  auto result = DetectIterMap({fused}, Domains({{i0, 4}, {i1, 8}}), LT(fused, 30));
  ASSERT_TRUE(result.ok()) << result.status();
  IterSplitExpr s = OnlySplit((*result)[0]);
  EXPECT_EQ(s.source->extent, 30);
  ExpectSplit(s, 1, 30, 1);
}

TEST(IterMapTest, SurjectiveAllowsUnusedIterators) {
  Var i("i"), k("k");
  VarRangeMap dom = Domains({{i, 8}, {k, 4}});
  ExpectError(DetectIterMap({i}, dom), "iterator k is not used");
  EXPECT_TRUE(DetectIterMap({i}, dom, Expr(), IterMapLevel::kSurjective).ok());
  // Only the outer part of a split.
  Var f("f");
  EXPECT_TRUE(
      DetectIterMap({FloorDiv(f, 8)}, Domains({{f, 64}}), Expr(), IterMapLevel::kSurjective).ok());
  ExpectError(DetectIterMap({FloorDiv(f, 8)}, Domains({{f, 64}})), "not fully used");
}

TEST(IterMapTest, RejectsOverlappingSum) {
  Var i0("i0"), i1("i1");
  ExpectError(DetectIterMap({i0 + i1}, Domains({{i0, 4}, {i1, 8}})), "same scale and overlap");
  ExpectError(DetectIterMap({i0 * 4 + i1}, Domains({{i0, 4}, {i1, 8}})), "do not fuse");
}

TEST(IterMapTest, RejectsIteratorUsedTwice) {
  Var i("i"), j("j");
  ExpectError(DetectIterMap({i, i, j}, Domains({{i, 4}, {j, 4}})), "used more than once");
  Var f("f");
  ExpectError(DetectIterMap({FloorDiv(f, 4), FloorMod(f, 8)}, Domains({{f, 32}})),
              "used more than once");
}

TEST(IterMapTest, RejectsNonAffineOperations) {
  Var i("i"), j("j");
  VarRangeMap dom = Domains({{i, 4}, {j, 4}});
  ExpectError(DetectIterMap({i * j}, dom), "product of two iterator");
  ExpectError(DetectIterMap({Min(i, j)}, dom), "not affine");
  ExpectError(DetectIterMap({FloorDiv(i, j)}, dom), "division by an iterator");
}

TEST(IterMapTest, RejectsNonDivisibleSplit) {
  Var f("f");
  ExpectError(DetectIterMap({FloorDiv(f, 8), FloorMod(f, 8)}, Domains({{f, 30}})), "not divisible");
}

TEST(IterMapTest, RejectsBadInputDomains) {
  Var i("i"), n("n");
  VarRangeMap dom;
  dom[i] = Range{Expr(0), n};
  ExpectError(DetectIterMap({i}, dom), "constant positive extent");
  dom[i] = Range{Expr(2), Expr(4)};
  ExpectError(DetectIterMap({i}, dom), "does not start at 0");
}

TEST(IterMapTest, ErrorNamesTheIndex) {
  Var i("i"), j("j");
  auto result = DetectIterMap({i, i * 2 + j}, Domains({{i, 4}, {j, 4}}));
  ExpectError(result, "(index 1)");
}

TEST(IterMapSimplifyTest, NormalizesSplitAndFuse) {
  Var i0("i0"), i1("i1"), f("f");
  std::vector<Expr> out = IterMapSimplify({FloorDiv(i0 * 8 + i1, 8), FloorMod(i0 * 8 + i1, 8)},
                                          Domains({{i0, 4}, {i1, 8}}));
  EXPECT_TRUE(out[0].same_as(i0)) << Str(out[0]);
  EXPECT_TRUE(out[1].same_as(i1)) << Str(out[1]);
  out = IterMapSimplify({FloorDiv(f, 8) * 8 + FloorMod(f, 8)}, Domains({{f, 64}}));
  EXPECT_TRUE(out[0].same_as(f)) << Str(out[0]);
}

TEST(IterMapSimplifyTest, FallsBackToSimplifyOnFailure) {
  Var i("i"), j("j");
  std::vector<Expr> out = IterMapSimplify({i * j + 0}, Domains({{i, 4}, {j, 4}}));
  EXPECT_TRUE(ExprDeepEqual(out[0], i * j)) << Str(out[0]);
}

TEST(IterMapSimplifyTest, ExpressionRoundTripPreservesValues) {
  Var i0("i0"), i1("i1");
  Expr fused = i0 * 16 + i1;
  std::vector<Expr> indices = {FloorDiv(fused, 4), FloorMod(fused, 4)};
  VarRangeMap dom = Domains({{i0, 4}, {i1, 16}});
  auto result = DetectIterMap(indices, dom);
  ASSERT_TRUE(result.ok()) << result.status();
  for (int64_t a = 0; a < 4; ++a) {
    for (int64_t b = 0; b < 16; ++b) {
      testing::Env env{{i0.get(), a}, {i1.get(), b}};
      for (size_t n = 0; n < indices.size(); ++n) {
        EXPECT_EQ(testing::Eval(IterSumToExpr((*result)[n]), env), testing::Eval(indices[n], env));
      }
    }
  }
}

}  // namespace
}  // namespace arith
}  // namespace tessera
