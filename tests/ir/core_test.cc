// Tests of the IR core: dtypes, expression construction, statements, functors, targets and
// host arrays.
#include <cmath>

#include "gtest/gtest.h"
#include "ir/dtype.h"
#include "ir/expr.h"
#include "ir/function.h"
#include "ir/functor.h"
#include "ir/ndarray.h"
#include "ir/stmt.h"
#include "ir/target.h"

namespace tessera {
namespace {

TEST(DataTypeTest, ParsesAndPrintsEveryType) {
  for (const char* name :
       {"float32", "float16", "bfloat16", "float64", "int8", "int32", "int64", "uint8", "bool"}) {
    absl::StatusOr<DataType> t = DataType::Parse(name);
    ASSERT_TRUE(t.ok()) << name;
    EXPECT_EQ(t->ToString(), name);
  }
  EXPECT_FALSE(DataType::Parse("float8").ok());
  EXPECT_EQ(DataType::BFloat16().bytes(), 2);
  EXPECT_TRUE(DataType::BFloat16().is_float());
}

TEST(ExprTest, ImmediatesAdaptToTheOtherOperand) {
  Var x("x", DataType::Float32());
  Expr e = x * 2;
  EXPECT_EQ(e.dtype(), DataType::Float32());
  const auto* mul = e.as<BinaryNode>();
  ASSERT_NE(mul, nullptr);
  ASSERT_NE(mul->b.as<FloatImmNode>(), nullptr);
  EXPECT_EQ(mul->b.as<FloatImmNode>()->value, 2.0);
}

TEST(ExprTest, ComparisonsAreBool) {
  Var i("i");
  EXPECT_EQ(LT(i, 4).dtype(), DataType::Bool());
  EXPECT_EQ(And(LT(i, 4), GE(i, 0)).dtype(), DataType::Bool());
}

TEST(ExprTest, VarsHaveIdentity) {
  Var a("i"), b("i");
  EXPECT_FALSE(a.same_as(b));
  EXPECT_TRUE(a.same_as(a));
}

TEST(ExprTest, MinMaxValues) {
  EXPECT_EQ(AsConstInt(MaxValue(DataType::Int8()))[0], 127);
  EXPECT_EQ(AsConstInt(MinValue(DataType::Int32()))[0], -2147483648LL);
  EXPECT_EQ(MaxValue(DataType::Float16()).as<FloatImmNode>()->value, 65504.0);
}

TEST(StmtTest, SeqStmtFlattens) {
  Buffer a = Buffer::Make("A", DataType::Float32(), {4});
  Stmt s1 = BufferStore(a, FloatImm(DataType::Float32(), 1), {0});
  Stmt s2 = BufferStore(a, FloatImm(DataType::Float32(), 2), {1});
  Stmt nested = SeqStmt({s1, SeqStmt({s2, s1})});
  const auto* seq = nested.as<SeqStmtNode>();
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->seq.size(), 3u);
  EXPECT_TRUE(SeqStmt({s1}).same_as(s1));
}

TEST(FunctorTest, SubstituteReplacesByIdentityAndKeepsUnchangedNodes) {
  Var i("i"), j("i");
  Buffer a = Buffer::Make("A", DataType::Float32(), {16});
  Stmt store = BufferStore(a, FloatImm(DataType::Float32(), 0), {i * 4 + j});
  VarMap map;
  map[i] = Expr(3);
  Stmt replaced = Substitute(store, map);
  EXPECT_FALSE(replaced.same_as(store));
  int uses_i = 0, uses_j = 0;
  PostOrderVisitExprs(replaced, [&](const Expr& e) {
    if (e.same_as(i)) ++uses_i;
    if (e.same_as(j)) ++uses_j;
  });
  EXPECT_EQ(uses_i, 0);
  EXPECT_EQ(uses_j, 1);
  VarMap unrelated;
  unrelated[Var("k")] = Expr(1);
  EXPECT_TRUE(Substitute(store, unrelated).same_as(store));
}

TEST(FunctionTest, ModuleLookupNamesMissingFunction) {
  IRModule mod;
  Buffer a = Buffer::Make("A", DataType::Float32(), {4});
  BlockNode root;
  root.name = "root";
  root.body = Evaluate(Expr(0));
  mod.Update(PrimFunc::Make("f", {a}, BlockRealize({}, True(), MakeBlock(root))));
  EXPECT_TRUE(mod.Lookup("f").ok());
  absl::StatusOr<PrimFunc> missing = mod.Lookup("g");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("has: f"), std::string::npos);
  EXPECT_EQ(mod.Lookup("f")->root_block()->name, "root");
}

