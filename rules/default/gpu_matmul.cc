// Matmul (docs/reference/metaschedule.md §10.3), the SIMT path. Match: after inlining everything
// inlinable, exactly one reduction block, the others elementwise consumers of it (epilogues);
// the reduction reads two buffers A, B and writes C with point accesses (every index a single
// iterator or a constant) classifying as the GEMM C[S,I,J] += A[S,I,K] * B[S,J,K]: S spatial in
// A, B and C; I spatial in A and C; J spatial in B and C; K reduction in A and B (unit iterators
// are ignored; I, J and K must exist). J is the group C is contiguous along. A convolution's
// input, read through windows, is reindexed first (ReindexWindowedInput), which makes it one.
//
// Schedule (CUDA config of DLight: 8 x 16 threads, 4 x 4 outputs per thread, k step 16,
// vthread 1): loops reordered (S, I, J, K) and each group fused; I -> [by, ty = 8, 4],
// J -> [bx, tx = 16, 4], K -> [ko, 16], S fused into by; a local accumulator written back at tx
// (epilogues inlined into the write-back); A and B tiles in shared memory at ko, fetched
// cooperatively by all threads with 4-wide vectors when the tile divides evenly; init decomposed
// at ko; the 4 x 4 micro tile unrolled; on sm_80+ the k step's tiles software-pipelined over two
// stages (filled by cp.async while the previous ones compute). Shapes that are not multiples of
// the 32 x 64 x 16 tile get predicated edge tiles instead of DLight's pad_einsum.
//
// The tensor-core path, tried first on cuda sm_70+ for float16 A and B with a float16 or float32
// C, and on sm_80+ for bfloat16 A and B with a float32 C, laid out as C[S.., I, J] += A[S.., I, K]
// * B[S.., K, J] (one iterator each for I, J and K, all multiples of 16): the 16x16x16 inner tile
// is blockized; per thread block a 64 x 64 tile (fewer warps / fragments where 64 does not divide)
// on up to 2 x 2 warps (threadIdx.y), each warp 2 x 2 fragments; A and B tiles of k step 32 staged
// in shared memory (rows padded against bank conflicts, schedule/tensor_intrin.h), fetched by
// every thread (threadIdx.y x 32 threadIdx.x, 4-wide vectors when they divide); matrix_a / matrix_b
// fragments loaded at the inner k loop; an accumulator fragment per warp stored to a shared C tile,
// which goes to global memory through every thread with the epilogues inlined; init decomposed at
// the outer k loop; loads, fill, mma and store tensorized with the intrinsics of the input and
// accumulator dtypes: Tessera's own ldmatrix and mma.sync fragments on sm_80 and later, WMMA's
// before (schedule/tensor_intrin.h). If any step refuses, the SIMT path is taken instead.
//
// On sm_90a, float16 and bfloat16 GEMMs summed in float32 try the Hopper path first
// (rules/default/wgmma_gemm.h: wgmma from TMA tiles through mbarrier stages) with the largest of
// 128 x 128 over 4 stages, 128 x 128 over 2, 64 x 128 and 64 x 64 over 2, then 128 and 64 rows by
// the widest multiple of 8 up to 256 columns, that divides the GEMM and fits the target's shared
// memory.
#include <algorithm>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/loop_annotations.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"
#include "rules/default/wgmma_gemm.h"
#include "schedule/index_map.h"
#include "schedule/tensor_intrin.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kThreadsI = 8, kThreadsJ = 16, kMicro = 4, kStepK = 16;
// Shared-tile stages of the k step where cp.async fills them in the background (sm_80+).
constexpr int64_t kPipelineStages = 2;

