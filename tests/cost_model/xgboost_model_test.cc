// Tests of cost_model/xgboost_model.cc: the XGBoost model ranks really measured GMM schedules
// better than chance, and its policies (warm-up, adaptive retraining, persistence) hold. The
// random model's tests are in random_model_test.cc.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/random.h"
#include "cost_model/cost_model.h"
#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "tests/cost_model/gmm_schedules.h"
#include "worker/builder.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace {

constexpr double kFailureCost = 1e10;

Target Cpu() { return *Target::Parse("cpu"); }

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid());
}

// Kendall's tau between two score lists (no tie correction).
double KendallTau(const std::vector<double>& a, const std::vector<double>& b) {
  int64_t concordant = 0, discordant = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double s = (a[i] - a[j]) * (b[i] - b[j]);
      concordant += s > 0;
      discordant += s < 0;
    }
  }
  const double pairs = static_cast<double>(a.size() * (a.size() - 1) / 2);
  return static_cast<double>(concordant - discordant) / pairs;
}

std::vector<size_t> TopK(const std::vector<double>& scores, size_t k) {
  std::vector<size_t> idx(scores.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t x, size_t y) { return scores[x] > scores[y]; });
  idx.resize(std::min(k, idx.size()));
  return idx;
}

// Runs first in this binary: the CPU runner forks, so no XGBoost (OpenMP) code may have run.
TEST(XGBoostModelTest, RanksMeasuredGmmSchedulesBetterThanChance) {
  const auto start = std::chrono::steady_clock::now();
  const PrimFunc gmm = testing::GmmFunc(128);
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  ASSERT_TRUE(target.ok()) << target.status();
  std::vector<PrimFunc> funcs;
  std::set<std::string> keys;
  for (int64_t seed = 1; funcs.size() < 160 && seed < 5000; ++seed) {
    absl::StatusOr<testing::TiledGmm> t = testing::RandomTiledGmm(gmm, seed, /*parallel=*/false);
    ASSERT_TRUE(t.ok()) << t.status();
    if (keys.insert(t->key).second) funcs.push_back(t->schedule.func());
  }
  ASSERT_EQ(funcs.size(), 160u);

  std::vector<BuildInput> inputs;
  for (const PrimFunc& f : funcs) inputs.push_back({f, *target});
  std::unique_ptr<Builder> builder = NewCBuilder();  // artifacts live as long as it does
  std::vector<BuildResult> built = builder->Build(inputs);
  std::vector<RunInput> runs;
  for (const BuildResult& b : built) {
    ASSERT_TRUE(b.ok()) << b.error_msg;
    runs.push_back({b.artifact_path, b.symbol, ArgInfosOf(gmm)});
  }
  RunnerConfig config;
  config.warmup = 1;
  config.number = 3;
  config.repeat = 3;
  config.timeout_sec = 10;
  config.seed = 1;
  std::vector<RunResult> results = NewCpuRunner()->Run(runs, config);
  for (const RunResult& r : results) ASSERT_TRUE(r.ok()) << r.error_msg;
  const double measured_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<CostSample> samples;
  for (size_t i = 0; i < funcs.size(); ++i) {
    CostSample s;
    s.group = "gmm128";
    s.features = *ExtractFeatures(funcs[i], *target);
    std::vector<double> secs = results[i].run_secs;
    std::sort(secs.begin(), secs.end());
    s.cost_secs = results[i].ok() && !secs.empty() ? secs[secs.size() / 2] : kFailureCost;
    samples.push_back(std::move(s));
  }
  Random rng(7);
  rng.Shuffle(&samples);
  std::vector<CostSample> train(samples.begin(), samples.begin() + 120);
  std::vector<CostSample> held_out(samples.begin() + 120, samples.end());

  std::unique_ptr<CostModel> model = NewXGBoostModel();
  ASSERT_TRUE(model->Update(train).ok());
  EXPECT_EQ(model->size(), 120);
  std::vector<FeatureMatrix> features;
  std::vector<double> throughput;
  for (const CostSample& s : held_out) {
    features.push_back(s.features);
    throughput.push_back(1 / s.cost_secs);
  }
  absl::StatusOr<std::vector<double>> scores = model->Predict(features);
  ASSERT_TRUE(scores.ok()) << scores.status();
  const double tau = KendallTau(*scores, throughput);
  int hits = 0;
  for (size_t p : TopK(*scores, 5)) {
    for (size_t t : TopK(throughput, 5)) hits += p == t;
  }
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "160 GMM 128^3 schedules built and measured in %.1f s (total %.1f s); "
      "held-out 40: Kendall tau %.3f, top-5 recall %d/5\n",
      measured_s, total_s, tau, hits);
  EXPECT_GT(tau, 0);
}

