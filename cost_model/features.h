// Per-store features of a scheduled program, after MetaSchedule's PerStoreFeature
// (docs/reference/metaschedule.md §6.2): one row of kFeatureDim floats per buffer a non-constant
// store writes (arithmetic counts, loop kinds and GPU bindings, per-buffer access patterns and
// reuse, an arithmetic-intensity curve, allocation and outer-loop values), slog-scaled.
// Candidates are featurized by the thousands per second on one core.
#ifndef TESSERA_COST_MODEL_FEATURES_H_
#define TESSERA_COST_MODEL_FEATURES_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "ir/target.h"

namespace tessera {

inline constexpr int kFeatureDim = 164;

// rows x kFeatureDim, row-major.
struct FeatureMatrix {
  int64_t rows = 0;
  std::vector<float> values;
  const float* row(int64_t r) const { return values.data() + r * kFeatureDim; }
};

// Errors only for functions the extractor cannot walk (kInvalidArgument naming the block).
absl::StatusOr<FeatureMatrix> ExtractFeatures(const PrimFunc& scheduled, const Target& target);

}  // namespace tessera

#endif  // TESSERA_COST_MODEL_FEATURES_H_
