// The Hopper GEMM (sm_90a) shared by the default Matmul rule (fixed tiles, gpu_matmul.cc) and the
// MultiLevelTilingWgmma schedule rule (sampled tiles): one function builds the schedule from the
// tile's decisions, so the default is one point of the rule's design space
// (docs/design-spaces.md "MultiLevelTilingWgmma").
//
// Per thread block a (warpgroups x 64) x n tile of C, one 64 x n accumulator per warpgroup
// (threadIdx.y; threadIdx.x its 128 threads); A and B tiles of k_chunks x 16 k in TMA tiles (scope
// shared.tma: filled by cp.async.bulk.tensor, read by wgmma through descriptors),
// software-pipelined over `stages` mbarrier stages; k_chunks wgmma.mma_async.m64nNk16 a k step; the
// accumulators stored to a shared C tile, which every thread copies out with the epilogues
// inlined (the write of the tensor-core path).
#ifndef TESSERA_RULES_DEFAULT_WGMMA_GEMM_H_
#define TESSERA_RULES_DEFAULT_WGMMA_GEMM_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "rules/default/analysis.h"
#include "schedule/instruction.h"
#include "schedule/schedule.h"

namespace tessera {
namespace dlight {

struct WgmmaTile {
  int64_t warpgroups = 2;  // 1 or 2: 64 or 128 rows of C per thread block
  int64_t n = 128;         // columns of C per thread block: a multiple of 8 up to 256
  // k per step in chunks of 16 (4: 128 bytes of 16-bit inputs, one TMA column block; 8: two)
  // and pipeline stages: integers, or sampled ExprRVs of the design space.
  InstValue k_chunks = InstValue::Int(4);
  InstValue stages = InstValue::Int(4);
};

// The k_chunks a GEMM of `k` 16-bit reductions takes: 4 and, where k allows, 8.
std::vector<int64_t> WgmmaKChunks(int64_t k);

// The tile columns (wgmma's N) that divide a GEMM of `j` columns: multiples of 8 up to 256.
std::vector<int64_t> WgmmaColumns(int64_t j);

// Schedules the GEMM `g` of `block` (`main`: its BlockInfo in `sch`) with `tile`.
// kInvalidArgument when the GEMM is not float16 or bfloat16 summed in float32 laid out for tensor
// cores (IsTensorCoreGemm), or `tile` does not divide it (k_chunks as given or sampled: any
// candidate of WgmmaKChunks divides); a primitive's error otherwise.
absl::Status ApplyWgmmaGemm(Schedule* sch, const BlockInfo& main, const Block& block,
                            const GemmMatch& g, const WgmmaTile& tile);

}  // namespace dlight
}  // namespace tessera

#endif  // TESSERA_RULES_DEFAULT_WGMMA_GEMM_H_
