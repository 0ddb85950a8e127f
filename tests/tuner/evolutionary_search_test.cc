// EvolutionarySearch (tuner/evolutionary_search.cc) without a compiler, driven with a scripted
// measurer and a scripted cost model: never the same program twice (in a run, or measured in an
// earlier one), the budget exact, candidates ranked by the cost model once it has samples,
// warm-up batches partly spent on the seeds' neighbourhood, and a tiny space exhausted and
// reported by an empty batch.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "cost_model/cost_model.h"
#include "cost_model/features.h"
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

// Scores a program by a hash of its features, in [0, 1): deterministic, and different across
// programs. Uses the features once it holds a sample, as XGBoost does after its warm-up.
class ScriptedModel : public CostModel {
 public:
  std::string name() const override { return "scripted"; }
  absl::Status Update(const std::vector<CostSample>& samples) override {
    size_ += static_cast<int64_t>(samples.size());
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<double>> Predict(
      const std::vector<FeatureMatrix>& candidates) override {
    std::vector<double> scores;
    for (const FeatureMatrix& f : candidates) scores.push_back(Score(f));
    return scores;
  }
  bool UsesFeatures() const override { return size_ > 0; }
  int64_t size() const override { return size_; }
  absl::Status Save(const std::string&) const override { return absl::OkStatus(); }
  absl::Status Load(const std::string&) override { return absl::OkStatus(); }

  static double Score(const FeatureMatrix& f) {
    uint64_t h = static_cast<uint64_t>(f.rows);
    for (float v : f.values) h = h * 1000003 + std::hash<float>()(v);
    return static_cast<double>(h % 1000) / 1000;
  }

 private:
  int64_t size_ = 0;
};

EvolutionaryConfig SmallConfig() {
  EvolutionaryConfig config;
  config.population_size = 64;
  config.init_min_unmeasured = 16;
  config.warmup_population_size = 32;
  return config;
}

std::unique_ptr<SearchSetup> SmallGmm(std::unique_ptr<CostModel> model = nullptr) {
  return NewSetup("GMM", {{"M", 64}, {"N", 64}, {"K", 64}}, std::move(model));
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

TEST(EvolutionarySearchTest, SpendsExactlyItsBudgetAndNeverProposesAProgramTwice) {
  std::unique_ptr<SearchSetup> s = SmallGmm();
  std::unique_ptr<SearchStrategy> search = NewEvolutionarySearch(SmallConfig());
  ASSERT_TRUE(search->PreTuning(NewSearchTask(*s, 7), /*max_trials=*/28, 8).ok());
  ScriptedMeasurer measurer;
  std::vector<std::vector<std::string>> batches = RunSearch(s.get(), search.get(), &measurer);
  ASSERT_EQ(batches.size(), 4u);
  for (size_t b = 0; b < 3; ++b) EXPECT_EQ(batches[b].size(), 8u) << "batch " << b;
  EXPECT_EQ(batches[3].size(), 4u);
  EXPECT_EQ(Flatten(batches).size(), 28u) << "a program was proposed twice";
  for (const auto& [hash, times] : measurer.measured()) EXPECT_EQ(times, 1) << hash;
  absl::StatusOr<std::vector<MeasureCandidate>> after = search->GenerateCandidates();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->empty());
  EXPECT_GT(search->stats().sampled, 0);
}

TEST(EvolutionarySearchTest, SkipsProgramsMeasuredBeforeThisRun) {
  std::unique_ptr<SearchSetup> s = SmallGmm();
  ScriptedMeasurer measurer;
  std::unique_ptr<SearchStrategy> first = NewEvolutionarySearch(SmallConfig());
  ASSERT_TRUE(first->PreTuning(NewSearchTask(*s, 7), 16, 8).ok());
  const std::set<std::string> before = Flatten(RunSearch(s.get(), first.get(), &measurer));
  ASSERT_EQ(before.size(), 16u);

  // The same seed, and the database's best records in the population: without the history it
  // would propose programs of the first run again.
  SearchTask task = NewSearchTask(*s, 7);
  task.measured_hashes.insert(before.begin(), before.end());
  std::unique_ptr<SearchStrategy> second = NewEvolutionarySearch(SmallConfig());
  ASSERT_TRUE(second->PreTuning(task, 16, 8).ok());
  std::vector<std::vector<std::string>> batches = RunSearch(s.get(), second.get(), &measurer);
  EXPECT_EQ(Total(batches), 16u);
  for (const std::string& hash : Flatten(batches)) EXPECT_EQ(before.count(hash), 0u) << hash;
  for (const auto& [hash, times] : measurer.measured()) EXPECT_EQ(times, 1) << hash;
}

// Once the model has samples, the search keeps the best predicted programs of an evolved
// population: its batch scores higher under the model than fresh random samples do.
TEST(EvolutionarySearchTest, ProposesBetterPredictedCandidatesThanRandomOnceTheModelHasSamples) {
  std::unique_ptr<SearchSetup> s = SmallGmm(std::make_unique<ScriptedModel>());
  ScriptedMeasurer measurer;
  // One random batch teaches the model (and fills the database).
  std::unique_ptr<SearchStrategy> warmup = NewReplayTrace();
  ASSERT_TRUE(warmup->PreTuning(NewSearchTask(*s, 1), 16, 16).ok());
  const std::vector<std::vector<std::string>> measured =
      RunSearch(s.get(), warmup.get(), &measurer);
  ASSERT_EQ(Total(measured), 16u);
  ASSERT_TRUE(s->model->UsesFeatures());

  auto mean_score = [&](const std::vector<MeasureCandidate>& batch) {
    double sum = 0;
    for (const MeasureCandidate& c : batch) {
      sum += ScriptedModel::Score(*ExtractFeatures(c.sch.func(), s->target));
    }
    return sum / static_cast<double>(batch.size());
  };
  const std::set<std::string> seen = Flatten(measured);
  auto task = [&](int64_t seed) {
    SearchTask t = NewSearchTask(*s, seed);
    t.measured_hashes.insert(seen.begin(), seen.end());
    return t;
  };
  for (int64_t seed : {2, 3, 4}) {
    SCOPED_TRACE(seed);
    std::unique_ptr<SearchStrategy> search = NewEvolutionarySearch(SmallConfig());
    ASSERT_TRUE(search->PreTuning(task(seed), 8, 8).ok());
    absl::StatusOr<std::vector<MeasureCandidate>> evolved = search->GenerateCandidates();
    ASSERT_TRUE(evolved.ok()) << evolved.status();
    ASSERT_EQ(evolved->size(), 8u);
    std::unique_ptr<SearchStrategy> random = NewReplayTrace();
    ASSERT_TRUE(random->PreTuning(task(seed), 8, 8).ok());
    absl::StatusOr<std::vector<MeasureCandidate>> sampled = random->GenerateCandidates();
    ASSERT_TRUE(sampled.ok()) << sampled.status();
    ASSERT_EQ(sampled->size(), 8u);
    const double evolved_score = mean_score(*evolved), random_score = mean_score(*sampled);
    std::printf("mean predicted score: evolved %.3f, random %.3f\n", evolved_score, random_score);
    // The best 8 of a population of 64 average about 0.94 on a uniform score, 8 random 0.5.
    EXPECT_GT(evolved_score, 0.75);
    EXPECT_GT(evolved_score, random_score + 0.15);
    for (const MeasureCandidate& c : *evolved) EXPECT_EQ(seen.count(c.hash), 0u) << c.hash;
  }
}

// Whether `candidate`'s trace is `seed`'s with exactly one decision changed: a single mutation.
bool IsNeighbour(const Trace& seed, const MeasureCandidate& candidate) {
  const nlohmann::json a = nlohmann::json::parse(seed.ToJson(/*remove_postproc=*/true));
  const nlohmann::json b = nlohmann::json::parse(candidate.sch.trace().ToJson(true));
  if (a[0] != b[0] || a[1].size() != b[1].size()) return false;
  int differ = 0;
  for (size_t i = 0; i < a[1].size(); ++i) differ += a[1][i] != b[1][i];
  return differ == 1;
}

// While the cost model is random, a share of each batch (warmup_neighbour_ratio) is single
// mutations of the task's seeds (the tuning job's default schedule); random samples of the
// space almost never are.
TEST(EvolutionarySearchTest, WarmUpBatchesExploreTheSeedsNeighbourhood) {
  std::unique_ptr<SearchSetup> s = SmallGmm();
  std::unique_ptr<SearchStrategy> sampler = NewReplayTrace();
  ASSERT_TRUE(sampler->PreTuning(NewSearchTask(*s, 11), 1, 1).ok());
  absl::StatusOr<std::vector<MeasureCandidate>> sampled = sampler->GenerateCandidates();
  ASSERT_TRUE(sampled.ok() && sampled->size() == 1u);
  const Trace seed = (*sampled)[0].sch.trace();
  auto neighbours = [&](double ratio) {
    EvolutionaryConfig config = SmallConfig();
    config.warmup_neighbour_ratio = ratio;
    SearchTask task = NewSearchTask(*s, 3);
    task.seeds = {seed};
    std::unique_ptr<SearchStrategy> search = NewEvolutionarySearch(config);
    EXPECT_TRUE(search->PreTuning(task, 16, 16).ok());
    absl::StatusOr<std::vector<MeasureCandidate>> batch = search->GenerateCandidates();
    EXPECT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->size(), 16u);
    int n = 0;
    for (const MeasureCandidate& c : *batch) n += IsNeighbour(seed, c);
    return n;
  };
  EXPECT_GE(neighbours(0.5), 8);
  EXPECT_LE(neighbours(0), 1);
}

