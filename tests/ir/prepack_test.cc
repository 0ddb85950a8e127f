#include "ir/prepack.h"

#include <cstdint>
#include <string>
#include <vector>

#include "base/random.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "ir/interpreter.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

constexpr int64_t kM = 5, kN = 32, kK = 12;

PrimFunc Linear() {
  absl::StatusOr<PrimFunc> f = MakeWorkload("LINEAR", {{"M", kM}, {"N", kN}, {"K", kK}});
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

NDArray RandomArray(const ArgInfo& info, uint64_t seed) {
  NDArray a = NDArray::Empty(info.dtype, info.shape);
  Random rng(seed);
  a.FillRandom(&rng);
  return a;
}

std::vector<std::string> Names(const std::vector<Buffer>& buffers) {
  std::vector<std::string> names;
  for (const Buffer& b : buffers) names.push_back(b.name());
  return names;
}

TEST(PrepackTest, LinearDeclaresItsWeightLayoutFree) {
  const PrimFunc f = Linear();
  EXPECT_EQ(LayoutFreeParamIndices(f), std::vector<int>{1});
  EXPECT_TRUE(IsLayoutFreeParam(f, f.params()[1]));
  EXPECT_FALSE(IsLayoutFreeParam(f, f.params()[0]));
  absl::StatusOr<PrimFunc> gmm = MakeWorkload("GMM", {{"M", 4}, {"N", 4}, {"K", 4}});
  ASSERT_TRUE(gmm.ok());
  EXPECT_TRUE(LayoutFreeParamIndices(*gmm).empty());
}

TEST(PrepackTest, AFunctionWithoutPackingDoesNotSplit) {
  absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(Linear());
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_FALSE(split->has_value());
  // A packing copy that is not annotated is part of the kernel.
  split = SplitPrepack(testing::LinearWithPackedWeight(Linear(), /*annotate=*/false));
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_FALSE(split->has_value());
}

TEST(PrepackTest, ThePackedWeightTakesTheWeightsPlaceInTheKernel) {
  const PrimFunc f = testing::LinearWithPackedWeight(Linear());
  absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(f);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(split->has_value());
  const PrepackSplit& s = **split;
  ASSERT_EQ(s.packed.size(), 1u);
  EXPECT_EQ(ArgInfosOf(s.prepack)[1].shape, (std::vector<int64_t>{kN / 16, kK, 16}));
  EXPECT_EQ(Names(s.prepack.params()), (std::vector<std::string>{"W", s.packed[0].name()}));
  EXPECT_EQ(Names(s.prepacked.params()), (std::vector<std::string>{"X", s.packed[0].name(), "Y"}));
  ASSERT_EQ(s.prepacked_args.size(), 3u);
  EXPECT_FALSE(s.prepacked_args[0].packed);
  EXPECT_TRUE(s.prepacked_args[1].packed);
  EXPECT_EQ(s.prepacked_args[2].index, 2);
  // The halves allocate nothing the other one fills; the kernel reads no plain weight.
  EXPECT_TRUE(s.prepack.root_block()->alloc_buffers.empty());
  EXPECT_TRUE(s.prepacked.root_block()->alloc_buffers.empty());
  EXPECT_TRUE(LayoutFreeParamIndices(s.prepacked).empty());
}

TEST(PrepackTest, PackingThenTheKernelComputesWhatTheWholeFunctionDoes) {
  const PrimFunc linear = Linear();
  const PrimFunc f = testing::LinearWithPackedWeight(linear);
  absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(f);
  ASSERT_TRUE(split.ok() && split->has_value());
  const PrepackSplit& s = **split;
  std::vector<ArgInfo> args = ArgInfosOf(linear);
  NDArray x = RandomArray(args[0], 1), w = RandomArray(args[1], 2);
  NDArray expected = NDArray::Empty(args[2].dtype, args[2].shape);
  ASSERT_TRUE(Interpret(linear, {&x, &w, &expected}).ok());

  NDArray packed = NDArray::Empty(s.packed[0].dtype(), {kN / 16, kK, 16});
  ASSERT_TRUE(Interpret(s.prepack, {&w, &packed}).ok());
  NDArray y = NDArray::Empty(args[2].dtype, args[2].shape);
  ASSERT_TRUE(Interpret(s.prepacked, {&x, &packed, &y}).ok());
  for (int64_t i = 0; i < kM * kN; ++i) EXPECT_EQ(y.GetFlat(i), expected.GetFlat(i)) << i;
  // The strips hold W[k, j] at [j / 16, k, j % 16].
  EXPECT_EQ(packed.GetFlat((1 * kK + 3) * 16 + 5), w.GetFlat(3 * kN + 16 + 5));
}

// A packing nest may read what it writes: a sum over the weight (ShiftInt8Product's sums of an
// int8 LINEAR's W, computed once with the packing and read by the kernel as a packed buffer).
TEST(PrepackTest, APackingNestMaySumIntoItsOwnBuffer) {
  absl::StatusOr<PrimFunc> linear =
      MakeWorkload("LINEAR", {{"M", kM}, {"N", kN}, {"K", kK}}, "int8");
  ASSERT_TRUE(linear.ok()) << linear.status();
  Schedule sch = Schedule::Create(*linear, 1);
  absl::StatusOr<BlockRV> sums = sch.ShiftInt8Product(*sch.GetBlock("Y"), /*summed_read=*/2);
  ASSERT_TRUE(sums.ok()) << sums.status();
  ASSERT_TRUE(sch.Annotate(*sums, kLayoutRewritePreproc, InstValue::Int(1)).ok());
  absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(sch.func());
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_TRUE(split->has_value());
  const PrepackSplit& s = **split;
  EXPECT_EQ(Names(s.packed), std::vector<std::string>{"Y_shift"});
  // The kernel still reads W itself: the packed buffer comes after the parameters.
  EXPECT_EQ(Names(s.prepacked.params()), (std::vector<std::string>{"X", "W", "Y", "Y_shift"}));
  std::vector<ArgInfo> args = ArgInfosOf(*linear);
  NDArray x = RandomArray(args[0], 1), w = RandomArray(args[1], 2);
  NDArray expected = NDArray::Empty(args[2].dtype, args[2].shape);
  ASSERT_TRUE(Interpret(*linear, {&x, &w, &expected}).ok());
  NDArray shift = NDArray::Empty(DataType::Int32(), {kN});
  ASSERT_TRUE(Interpret(s.prepack, {&w, &shift}).ok());
  NDArray y = NDArray::Empty(args[2].dtype, args[2].shape);
  ASSERT_TRUE(Interpret(s.prepacked, {&x, &w, &y, &shift}).ok());
  for (int64_t i = 0; i < kM * kN; ++i) EXPECT_EQ(y.GetFlat(i), expected.GetFlat(i)) << i;
}

TEST(PrepackTest, PackingAnInputThatIsNotAWeightIsAnError) {
  // The same schedule on a function that does not declare W layout-free.
  const PrimFunc linear = Linear();
  Annotations attrs = linear.attrs();
  attrs.erase(kLayoutFreeBuffers);
  const PrimFunc plain = PrimFunc::Make(linear.name(), linear.params(), linear.body(), attrs);
  absl::StatusOr<std::optional<PrepackSplit>> split =
      SplitPrepack(testing::LinearWithPackedWeight(plain));
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(split.status().message()).find("reads W, which is neither a layout-free"),
            std::string::npos)
      << split.status();
}

}  // namespace
}  // namespace tessera
