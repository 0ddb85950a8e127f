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

// Step 6 (lowered form): inserts __syncthreads() into one kernel whose thread-block
// dimensions are `block` (threadIdx.{x,y,z} extents).
absl::StatusOr<Stmt> InsertThreadSyncs(const Stmt& kernel, const int64_t block[3]);

}  // namespace lower_gpu_internal
}  // namespace tessera

#endif  // TESSERA_CODEGEN_LOWER_GPU_INTERNAL_H_
