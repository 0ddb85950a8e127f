// The checks against the reference (worker/check.cc): the seeded random inputs, a correct
// build that passes against the interpreter, a wrong one that fails with its mismatches, and
// a candidate whose parameters differ from the reference's.
#include "worker/check.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "schedule/schedule.h"
#include "tests/codegen/test_funcs.h"
#include "worker/backends.h"

namespace tessera {
namespace {

using testing_funcs::Matmul;

Target Cpu() { return *Target::Parse("cpu"); }

// C[i, j] = A[i, j] + B[i, j]: the parameters of Matmul(8, 8, 8), another computation.
PrimFunc AddNotMatmul() {
  Buffer a = Buffer::Make("A", DataType::Float32(), {8, 8});
  Buffer b = Buffer::Make("B", DataType::Float32(), {8, 8});
  Buffer c = Buffer::Make("C", DataType::Float32(), {8, 8});
  Var i("i"), j("j"), vi("vi"), vj("vj");
  BlockNode block;
  block.name = "C";
  block.iter_vars = {IterVar{vi, Range{Expr(0), Expr(8)}, IterKind::kSpatial},
                     IterVar{vj, Range{Expr(0), Expr(8)}, IterKind::kSpatial}};
  block.reads = {BufferRegion::Full(a), BufferRegion::Full(b)};
  block.writes = {BufferRegion::Full(c)};
  block.body = BufferStore(c, a.Load({vi, vj}) + b.Load({vi, vj}), {vi, vj});
  Stmt s = BlockRealize({i, j}, True(), MakeBlock(block));
  s = For(j, Expr(8), ForKind::kSerial, s);
  s = For(i, Expr(8), ForKind::kSerial, s);
  return testing_funcs::MakeFunc("add", {a, b, c}, s);
}

TEST(CheckTest, RandomArgsAreOnePerParameterAndDependOnlyOnTheSeed) {
  const PrimFunc f = Matmul(4, 6, 8);
  std::vector<NDArray> a = RandomArgs(f, 7), b = RandomArgs(f, 7), c = RandomArgs(f, 8);
  const std::vector<ArgInfo> params = ArgInfosOf(f);
  ASSERT_EQ(a.size(), params.size());
  bool differs = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].dtype(), params[i].dtype);
    EXPECT_EQ(a[i].shape(), params[i].shape);
    absl::StatusOr<Comparison> same = Compare(a[i], b[i]);
    ASSERT_TRUE(same.ok()) << same.status();
    EXPECT_EQ(same->max_abs_error, 0) << "argument " << i;
    absl::StatusOr<Comparison> other = Compare(a[i], c[i]);
    ASSERT_TRUE(other.ok()) << other.status();
    differs = differs || other->max_abs_error > 0;
  }
  EXPECT_TRUE(differs) << "seeds 7 and 8 gave the same data";
}

TEST(CheckTest, ACorrectBuildPassesAndAWrongOneFails) {
  const PrimFunc reference = Matmul(8, 8, 8);
  std::unique_ptr<Builder> builder = NewBuilder(Cpu());
  absl::StatusOr<CheckOutcome> right =
      BuildAndCheck(builder.get(), reference, reference, Cpu(), /*seed=*/3, /*timeout_sec=*/20);
  ASSERT_TRUE(right.ok()) << right.status();
  EXPECT_TRUE(right->passed);
  EXPECT_EQ(right->reference, "interpreter");
  EXPECT_EQ(right->mismatches, 0);

  // Same parameters, another computation.
  absl::StatusOr<ReferenceOutputs> outputs = ComputeReference(reference, /*seed=*/3, 20);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  const PrimFunc add = AddNotMatmul();
  std::vector<BuildResult> built = builder->Build({BuildInput{add, Cpu()}});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  absl::StatusOr<CheckOutcome> wrong = CheckAgainstReference(add, *outputs, Cpu(), built[0], 20);
  ASSERT_TRUE(wrong.ok()) << wrong.status();
  EXPECT_FALSE(wrong->passed);
  EXPECT_GT(wrong->mismatches, 0);
  EXPECT_GT(wrong->max_abs_error, 0);
}

