// PixelTiledConv (cpu): the design space around the CPU default's register-tiled convolution
// (rules/default/tiled_conv.h TiledConvolution, the function CpuDefault calls with its fixed
// tile): a reduction whose output is contiguous along its last spatial loop and some read of
// which does not use that loop (an NHWC dense convolution: the input pixel is broadcast over
// the output channels; not a GEMM, PackedPanelGemm's), directly under the root with trivial
// bindings, gets the default's loop nest with its register tile drawn by SamplePerfectTile
// (rows of the output width, up to 14, unrolled; columns of the output channels, up to 64,
// vectorized), and the block untouched, for MultiLevelTiling. MultiLevelTiling's spaces held
// nothing as fast as the default's pixel-row tiles (docs/tuning.md), so without this branch the
// search could only move away from them. Layout-free weights (a dense convolution's) are read
// from strips [C / 16, .., 16] packed once outside the call, as in the default. The tiled branch
// annotates the block schedule_rule = "None" so the later rules leave it alone.
#include <string>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "rules/annotations.h"
#include "rules/default/analysis.h"
#include "rules/default/tiled_conv.h"
#include "rules/rule/params.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

using dlight::BlockInfo;

class PixelTiledConv : public ScheduleRule {
 public:
  PixelTiledConv(bool enabled, bool keep_untiled, dlight::CpuCore core)
      : enabled_(enabled), keep_untiled_(keep_untiled), core_(core) {}
  std::string name() const override { return "PixelTiledConv"; }

  absl::StatusOr<std::vector<Schedule>> Apply(Schedule* sch, BlockRV block) const override {
    TESSERA_ASSIGN_OR_RETURN(Block node, sch->Get(block));
    std::optional<BlockInfo> info;
    if (enabled_) info = dlight::UntiledRootBlockInfo(sch, block, node);
    // A GEMM matches too (C contiguous along J, A broadcast over it): PackedPanelGemm's.
    if (!info.has_value() ||
        dlight::ClassifyChannelsLast(node, *info) != dlight::ChannelsLastKind::kBroadcast ||
        dlight::MatchGemm(node, info->extents).has_value()) {
      return std::vector<Schedule>{std::move(*sch)};
    }
    std::vector<LoopRV> spatial, reduction;
    for (size_t i = 0; i < info->kinds.size(); ++i) {
      (info->kinds[i] == 'S' ? spatial : reduction).push_back(info->loops[i]);
    }
    std::vector<Schedule> result;
    dlight::ConvTiling tiling;  // rows and columns drawn
    tiling.channels_inner = dlight::ConvChannelsInner(*info);
    // Layout-free weights are read from strips packed once (as the default does; in groups of
    // input channels where the core has a dot product for the types), else plain.
    const bool prepack = dlight::CanPrepackConvWeights(sch->func(), node, *info, core_);
    const bool dot = prepack && dlight::CpuDotForConv(node, *info, core_).has_value();
    for (auto [prepack_weights, dot_groups] :
         {std::pair{prepack, dot}, {prepack, false}, {false, false}}) {
      tiling.prepack_weights = prepack_weights;
      tiling.dot_groups = dot_groups;
      Schedule tiled = sch->Copy();
      absl::StatusOr<BlockRV> product =
          dlight::TiledConvolution(&tiled, *info, spatial, reduction, tiling, core_);
      if (product.ok() &&
          tiled.Annotate(*product, attr::kScheduleRule, InstValue::String("None")).ok()) {
        result.push_back(std::move(tiled));
        break;
      }
    }
    if (keep_untiled_ || result.empty()) result.push_back(std::move(*sch));
    return result;
  }

 private:
  bool enabled_;
  bool keep_untiled_;
  dlight::CpuCore core_;  // the target's: the tile's lanes and bounds
};

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewPixelTiledConv(const Target& target,
                                                  const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(RuleParams p,
                           RuleParams::Parse("PixelTiledConv", params, {"keep_untiled"}));
  TESSERA_ASSIGN_OR_RETURN(bool keep_untiled, p.Bool("keep_untiled", true));
  // The loop nest is a CPU one (parallel loops, a local tile); on other targets the rule never
  // applies.
  return std::make_shared<const PixelTiledConv>(target.is_cpu(), keep_untiled,
                                                dlight::CpuCore::Of(target));
}

}  // namespace tessera
