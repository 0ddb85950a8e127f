// Sampling instructions: SampleCategorical and SamplePerfectTile, with MetaSchedule's
// algorithms (uniform over all perfect tilings; stale decisions repaired, never rejected),
// and SamplePerfectTile under product limits across loops (fresh draws uniform over the
// tilings that leave every limit satisfiable; recorded decisions kept as they are), and
// SamplePaddedTile, our addition for extents without useful divisors (docs/tuning.md).
#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/divisors.h"
#include "base/status_macros.h"
#include "schedule/instruction_kinds.h"
#include "schedule/padded_tile.h"
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

// Products are capped here so that bound arithmetic cannot overflow (extents are far smaller).
constexpr int64_t kProductCap = int64_t{1} << 40;

int64_t CappedMul(int64_t a, int64_t b) { return a > kProductCap / b ? kProductCap : a * b; }

double Binomial(int64_t n, int64_t k) {
  double result = 1;
  for (int64_t i = 1; i <= k; ++i) result = result * static_cast<double>(n - k + i) / i;
  return result;
}

// The number of ordered m-tuples of positive integers whose product is `value` (m >= 0).
double CountTilings(int64_t value, int m) {
  if (m == 0) return value == 1 ? 1 : 0;
  double count = 1;
  for (const auto& [prime, exponent] : Factorize(value)) count *= Binomial(exponent + m - 1, m - 1);
  return count;
}

// A TileProductLimit with its RVs read and the products the later loops can add enumerated.
struct ResolvedLimit {
  std::vector<int> positions;
  int64_t prior = 1;
  int64_t min = 1;
  int64_t max = -1;
  // Ascending products of one divisor of each later extent: those up to `max`, or (no max)
  // only the largest, the one that matters for `min`.
  std::vector<int64_t> reachable;

  int64_t Here(const std::vector<int64_t>& tiles) const {
    int64_t here = 1;
    for (int pos : positions) here = CappedMul(here, tiles[pos]);
    return here;
  }

  // Whether the later loops can still bring prior * here into [min, max].
  bool Allows(int64_t here) const {
    const int64_t p = CappedMul(prior, here);
    if (max != -1 && p > max) return false;
    const int64_t lo = (min + p - 1) / p;
    const int64_t hi = max == -1 ? kProductCap : max / p;
    auto it = std::lower_bound(reachable.begin(), reachable.end(), lo);
    return it != reachable.end() && *it <= hi;
  }
};

std::vector<int64_t> ReachableProducts(const std::vector<int64_t>& later, int64_t max) {
  if (max == -1) {
    int64_t product = 1;
    for (int64_t e : later) product = CappedMul(product, e);
    return {product};
  }
  std::set<int64_t> products = {1};
  for (int64_t e : later) {
    std::set<int64_t> next;
    for (int64_t a : products) {
      for (int64_t d : Divisors(e)) {
        if (a * d > max) break;
        next.insert(a * d);
      }
    }
    products = std::move(next);
  }
  return std::vector<int64_t>(products.begin(), products.end());
}