// A float16 sum of 4096 terms rounds every partial sum: added in another order (k split in
// 64 x 64 and the parts swapped) it differs by more than float16's default tolerance, yet it is
// the same computation, and the check lets it pass; an output off by a tenth of the largest
// result still fails.
TEST(CheckTest, Float16SumsInAnotherOrderPassWithinTheirRoundingErrors) {
  const PrimFunc reference = Matmul(8, 8, 4096, DataType::Float16(), DataType::Float16());
  Schedule sch = Schedule::Create(reference, /*seed=*/0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> k = *sch.Split(loops[2], {InstValue::Int(64), InstValue::Int(64)});
  ASSERT_TRUE(sch.Reorder({k[1], k[0]}).ok());
  std::unique_ptr<Builder> builder = NewBuilder(Cpu());
  std::vector<BuildResult> built = builder->Build({BuildInput{sch.func(), Cpu()}});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  absl::StatusOr<ReferenceOutputs> outputs = ComputeReference(reference, /*seed=*/3, 20);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  EXPECT_EQ(outputs->reduction_terms, 4096);

  absl::StatusOr<CheckOutcome> reordered =
      CheckAgainstReference(sch.func(), *outputs, Cpu(), built[0], 20);
  ASSERT_TRUE(reordered.ok()) << reordered.status();
  EXPECT_TRUE(reordered->passed) << reordered->mismatches << " mismatches, max abs error "
                                 << reordered->max_abs_error;
  // Without the allowance for the reduction, float16's default tolerance would fail it.
  std::vector<NDArray> actual;
  for (const NDArray& a : outputs->inputs) actual.push_back(a.Clone());
  absl::StatusOr<RunResult> ran = RunKernel(Cpu(), built[0], &actual, RunnerConfig{});
  ASSERT_TRUE(ran.ok() && ran->ok());
  absl::StatusOr<Comparison> strict = Compare(actual[2], outputs->outputs[2]);
  ASSERT_TRUE(strict.ok()) << strict.status();
  EXPECT_GT(strict->mismatches, 0) << "the orders agreed: the test shows nothing";

  double largest = 0;
  for (int64_t i = 0; i < outputs->outputs[2].size(); ++i) {
    largest = std::max(largest, std::fabs(outputs->outputs[2].GetFlat(i)));
  }
  outputs->outputs[2].SetFlat(5, outputs->outputs[2].GetFlat(5) + largest / 10);
  absl::StatusOr<CheckOutcome> off =
      CheckAgainstReference(sch.func(), *outputs, Cpu(), built[0], 20);
  ASSERT_TRUE(off.ok()) << off.status();
  EXPECT_FALSE(off->passed);
  EXPECT_EQ(off->mismatches, 1);
}

// Above the interpreter's budget the reference is the function compiled naively, its outer
// data-parallel loops in parallel, at -O2 without contracting multiply-adds: each output is
// still summed by one thread in the function's order, so it equals the plain serial -O0 build
// bit for bit.
TEST(CheckTest, TheCompiledReferenceGivesTheSerialBuildsResults) {
  const PrimFunc gmm = Matmul(256, 256, 1024);
  absl::StatusOr<ReferenceOutputs> compiled = ComputeReference(gmm, /*seed=*/5, 60);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_NE(compiled->reference.find("naive compiled C"), std::string::npos) << compiled->reference;
  CBuilderOptions serial;
  serial.optimization_flags = {"-O0"};
  serial.openmp = false;
  std::unique_ptr<Builder> builder = NewCBuilder(serial);  // owns the built library
  std::vector<BuildResult> built = builder->Build({BuildInput{gmm, Cpu()}});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  std::vector<NDArray> args;
  for (const NDArray& a : compiled->inputs) args.push_back(a.Clone());
  absl::StatusOr<RunResult> ran = RunKernel(Cpu(), built[0], &args, RunnerConfig{});
  ASSERT_TRUE(ran.ok()) << ran.status();
  ASSERT_TRUE(ran->ok()) << ran->error_msg;
  absl::StatusOr<Comparison> same = Compare(compiled->outputs[2], args[2], 0, 0);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->max_abs_error, 0);
}

TEST(CheckTest, RefusesACandidateWithOtherParameters) {
  absl::StatusOr<ReferenceOutputs> outputs = ComputeReference(Matmul(8, 8, 8), /*seed=*/3, 20);
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  const PrimFunc smaller = Matmul(4, 8, 8);
  std::vector<BuildResult> built = NewBuilder(Cpu())->Build({BuildInput{smaller, Cpu()}});
  ASSERT_TRUE(built[0].ok()) << built[0].error_msg;
  absl::StatusOr<CheckOutcome> checked =
      CheckAgainstReference(smaller, *outputs, Cpu(), built[0], 20);
  EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(checked.status().message().find("different parameters"), std::string::npos)
      << checked.status();
}

}  // namespace
}  // namespace tessera
