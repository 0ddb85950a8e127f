// The arithmetic of padded (non-perfect) tilings, shared by SamplePaddedTile (schedule/), the
// MultiLevelTiling rule that chooses it (rules/) and MutateTileSize (tuner/): n factors whose
// product covers a loop's extent, the loop split with a predicate on the tail
// (docs/tuning.md, "Odd extents").
#ifndef TESSERA_SCHEDULE_PADDED_TILE_H_
#define TESSERA_SCHEDULE_PADDED_TILE_H_

#include <cstdint>
#include <vector>

namespace tessera {
namespace padded_tile {

// A tile this long is worth a vector register on the CPUs we target (8 float32 lanes of AVX2).
constexpr int64_t kUsefulTile = 8;

// The largest innermost factor sampled when the rule sets no limit (max_innermost_factor -1).
constexpr int64_t kDefaultMaxInnermost = 64;

// Whether `extent` has a divisor that is a multiple of kUsefulTile and at most max_innermost
// (-1: 64): a perfect tiling can then give it whole vector registers. 127, 257, 77, 100 and
// 50257 have none; 96 has 8, 16, 24, 32, 48. Extents below 2 * kUsefulTile count as having one
// (padding them wastes too much for too little), and so do all extents when max_innermost is
// below kUsefulTile (the rule asked for no vector-sized tiles).
inline bool HasUsefulDivisor(int64_t extent, int64_t max_innermost) {
  const int64_t cap = max_innermost == -1 ? kDefaultMaxInnermost : max_innermost;
  if (extent < 2 * kUsefulTile || cap < kUsefulTile) return true;
  for (int64_t d = kUsefulTile; d <= cap && d <= extent; d += kUsefulTile) {
    if (extent % d == 0) return true;
  }
  return false;
}

// Whether covering `extent` by `padded` iterations wastes at most an eighth of the extent.
inline bool PaddingAllowed(int64_t extent, int64_t padded) {
  return padded >= extent && (padded - extent) * 8 <= extent;
}

// The product of tiles[1..], capped at 2 * extent (from there on the outer factor is 1 and
// the padding more than the extent, which PaddingAllowed rejects).
inline int64_t InnerProduct(const std::vector<int64_t>& tiles, int64_t extent) {
  const int64_t cap = 2 * extent;
  int64_t inner = 1;
  for (size_t i = 1; i < tiles.size(); ++i) {
    inner = inner > cap / tiles[i] ? cap : inner * tiles[i];
  }
  return inner;
}

// `tiles` (all positive) with the outer factor set to the fewest outer iterations that cover
// `extent`: ceil(extent / product of the inner factors). Every padded tiling is kept in this
// form, so a decision is determined by its inner factors.
inline std::vector<int64_t> NormalizeOuter(std::vector<int64_t> tiles, int64_t extent) {
  if (tiles.empty()) return tiles;
  const int64_t inner = InnerProduct(tiles, extent);
  tiles[0] = (extent + inner - 1) / inner;
  return tiles;
}

// The iterations a normalized tiling runs, tiles[0] * the inner product (capped as above).
inline int64_t PaddedExtent(const std::vector<int64_t>& tiles, int64_t extent) {
  return tiles.empty() ? 0 : tiles[0] * InnerProduct(tiles, extent);
}

}  // namespace padded_tile
}  // namespace tessera

#endif  // TESSERA_SCHEDULE_PADDED_TILE_H_