// Uniform over the tilings of `extent` into n factors, the innermost at most max_innermost
// (-1: any), that every limit allows; empty when there is none. The factors at the limits'
// positions are drawn first, each combination weighted by how many tilings complete it; the
// other factors are then a uniform tiling of what is left.
std::vector<int64_t> SampleLimitedTiling(Random* rng, int64_t extent, int n,
                                         int64_t max_innermost,
                                         const std::vector<ResolvedLimit>& limits) {
  std::vector<int> fixed;
  for (const ResolvedLimit& limit : limits) {
    fixed.insert(fixed.end(), limit.positions.begin(), limit.positions.end());
  }
  std::sort(fixed.begin(), fixed.end());
  fixed.erase(std::unique(fixed.begin(), fixed.end()), fixed.end());
  std::vector<int> free;
  for (int i = 0; i < n; ++i) {
    if (!std::binary_search(fixed.begin(), fixed.end(), i)) free.push_back(i);
  }
  const int num_free = static_cast<int>(free.size());
  const bool limit_free_innermost = max_innermost != -1 && num_free > 0 && free.back() == n - 1;
  std::map<int64_t, double> completions_of;
  auto completions = [&](int64_t rest) {
    auto it = completions_of.find(rest);
    if (it != completions_of.end()) return it->second;
    double count = 0;
    if (!limit_free_innermost) {
      count = CountTilings(rest, num_free);
    } else {
      for (int64_t d : Divisors(rest)) {
        if (d <= max_innermost) count += CountTilings(rest / d, num_free - 1);
      }
    }
    completions_of.emplace(rest, count);
    return count;
  };
  std::vector<std::vector<int64_t>> choices;  // factors at `fixed`, then what is left
  std::vector<double> weights;
  std::vector<int64_t> tiles(n, 1);
  std::function<void(size_t, int64_t)> enumerate = [&](size_t k, int64_t rest) {
    if (k == fixed.size()) {
      if (max_innermost != -1 && !fixed.empty() && fixed.back() == n - 1 &&
          tiles[n - 1] > max_innermost) {
        return;
      }
      for (const ResolvedLimit& limit : limits) {
        if (!limit.Allows(limit.Here(tiles))) return;
      }
      const double weight = completions(rest);
      if (weight <= 0) return;
      choices.push_back(tiles);
      choices.back().push_back(rest);
      weights.push_back(weight);
      return;
    }
    for (int64_t d : Divisors(rest)) {
      tiles[fixed[k]] = d;
      enumerate(k + 1, rest / d);
    }
    tiles[fixed[k]] = 1;
  };
  enumerate(0, extent);
  if (choices.empty()) return {};
  std::vector<int64_t> chosen = choices[rng->SampleCategorical(weights)];
  const int64_t rest = chosen.back();
  chosen.pop_back();
  if (num_free > 0) {
    std::vector<int64_t> part;
    do {
      part = SampleTiling(rng, rest, num_free);
    } while (limit_free_innermost && part.back() > max_innermost);
    for (int i = 0; i < num_free; ++i) chosen[free[i]] = part[i];
  }
  return chosen;
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
  return SamplePerfectTile(loop, n, max_innermost_factor, {}, decision);
}

absl::StatusOr<std::vector<ExprRV>> Schedule::SamplePerfectTile(
    LoopRV loop, int n, int64_t max_innermost_factor, const std::vector<TileProductLimit>& limits,
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
  const std::string loop_name = (*op)->loop_var.name();
  std::vector<ResolvedLimit> resolved;
  for (size_t k = 0; k < limits.size(); ++k) {
    const TileProductLimit& limit = limits[k];
    auto bad = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample_perfect_tile: limit ", k, " of loop ", loop_name, " ", why));
    };
    ResolvedLimit r;
    r.positions = limit.positions;
    std::vector<int> sorted = limit.positions;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end() ||
        (!sorted.empty() && (sorted.front() < 0 || sorted.back() >= n))) {
      return bad(absl::StrCat("needs distinct positions in [0, ", n, "), got [",
                              absl::StrJoin(limit.positions, ", "), "]"));
    }
    if (limit.min < 1 || (limit.max != -1 && limit.max < limit.min)) {
      return bad(absl::StrCat("has bounds [", limit.min, ", ", limit.max,
                              "]: need 1 <= min <= max (or max -1)"));
    }
    for (int64_t e : limit.later) {
      if (e < 1) return bad(absl::StrCat("has a later extent ", e, " (must be positive)"));
    }
    for (ExprRV rv : limit.prior) {
      absl::StatusOr<int64_t> value = Get(rv);
      if (!value.ok()) {
        return bad(absl::StrCat("has a bad prior factor: ", value.status().message()));
      }
      if (*value < 1) return bad(absl::StrCat("has a non-positive prior factor ", *value));
      r.prior = CappedMul(r.prior, *value);
    }
    r.min = limit.min;
    r.max = limit.max;
    r.reachable = ReachableProducts(limit.later, limit.max);
    resolved.push_back(std::move(r));
  }
  std::vector<int64_t> tiles;
  if (decision.is_array()) {
    tiles = decision.AsIntArray();
    if (static_cast<int>(tiles.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("sample_perfect_tile: decision has ",
                                                     tiles.size(), " factors, expected ", n));
    }
    tiles = RepairTiling(std::move(tiles), extent);
  } else if (decision.is_none() && !resolved.empty()) {
    tiles = SampleLimitedTiling(&rng_, extent, n, max_innermost_factor, resolved);
    if (tiles.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample_perfect_tile: no tiling of loop ", loop_name, " (extent ", extent,
                       ") into ", n, " factors meets its ", resolved.size(), " product limits"));
    }
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
  std::vector<InstValue> inputs = {InstValue::Of(loop)};
  std::vector<InstValue> attrs = {InstValue::Int(n), InstValue::Int(max_innermost_factor)};
  if (!limits.empty()) {
    std::vector<InstValue> priors;
    std::vector<InstValue> bounds;
    for (const TileProductLimit& limit : limits) {
      std::vector<InstValue> prior;
      for (ExprRV rv : limit.prior) prior.push_back(InstValue::Of(rv));
      priors.push_back(InstValue::Array(std::move(prior)));
      const std::vector<int64_t> positions(limit.positions.begin(), limit.positions.end());
      bounds.push_back(InstValue::Array({InstValue::IntArray(positions), InstValue::Int(limit.min),
                                         InstValue::Int(limit.max),
                                         InstValue::IntArray(limit.later)}));
    }
    inputs.push_back(InstValue::Array(std::move(priors)));
    attrs.push_back(InstValue::Array(std::move(bounds)));
  }
  Record(kSamplePerfectTile, std::move(inputs), std::move(attrs), std::move(outputs),
         InstValue::IntArray(tiles));
  return rvs;
}

