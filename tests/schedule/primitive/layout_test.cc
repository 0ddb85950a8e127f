// TransformLayout, TransformBlockLayout and PadEinsum: outputs match the unscheduled program
// (for a transformed parameter, on inputs rearranged into the new layout), traces replay, the
// C backend builds and runs the results, and invalid uses fail without changing the schedule.
#include <memory>

#include "absl/strings/str_cat.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/arith/analyzer.h"
#include "ir/interpreter.h"
#include "ir/printer.h"
#include "ir/verify.h"
#include "schedule/index_map.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/runner.h"

namespace tessera {
namespace {

using testing::CheckReplay;
using testing::CheckSameOutputs;

IndexMap Map(const std::string& text) {
  absl::StatusOr<IndexMap> map = IndexMap::Parse(text);
  EXPECT_TRUE(map.ok()) << map.status();
  return *map;
}

void ExpectCorrect(const Schedule& sch, const PrimFunc& original) {
  absl::Status s = testing::CheckScheduleCorrect(sch, original);
  EXPECT_TRUE(s.ok()) << s;
}

std::vector<int64_t> ConstShape(const Buffer& b) {
  std::vector<int64_t> out;
  for (const Expr& e : b.shape()) out.push_back(*AsConstInt(e));
  return out;
}

// dst[map(x)] = src[x]: `src` rearranged into the layout the map describes.
NDArray ToLayout(const NDArray& src, const IndexMap& map) {
  std::vector<Expr> shape(src.shape().begin(), src.shape().end());
  std::vector<int64_t> dims;
  absl::StatusOr<std::vector<Expr>> new_shape = map.MapShape(shape);
  EXPECT_TRUE(new_shape.ok()) << new_shape.status();
  for (const Expr& e : *new_shape) dims.push_back(*AsConstInt(e));
  NDArray dst = NDArray::Empty(src.dtype(), dims);
  arith::Analyzer analyzer;
  for (int64_t flat = 0; flat < src.size(); ++flat) {
    std::vector<Expr> index(src.shape().size());
    int64_t rest = flat;
    for (size_t d = src.shape().size(); d-- > 0;) {
      index[d] = Expr(rest % src.shape()[d]);
      rest /= src.shape()[d];
    }
    int64_t to = 0;
    std::vector<Expr> mapped = map.MapIndices(index, &analyzer);
    for (size_t k = 0; k < dims.size(); ++k) to = to * dims[k] + *AsConstInt(mapped[k]);
    dst.SetFlat(to, src.GetFlat(flat));
  }
  return dst;
}

absl::Status Interp(const PrimFunc& f, std::vector<NDArray>* args) {
  std::vector<NDArray*> ptrs;
  for (NDArray& a : *args) ptrs.push_back(&a);
  return Interpret(f, ptrs);
}

// Builds `f` with the C backend and runs it once on `*args`.
void BuildAndRun(const PrimFunc& f, std::vector<NDArray>* args) {
  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = builder->Build({BuildInput{f, *Target::Parse("cpu")}});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg << "\n" << PrintFunc(f);
  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  absl::StatusOr<RunResult> ran = RunCpuKernel(built[0].artifact_path, built[0].symbol, args, once);
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->ok()) << ran->error_msg;
}

void ExpectClose(const NDArray& actual, const NDArray& expected) {
  absl::StatusOr<Comparison> cmp = Compare(actual, expected);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << cmp->mismatches << " mismatches, first at " << cmp->first_mismatch;
}

// Runs `original` and, with parameter `param` rearranged by `map`, `scheduled` (in the
// interpreter and, with `build`, also compiled by the C backend); output `out` must agree.
void ExpectSameWithLayout(const PrimFunc& original, const PrimFunc& scheduled, int param,
                          const IndexMap& map, int out, bool build) {
  std::vector<NDArray> expected = RandomArgs(original, 3);
  std::vector<NDArray> actual;
  for (const NDArray& a : expected) actual.push_back(a.Clone());
  actual[param] = ToLayout(expected[param], map);
  std::vector<NDArray> compiled;
  for (const NDArray& a : actual) compiled.push_back(a.Clone());
  ASSERT_TRUE(Interp(original, &expected).ok());
  absl::Status s = Interp(scheduled, &actual);
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(scheduled);
  ExpectClose(actual[out], expected[out]);
  if (build) {
    BuildAndRun(scheduled, &compiled);
    ExpectClose(compiled[out], expected[out]);
  }
}

PrimFunc Gmm(int64_t m, int64_t n, int64_t k) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
}