// The shared copy `cache` of operand `read` of a convolution taken as a GEMM (`g`, with its
// windowed input reindexed: [I.., K..], the weights [K.., J..]) laid out and iterated with each
// run of one group's dimensions fused: [pixels, taps] and [taps, output channels]. A tile of 32
// pixels x a K step of 16 is then a 32 x 16 box, where in the unfused layout it spans every image
// row and tap those pixels and taps touch (up to 7x the elements at 112 columns, more than shared
// memory holds for ResNet's stem). Returns the copy's rank.
absl::StatusOr<size_t> FuseGroupRuns(Schedule* sch, BlockRV cache, const Block& block, int read,
                                     const GemmMatch& g) {
  const Buffer& operand = block->reads[read].buffer;
  const std::vector<int> iters = AccessIters(block, operand);
  std::vector<Var> vars;
  std::vector<Expr> fused;  // one per run of a group's dimensions
  int run = -1;
  for (size_t d = 0; d < iters.size(); ++d) {
    const int64_t* extent = AsConstInt(operand.shape()[d]);
    if (iters[d] < 0 || extent == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("conv as gemm: dimension ", d, " of ", operand.name(), " is no iterator"));
    }
    int of = -1;
    for (int group : {kGemmS, kGemmI, kGemmJ, kGemmK}) {
      const std::vector<int>& members = g.groups[group];
      if (std::find(members.begin(), members.end(), iters[d]) != members.end()) of = group;
    }
    vars.emplace_back(absl::StrCat("d", d));
    if (of == run && !fused.empty()) {
      fused.back() = fused.back() * Expr(*extent) + vars.back();
    } else {
      fused.push_back(vars.back());
      run = of;
    }
  }
  if (fused.size() == iters.size()) return fused.size();  // nothing to fuse
  TESSERA_ASSIGN_OR_RETURN(IndexMap map, IndexMap::Make(vars, fused));
  TESSERA_RETURN_IF_ERROR(sch->TransformLayout(cache, 0, /*buffer_index_type=*/1, map));
  TESSERA_RETURN_IF_ERROR(sch->TransformBlockLayout(cache, map));
  return fused.size();
}

// `stages` >= 2: the k step's shared tiles are software-pipelined over that many buffers.
// `im2col` (may be empty) names a convolution's reindexed input (ReindexWindowedInput), which is
// inlined into its shared tile.
absl::Status Apply(Schedule* sch, const BlockInfo& main, const Block& block, const GemmMatch& g,
                   int64_t stages, const std::string& im2col) {
  TESSERA_ASSIGN_OR_RETURN(GemmLoops loops, FuseGemmLoops(sch, main, g));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> i,
      sch->Split(loops.i, {InstValue(), InstValue::Int(kThreadsI), InstValue::Int(kMicro)}));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> j,
      sch->Split(loops.j, {InstValue(), InstValue::Int(kThreadsJ), InstValue::Int(kMicro)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> k,
                           sch->Split(loops.k, {InstValue(), InstValue::Int(kStepK)}));
  TESSERA_RETURN_IF_ERROR(sch->Reorder({i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2]}));
  TESSERA_RETURN_IF_ERROR(BindGemmThreadBlocks(sch, loops, i[0], j[0]));
  TESSERA_RETURN_IF_ERROR(sch->Bind(i[1], "threadIdx.y"));
  TESSERA_RETURN_IF_ERROR(sch->Bind(j[1], "threadIdx.x"));
  TESSERA_ASSIGN_OR_RETURN(BlockRV write_back, WriteBackUnder(sch, main.rv, j[1], "local"));
  for (int read : {g.a, g.b}) {
    size_t ndim = block->reads[read].buffer.shape().size();
    TESSERA_ASSIGN_OR_RETURN(BlockRV cache, sch->CacheRead(main.rv, read, "shared"));
    if (!im2col.empty()) {
      TESSERA_ASSIGN_OR_RETURN(ndim, FuseGroupRuns(sch, cache, block, read, g));
    }
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(cache, k[0], /*preserve_unit_loops=*/true));
    TESSERA_RETURN_IF_ERROR(CooperativeFetch(sch, cache, ndim, kThreadsI, kThreadsJ));
  }
  if (!im2col.empty()) {
    TESSERA_ASSIGN_OR_RETURN(BlockRV columns, sch->GetBlock(im2col));
    TESSERA_RETURN_IF_ERROR(sch->ComputeInline(columns));
  }
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(main.rv, k[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Unroll(i[2]));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(j[2]));
  // Whole tiles only: float4 stores of the result.
  if (loops.extent_i % (kThreadsI * kMicro) == 0 && loops.extent_j % (kThreadsJ * kMicro) == 0) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wb, sch->GetLoops(write_back));
    if (LoopExtent(*sch, wb.back()) == kMicro) TESSERA_RETURN_IF_ERROR(sch->Vectorize(wb.back()));
  }
  if (stages >= 2) {
    TESSERA_RETURN_IF_ERROR(sch->Annotate(k[0], kSoftwarePipelineStages, InstValue::Int(stages)));
  }
  return absl::OkStatus();
}

