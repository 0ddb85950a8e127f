// The CPU row-chain default (rules/default/cpu_row_reduction.cc): softmax, layer norm and RMS norm
// become one parallel loop over rows with every block under it, vectorized inner loops and local
// intermediates, and still compute what the unscheduled function computes; functions that are
// not row chains are left to CpuDefault.
#include <map>
#include <string>
#include <vector>

#include "codegen/codegen_c.h"
#include "frontend/compute.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "tests/rules/default_schedule_testing.h"
#include "worker/builder.h"
#include "worker/check.h"

namespace tessera {
namespace {

using default_schedule_testing::ApplyToModule;
using default_schedule_testing::CpuTarget;

struct Structure {
  int parallel = 0;             // parallel loops
  int vectorized = 0;           // vectorized loops
  int local_buffers = 0;        // buffers allocated in "local" scope
  int blocks_outside_rows = 0;  // blocks (besides the root) not under the parallel loop
};

Structure StructureOf(const PrimFunc& func) {
  Structure s;
  std::vector<const ForNode*> parallel_loops;
  PostOrderVisitStmts(func->body, [&](const Stmt& st) {
    if (const auto* loop = st.as<ForNode>()) {
      if (loop->for_kind == ForKind::kParallel) {
        ++s.parallel;
        parallel_loops.push_back(loop);
      }
      if (loop->for_kind == ForKind::kVectorized) ++s.vectorized;
    }
    if (const auto* block = st.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) s.local_buffers += b.scope() == "local";
    }
  });
  int all_blocks = 0, under_rows = 0;
  PostOrderVisitStmts(func->body,
                      [&](const Stmt& st) { all_blocks += st.as<BlockNode>() != nullptr; });
  for (const ForNode* loop : parallel_loops) {
    PostOrderVisitStmts(loop->body,
                        [&](const Stmt& st) { under_rows += st.as<BlockNode>() != nullptr; });
  }
  s.blocks_outside_rows = all_blocks - under_rows - 1;  // the root block
  return s;
}

struct RowCase {
  std::string workload;
  std::map<std::string, int64_t> shape;
  int local_buffers;  // intermediates and lane partials
};

class CpuRowReductionTest : public ::testing::TestWithParam<RowCase> {};

TEST_P(CpuRowReductionTest, OneParallelRowLoopMatchesTheReference) {
  const RowCase& c = GetParam();
  absl::StatusOr<PrimFunc> func = MakeWorkload(c.workload, c.shape);
  ASSERT_TRUE(func.ok()) << func.status();
  auto [rule, scheduled] = ApplyToModule(*func, CpuTarget());
  ASSERT_EQ(rule, "CpuRowReduction");
  const Structure s = StructureOf(scheduled);
  EXPECT_EQ(s.parallel, 1) << PrintFunc(scheduled);
  EXPECT_EQ(s.blocks_outside_rows, 0) << PrintFunc(scheduled);
  EXPECT_GE(s.vectorized, 1) << PrintFunc(scheduled);
  EXPECT_EQ(s.local_buffers, c.local_buffers) << PrintFunc(scheduled);
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/3, 60);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << "max abs error " << check->max_abs_error << "\n"
                             << PrintFunc(scheduled);
}

INSTANTIATE_TEST_SUITE_P(
    RowChains, CpuRowReductionTest,
    ::testing::Values(
        // sum and sum of squares, each with 16 lane partials, then the output row.
        RowCase{"LAYER_NORM", {{"M", 24}, {"N", 96}}, 4},
        RowCase{"RMS_NORM", {{"M", 6}, {"N", 256}}, 2},
        // max and exp-sum with lanes, the exp row kept local, then the division.
        RowCase{"SFM", {{"M", 20}, {"N", 64}}, 5},
        // rows of 77: 16 lanes, the last 13 a guarded tail.
        RowCase{"SFM", {{"M", 9}, {"N", 77}}, 5},
        // rows of 13 (prime): reductions stay serial, no partials.
        RowCase{"SFM", {{"M", 9}, {"N", 13}}, 3}),
    [](const ::testing::TestParamInfo<RowCase>& info) {
      return info.param.workload + "_" + std::to_string(info.param.shape.at("N"));
    });