// ---- TransformLayout -------------------------------------------------------------------

TEST(TransformLayoutTest, TilesGmmWeightParamAndBuildsWithC) {
  PrimFunc func = Gmm(8, 12, 16);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  Block before = *sch.Get(block);
  ASSERT_EQ(before->reads[2].buffer.name(), "B");
  IndexMap map = Map("lambda b, k, j: (b, k // 4, j, k % 4)");
  absl::Status s = sch.TransformLayout(block, 2, 0, map);
  ASSERT_TRUE(s.ok()) << s;
  const Buffer& b = sch.func().params()[1];
  EXPECT_EQ(b.name(), "B");
  EXPECT_EQ(ConstShape(b), (std::vector<int64_t>{1, 4, 12, 4}));
  std::string text = PrintFunc(sch.func());
  EXPECT_NE(text.find("B[v_b, floordiv(v_k, 4), v_j, floormod(v_k, 4)]"), std::string::npos)
      << text;
  EXPECT_TRUE(VerifyWellFormed(sch.func()).ok());
  // The trace keeps the map as its text, unquoted.
  EXPECT_NE(sch.trace().ToJson().find(
                "[\"TransformLayout\",[\"b0\",\"lambda b, k, j: (b, floordiv(k, 4), j, "
                "floormod(k, 4))\"],[2,0,\"None\"],[]]"),
            std::string::npos)
      << sch.trace().ToJson();
  ExpectSameWithLayout(func, sch.func(), /*param=*/1, map, /*out=*/2, /*build=*/true);
  absl::Status replay = CheckReplay(sch, func);
  EXPECT_TRUE(replay.ok()) << replay;
}

TEST(TransformLayoutTest, TransformsAnIntermediateOfSoftmax) {
  PrimFunc func = testing::SmallWorkload("SFM");
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("T_softmax_exp");
  const int64_t n = *AsConstInt(func.params()[0].shape()[1]);
  ASSERT_EQ(n % 4, 0);
  absl::Status s =
      sch.TransformLayout(block, 0, 1, Map("lambda i, j: (floordiv(j, 4), i, floormod(j, 4))"));
  ASSERT_TRUE(s.ok()) << s;
  const Block root = sch.func().root_block();
  bool found = false;
  for (const Buffer& b : root->alloc_buffers) {
    if (b.name() != "T_softmax_exp") continue;
    found = true;
    EXPECT_EQ(b.ndim(), 3);
    EXPECT_EQ(*AsConstInt(b.shape()[0]), n / 4);
  }
  EXPECT_TRUE(found);
  // The consumers' read regions follow the new layout.
  Block norm = *sch.Get(*sch.GetBlock("T_softmax_norm"));
  EXPECT_EQ(norm->reads[0].region.size(), 3u);
  ExpectCorrect(sch, func);
}

TEST(TransformLayoutTest, TransformsAnOutputParamAndItsReadModifyWrite) {
  PrimFunc func = Gmm(8, 8, 4);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  IndexMap map = Map("lambda b, i, j: (j, b, i)");
  ASSERT_TRUE(sch.TransformLayout(block, 0, 1, map).ok());
  EXPECT_EQ(ConstShape(sch.func().params()[2]), (std::vector<int64_t>{8, 1, 8}));
  // Compare C in the new layout with the original's C rearranged.
  std::vector<NDArray> expected = RandomArgs(func, 5);
  std::vector<NDArray> actual;
  for (const NDArray& a : expected) actual.push_back(a.Clone());
  actual[2] = ToLayout(expected[2], map);
  ASSERT_TRUE(Interp(func, &expected).ok());
  ASSERT_TRUE(Interp(sch.func(), &actual).ok());
  ExpectClose(actual[2], ToLayout(expected[2], map));
  absl::Status replay = CheckReplay(sch, func);
  EXPECT_TRUE(replay.ok()) << replay;
}

