// MutateTileSize (docs/reference/metaschedule.md §3.6): moves a divisor from one tile of a
// SamplePerfectTile decision to another (the product stays the loop extent, the innermost
// tile stays within max_innermost_factor), or redraws the vector length of a cooperative
// fetch (a SampleCategorical annotated as meta_schedule.cooperative_fetch). A SamplePaddedTile
// decision (our addition, docs/tuning.md "Odd extents") gets one inner factor set to another
// power of two, its outer factor recomputed, within the padding bound of schedule/padded_tile.h.
#include <memory>
#include <set>
#include <vector>

#include "base/divisors.h"
#include "base/status_macros.h"
#include "rules/annotations.h"
#include "rules/rule/params.h"
#include "schedule/padded_tile.h"
#include "tuner/mutator.h"
#include "tuner/mutator/util.h"

namespace tessera {
namespace {

constexpr char kTileSizeName[] = "MutateTileSize";

int64_t Product(const std::vector<int64_t>& tiles) {
  int64_t p = 1;
  for (int64_t t : tiles) p *= t;
  return p;
}

class MutateTileSize : public Mutator {
 public:
  std::string name() const override { return kTileSizeName; }

  std::optional<Trace> Apply(const Trace& trace, const PrimFunc& workload,
                             Random* rng) const override {
    (void)workload;
    std::vector<size_t> tile_insts;
    std::vector<size_t> fetch_insts;
    FindCandidates(trace, &tile_insts, &fetch_insts);
    const int64_t total = static_cast<int64_t>(tile_insts.size() + fetch_insts.size());
    if (total == 0) return std::nullopt;
    const int64_t pick = rng->UniformInt(0, total);
    if (pick < static_cast<int64_t>(tile_insts.size())) {
      const size_t index = tile_insts[pick];
      if (mutator::IsKind(trace.insts()[index], "SamplePaddedTile")) {
        return MutatePaddedTiles(trace, index, rng);
      }
      return MutateTiles(trace, index, rng);
    }
    return mutator::RedrawOneCategorical(trace, {fetch_insts[pick - tile_insts.size()]}, rng);
  }

 private:
  // (a) SamplePerfectTile with at least two factors whose product is at least 2, or
  //     SamplePaddedTile with at least two factors and its extent recorded;
  // (b) SampleCategorical whose value is a cooperative-fetch annotation and can change.
  static void FindCandidates(const Trace& trace, std::vector<size_t>* tile_insts,
                             std::vector<size_t>* fetch_insts) {
    const size_t end = trace.PostprocStart();
    const std::map<int64_t, size_t> producers = mutator::CategoricalProducers(trace);
    std::set<size_t> fetch;
    for (size_t i = 0; i < end; ++i) {
      const Instruction& inst = trace.insts()[i];
      if (mutator::IsKind(inst, "SamplePerfectTile")) {
        const InstValue& d = trace.decision(i);
        const std::vector<int64_t> tiles = d.AsIntArray();
        bool positive = !tiles.empty();
        for (int64_t t : tiles) positive = positive && t > 0;
        if (d.is_array() && tiles.size() >= 2 && positive && Product(tiles) >= 2) {
          tile_insts->push_back(i);
        }
      } else if (mutator::IsKind(inst, "SamplePaddedTile")) {
        if (trace.decision(i).is_array() && trace.decision(i).AsIntArray().size() >= 2 &&
            inst.attrs.size() >= 3 && inst.attrs[2].is_int() && inst.attrs[2].as_int() >= 2) {
          tile_insts->push_back(i);
        }
      } else if (mutator::IsKind(inst, "Annotate") && inst.inputs.size() == 2 &&
                 mutator::StringAttr(inst, 0) == attr::kCooperativeFetch) {
        std::optional<size_t> producer = mutator::CategoricalProducerOf(producers, inst.inputs[1]);
        if (producer && mutator::CanRedrawCategorical(trace, *producer)) fetch.insert(*producer);
      }
    }
    fetch_insts->assign(fetch.begin(), fetch.end());
  }

  // Moves a divisor d > 1 of tile x to tile y != x; growing the innermost tile is limited by
  // the instruction's max_innermost_factor. With two tiles, a failed attempt to grow the
  // innermost one ends the mutation (as in the reference); with more, another pair is drawn.
  static std::optional<Trace> MutateTiles(const Trace& trace, size_t index, Random* rng) {
    const Instruction& inst = trace.insts()[index];
    std::vector<int64_t> tiles = trace.decision(index).AsIntArray();
    const int64_t n = static_cast<int64_t>(tiles.size());
    const int64_t limit = inst.attrs.size() >= 2 && inst.attrs[1].is_int() ? inst.attrs[1].as_int()
                                                                            : -1;
    for (;;) {
      const int64_t x = rng->UniformInt(0, n);
      if (tiles[x] <= 1) continue;
      int64_t y = rng->UniformInt(0, n - 1);
      if (y >= x) ++y;
      const std::vector<int64_t> divisors = Divisors(tiles[x]);  // divisors[0] == 1
      int64_t count = static_cast<int64_t>(divisors.size());
      if (y == n - 1) {
        // Only divisors keeping the innermost tile within the limit (none when limit is -1).
        count = 1;
        while (count < static_cast<int64_t>(divisors.size()) &&
               divisors[count] * tiles[y] <= limit) {
          ++count;
        }
        if (count == 1) {
          if (n <= 2) return std::nullopt;
          continue;
        }
      }
      const int64_t d = divisors[rng->UniformInt(1, count)];
      tiles[x] /= d;
      tiles[y] *= d;
      return trace.WithDecision(index, InstValue::IntArray(tiles), /*remove_postproc=*/true);
    }
  }

  // Sets one inner factor of a padded tiling to a power of two (at most 64, the innermost at
  // most max_innermost_factor) other than its value and recomputes the outer factor, so the
  // tiling still covers the extent; a draw that pads more than padded_tile::PaddingAllowed
  // allows is redrawn, at most kAttempts times (then no mutation).
  static std::optional<Trace> MutatePaddedTiles(const Trace& trace, size_t index, Random* rng) {
    constexpr int kAttempts = 16;
    const Instruction& inst = trace.insts()[index];
    const std::vector<int64_t> tiles = trace.decision(index).AsIntArray();
    const int64_t n = static_cast<int64_t>(tiles.size());
    const int64_t limit = inst.attrs[1].is_int() ? inst.attrs[1].as_int() : -1;
    const int64_t extent = inst.attrs[2].as_int();
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      const int64_t j = rng->UniformInt(1, n);
      const int64_t cap = j == n - 1 && limit != -1 ? limit : padded_tile::kDefaultMaxInnermost;
      std::vector<int64_t> values;
      for (int64_t v = 1; v <= cap; v *= 2) {
        if (v != tiles[j]) values.push_back(v);
      }
      if (values.empty()) continue;
      std::vector<int64_t> next = tiles;
      next[j] = values[rng->UniformInt(0, static_cast<int64_t>(values.size()))];
      next = padded_tile::NormalizeOuter(std::move(next), extent);
      if (next == tiles ||
          !padded_tile::PaddingAllowed(extent, padded_tile::PaddedExtent(next, extent))) {
        continue;
      }
      return trace.WithDecision(index, InstValue::IntArray(next), /*remove_postproc=*/true);
    }
    return std::nullopt;
  }
};

}  // namespace

absl::StatusOr<MutatorPtr> NewMutateTileSize(const Target& target, const nlohmann::json& params) {
  (void)target;
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse(kTileSizeName, params, {}).status());
  return std::make_shared<MutateTileSize>();
}

}  // namespace tessera
