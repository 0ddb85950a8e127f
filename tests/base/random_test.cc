#include "base/random.h"

#include <map>
#include <vector>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(RandomTest, SameSeedSameStream) {
  Random a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.Next(), b.Next());
}

TEST(RandomTest, FollowsParkMillerRecurrence) {
  Random rng(1);
  EXPECT_EQ(rng.Next(), 48271u);
  EXPECT_EQ(rng.Next(), 48271u * 48271u % Random::kModulus);
}

TEST(RandomTest, ZeroSeedBecomesOne) {
  Random zero(0), one(1);
  EXPECT_EQ(zero.Next(), one.Next());
}

TEST(RandomTest, ForkGivesIndependentDeterministicChildren) {
  Random a(7), b(7);
  Random child_a = a.Fork();
  Random child_b = b.Fork();
  EXPECT_EQ(child_a.Next(), child_b.Next());
  EXPECT_NE(child_a.state(), a.state());
}

TEST(RandomTest, UniformIntStaysInRangeAndCoversIt) {
  Random rng(3);
  std::map<int64_t, int> counts;
  for (int i = 0; i < 6000; ++i) {
    int64_t v = rng.UniformInt(-2, 4);
    ASSERT_GE(v, -2);
    ASSERT_LT(v, 4);
    ++counts[v];
  }
  ASSERT_EQ(counts.size(), 6u);
  for (const auto& [value, count] : counts) EXPECT_GT(count, 800) << value;
}

TEST(RandomTest, CategoricalFollowsWeights) {
  Random rng(5);
  std::vector<int> counts(3, 0);
  for (int i = 0; i < 10000; ++i) ++counts[rng.SampleCategorical({0.0, 1.0, 3.0})];
  EXPECT_EQ(counts[0], 0);
  EXPECT_NEAR(counts[2] / 10000.0, 0.75, 0.03);
}

TEST(RandomTest, UniformRealInUnitInterval) {
  Random rng(11);
  for (int i = 0; i < 1000; ++i) {
    double x = rng.UniformReal();
    ASSERT_GE(x, 0.0);
    ASSERT_LT(x, 1.0);
  }
}

}  // namespace
}  // namespace tessera