TEST(TransformLayoutTest, RejectsBadUsesAndLeavesScheduleUnchanged) {
  PrimFunc func = Gmm(8, 8, 10);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  const size_t trace_size = sch.trace().size();
  struct Case {
    int index, type;
    std::string map, message;
  } cases[] = {
      {2, 0, "lambda b, k: (k, b)",
       "transform_layout: buffer B (read 2 of block C) has 3 dimensions"},
      {2, 0, "lambda b, k, j: (b, k // 4, j, k % 4)", "is not bijective"},
      {2, 0, "lambda b, k, j: (b, k + j)", "is not bijective"},
      {3, 0, "lambda b, k, j: (b, k, j)", "block C has 3 read buffers; index 3 is out of range"},
      {0, 2, "lambda b, k, j: (b, k, j)", "buffer_index_type is 2"},
  };
  for (const Case& c : cases) {
    absl::Status s = sch.TransformLayout(block, c.index, c.type, Map(c.map));
    ASSERT_FALSE(s.ok()) << c.map;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.message()).find(c.message), std::string::npos) << s;
  }
  EXPECT_EQ(sch.trace().size(), trace_size);
  EXPECT_TRUE(sch.func().same_as(func));
}

// ---- TransformBlockLayout --------------------------------------------------------------

TEST(TransformBlockLayoutTest, FusesElementwiseIterationSpace) {
  PrimFunc func = *MakeWorkload("ELEMENTWISE", {{"M", 8}, {"N", 12}});
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  absl::Status s = sch.TransformBlockLayout(block, Map("lambda i, j: (i * 12 + j,)"));
  ASSERT_TRUE(s.ok()) << s;
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  ASSERT_EQ(loops.size(), 1u);
  EXPECT_EQ(*AsConstInt((*sch.Get(loops[0]))->extent), 96);
  ExpectCorrect(sch, func);
}