// ---- Tensor-core path ------------------------------------------------------------------

constexpr int64_t kFragment = 16, kWarp = 32;

// The tensor-core intrinsics for `block` with fragments of `family` where its GEMM is laid out
// for them (IsTensorCoreGemm); nullptr otherwise.
const TensorCoreIntrins* MatchTensorCore(const Block& block, const GemmMatch& g,
                                         const std::vector<int64_t>& extents,
                                         const std::string& family) {
  const Buffer& a = block->reads[g.a].buffer;
  if (a.dtype() != block->reads[g.b].buffer.dtype() || !IsTensorCoreGemm(block, g, extents)) {
    return nullptr;
  }
  return FindTensorCoreIntrins(block, a.dtype(), block->writes[0].buffer.dtype(), family);
}

// The largest of 4, 2, 1 that divides `n`.
int64_t Divisor4(int64_t n) { return n % 4 == 0 ? 4 : n % 2 == 0 ? 2 : 1; }

// Splits the last two loops of `block` by 16, moves the 16x16 pair innermost, blockizes it and
// tensorizes the outer block with `intrin`.
absl::Status TensorizeTile(Schedule* sch, BlockRV block, const std::string& intrin) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  if (loops.size() < 2) return absl::InvalidArgumentError("copy block has fewer than 2 loops");
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> rows,
      sch->Split(loops[loops.size() - 2], {InstValue(), InstValue::Int(kFragment)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> cols,
                           sch->Split(loops.back(), {InstValue(), InstValue::Int(kFragment)}));
  TESSERA_RETURN_IF_ERROR(sch->Reorder({rows[0], cols[0], rows[1], cols[1]}));
  TESSERA_ASSIGN_OR_RETURN(BlockRV outer, sch->Blockize(rows[1]));
  return sch->Tensorize(outer, intrin);
}

