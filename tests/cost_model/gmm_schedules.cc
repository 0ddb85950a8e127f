#include "tests/cost_model/gmm_schedules.h"

#include <vector>

#include "base/check.h"
#include "base/status_macros.h"
#include "frontend/workloads.h"

namespace tessera {
namespace testing {

PrimFunc GmmFunc(int64_t n) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"B", 1}, {"M", n}, {"N", n}, {"K", n}});
  TESSERA_CHECK(f.ok()) << f.status().message();
  return *f;
}

absl::StatusOr<TiledGmm> RandomTiledGmm(const PrimFunc& gmm, int64_t seed, bool parallel) {
  Schedule sch = Schedule::Create(gmm, seed);
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, sch.GetBlock("C"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch.GetLoops(block));  // b, i, j, k
  std::string key;
  auto tile = [&](LoopRV loop, int n) -> absl::StatusOr<std::vector<LoopRV>> {
    TESSERA_ASSIGN_OR_RETURN(std::vector<ExprRV> factors, sch.SamplePerfectTile(loop, n, 32));
    std::vector<InstValue> values;
    for (ExprRV f : factors) {
      values.push_back(InstValue::Of(f));
      key += std::to_string(*sch.Get(f)) + ",";
    }
    return sch.Split(loop, values);
  };
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> i, tile(loops[1], 3));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> j, tile(loops[2], 3));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> k, tile(loops[3], 2));
  TESSERA_RETURN_IF_ERROR(sch.Reorder({i[0], j[0], i[1], j[1], k[0], i[2], k[1], j[2]}));
  // Loop kinds: each choice is sampled (recorded in the trace) and skipped where the
  // primitive refuses.
  auto coin = [&]() -> absl::StatusOr<bool> {
    TESSERA_ASSIGN_OR_RETURN(ExprRV c, sch.SampleCategorical({0, 1}, {0.5, 0.5}));
    TESSERA_ASSIGN_OR_RETURN(int64_t v, sch.Get(c));
    key += std::to_string(v) + ";";
    return v == 1;
  };
  TESSERA_ASSIGN_OR_RETURN(bool vectorize, coin());
  if (vectorize) (void)sch.Vectorize(j[2]).ok();
  TESSERA_ASSIGN_OR_RETURN(ExprRV unroll, sch.SampleCategorical({0, 16, 64}, {1, 1, 1}));
  TESSERA_ASSIGN_OR_RETURN(int64_t step, sch.Get(unroll));
  key += std::to_string(step);
  if (step > 0) {
    TESSERA_RETURN_IF_ERROR(
        sch.Annotate(i[0], "pragma_auto_unroll_max_step", InstValue::Of(unroll)));
  }
  if (parallel) {
    TESSERA_ASSIGN_OR_RETURN(bool par, coin());
    if (par) (void)sch.Parallel(i[0]).ok();
  }
  return TiledGmm{std::move(sch), key};
}

}  // namespace testing
}  // namespace tessera
