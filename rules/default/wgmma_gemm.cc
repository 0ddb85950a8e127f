#include "rules/default/wgmma_gemm.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/loop_annotations.h"
#include "ir/tensor_core_fragments.h"
#include "schedule/tensor_intrin.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kWarpgroup = 128;
// k chunks of a step that fill one 128-byte TMA column block of 16-bit inputs.
constexpr int64_t kChunksPerBlock = 4;

}  // namespace

std::vector<int64_t> WgmmaKChunks(int64_t k) {
  std::vector<int64_t> chunks = {kChunksPerBlock};
  if (k % (2 * kChunksPerBlock * kWgmmaK) == 0) chunks.push_back(2 * kChunksPerBlock);
  return chunks;
}

std::vector<int64_t> WgmmaColumns(int64_t j) {
  std::vector<int64_t> columns;
  for (int64_t n = 8; n <= 256; n += 8) {
    if (j % n == 0) columns.push_back(n);
  }
  return columns;
}

absl::Status ApplyWgmmaGemm(Schedule* sch, const BlockInfo& main, const Block& block,
                            const GemmMatch& g, const WgmmaTile& tile) {
  const DataType in = block->reads[g.a].buffer.dtype();
  const WgmmaIntrins* intrins = nullptr;
  if (in == block->reads[g.b].buffer.dtype() &&
      IsTensorCoreGemm(block, g, main.extents, /*column_multiple=*/8)) {
    intrins = FindWgmmaIntrins(in, block->writes[0].buffer.dtype(), tile.n);
  }
  if (intrins == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("wgmma: block ", block->name,
                     " is no float16 or bfloat16 GEMM summed in float32 laid out "
                     "for tensor cores, or n = ",
                     tile.n, " is not 64, 128, 192 or 256"));
  }
  TESSERA_ASSIGN_OR_RETURN(GemmLoops loops, FuseGemmLoops(sch, main, g));
  const int64_t chunk_multiple = tile.k_chunks.is_int() ? tile.k_chunks.as_int() : kChunksPerBlock;
  if (loops.extent_i % (tile.warpgroups * kWgmmaM) != 0 || loops.extent_j % tile.n != 0 ||
      loops.extent_k % (chunk_multiple * kWgmmaK) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("wgmma: a tile of ", tile.warpgroups * kWgmmaM,
                                                   " x ", tile.n, " does not divide the GEMM of ",
                                                   loops.extent_i, " x ", loops.extent_j, " x ",
                                                   loops.extent_k));
  }
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> i,
      sch->Split(loops.i, {InstValue(), InstValue::Int(tile.warpgroups), InstValue::Int(kWgmmaM)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> j,
                           sch->Split(loops.j, {InstValue(), InstValue::Int(tile.n)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> k, sch->Split(loops.k, {InstValue(), tile.k_chunks,
                                                                       InstValue::Int(kWgmmaK)}));
  TESSERA_RETURN_IF_ERROR(sch->Reorder({i[0], j[0], i[1], k[0], k[1], i[2], j[1], k[2]}));
  TESSERA_ASSIGN_OR_RETURN(BlockRV compute, sch->Blockize(i[2]));
  TESSERA_RETURN_IF_ERROR(BindGemmThreadBlocks(sch, loops, i[0], j[0]));
  TESSERA_RETURN_IF_ERROR(sch->Bind(i[1], "threadIdx.y"));
  // Both caches are made before either moves (a cache copy starts after the whole nest).
  TESSERA_ASSIGN_OR_RETURN(BlockRV c_shared, sch->CacheWrite(compute, 0, "shared"));
  TESSERA_ASSIGN_OR_RETURN(BlockRV c_frag, sch->CacheWrite(compute, 0, "wgmma.accumulator"));
  TESSERA_RETURN_IF_ERROR(InlineEpilogues(sch, c_shared));
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeAt(c_frag, i[1], /*preserve_unit_loops=*/true));
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeAt(c_shared, j[0], /*preserve_unit_loops=*/true));
  TESSERA_RETURN_IF_ERROR(
      CooperativeFetch(sch, c_shared, block->writes[0].buffer.ndim(), tile.warpgroups, kWarpgroup));
  for (int read : {g.a, g.b}) {
    TESSERA_ASSIGN_OR_RETURN(BlockRV shared, sch->CacheRead(compute, read, kTmaSharedScope));
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(shared, k[0], /*preserve_unit_loops=*/true));
  }
  TESSERA_ASSIGN_OR_RETURN(BlockRV init, sch->DecomposeReduction(compute, k[0]));
  TESSERA_RETURN_IF_ERROR(sch->Tensorize(init, intrins->fill));
  TESSERA_RETURN_IF_ERROR(sch->Tensorize(compute, intrins->sync));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> store, sch->GetLoops(c_frag));
  if (store.size() < 2) return absl::InvalidArgumentError("wgmma: accumulator store has < 2 loops");
  TESSERA_ASSIGN_OR_RETURN(BlockRV store_tile, sch->Blockize(store[store.size() - 2]));
  TESSERA_RETURN_IF_ERROR(sch->Tensorize(store_tile, intrins->store));
  return sch->Annotate(k[0], kSoftwarePipelineStages, tile.stages);
}

}  // namespace dlight
}  // namespace tessera
