// PackedPanelGemm (cpu): the design space around the default's register-tiled, packed-panel GEMM
// (rules/default/tiled_matmul.h, the same function CpuDefault calls with fixed factors). A GEMM
// block (rules/default/analysis.h MatchGemm) directly under the root with trivial bindings gets
// a branch per loop nest TiledMatmul builds (B packed per panel; packed per K block with the C
// block carried across K blocks; unpacked; and, where B is a layout-free weight, read from strips
// packed once outside the call), each with its register tile rows, tile
// columns and tiles per panel drawn by SamplePaddedTile (odd extents get padded tiles, as the
// default's imperfect splits) and, K-blocked, the K block by SamplePerfectTile; plus the block
// untouched, for MultiLevelTiling. The tiled branches annotate the block schedule_rule = "None"
// so the later rules (MultiLevelTiling, RandomComputeLocation) leave it alone. Pack or not is
// a branch, not a SampleCategorical: a trace replays the same instructions whatever its
// decisions, and packing adds instructions (CacheRead, ComputeAt).
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "rules/annotations.h"
#include "rules/default/analysis.h"
#include "rules/default/tiled_matmul.h"
#include "rules/rule/params.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

using dlight::BlockInfo;
using dlight::GemmMatch;
using dlight::MatmulLayout;
using dlight::MatmulTiling;

class PackedPanelGemm : public ScheduleRule {
 public:
  PackedPanelGemm(std::vector<MatmulLayout> layouts, bool keep_untiled, dlight::CpuCore core)
      : layouts_(std::move(layouts)), keep_untiled_(keep_untiled), core_(core) {}
  std::string name() const override { return "PackedPanelGemm"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    TESSERA_ASSIGN_OR_RETURN(Block node, sch->Get(block));
    std::optional<BlockInfo> info = dlight::UntiledRootBlockInfo(sch, block, node);
    std::optional<GemmMatch> gemm;
    if (info.has_value()) gemm = dlight::MatchGemm(node, info->extents);
    if (!gemm.has_value()) return std::vector<Schedule>{std::move(*sch)};
    std::vector<Schedule> result;
    for (MatmulLayout layout : layouts_) {
      Schedule tiled = sch->Copy();
      MatmulTiling tiling;
      tiling.layout = layout;
      // bfloat16 and int8 products a group of k at a time where the core has a dot product for
      // them (packed and prepacked B); widened where the sampled tiles leave guards.
      tiling.dot_groups = (layout == MatmulLayout::kPacked || layout == MatmulLayout::kPrepacked) &&
                          dlight::CpuDotFor(node, *gemm, info->extents, core_).has_value();
      absl::StatusOr<BlockRV> product =
          dlight::TiledMatmul(&tiled, *info, node, *gemm, tiling, core_);
      if (!product.ok() && tiling.dot_groups) {
        tiled = sch->Copy();
        tiling.dot_groups = false;
        product = dlight::TiledMatmul(&tiled, *info, node, *gemm, tiling, core_);
      }
      if (!product.ok()) continue;
      if (!tiled.Annotate(*product, attr::kScheduleRule, InstValue::String("None")).ok()) continue;
      result.push_back(std::move(tiled));
    }
    if (keep_untiled_ || result.empty()) result.push_back(std::move(*sch));
    return result;
  }

 private:
  std::vector<MatmulLayout> layouts_;
  bool keep_untiled_;
  dlight::CpuCore core_;  // the target's: the tile's lanes and bounds
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewPackedPanelGemm(const Target& target,
                                                   const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(
      RuleParams p, RuleParams::Parse("PackedPanelGemm", params, {"layouts", "keep_untiled"}));
  TESSERA_ASSIGN_OR_RETURN(bool keep_untiled, p.Bool("keep_untiled", true));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<std::string> names,
      p.StringList("layouts", {"packed", "packed_k_blocked", "unpacked", "prepacked"}));
  std::vector<MatmulLayout> layouts;
  for (const std::string& name : names) {
    if (name == "packed") {
      layouts.push_back(MatmulLayout::kPacked);
    } else if (name == "packed_k_blocked") {
      layouts.push_back(MatmulLayout::kPackedKBlocked);
    } else if (name == "unpacked") {
      layouts.push_back(MatmulLayout::kUnpacked);
    } else if (name == "prepacked") {
      layouts.push_back(MatmulLayout::kPrepacked);
    } else {
      return p.Error("layouts", "must list packed, packed_k_blocked, unpacked or prepacked");
    }
  }
  // The loop nests are CPU ones (parallel loops, a local C tile); on other targets the rule
  // never applies.
  if (!target.is_cpu()) layouts.clear();
  return std::make_shared<const PackedPanelGemm>(std::move(layouts), keep_untiled,
                                                 dlight::CpuCore::Of(target));
}

}  // namespace tessera
