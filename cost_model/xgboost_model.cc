// XGBoostModel: MetaSchedule's XGBModel (docs/reference/metaschedule.md §6.1) over the XGBoost 1.7
// C API.
//
// Every candidate is a set of rows (one per stored buffer); its predicted score is the sum of
// the booster's outputs over its rows ("pack-sum"). Training uses a custom objective computed
// here and fed to XGBoosterBoostOneIter: for each row, pred = the summed prediction of its
// candidate, gradient = (pred - y) * y, hessian = y, where y = (best cost in the candidate's
// group) / cost. Fast candidates dominate; failures (cost 1e10, y ~ 0) carry ~0 weight.
// Training stops when the p-rmse on the training set has not improved for
// early_stopping_rounds rounds, and the booster is cut back to its best round.
//
// File format (Save / Load), host byte order:
//   "TESSERA-XGB 1\n", int64 data_size, int64 last_train_size, uint64 n + n booster bytes
//   (XGBoost UBJSON, n = 0 without a booster), uint64 groups, then per group: uint64 + name
//   bytes, uint64 candidates, per candidate: int64 rows, double cost, rows * kFeatureDim floats.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <xgboost/c_api.h>

#include "base/random.h"
#include "base/status_macros.h"
#include "cost_model/cost_model.h"

namespace tessera {
namespace {

constexpr char kMagic[] = "TESSERA-XGB 1\n";

absl::Status XgbStatus(int rc, const std::string& what) {
  if (rc == 0) return absl::OkStatus();
  return absl::InternalError("xgboost " + what + " failed: " + XGBGetLastError());
}

// Owns a DMatrix handle.
class DMatrix {
 public:
  DMatrix() = default;
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
  ~DMatrix() {
    if (handle_) XGDMatrixFree(handle_);
  }
  static absl::StatusOr<std::unique_ptr<DMatrix>> FromRows(const std::vector<float>& values,
                                                           int64_t rows) {
    auto m = std::make_unique<DMatrix>();
    TESSERA_RETURN_IF_ERROR(XgbStatus(
        XGDMatrixCreateFromMat(values.data(), static_cast<bst_ulong>(rows), kFeatureDim,
                               std::numeric_limits<float>::quiet_NaN(), &m->handle_),
        "creating a feature matrix"));
    return m;
  }
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

// Rows of many candidates stacked, with the candidate of each row.
struct PackedRows {
  std::vector<float> values;
  std::vector<int64_t> candidate;  // per row
  int64_t num_candidates = 0;
  void Add(const FeatureMatrix& m) {
    values.insert(values.end(), m.values.begin(), m.values.end());
    candidate.insert(candidate.end(), m.rows, num_candidates);
    ++num_candidates;
  }
  // Per-candidate sums of per-row outputs.
  std::vector<double> Sum(const float* row_outputs) const {
    std::vector<double> sums(num_candidates, 0.0);
    for (size_t r = 0; r < candidate.size(); ++r) sums[candidate[r]] += row_outputs[r];
    return sums;
  }
};

absl::Status CheckShape(const FeatureMatrix& m, const std::string& what) {
  if (m.rows < 0 || m.values.size() != static_cast<size_t>(m.rows) * kFeatureDim) {
    return absl::InvalidArgumentError(what + " has " + std::to_string(m.values.size()) +
                                      " feature values for " + std::to_string(m.rows) +
                                      " rows of " + std::to_string(kFeatureDim));
  }
  return absl::OkStatus();
}

class XGBoostModel final : public CostModel {
 public:
  explicit XGBoostModel(const XGBoostConfig& config) : config_(config), rng_(config.seed) {}
  ~XGBoostModel() override { FreeBooster(); }

  std::string name() const override { return "xgb"; }
  int64_t size() const override { return data_size_; }