TEST(TargetTest, ParsesAndCanonicalizes) {
  absl::StatusOr<Target> t =
      Target::Parse("cuda -arch=sm_90 -max_threads_per_block=1024 -max_shared_memory_per_block=49152");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->is_cuda());
  EXPECT_EQ(t->compute_capability(), 90);
  EXPECT_EQ(t->warp_size(), 32);
  absl::StatusOr<Target> again = Target::Parse(t->ToString());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *t);
  absl::StatusOr<Target> cpu = Target::Parse("cpu -cores=2");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->cores(), 2);
  EXPECT_EQ(cpu->ToString(), "cpu -cores=2 -vector_bits=256");
}

TEST(TargetTest, RejectsBadInput) {
  EXPECT_FALSE(Target::Parse("").ok());
  EXPECT_FALSE(Target::Parse("rocm").ok());
  EXPECT_FALSE(Target::Parse("cpu -cores").ok());
  EXPECT_FALSE(Target::Parse("cpu -cores=zero").ok());
  EXPECT_FALSE(Target::Parse("cpu -arch=sm_90").ok());
  EXPECT_FALSE(Target::Parse("cuda -arch=90").ok());
  absl::StatusOr<Target> unknown = Target::Parse("cpu -threads=4");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(std::string(unknown.status().message()).find("known: -cores"), std::string::npos);
}

TEST(NDArrayTest, Float16RoundsToNearestEven) {
  NDArray a = NDArray::Empty(DataType::Float16(), {3});
  a.SetFlat(0, 1.0);
  a.SetFlat(1, 1.0 + 1.0 / 4096);  // below half an ulp (2^-11): rounds down
  a.SetFlat(2, 65504.0);
  EXPECT_EQ(a.GetFlat(0), 1.0);
  EXPECT_EQ(a.GetFlat(1), 1.0);
  EXPECT_EQ(a.GetFlat(2), 65504.0);
  EXPECT_EQ(RoundToDType(DataType::Float16(), 0.1), 0.0999755859375);
  EXPECT_EQ(RoundToDType(DataType::BFloat16(), 1.0 + 1.0 / 256), 1.0);
}

TEST(NDArrayTest, IntegersWrap) {
  NDArray a = NDArray::Empty(DataType::Int8(), {1});
  a.SetFlat(0, 130);
  EXPECT_EQ(a.GetFlat(0), -126);
}

TEST(NDArrayTest, FillRandomIsSeededAndCompareFindsMismatch) {
  NDArray a = NDArray::Empty(DataType::Float32(), {8, 8});
  NDArray b = NDArray::Empty(DataType::Float32(), {8, 8});
  Random r1(9), r2(9);
  a.FillRandom(&r1);
  b.FillRandom(&r2);
  absl::StatusOr<Comparison> same = Compare(a, b);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->ok());
  b.SetFlat(5, b.GetFlat(5) + 1);
  absl::StatusOr<Comparison> diff = Compare(a, b);
  ASSERT_TRUE(diff.ok());
  EXPECT_EQ(diff->mismatches, 1);
  EXPECT_EQ(diff->first_mismatch, 5);
  EXPECT_FALSE(Compare(a, NDArray::Empty(DataType::Float32(), {64})).ok());
}

}  // namespace
}  // namespace tessera