// Features of tiled GMM schedules with a made-up cost that depends on them.
std::vector<CostSample> SyntheticSamples(int n, int64_t first_seed, bool reversed = false) {
  const PrimFunc gmm = testing::GmmFunc(128);
  std::vector<CostSample> samples;
  for (int64_t seed = first_seed; static_cast<int>(samples.size()) < n; ++seed) {
    absl::StatusOr<testing::TiledGmm> t = testing::RandomTiledGmm(gmm, seed, /*parallel=*/true);
    TESSERA_CHECK(t.ok()) << t.status().message();
    CostSample s;
    s.group = "gmm";
    s.features = *ExtractFeatures(t->schedule.func(), Cpu());
    const double lines = s.features.row(0)[57 + 5];  // slot 0 cache lines (slog)
    s.cost_secs = 1e-3 * (reversed ? 40 - lines : 1 + lines);
    samples.push_back(std::move(s));
  }
  return samples;
}

std::vector<FeatureMatrix> FeaturesOf(const std::vector<CostSample>& samples) {
  std::vector<FeatureMatrix> out;
  for (const CostSample& s : samples) out.push_back(s.features);
  return out;
}

TEST(XGBoostModelTest, RandomScoresBeforeWarmup) {
  std::unique_ptr<CostModel> model = NewXGBoostModel();  // 100 warm-up samples
  const std::vector<FeatureMatrix> probe = FeaturesOf(SyntheticSamples(10, 1000));
  ASSERT_TRUE(model->Update(SyntheticSamples(50, 1)).ok());
  EXPECT_FALSE(model->UsesFeatures());  // not trained before the warm-up samples
  std::vector<double> a = *model->Predict(probe), b = *model->Predict(probe);
  for (double s : a) {
    EXPECT_GE(s, 0);
    EXPECT_LT(s, 1);
  }
  EXPECT_NE(a, b);  // fresh random numbers each time
  ASSERT_TRUE(model->Update(SyntheticSamples(60, 100)).ok());
  EXPECT_EQ(model->size(), 110);
  EXPECT_TRUE(model->UsesFeatures());
  EXPECT_EQ(*model->Predict(probe), *model->Predict(probe));  // the booster now
  // Scores do not depend on the features before the warm-up either: empty matrices will do.
  std::unique_ptr<CostModel> fresh = NewXGBoostModel();
  EXPECT_EQ(fresh->Predict({FeatureMatrix(), FeatureMatrix()})->size(), 2u);
  EXPECT_FALSE(NewRandomModel(1)->UsesFeatures());
}

// Early stopping counts only relative p-rmse gains of at least early_stopping_min_delta: the
// training error stops improving in a few dozen rounds and then creeps down by float noise for
// thousands, which the reference rule (min_delta 0) keeps training for.
TEST(XGBoostModelTest, EarlyStoppingIgnoresNegligibleTrainingGains) {
  // Candidates of several rows (as ones with cache stages are) and noisy costs: the pack-sum
  // training error can only creep towards its floor.
  std::vector<CostSample> samples = SyntheticSamples(120, 1);
  const std::vector<CostSample> extra = SyntheticSamples(120, 5000);
  Random noise(5);
  for (size_t i = 0; i < samples.size(); ++i) {
    FeatureMatrix& f = samples[i].features;
    f.values.insert(f.values.end(), extra[i].features.values.begin(),
                    extra[i].features.values.end());
    f.rows += extra[i].features.rows;
    samples[i].cost_secs *= 1 + 0.5 * noise.UniformReal();
  }
  const std::vector<FeatureMatrix> probe = FeaturesOf(SyntheticSamples(20, 1000));
  XGBoostConfig reference;
  reference.early_stopping_min_delta = 0;
  reference.max_boost_rounds = 1000;
  auto timed_update = [&](CostModel* model) {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(model->Update(samples).ok());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::unique_ptr<CostModel> full = NewXGBoostModel(reference);
  std::unique_ptr<CostModel> fast = NewXGBoostModel();
  const double full_s = timed_update(full.get());
  const double fast_s = timed_update(fast.get());
  const std::string full_path = TempPath("xgb_full"), fast_path = TempPath("xgb_fast");
  ASSERT_TRUE(full->Save(full_path).ok());
  ASSERT_TRUE(fast->Save(fast_path).ok());
  const auto full_bytes = std::filesystem::file_size(full_path);
  const auto fast_bytes = std::filesystem::file_size(fast_path);
  std::printf(
      "training on 120 samples: %.2f s (min_delta 0) vs %.2f s (default); model files "
      "%ju vs %ju bytes\n",
      full_s, fast_s, static_cast<uintmax_t>(full_bytes), static_cast<uintmax_t>(fast_bytes));
  EXPECT_LT(fast_bytes, full_bytes);  // fewer trees
  const std::vector<double> a = *full->Predict(probe), b = *fast->Predict(probe);
  std::vector<double> truth;
  for (const CostSample& s : SyntheticSamples(20, 1000)) truth.push_back(1 / s.cost_secs);
  EXPECT_GT(KendallTau(b, truth), 0);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.05) << i;
  std::remove(full_path.c_str());
  std::remove(fast_path.c_str());
}

