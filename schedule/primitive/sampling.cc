// Sampling instructions: SampleCategorical and SamplePerfectTile, with MetaSchedule's
// algorithms (uniform over all perfect tilings; stale decisions repaired, never rejected).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "schedule/instruction_kinds.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

// Prime factorization as (prime, exponent) pairs, ascending.
std::vector<std::pair<int64_t, int>> Factorize(int64_t n) {
  std::vector<std::pair<int64_t, int>> factors;
  for (int64_t p = 2; p * p <= n; ++p) {
    int e = 0;
    while (n % p == 0) {
      n /= p;
      ++e;
    }
    if (e > 0) factors.push_back({p, e});
  }
  if (n > 1) factors.push_back({n, 1});
  return factors;
}

// Uniform over all ordered n-tuples of positive integers whose product is `extent`.
std::vector<int64_t> SampleTiling(Random* rng, int64_t extent, int n) {
  std::vector<int64_t> tiles(n, 1);
  for (const auto& [prime, exponent] : Factorize(extent)) {
    // Stars and bars: a uniform composition of `exponent` into n non-negative parts.
    std::vector<int64_t> positions;
    const int64_t slots = exponent + n - 1;
    std::vector<int64_t> all(slots);
    for (int64_t i = 0; i < slots; ++i) all[i] = i;
    for (int k = 0; k < n - 1; ++k) {  // partial Fisher-Yates: choose n-1 bars
      int64_t j = rng->UniformInt(k, slots);
      std::swap(all[k], all[j]);
      positions.push_back(all[k]);
    }
    std::sort(positions.begin(), positions.end());
    int64_t previous = -1;
    for (int slot = 0; slot < n; ++slot) {
      int64_t bar = slot < n - 1 ? positions[slot] : slots;
      int64_t count = bar - previous - 1;
      for (int64_t c = 0; c < count; ++c) tiles[slot] *= prime;
      previous = bar;
    }
  }
  return tiles;
}

// Makes `decision` a perfect tiling of `extent`, walking from the innermost factor outward.
std::vector<int64_t> RepairTiling(std::vector<int64_t> tiles, int64_t extent) {
  int64_t remaining = extent;
  for (size_t i = tiles.size(); i-- > 1;) {
    if (tiles[i] <= 0 || remaining % tiles[i] != 0) tiles[i] = remaining;
    remaining /= tiles[i];
  }
  tiles[0] = remaining;
  return tiles;
}

}  // namespace

absl::StatusOr<ExprRV> Schedule::SampleCategorical(const std::vector<int64_t>& candidates,
                                                   const std::vector<double>& probs,
                                                   const InstValue& decision) {
  if (candidates.empty() || candidates.size() != probs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample_categorical: ", candidates.size(), " candidates but ", probs.size(),
        " probabilities"));
  }
  double total = 0;
  for (double p : probs) {
    if (p < 0) return absl::InvalidArgumentError("sample_categorical: negative probability");
    total += p;
  }
  if (total <= 0) return absl::InvalidArgumentError("sample_categorical: probabilities sum to 0");
  int64_t index;
  if (decision.is_int()) {
    index = decision.as_int();
    if (index < 0 || index >= static_cast<int64_t>(candidates.size())) {
      return absl::InvalidArgumentError(absl::StrCat("sample_categorical: decision ", index,
                                                     " out of range [0, ", candidates.size(), ")"));
    }
  } else if (decision.is_none()) {
    index = rng_.SampleCategorical(probs);
  } else {
    return absl::InvalidArgumentError("sample_categorical: decision must be an index");
  }
  ExprRV rv = NewExprRV(candidates[index]);
  std::vector<InstValue> prob_values;
  for (double p : probs) prob_values.push_back(InstValue::Float(p));
  Record(kSampleCategorical, {},
         {InstValue::IntArray(candidates), InstValue::Array(std::move(prob_values))},
         {InstValue::Of(rv)}, InstValue::Int(index));
  return rv;
}

absl::StatusOr<std::vector<ExprRV>> Schedule::SamplePerfectTile(LoopRV loop, int n,
                                                                int64_t max_innermost_factor,
                                                                const InstValue& decision) {
  absl::StatusOr<const ForNode*> op = Get(loop);
  if (!op.ok()) {
    return absl::Status(op.status().code(),
                        absl::StrCat("sample_perfect_tile: ", op.status().message()));
  }
  if (n < 1) return absl::InvalidArgumentError("sample_perfect_tile: n must be at least 1");
  if (max_innermost_factor == 0 || max_innermost_factor < -1) {
    return absl::InvalidArgumentError(
        "sample_perfect_tile: max_innermost_factor must be positive or -1");
  }
  const int64_t* extent_ptr = AsConstInt((*op)->extent);
  if (extent_ptr == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("sample_perfect_tile: loop ",
                                                   (*op)->loop_var.name(),
                                                   " has a non-constant extent"));
  }
  const int64_t extent = *extent_ptr;
  std::vector<int64_t> tiles;
  if (decision.is_array()) {
    tiles = decision.AsIntArray();
    if (static_cast<int>(tiles.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("sample_perfect_tile: decision has ",
                                                     tiles.size(), " factors, expected ", n));
    }
    tiles = RepairTiling(std::move(tiles), extent);
  } else if (decision.is_none()) {
    if (n == 1) {
      tiles = {extent};
    } else {
      do {
        tiles = SampleTiling(&rng_, extent, n);
      } while (max_innermost_factor != -1 && tiles.back() > max_innermost_factor);
    }
  } else {
    return absl::InvalidArgumentError("sample_perfect_tile: decision must be a list of factors");
  }
  std::vector<ExprRV> rvs;
  std::vector<InstValue> outputs;
  for (int64_t t : tiles) {
    rvs.push_back(NewExprRV(t));
    outputs.push_back(InstValue::Of(rvs.back()));
  }
  Record(kSamplePerfectTile, {InstValue::Of(loop)},
         {InstValue::Int(n), InstValue::Int(max_innermost_factor)}, std::move(outputs),
         InstValue::IntArray(tiles));
  return rvs;
}

}  // namespace tessera
