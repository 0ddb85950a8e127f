// RandomModel: uniform scores in [0, 1) from the seeded generator (an ablation baseline, and
// what the search uses where no model is wanted). It keeps only the number of samples it was
// given; Save / Load persist that count and the generator's state ("TESSERA-RANDOM 1 <state>
// <size>"), so a loaded model continues the same stream.
#include <fstream>
#include <string>

#include "base/random.h"
#include "cost_model/cost_model.h"

namespace tessera {
namespace {

constexpr char kMagic[] = "TESSERA-RANDOM";
constexpr int kVersion = 1;

class RandomModel final : public CostModel {
 public:
  explicit RandomModel(int64_t seed) : rng_(seed) {}

  std::string name() const override { return "random"; }
  int64_t size() const override { return size_; }

  absl::Status Update(const std::vector<CostSample>& samples) override {
    size_ += static_cast<int64_t>(samples.size());
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<double>> Predict(
      const std::vector<FeatureMatrix>& candidates) override {
    std::vector<double> scores(candidates.size());
    for (double& s : scores) s = rng_.UniformReal();
    return scores;
  }

  bool UsesFeatures() const override { return false; }

  absl::Status Save(const std::string& path) const override {
    std::ofstream out(path, std::ios::trunc);
    out << kMagic << " " << kVersion << " " << rng_.state() << " " << size_ << "\n";
    out.close();
    if (!out) return absl::InternalError("cannot write cost model file " + path);
    return absl::OkStatus();
  }

  absl::Status Load(const std::string& path) override {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError("cannot open cost model file " + path);
    std::string magic;
    int version = 0;
    uint64_t state = 0;
    int64_t size = 0;
    if (!(in >> magic >> version >> state >> size) || magic != kMagic || version != kVersion ||
        state == 0 || state >= Random::kModulus || size < 0) {
      return absl::InvalidArgumentError("cost model file " + path +
                                        ": not a Tessera random model");
    }
    rng_ = Random(static_cast<int64_t>(state));
    size_ = size;
    return absl::OkStatus();
  }

 private:
  Random rng_;
  int64_t size_ = 0;
};

}  // namespace

std::unique_ptr<CostModel> NewRandomModel(int64_t seed) {
  return std::make_unique<RandomModel>(seed);
}

}  // namespace tessera