TEST(XGBoostModelTest, RetrainsOnlyAfterTwentyPercentNewData) {
  XGBoostConfig config;
  config.num_warmup_samples = 0;
  std::unique_ptr<CostModel> model = NewXGBoostModel(config);
  const std::vector<FeatureMatrix> probe = FeaturesOf(SyntheticSamples(20, 1000));
  ASSERT_TRUE(model->Update(SyntheticSamples(100, 1)).ok());
  const std::vector<double> trained = *model->Predict(probe);
  // 19 new samples (< 20% of 100): the booster is kept.
  std::vector<CostSample> more = SyntheticSamples(20, 2000, /*reversed=*/true);
  ASSERT_TRUE(model->Update({more.begin(), more.begin() + 19}).ok());
  EXPECT_EQ(model->size(), 119);
  EXPECT_EQ(*model->Predict(probe), trained);
  // The 20th: retrained from scratch on all 120.
  ASSERT_TRUE(model->Update({more.back()}).ok());
  EXPECT_EQ(model->size(), 120);
  EXPECT_NE(*model->Predict(probe), trained);
}

TEST(XGBoostModelTest, KeepsFailuresDropsEmptyCandidates) {
  XGBoostConfig config;
  config.num_warmup_samples = 0;
  const std::vector<CostSample> samples = SyntheticSamples(30, 1);
  const std::vector<FeatureMatrix> probe = FeaturesOf(SyntheticSamples(10, 1000));
  std::unique_ptr<CostModel> plain = NewXGBoostModel(config);
  ASSERT_TRUE(plain->Update(samples).ok());
  // A failure is kept with label ~0 and weight ~0: it barely moves the predictions (only
  // through the unweighted p-rmse that picks the stopping round). An empty one is dropped.
  std::vector<CostSample> more = samples;
  more.push_back(SyntheticSamples(1, 500)[0]);
  more.back().cost_secs = kFailureCost;
  more.push_back(CostSample{"gmm", FeatureMatrix(), 1e-3});
  std::unique_ptr<CostModel> with_failure = NewXGBoostModel(config);
  ASSERT_TRUE(with_failure->Update(more).ok());
  EXPECT_EQ(with_failure->size(), 31);
  const std::vector<double> a = *plain->Predict(probe), b = *with_failure->Predict(probe);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.1) << i;
}

TEST(XGBoostModelTest, SaveLoadRoundTripPredictsTheSame) {
  XGBoostConfig config;
  config.num_warmup_samples = 10;
  std::unique_ptr<CostModel> model = NewXGBoostModel(config);
  ASSERT_TRUE(model->Update(SyntheticSamples(40, 1)).ok());
  const std::vector<FeatureMatrix> probe = FeaturesOf(SyntheticSamples(10, 1000));
  const std::string path = TempPath("xgb_model");
  ASSERT_TRUE(model->Save(path).ok());
  std::unique_ptr<CostModel> loaded = NewXGBoostModel(config);
  absl::Status s = loaded->Load(path);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(loaded->size(), 40);
  EXPECT_EQ(*loaded->Predict(probe), *model->Predict(probe));
  // The loaded samples take part in the next retraining, as the original's do.
  const std::vector<CostSample> more = SyntheticSamples(10, 3000);
  ASSERT_TRUE(model->Update(more).ok());
  ASSERT_TRUE(loaded->Update(more).ok());
  EXPECT_EQ(*loaded->Predict(probe), *model->Predict(probe));
  std::remove(path.c_str());
}

TEST(XGBoostModelTest, LoadErrorsNameTheFile) {
  std::unique_ptr<CostModel> model = NewXGBoostModel();
  const std::string missing = TempPath("no_such_model");
  absl::Status s = model->Load(missing);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(s.message().find(missing), absl::string_view::npos) << s;
  const std::string garbage = TempPath("garbage_model");
  std::ofstream(garbage) << "TESSERA-XGB 1\nshort";
  s = model->Load(garbage);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find(garbage), absl::string_view::npos) << s;
  std::remove(garbage.c_str());
}

TEST(XGBoostModelTest, RejectsMalformedFeatures) {
  std::unique_ptr<CostModel> model = NewXGBoostModel();
  FeatureMatrix bad;
  bad.rows = 2;
  bad.values.assign(kFeatureDim, 0.0f);
  EXPECT_EQ(model->Update({CostSample{"g", bad, 1e-3}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->Predict({bad}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(model->size(), 0);
}

}  // namespace
}  // namespace tessera
