// MultiLevelTilingWgmma (cuda sm_90a): the design space around the default's Hopper GEMM
// (rules/default/wgmma_gemm.h, the same function the Matmul default rule calls with fixed tiles).
// A float16 or bfloat16 GEMM summed in float32 (rules/default/analysis.h MatchGemm, laid out for
// tensor cores) directly under the root gets a branch per C tile that divides it (warpgroups x 64
// rows by n columns, n a multiple of 8 up to 256: the wgmma intrinsic's N is part of the trace's
// Tensorize, so it is a branch, not a sampled decision), each with its k step (64 or 128 k) and its
// pipeline depth drawn by SampleCategorical; plus the block untouched, for
// MultiLevelTilingTensorCore and MultiLevelTiling. Shared memory beyond the target's is left to
// VerifyGPUCode.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rules/annotations.h"
#include "rules/default/analysis.h"
#include "rules/default/wgmma_gemm.h"
#include "rules/rule/params.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

constexpr char kWgmmaOwner[] = "MultiLevelTilingWgmma";

std::vector<double> Uniform(size_t n) {
  return std::vector<double>(n, 1.0 / static_cast<double>(n));
}

class MultiLevelTilingWgmma : public ScheduleRule {
 public:
  MultiLevelTilingWgmma(bool enabled, std::vector<int64_t> warpgroups, std::vector<int64_t> ns,
                        std::vector<int64_t> stages)
      : enabled_(enabled),
        warpgroups_(std::move(warpgroups)),
        ns_(std::move(ns)),
        stages_(std::move(stages)) {}
  std::string name() const override { return kWgmmaOwner; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    if (!enabled_) return std::vector<Schedule>{std::move(*sch)};
    TESSERA_ASSIGN_OR_RETURN(Block node, sch->Get(block));
    std::optional<dlight::BlockInfo> info = dlight::UntiledRootBlockInfo(sch, block, node);
    std::optional<dlight::GemmMatch> gemm;
    if (info.has_value()) gemm = dlight::MatchGemm(node, info->extents);
    if (!gemm.has_value()) return std::vector<Schedule>{std::move(*sch)};
    const std::vector<int64_t> chunks =
        dlight::WgmmaKChunks(dlight::GroupExtent(info->extents, *gemm, dlight::kGemmK));
    const std::vector<int64_t> columns =
        dlight::WgmmaColumns(dlight::GroupExtent(info->extents, *gemm, dlight::kGemmJ));
    std::vector<Schedule> result;
    for (int64_t warpgroups : warpgroups_) {
      for (int64_t n : columns) {
        if (!ns_.empty() && std::find(ns_.begin(), ns_.end(), n) == ns_.end()) continue;
        Schedule tiled = sch->Copy();
        absl::StatusOr<ExprRV> k_chunks = tiled.SampleCategorical(chunks, Uniform(chunks.size()));
        absl::StatusOr<ExprRV> stages = tiled.SampleCategorical(stages_, Uniform(stages_.size()));
        if (!k_chunks.ok() || !stages.ok()) continue;
        const dlight::WgmmaTile tile{warpgroups, n, InstValue::Of(*k_chunks),
                                     InstValue::Of(*stages)};
        if (!dlight::ApplyWgmmaGemm(&tiled, *info, node, *gemm, tile).ok()) continue;
        result.push_back(std::move(tiled));
      }
    }
    result.push_back(std::move(*sch));
    return result;
  }

 private:
  const bool enabled_;  // the target is sm_90a
  const std::vector<int64_t> warpgroups_, ns_, stages_;
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewMultiLevelTilingWgmma(const Target& target,
                                                         const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(RuleParams p,
                           RuleParams::Parse(kWgmmaOwner, params, {"warpgroups", "n", "stages"}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> warpgroups, p.IntList("warpgroups", {1, 2}));
  // Empty: every multiple of 8 up to 256 that divides the GEMM's columns.
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> ns, p.IntList("n", {}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> stages, p.IntList("stages", {2, 3, 4, 5}));
  for (int64_t w : warpgroups) {
    if (w != 1 && w != 2) return p.Error("warpgroups", "must list 1 and/or 2");
  }
  for (int64_t n : ns) {
    if (n % 8 != 0 || n < 8 || n > 256) {
      return p.Error("n", "must list multiples of 8 from 8 to 256");
    }
  }
  for (int64_t s : stages) {
    if (s < 1 || s > 8) return p.Error("stages", "must list integers from 1 to 8");
  }
  if (warpgroups.empty() || stages.empty()) {
    return p.Error(warpgroups.empty() ? "warpgroups" : "stages", "must not be empty");
  }
  const bool hopper =
      target.is_cuda() && target.arch_specific() && target.compute_capability() == 90;
  return std::make_shared<const MultiLevelTilingWgmma>(hopper, std::move(warpgroups), std::move(ns),
                                                       std::move(stages));
}

}  // namespace tessera
