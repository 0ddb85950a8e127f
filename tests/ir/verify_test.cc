// Tests of the well-formedness verifier: it accepts the hand-built functions and every
// workload, and rejects each kind of malformed function with a message naming the culprit. And
// of the bounds check: every workload passes (padding reads guarded by selects included), and a
// function whose buffer shapes contradict its loops is refused, naming the block, buffer and
// index.
#include "ir/verify.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "tests/ir/ir_test_funcs.h"

namespace tessera {
namespace {

using testing::Realize;
using testing::RootRealize;

void ExpectRejected(const PrimFunc& f, const std::string& fragment) {
  absl::Status s = VerifyWellFormed(f);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos)
      << "expected \"" << fragment << "\" in: " << s.message();
}

TEST(VerifyTest, AcceptsHandBuiltFunctions) {
  for (const PrimFunc& f : testing::HandBuiltFunctions()) {
    EXPECT_TRUE(VerifyWellFormed(f).ok()) << f.name() << ": " << VerifyWellFormed(f);
  }
}

TEST(VerifyTest, AcceptsEveryWorkloadInEveryDtype) {
  for (const WorkloadInfo& info : ListWorkloads()) {
    for (const std::string& dtype : info.dtypes) {
      absl::StatusOr<PrimFunc> f = MakeWorkload(info.name, {}, dtype);
      ASSERT_TRUE(f.ok()) << info.name << " " << dtype << ": " << f.status();
      absl::Status s = VerifyWellFormed(*f);
      EXPECT_TRUE(s.ok()) << info.name << " " << dtype << ": " << s;
    }
  }
}

// A one-block function B[vi] = A[vi] + 1 over a loop `i`, with hooks to break it.
struct Simple {
  Buffer a = Buffer::Make("A", DataType::Float32(), {8});
  Buffer b = Buffer::Make("B", DataType::Float32(), {8});
  Var i{"i"};
  Var vi{"vi"};
  BlockNode block;
  Simple() {
    block.name = "B";
    block.iter_vars = {{vi, Range{0, 8}, IterKind::kSpatial}};
    block.reads = {BufferRegion{a, {Range{vi, 1}}}};
    block.writes = {BufferRegion{b, {Range{vi, 1}}}};
    block.body = BufferStore(b, a.Load({vi}) + 1, {vi});
  }
  Stmt Loop(Stmt body, int64_t extent = 8) const { return For(i, extent, ForKind::kSerial, body); }
  PrimFunc Func(Stmt nest, std::vector<Buffer> allocs = {}) const {
    return PrimFunc::Make("simple", {a, b}, RootRealize(nest, std::move(allocs)));
  }
  PrimFunc Func() const { return Func(Loop(Realize({i}, True(), block))); }
};

TEST(VerifyTest, AcceptsTheSimpleFunction) { EXPECT_TRUE(VerifyWellFormed(Simple().Func()).ok()); }

TEST(VerifyTest, RejectsBodyWithoutRootBlock) {
  Simple s;
  PrimFunc f = PrimFunc::Make("simple", {s.a, s.b}, s.Loop(Realize({s.i}, True(), s.block)));
  ExpectRejected(f, "verify simple: the body is not the BlockRealize of a root block");
}

TEST(VerifyTest, RejectsUndefinedVariable) {
  Simple s;
  Var ghost("ghost");
  s.block.body = BufferStore(s.b, s.a.Load({ghost}), {s.vi});
  ExpectRejected(s.Func(), "block \"B\": stored value uses undefined variable ghost");
}

TEST(VerifyTest, RejectsLoopVariableUsedInsideBlock) {
  Simple s;
  s.block.body = BufferStore(s.b, s.a.Load({s.i}), {s.vi});
  ExpectRejected(s.Func(), "block \"B\": stored value uses loop variable i of an enclosing loop");
}

TEST(VerifyTest, RejectsIterationVariableUsedOutsideItsBlock) {
  Simple s;
  Stmt after = BufferStore(s.b, FloatImm(DataType::Float32(), 0), {s.vi});
  ExpectRejected(s.Func(SeqStmt({s.Loop(Realize({s.i}, True(), s.block)), after})),
                 "store index uses undefined variable vi");
}

TEST(VerifyTest, RejectsIndexCountMismatch) {
  Simple s;
  // Built directly: the IR constructors would refuse it.
  Expr bad_load(std::make_shared<const BufferLoadNode>(s.a, std::vector<Expr>{s.vi, 0}));
  s.block.body = BufferStore(s.b, bad_load, {s.vi});
  ExpectRejected(s.Func(), "block \"B\": load of buffer A has 2 indices for 1 dimensions");
}

TEST(VerifyTest, RejectsIterValuesCountMismatch) {
  Simple s;
  Stmt realize(std::make_shared<const BlockRealizeNode>(std::vector<Expr>{s.i, s.i}, True(),
                                                        MakeBlock(s.block)));
  ExpectRejected(s.Func(s.Loop(realize)),
                 "block \"B\" has 1 iteration variables but 2 iter_values");
}

TEST(VerifyTest, RejectsNonPositiveExtents) {
  Simple s;
  ExpectRejected(s.Func(s.Loop(Realize({s.i}, True(), s.block), 0)),
                 "loop i has non-positive extent 0");
  s.block.iter_vars[0].dom = Range{0, -2};
  ExpectRejected(s.Func(), "iteration variable vi of block \"B\" has non-positive extent -2");
}

TEST(VerifyTest, RejectsInvalidThreadTag) {
  Simple s;
  Stmt loop = For(s.i, 8, ForKind::kThreadBinding, Realize({s.i}, True(), s.block), "threadIdx.w");
  ExpectRejected(s.Func(loop), "loop i has invalid thread tag \"threadIdx.w\"");
  Stmt ok = For(s.i, 8, ForKind::kThreadBinding, Realize({s.i}, True(), s.block), "vthread.z");
  EXPECT_TRUE(VerifyWellFormed(s.Func(ok)).ok());
}

TEST(VerifyTest, RejectsLoopVariableDefinedTwice) {
  Simple s;
  BlockNode second = s.block;
  second.name = "B2";
  second.iter_vars[0].var = Var("vj");
  second.writes[0].region[0].min = second.iter_vars[0].var;
  second.reads[0].region[0].min = second.iter_vars[0].var;
  second.body = BufferStore(s.b, s.a.Load({second.iter_vars[0].var}), {second.iter_vars[0].var});
  Stmt nest =
      SeqStmt({s.Loop(Realize({s.i}, True(), s.block)), s.Loop(Realize({s.i}, True(), second))});
  ExpectRejected(s.Func(nest), "loop variable i is defined twice");
}

TEST(VerifyTest, RejectsDuplicateBlockNames) {
  Simple s;
  BlockNode again = s.block;
  again.iter_vars[0].var = Var("vk");
  Var j("j");
  Stmt nest = SeqStmt({s.Loop(Realize({s.i}, True(), s.block)),
                       For(j, 8, ForKind::kSerial, Realize({j}, True(), again))});
  ExpectRejected(s.Func(nest), "block name \"B\" is used twice");
}

TEST(VerifyTest, RejectsAllocatedParameter) {
  Simple s;
  ExpectRejected(s.Func(s.Loop(Realize({s.i}, True(), s.block)), {s.a}),
                 "parameter buffer A is allocated");
}

TEST(VerifyTest, RejectsBufferOutOfScope) {
  Simple s;
  Buffer local = Buffer::Make("L", DataType::Float32(), {8}, "local");
  s.block.body = BufferStore(s.b, local.Load({s.vi}), {s.vi});
  ExpectRejected(s.Func(), "load of buffer L, which is neither a parameter nor allocated");
}

TEST(VerifyTest, RejectsUndeclaredAccesses) {
  Simple s;
  s.block.writes.clear();
  ExpectRejected(s.Func(), "block \"B\": stores to buffer B, which is not among its write regions");
  Simple t;
  t.block.reads.clear();
  ExpectRejected(t.Func(), "block \"B\": loads buffer A, which is not among its read regions");
}

TEST(VerifyTest, RejectsAccessesProvablyOutsideTheirRegions) {
  Simple s;
  s.block.writes = {BufferRegion{s.b, {Range{s.vi + 1, 1}}}};
  ExpectRejected(s.Func(), "block \"B\": stores to buffer B outside its declared write region");
  Simple t;
  t.block.reads = {BufferRegion{t.a, {Range{0, 4}}}};  // reads A[vi] for vi up to 7
  EXPECT_TRUE(VerifyWellFormed(t.Func()).ok()) << "not provable for every vi: accepted";
  t.block.iter_vars[0].dom = Range{4, 4};
  ExpectRejected(t.Func(), "loads buffer A outside its declared read region (dimension 0)");
}

TEST(VerifyTest, AcceptsAccessesThroughInnerLoopsWithinTheirRegions) {
  // A block covering a 4-wide tile with a loop inside: reads A[vi * 4 + k] for k < 4.
  Simple s;
  Var k("k");
  s.block.iter_vars[0].dom = Range{0, 2};
  s.block.reads = {BufferRegion{s.a, {Range{s.vi * 4, 4}}}};
  s.block.writes = {BufferRegion{s.b, {Range{s.vi * 4, 4}}}};
  s.block.body =
      For(k, 4, ForKind::kSerial, BufferStore(s.b, s.a.Load({s.vi * 4 + k}), {s.vi * 4 + k}));
  EXPECT_TRUE(VerifyWellFormed(s.Func(s.Loop(Realize({FloorDiv(s.i, 4)}, True(), s.block)))).ok());
  s.block.body =
      For(k, 4, ForKind::kSerial, BufferStore(s.b, s.a.Load({s.vi * 4 + k + 4}), {s.vi * 4 + k}));
  ExpectRejected(s.Func(s.Loop(Realize({FloorDiv(s.i, 4)}, True(), s.block))),
                 "loads buffer A outside its declared read region");
}

TEST(VerifyTest, AcceptsAccumulatorDeclaredOnlyAsWritten) {
  // Matmul reads C in its update but declares it only in writes.
  EXPECT_TRUE(VerifyWellFormed(testing::Matmul()).ok());
}

TEST(VerifyTest, RejectsInitWithoutReductionVariable) {
  Simple s;
  s.block.init = BufferStore(s.b, FloatImm(DataType::Float32(), 0), {s.vi});
  ExpectRejected(s.Func(), "block \"B\" has an init statement but no reduction iteration variable");
}

TEST(VerifyTest, RejectsStoreOfWrongType) {
  Simple s;
  s.block.body =
      Stmt(std::make_shared<const BufferStoreNode>(s.b, Expr(1), std::vector<Expr>{s.vi}));
  ExpectRejected(s.Func(), "store of int64 into float32 buffer B");
}

TEST(VerifyTest, RejectsNonBoolPredicate) {
  Simple s;
  ExpectRejected(s.Func(s.Loop(Realize({s.i}, Expr(1), s.block))), "predicate has type int64");
}

TEST(VerifyTest, RejectsNullPieces) {
  Simple s;
  s.block.body = Stmt();
  ExpectRejected(s.Func(), "block \"B\": a statement is null");
  EXPECT_EQ(VerifyWellFormed(PrimFunc()).code(), absl::StatusCode::kInvalidArgument);
}

void ExpectOutOfBounds(const PrimFunc& f, const std::string& fragment) {
  ASSERT_TRUE(VerifyWellFormed(f).ok()) << VerifyWellFormed(f);
  absl::Status s = VerifyAccessesInBounds(f);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << fragment;
  EXPECT_NE(s.message().find(fragment), std::string::npos)
      << "expected \"" << fragment << "\" in: " << s.message();
}

TEST(VerifyBoundsTest, AcceptsEveryWorkloadAndTheHandBuiltFunctions) {
  for (const WorkloadInfo& info : ListWorkloads()) {
    absl::StatusOr<PrimFunc> f = MakeWorkload(info.name, {}, info.dtypes.front());
    ASSERT_TRUE(f.ok()) << info.name << ": " << f.status();
    EXPECT_TRUE(VerifyAccessesInBounds(*f).ok()) << info.name << ": " << VerifyAccessesInBounds(*f);
  }
  // Odd shapes: padding wider than the kernel's reach, strides, dilations, groups.
  for (const auto& [name, params] :
       std::vector<std::pair<std::string, std::map<std::string, int64_t>>>{
           {"C2D", {{"H", 7}, {"W", 9}, {"K", 3}, {"stride", 3}, {"padding", 2}}},
           {"DIL", {{"H", 12}, {"W", 12}, {"K", 3}, {"padding", 2}, {"dilation", 3}}},
           {"T2D", {{"H", 5}, {"W", 3}, {"K", 3}, {"stride", 2}, {"padding", 2}}},
           {"C1D", {{"L", 17}, {"K", 5}, {"stride", 2}, {"padding", 2}}},
           {"GRP", {{"H", 9}, {"W", 9}, {"CI", 8}, {"CO", 8}, {"groups", 2}}},
           {"GMM", {{"M", 3}, {"N", 5}, {"K", 7}}}}) {
    absl::StatusOr<PrimFunc> f = MakeWorkload(name, params, "float32");
    ASSERT_TRUE(f.ok()) << name << ": " << f.status();
    EXPECT_TRUE(VerifyAccessesInBounds(*f).ok()) << name << ": " << VerifyAccessesInBounds(*f);
  }
  for (const PrimFunc& f : testing::HandBuiltFunctions()) {
    EXPECT_TRUE(VerifyAccessesInBounds(f).ok()) << f.name() << ": " << VerifyAccessesInBounds(f);
  }
  EXPECT_TRUE(VerifyAccessesInBounds(Simple().Func()).ok());
}

// A buffer of 4 elements read over an iteration domain of 8: the shape contradicts the loops.
TEST(VerifyBoundsTest, RejectsABufferSmallerThanItsLoopsReach) {
  Simple s;
  s.a = Buffer::Make("A", DataType::Float32(), {4});
  s.block.reads = {BufferRegion{s.a, {Range{s.vi, 1}}}};
  s.block.body = BufferStore(s.b, s.a.Load({s.vi}) + 1, {s.vi});
  ExpectOutOfBounds(s.Func(),
                    "verify simple: block \"B\": load of A: index 0 takes values 0..7, "
                    "outside its extent 4");
  // The same for a store, and for an offset that reaches past the end.
  Simple t;
  t.block.body = BufferStore(t.b, t.a.Load({t.vi}), {t.vi + 1});
  t.block.writes = {BufferRegion{t.b, {Range{t.vi + 1, 1}}}};
  ExpectOutOfBounds(t.Func(), "store of B: index 0 takes values 1..8, outside its extent 8");
}

// A loop of 16 bound to an iteration variable of domain 8.
TEST(VerifyBoundsTest, RejectsABindingOutsideItsDomain) {
  Simple s;
  ExpectOutOfBounds(s.Func(s.Loop(Realize({s.i}, True(), s.block), 16)),
                    "block \"B\": iteration variable vi is bound to values 0..15, outside its "
                    "domain 0..7");
}

// Padding: B[vi] = select(2 <= vi && vi < 10, A[vi - 2], 0) over 12 values of vi, A of 8. The
// guarded read stays in bounds; without its guard, or with a guard that does not keep it
// inside, it does not.
TEST(VerifyBoundsTest, AcceptsAReadGuardedByItsCondition) {
  Simple s;
  s.b = Buffer::Make("B", DataType::Float32(), {12});
  s.block.iter_vars = {{s.vi, Range{0, 12}, IterKind::kSpatial}};
  s.block.reads = {BufferRegion{s.a, {Range{s.vi - 2, 1}}}};
  s.block.writes = {BufferRegion{s.b, {Range{s.vi, 1}}}};
  const Expr zero = FloatImm(DataType::Float32(), 0);
  auto with = [&](const Expr& guard) {
    s.block.body = BufferStore(s.b, Select(guard, s.a.Load({s.vi - 2}), zero), {s.vi});
    return s.Func(s.Loop(Realize({s.i}, True(), s.block), 12));
  };
  EXPECT_TRUE(VerifyAccessesInBounds(with(And(LE(Expr(2), s.vi), LT(s.vi, 10)))).ok());
  EXPECT_TRUE(VerifyAccessesInBounds(with(And(GE(s.vi - 2, 0), GT(Expr(10), s.vi)))).ok());
  ExpectOutOfBounds(with(LT(s.vi, 10)), "load of A: index 0 takes values -2..7");
  ExpectOutOfBounds(with(And(GE(s.vi, 2), LT(s.vi, 11))), "load of A: index 0 takes values 0..8");
  // A condition that does not bound vi alone is not judged: it may keep the read inside.
  EXPECT_TRUE(VerifyAccessesInBounds(with(EQ(FloorMod(s.vi, 3), 0))).ok());
  // Nor is the other branch of a select.
  s.block.body = BufferStore(s.b, Select(LT(s.vi, 2), zero, s.a.Load({s.vi - 2})), {s.vi});
  EXPECT_TRUE(VerifyAccessesInBounds(s.Func(s.Loop(Realize({s.i}, True(), s.block), 12))).ok());
}

}  // namespace
}  // namespace tessera