// `stages` >= 2: the k step's shared tiles are software-pipelined over that many buffers.
absl::Status ApplyTensorCore(Schedule* sch, const BlockInfo& main, const Block& block,
                             const GemmMatch& g, const TensorCoreIntrins& intrins, int64_t stages) {
  TESSERA_ASSIGN_OR_RETURN(GemmLoops loops, FuseGemmLoops(sch, main, g));
  // Per dimension: [blocks, warps, fragments per warp, 16]; k: [steps, fragments, 16].
  const int64_t frags_i = std::min<int64_t>(Divisor4(loops.extent_i / kFragment), 2);
  const int64_t warps_i = std::min<int64_t>(Divisor4(loops.extent_i / kFragment / frags_i), 2);
  const int64_t frags_j = std::min<int64_t>(Divisor4(loops.extent_j / kFragment), 2);
  const int64_t warps_j = std::min<int64_t>(Divisor4(loops.extent_j / kFragment / frags_j), 2);
  // k steps of 64 bytes a row: two stages of float32 (TF32) tiles then fit beside the C tile.
  const int64_t frags_k = std::min<int64_t>(Divisor4(loops.extent_k / kFragment),
                                            4 / block->reads[g.a].buffer.dtype().bytes());
  const int64_t warps = warps_i * warps_j;
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> i,
      sch->Split(loops.i, {InstValue(), InstValue::Int(warps_i), InstValue::Int(frags_i),
                           InstValue::Int(kFragment)}));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> j,
      sch->Split(loops.j, {InstValue(), InstValue::Int(warps_j), InstValue::Int(frags_j),
                           InstValue::Int(kFragment)}));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<LoopRV> k,
      sch->Split(loops.k, {InstValue(), InstValue::Int(frags_k), InstValue::Int(kFragment)}));
  TESSERA_RETURN_IF_ERROR(
      sch->Reorder({i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2], i[3], j[3], k[2]}));
  TESSERA_ASSIGN_OR_RETURN(BlockRV compute, sch->Blockize(i[3]));
  TESSERA_RETURN_IF_ERROR(BindGemmThreadBlocks(sch, loops, i[0], j[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV ty, sch->Fuse({i[1], j[1]}));
  TESSERA_RETURN_IF_ERROR(sch->Bind(ty, "threadIdx.y"));

  // Output: accumulator fragments per warp -> shared C tile per thread block -> global.
  // Both caches are made before either moves (a cache copy starts after the whole nest).
  TESSERA_ASSIGN_OR_RETURN(BlockRV c_shared, sch->CacheWrite(compute, 0, "shared"));
  TESSERA_ASSIGN_OR_RETURN(BlockRV c_frag,
                           sch->CacheWrite(compute, 0, intrins.Scope("accumulator")));
  TESSERA_RETURN_IF_ERROR(InlineEpilogues(sch, c_shared));
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeAt(c_frag, ty, /*preserve_unit_loops=*/true));
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeAt(c_shared, j[0], /*preserve_unit_loops=*/true));
  const size_t c_ndim = block->writes[0].buffer.ndim();
  TESSERA_RETURN_IF_ERROR(CooperativeFetch(sch, c_shared, c_ndim, warps, kWarp));
  // Inputs: shared tiles at the k step, fragments at the inner k loop.
  std::vector<std::pair<BlockRV, const char*>> loads;
  for (const auto& [read, scope, intrin] :
       {std::make_tuple(g.a, intrins.Scope("matrix_a"), intrins.load_a),
        std::make_tuple(g.b, intrins.Scope("matrix_b"), intrins.load_b)}) {
    const size_t ndim = block->reads[read].buffer.ndim();
    TESSERA_ASSIGN_OR_RETURN(BlockRV shared, sch->CacheRead(compute, read, "shared"));
    TESSERA_ASSIGN_OR_RETURN(BlockRV frag, sch->CacheRead(compute, read, scope));
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(frag, k[1], /*preserve_unit_loops=*/true));
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(shared, k[0], /*preserve_unit_loops=*/true));
    // 16 bytes a thread where the tile divides: one cp.async each when pipelined.
    const int64_t lanes = 16 / block->reads[read].buffer.dtype().bytes();
    TESSERA_RETURN_IF_ERROR(CooperativeFetch(sch, shared, ndim, warps, kWarp, lanes));
    TESSERA_RETURN_IF_ERROR(sch->StorageAlign(shared, 0, static_cast<int>(ndim) - 2,
                                              kTensorCoreRowAlign,
                                              TensorCoreRowPad(block->reads[read].buffer.dtype())));
    loads.emplace_back(frag, intrin);
  }
  TESSERA_ASSIGN_OR_RETURN(BlockRV init, sch->DecomposeReduction(compute, k[0]));
  TESSERA_RETURN_IF_ERROR(sch->Tensorize(init, intrins.fill));
  TESSERA_RETURN_IF_ERROR(sch->Tensorize(compute, intrins.sync));
  TESSERA_RETURN_IF_ERROR(TensorizeTile(sch, c_frag, intrins.store));
  for (const auto& [frag, intrin] : loads)
    TESSERA_RETURN_IF_ERROR(TensorizeTile(sch, frag, intrin));
  if (stages >= 2) {
    TESSERA_RETURN_IF_ERROR(sch->Annotate(k[0], kSoftwarePipelineStages, InstValue::Int(stages)));
  }
  return absl::OkStatus();
}

// A convolution reads its input through windows (x[h * s + rh - p, ...]), which no GEMM access
// is. Reindexed (ReIndex: a copy of the input in the reduction's own iteration space, im2col),
// the convolution is a GEMM of (N, H, W) x CO over (RH, RW, CI); Apply inlines the copy into the
// shared tile it fetches per k step, so the column matrix is never stored. The name of the copy
// block, or "" when `blocks` hold no single reduction with exactly one windowed read.
std::string ReindexWindowedInput(Schedule* sch, const std::vector<BlockInfo>& blocks) {
  const BlockInfo* reduction = nullptr;
  for (const BlockInfo& b : blocks) {
    if (b.IsInjective()) continue;
    if (reduction != nullptr) return "";
    reduction = &b;
  }
  if (reduction == nullptr) return "";
  absl::StatusOr<Block> block = BlockByName(*sch, reduction->name);
  if (!block.ok() || (*block)->writes.size() != 1) return "";
  int windowed = -1;
  for (size_t r = 0; r < (*block)->reads.size(); ++r) {
    const Buffer& buffer = (*block)->reads[r].buffer;
    if (buffer.same_as((*block)->writes[0].buffer)) continue;
    const std::vector<int> iters = AccessIters(*block, buffer);
    if (std::find(iters.begin(), iters.end(), -2) == iters.end()) continue;
    if (windowed >= 0) return "";
    windowed = static_cast<int>(r);
  }
  if (windowed < 0) return "";
  absl::StatusOr<BlockRV> columns = sch->ReIndex(reduction->rv, windowed, 0);
  if (!columns.ok()) return "";
  absl::StatusOr<Block> copy = sch->Get(*columns);
  return copy.ok() ? (*copy)->name : "";
}

