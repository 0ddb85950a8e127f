// Transpose (docs/reference/metaschedule.md §10.9): after inlining everything inlinable, a single
// 2-D block out[perm(i)] = in[i] whose store indices are a permutation, other than the identity, of
// its load indices. Each thread block moves a 32 x 32 tile: the input tile is read into shared
// memory with coalesced (and, for whole tiles, 4-wide vectorized) loads by 8 x 32 threads, and
// the output is written row by row from it, so both global accesses are contiguous. (DLight
// uses 16 x 8 threads with an optional decode prologue; the tile here is the one of
// examples/gpu/transpose.json.)
#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kTransposeTile = 32;
constexpr int64_t kThreadsY = 8;
constexpr int64_t kTransposeVector = 4;

bool IsTranspose(const Block& block) {
  const auto* store = block->body.as<BufferStoreNode>();
  if (store == nullptr || block->reads.size() != 1 || block->init.defined()) return false;
  const auto* load = store->value.as<BufferLoadNode>();
  if (load == nullptr || load->indices.size() != store->indices.size()) return false;
  std::vector<int> in = AccessIters(block, load->buffer);
  std::vector<int> out = AccessIters(block, store->buffer);
  std::vector<int> in_sorted = in, out_sorted = out;
  std::sort(in_sorted.begin(), in_sorted.end());
  std::sort(out_sorted.begin(), out_sorted.end());
  for (int i : in) {
    if (i < 0) return false;
  }
  return in != out && in_sorted == out_sorted;
}

absl::Status Apply(Schedule* sch, const BlockInfo& info) {
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> i,
      sch->Split(info.loops[0], {InstValue(), InstValue::Int(kTransposeTile)}));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> j,
      sch->Split(info.loops[1], {InstValue(), InstValue::Int(kTransposeTile)}));
  TESSERA_RETURN_IF_ERROR(sch->Reorder({i[0], j[0], i[1], j[1]}));
  TESSERA_ASSIGN_OR_RETURN(LoopRV tile, sch->Fuse({i[0], j[0]}));
  TESSERA_RETURN_IF_ERROR(sch->Bind(tile, "blockIdx.x"));
  TESSERA_ASSIGN_OR_RETURN(BlockRV cache, sch->CacheRead(info.rv, 0, "shared"));
  TESSERA_RETURN_IF_ERROR(sch->ComputeAt(cache, tile, /*preserve_unit_loops=*/true));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> copy, sch->GetLoops(cache));
  if (copy.size() != 3) return absl::InvalidArgumentError("unexpected copy loops");
  const int64_t elements = LoopExtent(*sch, copy[1]) * LoopExtent(*sch, copy[2]);
  TESSERA_ASSIGN_OR_RETURN(LoopRV fused, sch->Fuse({copy[1], copy[2]}));
  const bool vector = elements % (kThreadsY * kTransposeTile * kTransposeVector) == 0;
  std::vector<InstValue> factors = {InstValue(), InstValue::Int(kThreadsY),
                                    InstValue::Int(kTransposeTile)};
  if (vector) factors.push_back(InstValue::Int(kTransposeVector));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> c, sch->Split(fused, factors));
  TESSERA_RETURN_IF_ERROR(sch->Bind(c[1], "threadIdx.y"));
  TESSERA_RETURN_IF_ERROR(sch->Bind(c[2], "threadIdx.x"));
  if (vector) TESSERA_RETURN_IF_ERROR(sch->Vectorize(c[3]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV inner, sch->Fuse({i[1], j[1]}));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> o,
      sch->Split(inner, {InstValue(), InstValue::Int(kThreadsY), InstValue::Int(kTransposeTile)}));
  TESSERA_RETURN_IF_ERROR(sch->Bind(o[1], "threadIdx.y"));
  return sch->Bind(o[2], "threadIdx.x");
}

std::optional<Schedule> Transpose(Schedule sch, const Target& target) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (blocks.has_value()) blocks = TryInline(&sch, *blocks);
  if (!blocks.has_value() || blocks->size() != 1 || blocks->front().loops.size() != 2) {
    return std::nullopt;
  }
  absl::StatusOr<Block> block = BlockByName(sch, blocks->front().name);
  if (!block.ok() || !IsTranspose(*block)) return std::nullopt;
  if (!Apply(&sch, blocks->front()).ok()) return std::nullopt;
  return IfValidOnGpu(std::move(sch), target);
}

}  // namespace

DefaultRulePtr NewGpuTransposeRule() {
  return NewDefaultRule("Transpose", Target::Kind::kCuda, &Transpose);
}

}  // namespace dlight
}  // namespace tessera