  absl::Status Update(const std::vector<CostSample>& samples) override {
    for (size_t i = 0; i < samples.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(CheckShape(samples[i].features, "sample " + std::to_string(i)));
      if (!(samples[i].cost_secs > 0)) {
        return absl::InvalidArgumentError("sample " + std::to_string(i) +
                                          " has a non-positive cost " +
                                          std::to_string(samples[i].cost_secs));
      }
    }
    for (const CostSample& s : samples) {
      if (s.features.rows == 0) continue;  // nothing stored: dropped, as in the reference
      Group& g = GroupFor(s.group);
      g.features.push_back(s.features);
      g.costs.push_back(s.cost_secs);
      g.min_cost = std::min(g.min_cost, s.cost_secs);
      ++data_size_;
    }
    // Predictions stay random until num_warmup_samples, and every training starts from scratch,
    // so a booster trained before then would be thrown away unused: the first training waits
    // for the warm-up samples (a deviation from the reference, which trains from the start).
    if (data_size_ == 0 || data_size_ < config_.num_warmup_samples) return absl::OkStatus();
    // Adaptive training: retrain from scratch only after >= 20% new data.
    if (booster_ != nullptr && data_size_ - last_train_size_ < last_train_size_ / 5) {
      return absl::OkStatus();
    }
    last_train_size_ = data_size_;
    return Train();
  }

  absl::StatusOr<std::vector<double>> Predict(
      const std::vector<FeatureMatrix>& candidates) override {
    for (size_t i = 0; i < candidates.size(); ++i) {
      TESSERA_RETURN_IF_ERROR(CheckShape(candidates[i], "candidate " + std::to_string(i)));
    }
    std::vector<double> scores(candidates.size());
    if (!UsesFeatures()) {
      for (double& s : scores) s = rng_.UniformReal();
      return scores;
    }
    PackedRows packed;
    for (const FeatureMatrix& m : candidates) packed.Add(m);
    if (packed.candidate.empty()) return std::vector<double>(candidates.size(), 0.0);
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<DMatrix> dmat,
                             DMatrix::FromRows(packed.values, packed.candidate.size()));
    bst_ulong len = 0;
    const float* out = nullptr;
    TESSERA_RETURN_IF_ERROR(
        XgbStatus(XGBoosterPredict(booster_, dmat->get(), 0, 0, 0, &len, &out), "predict"));
    return packed.Sum(out);
  }

  bool UsesFeatures() const override {
    return data_size_ >= config_.num_warmup_samples && booster_ != nullptr;
  }

  absl::Status Save(const std::string& path) const override {
    std::ostringstream out;
    out.write(kMagic, sizeof(kMagic) - 1);
    Put(&out, data_size_);
    Put(&out, last_train_size_);
    bst_ulong len = 0;
    const char* bytes = nullptr;
    if (booster_ != nullptr) {
      TESSERA_RETURN_IF_ERROR(XgbStatus(
          XGBoosterSaveModelToBuffer(booster_, R"({"format": "ubj"})", &len, &bytes),
          "saving the booster for " + path));
    }
    Put(&out, static_cast<uint64_t>(len));
    out.write(bytes, static_cast<std::streamsize>(len));
    Put(&out, static_cast<uint64_t>(groups_.size()));
    for (const Group& g : groups_) {
      Put(&out, static_cast<uint64_t>(g.name.size()));
      out.write(g.name.data(), static_cast<std::streamsize>(g.name.size()));
      Put(&out, static_cast<uint64_t>(g.features.size()));
      for (size_t i = 0; i < g.features.size(); ++i) {
        Put(&out, g.features[i].rows);
        Put(&out, g.costs[i]);
        out.write(reinterpret_cast<const char*>(g.features[i].values.data()),
                  static_cast<std::streamsize>(g.features[i].values.size() * sizeof(float)));
      }
    }
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    const std::string data = out.str();
    file.write(data.data(), static_cast<std::streamsize>(data.size()));
    file.close();
    if (!file) return absl::InternalError("cannot write cost model file " + path);
    return absl::OkStatus();
  }