TEST(TransformBlockLayoutTest, SplitsElementwiseIterationSpaceAndBuildsWithC) {
  PrimFunc func = *MakeWorkload("ELEMENTWISE", {{"M", 8}, {"N", 12}});
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  ASSERT_TRUE(sch.TransformBlockLayout(block, Map("lambda i, j: (j // 4, i, j % 4)")).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  ASSERT_EQ(loops.size(), 3u);
  EXPECT_EQ(*AsConstInt((*sch.Get(loops[0]))->extent), 3);
  EXPECT_EQ(*AsConstInt((*sch.Get(loops[2]))->extent), 4);
  // The new loops are ordinary loops: later primitives apply to them.
  ASSERT_TRUE(sch.Fuse({loops[1], loops[2]}).ok());
  ExpectCorrect(sch, func);
  std::vector<NDArray> expected = RandomArgs(func, 9);
  std::vector<NDArray> compiled;
  for (const NDArray& a : expected) compiled.push_back(a.Clone());
  ASSERT_TRUE(Interp(func, &expected).ok());
  BuildAndRun(sch.func(), &compiled);
  ExpectClose(compiled[2], expected[2]);
}

TEST(TransformBlockLayoutTest, KeepsReductionKindsInGmm) {
  PrimFunc func = Gmm(8, 4, 6);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  ASSERT_TRUE(
      sch.TransformBlockLayout(block, Map("lambda b, i, j, k: (b, i // 2, j, i % 2, k)")).ok());
  Block after = *sch.Get(block);
  ASSERT_EQ(after->iter_vars.size(), 5u);
  EXPECT_EQ(after->iter_vars[4].kind, IterKind::kReduction);
  EXPECT_EQ(after->iter_vars[3].kind, IterKind::kSpatial);
  ExpectCorrect(sch, func);
}

TEST(TransformBlockLayoutTest, RejectsBadUsesAndLeavesScheduleUnchanged) {
  PrimFunc func = Gmm(8, 4, 6);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  struct Case {
    std::string map, message;
  } cases[] = {
      {"lambda b, i, j: (b, i, j)", "block C has 4 iteration variables but the index map takes 3"},
      {"lambda b, i, j, k: (b, i * 6 + k, j)", "mixes spatial and reduction"},
      {"lambda b, i, j, k: (b, i // 3, j, i % 3, k)", "is not bijective"},
      {"lambda b, i, j, k: (b, i + j, k)", "is not bijective"},
  };
  for (const Case& c : cases) {
    absl::Status s = sch.TransformBlockLayout(block, Map(c.map));
    ASSERT_FALSE(s.ok()) << c.map;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(s.message()).find(absl::StrCat("transform_block_layout: ")),
              std::string::npos)
        << s;
    EXPECT_NE(std::string(s.message()).find(c.message), std::string::npos) << s;
  }
  EXPECT_EQ(sch.trace().size(), 1u);  // GetBlock
  // Non-trivial bindings after a split.
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  ASSERT_TRUE(sch.Split(loops[1], {InstValue::Int(2), InstValue::Int(4)}).ok());
  const size_t trace_size = sch.trace().size();
  PrimFunc split = sch.func();
  absl::Status s = sch.TransformBlockLayout(block, Map("lambda b, i, j, k: (b, j, i, k)"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("block C does not have trivial bindings"),
            std::string::npos)
      << s;
  EXPECT_EQ(sch.trace().size(), trace_size);
  EXPECT_TRUE(sch.func().same_as(split));
}

// ---- PadEinsum ---------------------------------------------------------------------------

TEST(PadEinsumTest, PadsGmmToMultiplesOf16AndBuildsWithC) {
  PrimFunc func = Gmm(30, 30, 30);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  absl::Status s = sch.PadEinsum(block, {1, 16, 16, 16});
  ASSERT_TRUE(s.ok()) << s;
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const Buffer& b : sch.func().root_block()->alloc_buffers) shapes[b.name()] = ConstShape(b);
  EXPECT_EQ(shapes["A_pad"], (std::vector<int64_t>{1, 32, 32}));
  EXPECT_EQ(shapes["B_pad"], (std::vector<int64_t>{1, 32, 32}));
  EXPECT_EQ(shapes["C_pad"], (std::vector<int64_t>{1, 32, 32}));
  for (const char* name : {"A_pad", "B_pad", "C", "C_unpad"}) {
    EXPECT_TRUE(sch.GetBlock(name).ok()) << name;
  }
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  ASSERT_EQ(loops.size(), 4u);
  EXPECT_EQ(*AsConstInt((*sch.Get(loops[3]))->extent), 32);
  EXPECT_NE(sch.trace().ToJson().find("[\"PadEinsum\",[\"b0\"],[[1,16,16,16]],[]]"),
            std::string::npos);
  ExpectCorrect(sch, func);
  // The padded loops tile evenly now.
  ASSERT_TRUE(sch.Split(loops[1], {InstValue::Int(2), InstValue::Int(16)}).ok());
  ExpectCorrect(sch, func);
  std::vector<NDArray> expected = RandomArgs(func, 11);
  std::vector<NDArray> compiled;
  for (const NDArray& a : expected) compiled.push_back(a.Clone());
  ASSERT_TRUE(Interp(func, &expected).ok());
  BuildAndRun(sch.func(), &compiled);
  ExpectClose(compiled[2], expected[2]);
}