TEST(EvolutionarySearchTest, ExhaustsATinySpaceAndSaysSoWithAnEmptyBatch) {
  std::unique_ptr<SearchSetup> s = NewSetup("REDUCE_SUM", {{"M", 4}, {"N", 16}});
  std::unique_ptr<SearchStrategy> search = NewEvolutionarySearch(SmallConfig());
  ASSERT_TRUE(search->PreTuning(NewSearchTask(*s, 1), /*max_trials=*/1000, 8).ok());
  ScriptedMeasurer measurer;
  std::vector<std::vector<std::string>> batches = RunSearch(s.get(), search.get(), &measurer);
  const std::set<std::string> proposed = Flatten(batches);
  std::printf("tiny space: %zu programs in %zu batches\n", proposed.size(), batches.size());
  EXPECT_LT(proposed.size(), 1000u) << "the space is not tiny";
  EXPECT_EQ(Total(batches), proposed.size()) << "a program was proposed twice";
  EXPECT_GT(batches.size(), 1u);
  // Exhausted: fresh samples with another seed find nothing that was not proposed.
  std::unique_ptr<SearchStrategy> replay = NewReplayTrace(/*max_fail_count=*/1);
  ASSERT_TRUE(replay->PreTuning(NewSearchTask(*s, 99), 64, 64).ok());
  absl::StatusOr<std::vector<MeasureCandidate>> fresh = replay->GenerateCandidates();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ASSERT_FALSE(fresh->empty());
  for (const MeasureCandidate& c : *fresh) EXPECT_EQ(proposed.count(c.hash), 1u) << c.hash;
  // Asked again, it still has nothing to propose.
  absl::StatusOr<std::vector<MeasureCandidate>> again = search->GenerateCandidates();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->empty());
}

TEST(EvolutionarySearchTest, RejectsATaskWithoutDesignSpacesOrCostModel) {
  std::unique_ptr<SearchSetup> s = SmallGmm();
  SearchTask task = NewSearchTask(*s, 1);
  task.design_spaces.clear();
  absl::Status status = NewEvolutionarySearch()->PreTuning(task, 8, 8);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("design space"), std::string::npos) << status;
  task = NewSearchTask(*s, 1);
  task.cost_model = nullptr;
  status = NewEvolutionarySearch()->PreTuning(task, 8, 8);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("cost model"), std::string::npos) << status;
}

}  // namespace
}  // namespace tessera
