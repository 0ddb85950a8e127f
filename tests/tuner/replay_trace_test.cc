// ReplayTrace (tuner/replay_trace.cc) without a compiler: batches of fresh samples of the design
// spaces, driven with a scripted measurer. Never the same program twice (in a run, or measured
// in an earlier one), the budget exact, the same candidates whatever the thread count, and a
// tiny space exhausted and reported by an empty batch.
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/scripted_measurer.h"
#include "tests/tuner/search_testing.h"
#include "tuner/search_strategy.h"

namespace tessera {
namespace {

using search_testing::NewSearchTask;
using search_testing::NewSetup;
using search_testing::RunSearch;
using search_testing::SearchSetup;
using testing::ScriptedMeasurer;

std::unique_ptr<SearchSetup> SmallGmm() {
  return NewSetup("GMM", {{"M", 64}, {"N", 64}, {"K", 64}});
}

std::set<std::string> Flatten(const std::vector<std::vector<std::string>>& batches) {
  std::set<std::string> out;
  for (const std::vector<std::string>& b : batches) out.insert(b.begin(), b.end());
  return out;
}

size_t Total(const std::vector<std::vector<std::string>>& batches) {
  size_t n = 0;
  for (const std::vector<std::string>& b : batches) n += b.size();
  return n;
}

TEST(ReplayTraceTest, SpendsExactlyItsBudgetInBatchesAndNeverProposesAProgramTwice) {
  std::unique_ptr<SearchSetup> s = SmallGmm();
  std::unique_ptr<SearchStrategy> replay = NewReplayTrace();
  ASSERT_TRUE(replay->PreTuning(NewSearchTask(*s, 7), /*max_trials=*/20, 8).ok());
  ScriptedMeasurer measurer;
  std::vector<std::vector<std::string>> batches = RunSearch(s.get(), replay.get(), &measurer);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0].size(), 8u);
  EXPECT_EQ(batches[1].size(), 8u);
  EXPECT_EQ(batches[2].size(), 4u);
  EXPECT_EQ(Flatten(batches).size(), 20u) << "a program was proposed twice";
  for (const auto& [hash, times] : measurer.measured()) EXPECT_EQ(times, 1) << hash;
  // Spent: every later batch is empty.
  absl::StatusOr<std::vector<MeasureCandidate>> after = replay->GenerateCandidates();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->empty());
  EXPECT_GE(replay->stats().sampled, 20);
}

TEST(ReplayTraceTest, SkipsProgramsMeasuredBeforeThisRun) {
  std::unique_ptr<SearchSetup> s = SmallGmm();
  ScriptedMeasurer measurer;
  std::unique_ptr<SearchStrategy> first = NewReplayTrace();
  ASSERT_TRUE(first->PreTuning(NewSearchTask(*s, 7), 24, 8).ok());
  const std::set<std::string> before = Flatten(RunSearch(s.get(), first.get(), &measurer));
  ASSERT_EQ(before.size(), 24u);

  // The same seed again: without the history it would propose the very same programs.
  SearchTask task = NewSearchTask(*s, 7);
  task.measured_hashes.insert(before.begin(), before.end());
  std::unique_ptr<SearchStrategy> second = NewReplayTrace();
  ASSERT_TRUE(second->PreTuning(task, 24, 8).ok());
  std::vector<std::vector<std::string>> batches = RunSearch(s.get(), second.get(), &measurer);
  EXPECT_EQ(Total(batches), 24u);
  for (const std::string& hash : Flatten(batches)) EXPECT_EQ(before.count(hash), 0u) << hash;
  for (const auto& [hash, times] : measurer.measured()) EXPECT_EQ(times, 1) << hash;
}

TEST(ReplayTraceTest, SameSeedSameCandidatesWhateverTheThreadCount) {
  std::vector<std::vector<std::vector<std::string>>> runs;
  for (int threads : {1, 2}) {
    std::unique_ptr<SearchSetup> s = SmallGmm();
    std::unique_ptr<SearchStrategy> replay = NewReplayTrace();
    ASSERT_TRUE(replay->PreTuning(NewSearchTask(*s, 3, threads), 16, 8).ok());
    ScriptedMeasurer measurer;
    runs.push_back(RunSearch(s.get(), replay.get(), &measurer));
  }
  ASSERT_EQ(Total(runs[0]), 16u);
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(ReplayTraceTest, ExhaustsATinySpaceAndSaysSoWithAnEmptyBatch) {
  std::unique_ptr<SearchSetup> s = NewSetup("REDUCE_SUM", {{"M", 4}, {"N", 16}});
  std::unique_ptr<SearchStrategy> replay = NewReplayTrace(/*max_fail_count=*/20);
  ASSERT_TRUE(replay->PreTuning(NewSearchTask(*s, 1), /*max_trials=*/1000, 8).ok());
  ScriptedMeasurer measurer;
  std::vector<std::vector<std::string>> batches = RunSearch(s.get(), replay.get(), &measurer);
  const std::set<std::string> proposed = Flatten(batches);
  std::printf("tiny space: %zu programs in %zu batches\n", proposed.size(), batches.size());
  EXPECT_GT(batches.size(), 1u);
  EXPECT_LT(proposed.size(), 1000u) << "the space is not tiny";
  EXPECT_EQ(Total(batches), proposed.size()) << "a program was proposed twice";
  // Exhausted: fresh samples with another seed find nothing that was not proposed.
  std::unique_ptr<SearchStrategy> other = NewReplayTrace(/*max_fail_count=*/1);
  ASSERT_TRUE(other->PreTuning(NewSearchTask(*s, 99), 64, 64).ok());
  absl::StatusOr<std::vector<MeasureCandidate>> fresh = other->GenerateCandidates();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_FALSE(fresh->empty());
  for (const MeasureCandidate& c : *fresh) EXPECT_EQ(proposed.count(c.hash), 1u) << c.hash;
}

TEST(ReplayTraceTest, RejectsATaskWithoutDesignSpaces) {
  std::unique_ptr<SearchSetup> s = SmallGmm();
  SearchTask task = NewSearchTask(*s, 1);
  task.design_spaces.clear();
  absl::Status status = NewReplayTrace()->PreTuning(task, 8, 8);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("replay"), std::string::npos) << status;
}

}  // namespace
}  // namespace tessera