// The lanes of every partial-result buffer ("..._rf", lanes last) of the scheduled function.
std::vector<int64_t> LanesOfPartials(const PrimFunc& func) {
  std::vector<int64_t> lanes;
  PostOrderVisitStmts(func->body, [&](const Stmt& st) {
    const auto* block = st.as<BlockNode>();
    if (block == nullptr) return;
    for (const Buffer& b : block->alloc_buffers) {
      const std::string& name = b.name();
      if (name.size() < 3 || name.compare(name.size() - 3, 3, "_rf") != 0) continue;
      const int64_t* last = AsConstInt(b.shape().back());
      lanes.push_back(last != nullptr ? *last : -1);
    }
  });
  return lanes;
}

// A reduction of two vector widths or more takes all 16 lanes, a width that does not divide it
// leaving a guarded tail (rows of 77: 4 x 16 + 13); a shorter one takes a divisor.
TEST(CpuRowReductionRuleTest, LongReductionsTakeAllLanesWithATail) {
  struct Case {
    int64_t n;
    int64_t lanes;
  };
  for (const Case& c : {Case{77, 16}, Case{100, 16}, Case{128, 16}, Case{24, 8}, Case{30, 15}}) {
    absl::StatusOr<PrimFunc> func = MakeWorkload("SFM", {{"M", 8}, {"N", c.n}});
    ASSERT_TRUE(func.ok()) << func.status();
    auto [rule, scheduled] = ApplyToModule(*func, CpuTarget());
    ASSERT_EQ(rule, "CpuRowReduction");
    EXPECT_EQ(LanesOfPartials(scheduled), std::vector<int64_t>(2, c.lanes)) << "N=" << c.n << "\n"
                                                                            << PrintFunc(scheduled);
    absl::StatusOr<CheckOutcome> check =
        BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/7, 60);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << "N=" << c.n << "\n" << PrintFunc(scheduled);
  }
}

// out[i, j] = A[i, j] / colsum[j]: the statistic runs along columns, so computing it at the row
// loop would recompute all of it per row; the rule declines and the result is still right.
TEST(CpuRowReductionRuleTest, ColumnStatisticIsNotARowChain) {
  Tensor a = Placeholder({16, 16}, DataType::Float32(), "A");  // square: extents match
  IterVar r = ReduceAxis(16, "r");
  Tensor colsum = Compute(
      {16},
      [&](const std::vector<Var>& v) {
        return Sum(a({r.var, v[0]}), {r});
      },
      "colsum");
  Tensor out = Compute(
      {16, 16},
      [&](const std::vector<Var>& v) {
        return Div(a({v[0], v[1]}), colsum({v[1]}));
      },
      "out");
  absl::StatusOr<PrimFunc> func = CreatePrimFunc("main", {a, out});
  ASSERT_TRUE(func.ok()) << func.status();
  auto [rule, scheduled] = ApplyToModule(*func, CpuTarget());
  EXPECT_EQ(rule, "CpuDefault");
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/3, 60);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << PrintFunc(scheduled);
}

