// The pieces the search strategies share (tuner/search_util.cc): ParallelFor's per-index
// generators (results depend on the seed only, never on the thread count), fresh samples with
// their hash and rejections, and the failure counts by stage.
#include "tuner/search_util.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/structural_hash.h"
#include "tests/tuner/search_testing.h"

namespace tessera {
namespace {

using search_testing::NewSearchTask;
using search_testing::NewSetup;
using search_testing::SearchSetup;

// What each index draws, and that every index ran exactly once.
std::vector<uint64_t> Draws(int n, int threads, int64_t seed) {
  Random rng(seed);
  std::vector<uint64_t> out(n, 0);
  std::vector<int> runs(n, 0);
  ParallelFor(n, threads, &rng, [&](int i, Random* r) {
    out[i] = r->Next();
    ++runs[i];
  });
  for (int i = 0; i < n; ++i) EXPECT_EQ(runs[i], 1) << "index " << i;
  return out;
}

TEST(SearchUtilTest, ParallelForDrawsDependOnTheSeedOnlyNotOnTheThreadCount) {
  const std::vector<uint64_t> one = Draws(37, 1, 5);
  EXPECT_EQ(Draws(37, 2, 5), one);
  EXPECT_EQ(Draws(37, 8, 5), one);
  EXPECT_EQ(Draws(37, 100, 5), one);  // more threads than indices
  EXPECT_NE(Draws(37, 1, 6), one);
  EXPECT_EQ(std::set<uint64_t>(one.begin(), one.end()).size(), one.size())
      << "two indices drew the same number";
  EXPECT_TRUE(Draws(0, 4, 5).empty());
}

TEST(SearchUtilTest, ParallelForAdvancesTheCallersGeneratorTheSameWhateverTheThreadCount) {
  Random a(9), b(9);
  ParallelFor(10, 1, &a, [](int, Random*) {});
  ParallelFor(10, 3, &b, [](int, Random*) {});
  EXPECT_EQ(a.state(), b.state());
  EXPECT_NE(a.state(), Random(9).state());
}

TEST(SearchUtilTest, SampleFreshGivesACandidateWithItsStructuralHash) {
  std::unique_ptr<SearchSetup> s = NewSetup("GMM", {{"M", 32}, {"N", 32}, {"K", 32}});
  const SearchTask task = NewSearchTask(*s, 1);
  Random rng(3);
  std::vector<CandidateFailure> rejections;
  std::set<std::string> hashes;
  for (int i = 0; i < 8; ++i) {
    std::optional<MeasureCandidate> c = SampleFresh(task, &rng, &rejections);
    ASSERT_TRUE(c.has_value());
    EXPECT_EQ(c->hash, StructuralHashHex(c->sch.func()));
    hashes.insert(c->hash);
  }
  EXPECT_GT(hashes.size(), 1u) << "eight samples gave one program";
  for (const CandidateFailure& f : rejections) EXPECT_FALSE(f.stage.empty()) << f.message;
}

TEST(SearchUtilTest, CountFailuresCountsByStageAndSkipsSuccesses) {
  SearchStats stats;
  CountFailures(std::vector<CandidateFailure>{{"replay", "a"}, {}, {"VerifyGPUCode", "b"}}, &stats);
  CountFailures(std::vector<std::vector<CandidateFailure>>{{{"replay", "c"}}, {}, {{}, {}}},
                &stats);
  EXPECT_EQ(stats.rejected_by,
            (std::map<std::string, int64_t>{{"VerifyGPUCode", 1}, {"replay", 2}}));
}

}  // namespace
}  // namespace tessera
