// Cost models predict how fast a candidate is, from its features, so the search measures only
// promising ones. XGBoostModel follows MetaSchedule's XGBModel (docs/reference/metaschedule.md
// §6.1): per-task groups, labels = best cost in the task / cost, a pack-sum objective over the rows
// of a candidate, retraining after 20% new data, random scores (and no training) until 100
// samples. RandomModel
// scores uniformly at random (ablation).
#ifndef TESSERA_COST_MODEL_COST_MODEL_H_
#define TESSERA_COST_MODEL_COST_MODEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cost_model/features.h"

namespace tessera {

// One measured candidate.
struct CostSample {
  std::string group;  // the task's workload hash: labels are normalized within a group
  FeatureMatrix features;
  double cost_secs = 0;  // median run time; 1e10 for a run failure
};

class CostModel {
 public:
  virtual ~CostModel() = default;
  virtual std::string name() const = 0;
  // Adds measured samples (and retrains when the model's policy says so).
  virtual absl::Status Update(const std::vector<CostSample>& samples) = 0;
  // One score per candidate, higher = predicted faster.
  virtual absl::StatusOr<std::vector<double>> Predict(
      const std::vector<FeatureMatrix>& candidates) = 0;
  // Whether Predict's scores depend on the features now. When false (RandomModel; XGBoost before
  // it has trained) callers may pass empty matrices instead of extracting features.
  virtual bool UsesFeatures() const = 0;
  // Number of samples the model holds.
  virtual int64_t size() const = 0;
  // A file holding the trained booster and the samples; Load replaces this model's state.
  virtual absl::Status Save(const std::string& path) const = 0;
  virtual absl::Status Load(const std::string& path) = 0;
};

struct XGBoostConfig {
  int max_depth = 10;
  double gamma = 0.001;
  double min_child_weight = 0;
  double eta = 0.2;
  int seed = 43;
  // 1 keeps OpenMP thread pools out of the measuring process (worker/runner.h fork note).
  int nthread = 1;
  int num_warmup_samples = 100;
  int early_stopping_rounds = 50;
  double early_stopping_min_delta = 1e-4;  // relative p-rmse gain that counts as an improvement
  int max_boost_rounds = 10000;
};

std::unique_ptr<CostModel> NewXGBoostModel(const XGBoostConfig& config = XGBoostConfig());
std::unique_ptr<CostModel> NewRandomModel(int64_t seed);

}  // namespace tessera

#endif  // TESSERA_COST_MODEL_COST_MODEL_H_