  absl::Status Load(const std::string& path) override {
    std::ifstream file(path, std::ios::binary);
    if (!file) return absl::NotFoundError("cannot open cost model file " + path);
    std::stringstream buffer;
    buffer << file.rdbuf();
    const std::string data = buffer.str();
    Reader in{data, 0};
    auto bad = [&path](const std::string& what) {
      return absl::InvalidArgumentError("cost model file " + path + ": " + what);
    };
    const size_t magic_len = sizeof(kMagic) - 1;
    if (data.compare(0, magic_len, kMagic) != 0) return bad("not a Tessera XGBoost model");
    in.pos = magic_len;
    int64_t data_size = 0, last_train_size = 0;
    uint64_t booster_len = 0, num_groups = 0;
    if (!in.Get(&data_size) || !in.Get(&last_train_size) || !in.Get(&booster_len) ||
        booster_len > in.left()) {
      return bad("truncated header");
    }
    const std::string booster_bytes = data.substr(in.pos, booster_len);
    in.pos += booster_len;
    if (!in.Get(&num_groups)) return bad("truncated sample table");
    std::vector<Group> groups;
    for (uint64_t gi = 0; gi < num_groups; ++gi) {
      Group g;
      uint64_t name_len = 0, count = 0;
      if (!in.Get(&name_len) || name_len > in.left()) return bad("truncated group name");
      g.name = data.substr(in.pos, name_len);
      in.pos += name_len;
      if (!in.Get(&count)) return bad("truncated group " + g.name);
      for (uint64_t c = 0; c < count; ++c) {
        FeatureMatrix m;
        double cost = 0;
        if (!in.Get(&m.rows) || !in.Get(&cost) || m.rows < 0 ||
            static_cast<uint64_t>(m.rows) * kFeatureDim * sizeof(float) > in.left()) {
          return bad("truncated sample " + std::to_string(c) + " of group " + g.name);
        }
        m.values.resize(static_cast<size_t>(m.rows) * kFeatureDim);
        std::memcpy(m.values.data(), data.data() + in.pos, m.values.size() * sizeof(float));
        in.pos += m.values.size() * sizeof(float);
        g.features.push_back(std::move(m));
        g.costs.push_back(cost);
        g.min_cost = std::min(g.min_cost, cost);
      }
      groups.push_back(std::move(g));
    }
    if (in.left() != 0) return bad("trailing bytes after the samples");

    BoosterHandle booster = nullptr;
    if (!booster_bytes.empty()) {
      absl::Status s = XgbStatus(XGBoosterCreate(nullptr, 0, &booster), "creating a booster");
      if (s.ok()) {
        s = XgbStatus(XGBoosterLoadModelFromBuffer(booster, booster_bytes.data(),
                                                   booster_bytes.size()),
                      "loading the booster of " + path);
      }
      if (s.ok()) s = SetParams(booster);
      if (!s.ok()) {
        if (booster != nullptr) XGBoosterFree(booster);
        return s;
      }
    }
    FreeBooster();
    booster_ = booster;
    groups_ = std::move(groups);
    group_index_.clear();
    for (size_t i = 0; i < groups_.size(); ++i) group_index_[groups_[i].name] = i;
    data_size_ = data_size;
    last_train_size_ = last_train_size;
    return absl::OkStatus();
  }

 private:
  struct Group {
    std::string name;
    std::vector<FeatureMatrix> features;
    std::vector<double> costs;
    double min_cost = std::numeric_limits<double>::infinity();
  };

  struct Reader {
    const std::string& data;
    size_t pos;
    size_t left() const { return data.size() - pos; }
    template <typename T>
    bool Get(T* v) {
      if (left() < sizeof(T)) return false;
      std::memcpy(v, data.data() + pos, sizeof(T));
      pos += sizeof(T);
      return true;
    }
  };

  template <typename T>
  static void Put(std::ostream* out, T v) {
    out->write(reinterpret_cast<const char*>(&v), sizeof(T));
  }

  Group& GroupFor(const std::string& name) {
    auto it = group_index_.find(name);
    if (it != group_index_.end()) return groups_[it->second];
    group_index_[name] = groups_.size();
    groups_.push_back(Group{name, {}, {}, std::numeric_limits<double>::infinity()});
    return groups_.back();
  }

  void FreeBooster() {
    if (booster_ != nullptr) XGBoosterFree(booster_);
    booster_ = nullptr;
  }

