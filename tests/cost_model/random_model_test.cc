// Tests of cost_model/random_model.cc: scores uniform in [0, 1) and deterministic under a seed,
// features never asked for, the sample count and the generator's state persisted so that a
// loaded model continues the same stream, and load errors that name the file.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cost_model/cost_model.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid());
}

// The random model reads no features: empty matrices are enough.
std::vector<CostSample> Samples(int n) {
  std::vector<CostSample> samples(n);
  for (int i = 0; i < n; ++i) {
    samples[i].group = "g";
    samples[i].cost_secs = 1e-3 * (i + 1);
  }
  return samples;
}

TEST(RandomModelTest, UniformDeterministicAndPersistent) {
  const std::vector<FeatureMatrix> probe(50);
  std::unique_ptr<CostModel> a = NewRandomModel(5), b = NewRandomModel(5);
  EXPECT_EQ(a->name(), "random");
  EXPECT_FALSE(a->UsesFeatures());
  std::vector<double> sa = *a->Predict(probe);
  EXPECT_EQ(sa, *b->Predict(probe));
  for (double s : sa) {
    EXPECT_GE(s, 0);
    EXPECT_LT(s, 1);
  }
  EXPECT_NE(sa, *a->Predict(probe));
  ASSERT_TRUE(a->Update(Samples(3)).ok());
  EXPECT_EQ(a->size(), 3);
  const std::string path = TempPath("random_model");
  ASSERT_TRUE(a->Save(path).ok());
  std::unique_ptr<CostModel> c = NewRandomModel(99);
  ASSERT_TRUE(c->Load(path).ok());
  EXPECT_EQ(c->size(), 3);
  EXPECT_EQ(*c->Predict(probe), *a->Predict(probe));
  std::remove(path.c_str());
}

TEST(RandomModelTest, DifferentSeedsGiveDifferentStreams) {
  const std::vector<FeatureMatrix> probe(20);
  EXPECT_NE(*NewRandomModel(1)->Predict(probe), *NewRandomModel(2)->Predict(probe));
  EXPECT_TRUE(NewRandomModel(1)->Predict({})->empty());
}

TEST(RandomModelTest, UpdatesAddUpTheSampleCount) {
  std::unique_ptr<CostModel> model = NewRandomModel(3);
  EXPECT_EQ(model->size(), 0);
  ASSERT_TRUE(model->Update(Samples(4)).ok());
  ASSERT_TRUE(model->Update(Samples(6)).ok());
  EXPECT_EQ(model->size(), 10);
}

TEST(RandomModelTest, LoadErrorsNameTheFile) {
  std::unique_ptr<CostModel> model = NewRandomModel(3);
  const std::string missing = TempPath("no_such_random_model");
  absl::Status status = model->Load(missing);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "cannot open cost model file " + missing);

  const std::string path = TempPath("not_a_random_model");
  for (const char* text : {"TESSERA-XGB 1 5 3\n", "TESSERA-RANDOM 2 5 3\n",
                           "TESSERA-RANDOM 1 0 3\n", "TESSERA-RANDOM 1 5 -1\n", "garbage"}) {
    std::ofstream(path, std::ios::trunc) << text;
    status = model->Load(path);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(status.message(), "cost model file " + path + ": not a Tessera random model") << text;
  }
  std::remove(path.c_str());
  EXPECT_EQ(model->size(), 0) << "a failed load leaves the model as it was";
}

}  // namespace
}  // namespace tessera
