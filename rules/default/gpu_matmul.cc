// Matmul (metaschedule-facts.md 10.3), the SIMT path. Match: after inlining everything
// inlinable, exactly one reduction block, the others elementwise consumers of it (epilogues);
// the reduction reads two buffers A, B and writes C with point accesses (every index a single
// iterator or a constant) classifying as the GEMM C[S,I,J] += A[S,I,K] * B[S,J,K]: S spatial in
// A, B and C; I spatial in A and C; J spatial in B and C; K reduction in A and B (unit iterators
// are ignored; I, J and K must exist). J is the group C is contiguous along.
//
// Schedule (CUDA config of DLight: 8 x 16 threads, 4 x 4 outputs per thread, k step 16,
// vthread 1): loops reordered (S, I, J, K) and each group fused; I -> [by, ty = 8, 4],
// J -> [bx, tx = 16, 4], K -> [ko, 16], S fused into by; a local accumulator written back at tx
// (epilogues inlined into the write-back); A and B tiles in shared memory at ko, fetched
// cooperatively by all threads with 4-wide vectors when the tile divides evenly; init decomposed
// at ko; the 4 x 4 micro tile unrolled. Shapes that are not multiples of the 32 x 64 x 16 tile
// get predicated edge tiles instead of DLight's pad_einsum. The WMMA tensor-core path is not
// taken (see docs/default-schedules.md).
#include <algorithm>

#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kThreadsI = 8, kThreadsJ = 16, kMicro = 4, kStepK = 16, kVector = 4;

// Moves the copy block `cache` (computed at the k tile) onto the thread block's threads.
absl::Status CooperativeFetch(Schedule* sch, BlockRV cache, size_t ndim) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(cache));
  if (loops.size() < ndim) return absl::InvalidArgumentError("unexpected copy loops");
  std::vector<LoopRV> copy(loops.end() - ndim, loops.end());
  int64_t elements = 1;
  for (LoopRV l : copy) elements *= LoopExtent(*sch, l);
  LoopRV fused = copy[0];
  if (copy.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(fused, sch->Fuse(copy));
  }
  const bool vector = elements > 0 && elements % (kThreadsI * kThreadsJ * kVector) == 0;
  std::vector<InstValue> factors = {InstValue(), InstValue::Int(kThreadsI),
                                    InstValue::Int(kThreadsJ)};
  if (vector) factors.push_back(InstValue::Int(kVector));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> parts, sch->Split(fused, factors));
  TESSERA_RETURN_IF_ERROR(sch->Bind(parts[1], "threadIdx.y"));
  TESSERA_RETURN_IF_ERROR(sch->Bind(parts[2], "threadIdx.x"));
  if (vector) TESSERA_RETURN_IF_ERROR(sch->Vectorize(parts[3]));
  return absl::OkStatus();
}

absl::Status Apply(Schedule* sch, const BlockInfo& main, const Block& block, const GemmMatch& g) {
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
  LoopRV by = i[0];
  if (loops.has_batch) {
    TESSERA_ASSIGN_OR_RETURN(by, sch->Fuse({loops.batch, i[0]}));
  }
  TESSERA_RETURN_IF_ERROR(sch->Bind(by, "blockIdx.y"));
  TESSERA_RETURN_IF_ERROR(sch->Bind(j[0], "blockIdx.x"));
  TESSERA_RETURN_IF_ERROR(sch->Bind(i[1], "threadIdx.y"));
  TESSERA_RETURN_IF_ERROR(sch->Bind(j[1], "threadIdx.x"));
  TESSERA_ASSIGN_OR_RETURN(BlockRV write_back, WriteBackUnder(sch, main.rv, j[1], "local"));
  for (int read : {g.a, g.b}) {
    const size_t ndim = block->reads[read].buffer.shape().size();
    TESSERA_ASSIGN_OR_RETURN(BlockRV cache, sch->CacheRead(main.rv, read, "shared"));
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(cache, k[0], /*preserve_unit_loops=*/true));
    TESSERA_RETURN_IF_ERROR(CooperativeFetch(sch, cache, ndim));
  }
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(main.rv, k[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Unroll(i[2]));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(j[2]));
  // Whole tiles only: float4 stores of the result.
  if (loops.extent_i % (kThreadsI * kMicro) == 0 && loops.extent_j % (kThreadsJ * kMicro) == 0) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wb, sch->GetLoops(write_back));
    if (LoopExtent(*sch, wb.back()) == kMicro) TESSERA_RETURN_IF_ERROR(sch->Vectorize(wb.back()));
  }
  return absl::OkStatus();
}

std::optional<Schedule> Matmul(Schedule sch, const Target& target) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (blocks.has_value()) blocks = TryInline(&sch, *blocks);
  if (!blocks.has_value() || blocks->empty()) return std::nullopt;
  const BlockInfo* main = nullptr;
  for (const BlockInfo& b : *blocks) {
    if (b.IsInjective()) continue;
    if (main != nullptr) return std::nullopt;
    main = &b;
  }
  // Elementwise blocks must come after the reduction (epilogues).
  if (main == nullptr || &blocks->front() != main) return std::nullopt;
  absl::StatusOr<Block> block = BlockByName(sch, main->name);
  if (!block.ok()) return std::nullopt;
  std::optional<GemmMatch> gemm = MatchGemm(*block, main->extents);
  if (!gemm.has_value() || !Apply(&sch, *main, *block, *gemm).ok()) return std::nullopt;
  return IfValidOnGpu(std::move(sch), target);
}

}  // namespace

DefaultRulePtr MakeGpuMatmulRule() {
  return MakeDefaultRule("Matmul", Target::Kind::kCuda, &Matmul);
}

}  // namespace dlight
}  // namespace tessera
