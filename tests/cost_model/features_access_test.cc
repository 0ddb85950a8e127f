// Tests of cost_model/features_access.cc (features_internal::ComputeAccessFeatures, group 2 of
// the per-store features, docs/reference/metaschedule.md §6.2) on hand-built accesses whose
// values follow from the definitions: bytes and lines touched, the regions under each loop,
// the slot order, and the two kinds of reuse.
#include <cstdint>
#include <vector>

#include "cost_model/features_internal.h"
#include "gtest/gtest.h"
#include "ir/arith/analyzer.h"
#include "ir/stmt.h"

namespace tessera {
namespace features_internal {
namespace {

// The 18 values of one buffer slot (features_access.cc, Export).
enum Slot {
  kRead = 0,
  kWrite = 1,
  kReadWrite = 2,
  kBytes = 3,
  kUniqueBytes = 4,
  kLines = 5,
  kUniqueLines = 6,
  kLoopReuse = 7,
  kSerialReuse = 8,
  kNoReuse = 9,
  kReuseDisIter = 10,
  kReuseDisBytes = 11,
  kReuseCount = 12,
  kInnermostStride = 17,
};

// for i in 4: for j in 16: A[i, j] = x[j]  (float32): A row by row, x read again for every i.
class ComputeAccessFeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    inner_ = For(j_, Expr(16), ForKind::kSerial, Evaluate(Expr(0)));
    outer_ = For(i_, Expr(4), ForKind::kSerial, inner_);
    loops_ = {{outer_.as<ForNode>(), 4}, {inner_.as<ForNode>(), 16}};
    analyzer_.Bind(i_, Range{Expr(0), Expr(1)});
    analyzer_.Bind(j_, Range{Expr(0), Expr(1)});
    accesses_ = {{a_, {i_, j_}, /*is_write=*/true}, {x_, {j_}, /*is_write=*/false}};
  }

  AccessFeatures Compute() {
    return ComputeAccessFeatures(accesses_, loops_, /*prod=*/64, &analyzer_, &touched_);
  }
  const float* SlotOf(const AccessFeatures& f, int slot) {
    return f.values.data() + slot * kPerBuffer;
  }

  Var i_{"i"}, j_{"j"};
  Buffer a_ = Buffer::Make("A", DataType::Float32(), {Expr(4), Expr(16)});
  Buffer x_ = Buffer::Make("x", DataType::Float32(), {Expr(16)});
  Stmt inner_, outer_;
  std::vector<LoopInfo> loops_;
  std::vector<Access> accesses_;
  arith::Analyzer analyzer_;
  TouchedLists touched_;
};

TEST_F(ComputeAccessFeaturesTest, BytesTouchedUnderEachLoopLevel) {
  AccessFeatures f = Compute();
  // All loops relaxed: A 64 + x 16 elements; only j: 16 + 16; none: 1 + 1 (4 bytes each).
  EXPECT_EQ(f.touched_bytes, (std::vector<double>{320, 128, 8}));
  ASSERT_EQ(f.boxes.size(), 2u);
  EXPECT_TRUE(f.boxes[0].buffer.same_as(a_));
  EXPECT_EQ(f.boxes[0].extents, (std::vector<std::vector<int64_t>>{{4, 16}, {1, 16}, {1, 1}}));
  EXPECT_EQ(f.boxes[1].extents, (std::vector<std::vector<int64_t>>{{16}, {16}, {1}}));
}

TEST_F(ComputeAccessFeaturesTest, WrittenBufferHasNoReuseAndUnitStride) {
  AccessFeatures f = Compute();
  ASSERT_EQ(f.values.size(), static_cast<size_t>(kGroup2));
  // Equal lines (4) and bytes (256): the slots are in name order, A then x.
  const float* a = SlotOf(f, 0);
  EXPECT_EQ(a[kWrite], 1);
  EXPECT_EQ(a[kRead], 0);
  EXPECT_EQ(a[kReadWrite], 0);
  EXPECT_FLOAT_EQ(a[kBytes], Slog(64 * 4));
  EXPECT_FLOAT_EQ(a[kUniqueBytes], Slog(64 * 4));
  EXPECT_FLOAT_EQ(a[kLines], Slog(64 * 4 / 64.0));  // unit stride: one line per 16 floats
  EXPECT_FLOAT_EQ(a[kUniqueLines], Slog(4));        // 256 bytes in rows of 64 bytes
  EXPECT_EQ(a[kNoReuse], 1);
  EXPECT_FLOAT_EQ(a[kInnermostStride], Slog(1));
}

TEST_F(ComputeAccessFeaturesTest, BufferNotIndexedByALoopIsReusedAcrossIt) {
  AccessFeatures f = Compute();
  const float* x = SlotOf(f, 1);
  EXPECT_EQ(x[kRead], 1);
  EXPECT_FLOAT_EQ(x[kUniqueBytes], Slog(16 * 4));
  EXPECT_FLOAT_EQ(x[kUniqueLines], Slog(1));
  EXPECT_EQ(x[kLoopReuse], 1);                    // the i loop does not move x
  EXPECT_FLOAT_EQ(x[kReuseCount], Slog(4));       // i's extent
  EXPECT_FLOAT_EQ(x[kReuseDisIter], Slog(16));    // the iterations of j in between
  EXPECT_FLOAT_EQ(x[kReuseDisBytes], Slog(128));  // bytes touched under j
  for (int slot = 2; slot < kBuffersPerStore; ++slot) {
    for (int v = 0; v < kPerBuffer; ++v) EXPECT_EQ(SlotOf(f, slot)[v], 0) << slot << "/" << v;
  }
}

TEST_F(ComputeAccessFeaturesTest, SecondStoreTouchingTheSameBufferIsSerialReuse) {
  Compute();  // the first store under these loops
  accesses_ = {{x_, {j_}, /*is_write=*/true}};
  AccessFeatures f =
      ComputeAccessFeatures(accesses_, {loops_[1]}, /*prod=*/16, &analyzer_, &touched_);
  const float* x = SlotOf(f, 0);
  EXPECT_EQ(x[kWrite], 1);
  EXPECT_EQ(x[kSerialReuse], 1);
  EXPECT_FLOAT_EQ(x[kReuseCount], Slog(1));     // one earlier store
  EXPECT_FLOAT_EQ(x[kReuseDisIter], Slog(1));   // 16 elements over j's 16 iterations
  EXPECT_FLOAT_EQ(x[kReuseDisBytes], Slog(4));  // 64 bytes over 16 iterations
}

TEST_F(ComputeAccessFeaturesTest, LeavesTheLoopVariablesBoundToZero) {
  Compute();
  EXPECT_EQ(analyzer_.ConstIntBound(i_).max, 0);
  EXPECT_EQ(analyzer_.ConstIntBound(j_).max, 0);
  EXPECT_EQ(touched_.size(), 4u);  // (loop, buffer) for both loops and both buffers
}

}  // namespace
}  // namespace features_internal
}  // namespace tessera