absl::StatusOr<std::vector<ExprRV>> Schedule::SamplePaddedTile(LoopRV loop, int n,
                                                               int64_t max_innermost_factor,
                                                               const InstValue& decision) {
  absl::StatusOr<const ForNode*> op = Get(loop);
  if (!op.ok()) {
    return absl::Status(op.status().code(),
                        absl::StrCat("sample_padded_tile: ", op.status().message()));
  }
  if (n < 1) return absl::InvalidArgumentError("sample_padded_tile: n must be at least 1");
  if (max_innermost_factor == 0 || max_innermost_factor < -1) {
    return absl::InvalidArgumentError(
        "sample_padded_tile: max_innermost_factor must be positive or -1");
  }
  const int64_t* extent_ptr = AsConstInt((*op)->extent);
  if (extent_ptr == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sample_padded_tile: loop ", (*op)->loop_var.name(), " has a non-constant extent"));
  }
  const int64_t extent = *extent_ptr;
  std::vector<int64_t> tiles;
  if (decision.is_array()) {
    tiles = decision.AsIntArray();
    if (static_cast<int>(tiles.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("sample_padded_tile: decision has ",
                                                     tiles.size(), " factors, expected ", n));
    }
    for (int64_t& t : tiles) t = std::max<int64_t>(t, 1);
  } else if (decision.is_none()) {
    if (n == 1) {
      tiles = {extent};
    } else {
      const int64_t cap =
          max_innermost_factor == -1 ? padded_tile::kDefaultMaxInnermost : max_innermost_factor;
      std::vector<int64_t> quanta;
      for (int64_t q = 2; q <= cap; q *= 2) {
        if (padded_tile::PaddingAllowed(extent, (extent + q - 1) / q * q)) quanta.push_back(q);
      }
      // Half of the draws stay unpadded (q = 1), so the perfect tilings (the whole space
      // before padding existed) are sampled as often as the padded ones together.
      int64_t q = 1;
      if (!quanta.empty() && rng_.UniformInt(0, 2) == 1) {
        q = quanta[rng_.UniformInt(0, static_cast<int64_t>(quanta.size()))];
      }
      const int64_t padded = (extent + q - 1) / q * q;
      do {
        tiles = SampleTiling(&rng_, padded, n);
      } while (max_innermost_factor != -1 && tiles.back() > max_innermost_factor);
    }
  } else {
    return absl::InvalidArgumentError("sample_padded_tile: decision must be a list of factors");
  }
  tiles = padded_tile::NormalizeOuter(std::move(tiles), extent);
  std::vector<ExprRV> rvs;
  std::vector<InstValue> outputs;
  for (int64_t t : tiles) {
    rvs.push_back(NewExprRV(t));
    outputs.push_back(InstValue::Of(rvs.back()));
  }
  Record(kSamplePaddedTile, {InstValue::Of(loop)},
         {InstValue::Int(n), InstValue::Int(max_innermost_factor), InstValue::Int(extent)},
         std::move(outputs), InstValue::IntArray(tiles));
  return rvs;
}

}  // namespace tessera
