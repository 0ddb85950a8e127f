// Internal to cost_model/: the buffer-access group of the per-store features (group 2 of
// docs/reference/metaschedule.md §6.2), shared by features.cc (the walk over the program) and
// features_access.cc (regions, strides and reuse of one store's buffers).
#ifndef TESSERA_COST_MODEL_FEATURES_INTERNAL_H_
#define TESSERA_COST_MODEL_FEATURES_INTERNAL_H_

#include <cmath>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "ir/arith/analyzer.h"
#include "ir/expr.h"
#include "ir/stmt.h"

namespace tessera {
namespace features_internal {

// Row layout (kFeatureDim = 164).
inline constexpr int kNumArith = 16;
inline constexpr int kLoopKindGroup = 11;  // per vectorized / unrolled / parallel
inline constexpr int kNumGpu = 8;
inline constexpr int kGroup1 = kNumArith + 3 * kLoopKindGroup + kNumGpu;  // 57
inline constexpr int kBuffersPerStore = 5;
inline constexpr int kPerBuffer = 18;
inline constexpr int kGroup2 = kBuffersPerStore * kPerBuffer;  // 90
inline constexpr int kCurveSamples = 10;
inline constexpr int kGroup4 = 4;
inline constexpr int kGroup5 = 3;
inline constexpr int kGroup2Offset = kGroup1;
inline constexpr int kGroup3Offset = kGroup2Offset + kGroup2;   // 147
inline constexpr int kGroup4Offset = kGroup3Offset + kCurveSamples;  // 157
inline constexpr int kGroup5Offset = kGroup4Offset + kGroup4;        // 161
inline constexpr double kCacheLineBytes = 64;

// sign(x) * log2(|x| + 1): the scaling of every numeric feature.
inline float Slog(double x) {
  return static_cast<float>(x < 0 ? -std::log2(-x + 1) : std::log2(x + 1));
}

// A loop around the store (after unit serial loops are dropped), outermost first.
struct LoopInfo {
  const ForNode* loop;
  int64_t extent;
};

// One buffer access of a store, with block iteration variables replaced by their bindings.
struct Access {
  Buffer buffer;
  std::vector<Expr> indices;
  bool is_write;
};

// Per-(loop, buffer) lists of elements touched under that loop, one entry per store so far
// (the serial-multiple-read-write reuse of the reference).
using TouchedLists = std::map<std::pair<const ForNode*, const BufferNode*>, std::vector<int64_t>>;

// The regions one buffer covers under each loop level of one store: extents[level][dim],
// level i relaxing loops i..n-1 (level n: a single iteration).
struct BufferBoxes {
  Buffer buffer;
  std::vector<std::vector<int64_t>> extents;
};

struct AccessFeatures {
  // kGroup2 values, slot-ordered (lines desc, bytes desc, name) and zero-filled.
  std::vector<float> values;
  // Bytes touched by all buffers of the store under loop level i (i in 0..n).
  std::vector<double> touched_bytes;
  // The boxes of every accessed buffer, for the allocation group.
  std::vector<BufferBoxes> boxes;
};

// Computes group 2 for one store under `loops` (`prod` = product of their extents). Every
// loop variable must be bound in `analyzer` to the single point 0; they are left so. Appends
// this store's touched counts to `touched`.
AccessFeatures ComputeAccessFeatures(const std::vector<Access>& accesses,
                                     const std::vector<LoopInfo>& loops, double prod,
                                     arith::Analyzer* analyzer, TouchedLists* touched);

}  // namespace features_internal
}  // namespace tessera

#endif  // TESSERA_COST_MODEL_FEATURES_INTERNAL_H_