// An RMS norm as exporters write it (LLaMA's Pow, ReduceMean with keepdims, Add, Sqrt,
// Reciprocal, Mul, Mul) over a batch of one: the square is an elementwise block before the row
// statistic, the mean keeps its reduced axis ([1, rows, 1]) and the output reads it at
// [0, row, 0]. It is still one parallel loop over the rows, with nothing outside it (it was left
// to CpuDefault: three parallel loops, the squares through a buffer of every row, and a scalar
// sum, 10x slower).
TEST(CpuRowReductionRuleTest, ExportedRmsNormWithKeptAxesIsARowChain) {
  const int64_t rows = 8, width = 64;
  Tensor x = Placeholder({1, rows, width}, DataType::Float32(), "x");
  Tensor w = Placeholder({width}, DataType::Float32(), "w");
  Tensor square = Compute(
      {1, rows, width},
      [&](const std::vector<Var>& v) {
        return x({v[0], v[1], v[2]}) * x({v[0], v[1], v[2]});
      },
      "square");
  IterVar r = ReduceAxis(width, "r");
  Tensor sum = Compute(
      {1, rows, 1},
      [&](const std::vector<Var>& v) {
        return Sum(square({v[0], v[1], r.var}), {r});
      },
      "sum");
  Tensor out = Compute(
      {1, rows, width},
      [&](const std::vector<Var>& v) {
        Expr mean = sum({Expr(0), v[1], Expr(0)}) * FloatImm(DataType::Float32(), 1.0 / width);
        Expr inv = Div(FloatImm(DataType::Float32(), 1.0),
                       Call(CallOp::kSqrt, {mean + FloatImm(DataType::Float32(), 1e-6)}));
        return x({v[0], v[1], v[2]}) * inv * w({v[2]});
      },
      "out");
  absl::StatusOr<PrimFunc> func = CreatePrimFunc("main", {x, w, out});
  ASSERT_TRUE(func.ok()) << func.status();
  auto [rule, scheduled] = ApplyToModule(*func, CpuTarget());
  EXPECT_EQ(rule, "CpuRowReduction");
  const Structure s = StructureOf(scheduled);
  EXPECT_EQ(s.parallel, 1) << PrintFunc(scheduled);
  EXPECT_EQ(s.blocks_outside_rows, 0) << PrintFunc(scheduled);
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/3, 60);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << PrintFunc(scheduled);
}

// The extent of the function's one parallel loop, or -1.
int64_t ParallelExtent(const PrimFunc& func) {
  int64_t extent = -1;
  PostOrderVisitStmts(func->body, [&](const Stmt& st) {
    const auto* loop = st.as<ForNode>();
    if (loop == nullptr || loop->for_kind != ForKind::kParallel) return;
    if (const auto* imm = loop->extent.as<IntImmNode>()) extent = imm->value;
  });
  return extent;
}

// Short rows go four to an iteration, so their lane-combining chains interleave (softmax
// 1536x128 1.6x faster); long rows, and rows too few to leave two iterations per core, go one.
TEST(CpuRowReductionRuleTest, ShortRowsRunSeveralToAnIteration) {
  struct Case {
    std::string workload;
    std::map<std::string, int64_t> shape;
    int64_t parallel_extent;
  };
  for (const Case& c :
       {Case{"SFM", {{"M", 64}, {"N", 128}}, 16},
        Case{"SFM", {{"M", 12}, {"N", 77}}, 6},  // 4 rows would leave 3
        Case{"LAYER_NORM", {{"M", 64}, {"N", 768}}, 64}, Case{"SFM", {{"M", 9}, {"N", 128}}, 9}}) {
    absl::StatusOr<PrimFunc> func = MakeWorkload(c.workload, c.shape);
    ASSERT_TRUE(func.ok()) << func.status();
    absl::StatusOr<Target> two_cores = ResolveTarget("cpu -cores=2");  // the extents depend on it
    ASSERT_TRUE(two_cores.ok()) << two_cores.status();
    auto [rule, scheduled] = ApplyToModule(*func, *two_cores);
    ASSERT_EQ(rule, "CpuRowReduction") << c.workload;
    EXPECT_EQ(ParallelExtent(scheduled), c.parallel_extent)
        << c.workload << " M=" << c.shape.at("M") << "\n"
        << PrintFunc(scheduled);
    absl::StatusOr<CheckOutcome> check =
        BuildAndCheck(NewCBuilder().get(), scheduled, *func, CpuTarget(), /*seed=*/5, 60);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->passed) << c.workload << " max abs error " << check->max_abs_error;
  }
}