  absl::Status SetParams(BoosterHandle booster) const {
    const std::vector<std::pair<std::string, std::string>> params = {
        {"max_depth", std::to_string(config_.max_depth)},
        {"gamma", std::to_string(config_.gamma)},
        {"min_child_weight", std::to_string(config_.min_child_weight)},
        {"eta", std::to_string(config_.eta)},
        {"seed", std::to_string(config_.seed)},
        {"nthread", std::to_string(config_.nthread)},
        {"verbosity", "0"},
    };
    for (const auto& [key, value] : params) {
      TESSERA_RETURN_IF_ERROR(XgbStatus(XGBoosterSetParam(booster, key.c_str(), value.c_str()),
                                        "setting parameter " + key));
    }
    return absl::OkStatus();
  }

  // Retrains from scratch on every stored sample (pack-sum objective, early stopping).
  absl::Status Train() {
    PackedRows packed;
    std::vector<double> labels;  // per candidate
    for (const Group& g : groups_) {
      for (size_t i = 0; i < g.features.size(); ++i) {
        packed.Add(g.features[i]);
        labels.push_back(g.min_cost / g.costs[i]);
      }
    }
    const size_t num_rows = packed.candidate.size();
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<DMatrix> dmat,
                             DMatrix::FromRows(packed.values, num_rows));
    BoosterHandle booster = nullptr;
    DMatrixHandle cache[] = {dmat->get()};
    TESSERA_RETURN_IF_ERROR(XgbStatus(XGBoosterCreate(cache, 1, &booster), "creating a booster"));
    absl::Status status = SetParams(booster);
    std::vector<float> grad(num_rows), hess(num_rows);
    double best_rmse = std::numeric_limits<double>::infinity();
    int best_round = 0, rounds = 0;
    for (; status.ok() && rounds < config_.max_boost_rounds; ++rounds) {
      bst_ulong len = 0;
      const float* margins = nullptr;
      status = XgbStatus(XGBoosterPredict(booster, dmat->get(), 1, 0, 1, &len, &margins),
                         "training-set predict");
      if (!status.ok()) break;
      const std::vector<double> sums = packed.Sum(margins);
      if (rounds > 0) {  // p-rmse of the model with `rounds` rounds
        double se = 0;
        for (size_t r = 0; r < num_rows; ++r) {
          const double d = sums[packed.candidate[r]] - labels[packed.candidate[r]];
          se += d * d;
        }
        const double rmse = std::sqrt(se / static_cast<double>(num_rows));
        if (rmse < best_rmse * (1 - config_.early_stopping_min_delta)) {
          best_rmse = rmse;
          best_round = rounds;
        } else if (rounds - best_round >= config_.early_stopping_rounds) {
          break;
        }
      }
      for (size_t r = 0; r < num_rows; ++r) {
        const double y = labels[packed.candidate[r]];
        grad[r] = static_cast<float>((sums[packed.candidate[r]] - y) * y);
        hess[r] = static_cast<float>(y);
      }
      status = XgbStatus(
          XGBoosterBoostOneIter(booster, dmat->get(), grad.data(), hess.data(), num_rows),
          "boosting round " + std::to_string(rounds));
    }
    if (status.ok() && best_round == 0) best_round = rounds;
    if (status.ok() && best_round > 0 && best_round < rounds) {
      BoosterHandle sliced = nullptr;
      status = XgbStatus(XGBoosterSlice(booster, 0, best_round, 1, &sliced),
                         "cutting the booster back to round " + std::to_string(best_round));
      if (status.ok()) {
        XGBoosterFree(booster);
        booster = sliced;
        status = SetParams(booster);
      }
    }
    if (!status.ok()) {
      XGBoosterFree(booster);
      return status;
    }
    FreeBooster();
    booster_ = booster;
    return absl::OkStatus();
  }

  const XGBoostConfig config_;
  Random rng_;
  std::vector<Group> groups_;
  std::map<std::string, size_t> group_index_;
  int64_t data_size_ = 0;
  int64_t last_train_size_ = 0;
  BoosterHandle booster_ = nullptr;
};

}  // namespace

std::unique_ptr<CostModel> NewXGBoostModel(const XGBoostConfig& config) {
  return std::make_unique<XGBoostModel>(config);
}

}  // namespace tessera
