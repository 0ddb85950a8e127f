// Passes of codegen/lower_gpu.h's LowerForGpu that live in their own files. Internal to
// codegen/.
#ifndef TESSERA_CODEGEN_LOWER_GPU_INTERNAL_H_
#define TESSERA_CODEGEN_LOWER_GPU_INTERNAL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "ir/stmt.h"
#include "ir/target.h"

namespace tessera {
namespace lower_gpu_internal {

// Names of the extern calls the GPU lowering introduces.
inline constexpr char kSyncThreads[] = "__syncthreads";
inline constexpr char kBlockReducePrefix[] = "tessera_block_reduce_";  // + sum|prod|max|min
// Loop annotation marking a former vthread loop; the value is the tag.
inline constexpr char kVthreadAnnotation[] = "tessera.vthread";

// The calls of TMA copies, their mbarriers and wgmma's ordering (lower_gpu_tma.cc, the software
// pipeline; the CUDA prelude defines them; pointer arguments are element accesses standing for
// their address):
//   kTmaLoad(dst tile element, global[0..], rank, box[rank], dims[rank], coords[rank] (all
//            innermost first), [barrier]) — one cp.async.bulk.tensor of a box of the global
//            buffer (dims its shape) at coords into the tile; the software pipeline appends the
//            mbarrier that counts its bytes;
//   kMbarrierInit(barrier, arrivals), kMbarrierInitFence(), kMbarrierExpectTx(barrier, bytes)
//   (the arrival of the thread that issues the copies), kMbarrierWait(barrier, phase parity);
//   kElectedThread() — true in thread (0, 0, 0) only, which issues the copies;
//   kWgmmaFence() before a k step's wgmma.mma_async, kWgmmaCommitWait() after them.
inline constexpr char kTmaLoad[] = "tessera_tma_load";
inline constexpr char kMbarrierInit[] = "tessera_mbarrier_init";
inline constexpr char kMbarrierInitFence[] = "tessera_mbarrier_init_fence";
inline constexpr char kMbarrierExpectTx[] = "tessera_mbarrier_expect_tx";
inline constexpr char kMbarrierWait[] = "tessera_mbarrier_wait";
inline constexpr char kElectedThread[] = "tessera_elected_thread";
inline constexpr char kWgmmaFence[] = "tessera_wgmma_fence";
inline constexpr char kWgmmaCommitWait[] = "tessera_wgmma_commit_and_wait";

// "shared" and tagged shared scopes ("shared.tma"): memory of the thread block.
inline bool IsSharedScope(const std::string& scope) {
  return scope == "shared" || scope.rfind("shared.", 0) == 0;
}

// TMA tiles (and the 128-byte swizzle pattern wgmma assumes) start at 1024-byte boundaries.
inline constexpr int64_t kTmaAlignment = 1024;

// Rows of 128 bytes: the elements of `dtype` in one row of a TMA tile's block.
inline int64_t TmaBlockWidth(DataType dtype) { return 128 / dtype.bytes(); }

// The element offset of [.., r, c] in a kTmaSharedScope tile (ir/tensor_core_fragments.h) of
// `rows` rows: column block c / W of rows x W elements, then row r, then c % W.
Expr TmaTileOffset(const Buffer& tile, int64_t rows, const Expr& r, const Expr& c);
// The access of `tile` that flattening turns into element `offset` (every index 0 but the last).
Expr TmaTileElement(const Buffer& tile, const Expr& offset);

// "blockIdx.x" -> 0 ... "threadIdx.z" -> 2; -1 for anything else.
int ThreadDim(const std::string& tag);
bool IsBlockIdxTag(const std::string& tag);
bool IsThreadIdxTag(const std::string& tag);
bool IsVthreadTag(const std::string& tag);

// The statement `__syncthreads();`, and whether `s` is one.
Stmt SyncThreads();
bool IsSyncThreads(const Stmt& s);

// Step 1 (block form): expands cross-thread reductions (see lower_gpu.h). `root_body` is the
// body of the root block.
absl::StatusOr<Stmt> LowerCrossThreadReductions(const Stmt& root_body, const Target& target);

// Step 5a (lowered form, before flattening): every store into a kTmaSharedScope tile must be a
// whole-tile copy from a global buffer (`for r, c: tile[.., r, c] = g[.., r0 + r, .., c0 + c]`,
// c along g's contiguous dimension); each becomes one kTmaLoad per 128-byte column block, and a
// tile whose columns end inside a block gets the storage of whole blocks.
// Element reads of such tiles are errors (only wgmma's descriptors read them).
absl::StatusOr<Stmt> LowerTmaCopies(const Stmt& kernel);

// Step 6 (lowered form): inserts __syncthreads() into one kernel whose thread-block
// dimensions are `block` (threadIdx.{x,y,z} extents).
absl::StatusOr<Stmt> InsertThreadSyncs(const Stmt& kernel, const int64_t block[3]);

}  // namespace lower_gpu_internal
}  // namespace tessera

#endif  // TESSERA_CODEGEN_LOWER_GPU_INTERNAL_H_