// Softmax over the last axis of A[b, h, n] (an attention's scores): two row loops.
PrimFunc BatchedSoftmax(int64_t b, int64_t h, int64_t n) {
  Tensor a = Placeholder({b, h, n}, DataType::Float32(), "A");
  IterVar k = ReduceAxis(n, "k");
  Tensor maxelem = Compute(
      {b, h},
      [&](const std::vector<Var>& v) {
        return MaxReduce(a({v[0], v[1], k.var}), {k});
      },
      "T_softmax_maxelem");
  Tensor exp = Compute(
      {b, h, n},
      [&](const std::vector<Var>& v) {
        return Call(CallOp::kExp, {a({v[0], v[1], v[2]}) - maxelem({v[0], v[1]})});
      },
      "T_softmax_exp");
  IterVar k2 = ReduceAxis(n, "k");
  Tensor expsum = Compute(
      {b, h},
      [&](const std::vector<Var>& v) {
        return Sum(exp({v[0], v[1], k2.var}), {k2});
      },
      "T_softmax_expsum");
  Tensor norm = Compute(
      {b, h, n},
      [&](const std::vector<Var>& v) {
        return Div(exp({v[0], v[1], v[2]}), expsum({v[0], v[1]}));
      },
      "T_softmax_norm");
  absl::StatusOr<PrimFunc> func = CreatePrimFunc("main", {a, norm});
  TESSERA_CHECK(func.ok()) << func.status();
  return *func;
}

// Local arrays the emitted C declares before its parallel loop (shared by its threads): the
// lowering allocates each where its compacted region is, so this reads the C, not the IR.
int LocalArraysBeforeTheParallelLoop(const PrimFunc& func) {
  absl::StatusOr<std::string> c = GenerateC(func, "kernel");
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return -1;
  const size_t parallel = c->find("#pragma omp parallel");
  EXPECT_NE(parallel, std::string::npos) << *c;
  int before = 0;
  for (size_t at = c->find("// local"); at < parallel; at = c->find("// local", at + 1)) ++before;
  return before;
}

// Several rows per iteration split the innermost row loop: split after fusing [4, 16] rows, an
// iteration's rows were a box over both loops, the intermediates were allocated outside the
// parallel loop and the threads raced on them (a decoder's softmax gave inf now and then).
TEST(CpuRowReductionRuleTest, SeveralRowsOfABatchedSoftmaxStayInTheirIteration) {
  absl::StatusOr<Target> two_cores = ResolveTarget("cpu -cores=2");
  ASSERT_TRUE(two_cores.ok()) << two_cores.status();
  // Batches large enough for the parallel loop to be emitted as one (codegen_c.cc).
  for (auto [b, h] : {std::pair<int64_t, int64_t>{128, 16}, {512, 6}}) {
    const PrimFunc func = BatchedSoftmax(b, h, 16);
    auto [rule, scheduled] = ApplyToModule(func, *two_cores);
    ASSERT_EQ(rule, "CpuRowReduction");
    EXPECT_EQ(ParallelExtent(scheduled), b * h / (h == 16 ? 4 : 2)) << PrintFunc(scheduled);
    EXPECT_EQ(LocalArraysBeforeTheParallelLoop(scheduled), 0) << PrintFunc(scheduled);
    for (int64_t seed : {1, 2, 3}) {
      absl::StatusOr<CheckOutcome> check =
          BuildAndCheck(NewCBuilder().get(), scheduled, func, *two_cores, seed, 60);
      ASSERT_TRUE(check.ok()) << check.status();
      EXPECT_TRUE(check->passed) << "h=" << h << " max abs error " << check->max_abs_error;
    }
  }
}

TEST(CpuRowReductionRuleTest, LeavesFunctionsThatAreNotRowChainsToCpuDefault) {
  for (const char* name : {"GEMV", "GMM", "NRM", "REDUCE_SUM", "ELEMENTWISE", "C2D"}) {
    absl::StatusOr<PrimFunc> func = MakeWorkload(name);
    ASSERT_TRUE(func.ok()) << func.status();
    EXPECT_EQ(ApplyToModule(*func, CpuTarget()).first, "CpuDefault") << name;
  }
}

}  // namespace
}  // namespace tessera