std::optional<Schedule> Matmul(Schedule sch, const Target& target) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (!blocks.has_value()) return std::nullopt;
  // Not among the blocks TryInline may inline: it would inline the copy straight back.
  const std::string im2col = ReindexWindowedInput(&sch, *blocks);
  blocks = TryInline(&sch, *blocks);
  if (!blocks.has_value() || blocks->empty()) return std::nullopt;
  const BlockInfo* main = nullptr;
  for (const BlockInfo& b : *blocks) {
    if (b.IsInjective()) continue;
    if (main != nullptr) return std::nullopt;
    main = &b;
  }
  // Elementwise blocks must come after the reduction (epilogues), the im2col copy before it.
  const size_t first = !im2col.empty() && blocks->front().name == im2col ? 1 : 0;
  if (main == nullptr || blocks->size() <= first || &(*blocks)[first] != main) {
    return std::nullopt;
  }
  absl::StatusOr<Block> block = BlockByName(sch, main->name);
  if (!block.ok()) return std::nullopt;
  std::optional<GemmMatch> gemm = MatchGemm(*block, main->extents);
  if (!gemm.has_value()) return std::nullopt;
  // Pipelined where the target has cp.async; if that schedule is refused, the same unpipelined.
  std::vector<int64_t> stages = {1};
  if (target.compute_capability() >= 80) stages.insert(stages.begin(), kPipelineStages);
  // Tessera's own fragments (ldmatrix, mma.sync) where the target has them, WMMA's before.
  const TensorCoreIntrins* intrins = MatchTensorCore(
      *block, *gemm, main->extents, target.compute_capability() >= 80 ? "mma" : "wmma");
  // On sm_90a: wgmma fed by TMA, the largest tile that divides the GEMM and fits the target.
  if (im2col.empty() && target.arch_specific() && target.compute_capability() == 90) {
    // Then the widest columns that divide N (a classifier's 1000: 200).
    std::vector<std::tuple<int64_t, int64_t, int64_t>> tiles = {
        {2, 128, 4}, {2, 128, 2}, {1, 128, 2}, {1, 64, 2}};
    const std::vector<int64_t> columns = WgmmaColumns(GroupExtent(main->extents, *gemm, kGemmJ));
    if (!columns.empty()) {
      tiles.push_back({2, columns.back(), 2});
      tiles.push_back({1, columns.back(), 2});
    }
    for (const auto& [warpgroups, n, stages] : tiles) {
      const WgmmaTile tile{warpgroups, n, InstValue::Int(4), InstValue::Int(stages)};
      Schedule hopper = sch.Copy();
      if (!ApplyWgmmaGemm(&hopper, *main, *block, *gemm, tile).ok()) continue;
      std::optional<Schedule> valid = IfValidOnGpu(std::move(hopper), target);
      if (valid.has_value()) return valid;
    }
  }
  if (im2col.empty() && intrins != nullptr &&
      target.compute_capability() >= intrins->min_compute_capability) {
    for (int64_t s : stages) {
      Schedule tensor_core = sch.Copy();
      if (!ApplyTensorCore(&tensor_core, *main, *block, *gemm, *intrins, s).ok()) continue;
      std::optional<Schedule> valid = IfValidOnGpu(std::move(tensor_core), target);
      if (valid.has_value()) return valid;
    }
  }
  for (int64_t s : stages) {
    Schedule simt = sch.Copy();
    if (!Apply(&simt, *main, *block, *gemm, s, im2col).ok()) continue;
    std::optional<Schedule> valid = IfValidOnGpu(std::move(simt), target);
    if (valid.has_value()) return valid;
  }
  return std::nullopt;
}

}  // namespace

DefaultRulePtr NewGpuMatmulRule() { return NewDefaultRule("Matmul", Target::Kind::kCuda, &Matmul); }

}  // namespace dlight
}  // namespace tessera
