// Test helper for the cost-model tests: randomly tiled GMM schedules built with the schedule
// primitives (SamplePerfectTile + Split + Reorder, optional Parallel / Vectorize / unroll
// pragma), as a tuner's design space would produce them.
#ifndef TESSERA_TESTS_COST_MODEL_GMM_SCHEDULES_H_
#define TESSERA_TESTS_COST_MODEL_GMM_SCHEDULES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "schedule/schedule.h"

namespace tessera {
namespace testing {

// A float32 GMM C[1, n, n] = A[1, n, n] x B[1, n, n].
PrimFunc GmmFunc(int64_t n);

struct TiledGmm {
  Schedule schedule;
  std::string key;  // the sampled decisions, equal for equal schedules
};

// Tiles i and j into 3 levels and k into 2 (order i0 j0 i1 j1 k0 i2 k1 j2), with tile
// sizes, loop kinds and the unroll pragma drawn from `seed`. `parallel` allows a parallel
// outer loop.
absl::StatusOr<TiledGmm> RandomTiledGmm(const PrimFunc& gmm, int64_t seed, bool parallel);

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_COST_MODEL_GMM_SCHEDULES_H_