TEST(PadEinsumTest, PadsOnlyWhatNeedsIt) {
  PrimFunc func = Gmm(16, 10, 32);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  ASSERT_TRUE(sch.PadEinsum(block, {1, 8, 8, 8}).ok());
  std::set<std::string> names;
  for (const Buffer& b : sch.func().root_block()->alloc_buffers) names.insert(b.name());
  // Only j (10 -> 16) changes: B[b, k, j] and C are padded, A[b, i, k] is not.
  EXPECT_EQ(names, (std::set<std::string>{"B_pad", "C_pad"}));
  ExpectCorrect(sch, func);
}

// Regression (found by the randomized schedule test): padding the zero-filling copy block of
// an earlier PadEinsum pads along dimensions where the copy's source is smaller than the
// iteration space; the new copy-in must not read the source beyond its shape.
TEST(PadEinsumTest, PadsThePaddingCopyOfAnEarlierPadEinsum) {
  PrimFunc func = testing::SmallWorkload("DEP");
  Schedule sch = Schedule::Create(func, 1);
  BlockRV pad_input = *sch.GetBlock("PadInput");
  ASSERT_TRUE(sch.CacheWrite(pad_input, 0, "global").ok());
  absl::Status s = sch.PadEinsum(*sch.GetBlock("PadInput_global"), {5, 1, 4, 4});
  ASSERT_TRUE(s.ok()) << s;
  ExpectCorrect(sch, func);
  s = sch.PadEinsum(*sch.GetBlock("PadInput_global_pad"), {1, 2, 3, 2});
  ASSERT_TRUE(s.ok()) << s;
  ExpectCorrect(sch, func);
  s = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(s.ok()) << s;
}

// A block that reads its output without an init (the update block after DecomposeReduction)
// accumulates into the padded output, which must start from the output's values.
TEST(PadEinsumTest, PadsADecomposedReductionUpdate) {
  PrimFunc func = Gmm(6, 5, 7);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(block);
  ASSERT_TRUE(sch.DecomposeReduction(block, loops[0]).ok());
  absl::Status s = sch.PadEinsum(block, {1, 4, 4, 4});
  ASSERT_TRUE(s.ok()) << s;
  ExpectCorrect(sch, func);
  s = testing::CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(s.ok()) << s;
}

TEST(PadEinsumTest, RejectsBadUsesAndLeavesScheduleUnchanged) {
  PrimFunc func = Gmm(30, 30, 30);
  Schedule sch = Schedule::Create(func, 1);
  BlockRV block = *sch.GetBlock("C");
  absl::Status s = sch.PadEinsum(block, {16, 16, 16});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(
      std::string(s.message())
          .find("pad_einsum: block C has 4 iteration variables but 3 padding sizes were given"),
      std::string::npos)
      << s;
  EXPECT_FALSE(sch.PadEinsum(block, {1, 0, 16, 16}).ok());
  EXPECT_EQ(sch.trace().size(), 1u);
  EXPECT_TRUE(sch.func().same_as(func));

  // Not einsum-like: indices that are not iteration variables.
  Schedule fused = Schedule::Create(func, 1);
  BlockRV c = *fused.GetBlock("C");
  ASSERT_TRUE(fused.TransformBlockLayout(c, Map("lambda b, i, j, k: (b, i * 30 + j, k)")).ok());
  s = fused.PadEinsum(c, {1, 16, 16});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("pad_einsum: block C is not einsum-like"),
            std::string::npos)
      << s;

  // A max reduction cannot be padded with zeros along its reduction variable.
  PrimFunc sfm = *MakeWorkload("SFM", {{"M", 6}, {"N", 6}});
  Schedule soft = Schedule::Create(sfm, 1);
  BlockRV maxelem = *soft.GetBlock("T_softmax_maxelem");
  s = soft.PadEinsum(maxelem, {1, 4});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("padding reduction variable"), std::string::npos) << s;
  // ...but its spatial variable can be padded.
  s = soft.PadEinsum(maxelem, {4, 1});
  EXPECT_TRUE(s.ok()) << s;
  ExpectCorrect(soft, sfm);
}

}  // namespace
}  // namespace tessera
