// Software pipelining of a kernel's shared-memory fills (step 7 of LowerForGpu, lowered form,
// after the barriers are placed): the loads of later iterations of a loop are in flight while
// the current one computes, as in MetaSchedule's software_pipeline_stage/order annotations
// lowered by TVM's InjectSoftwarePipeline, here with one fixed order.
//
// A serial loop `for k in [0, N)` annotated kSoftwarePipelineStages = S (ir/loop_annotations.h)
// must have a body that allocates shared buffers, fills them (the producers: statements that
// write only those buffers and read none of them, first in the body), then reads them (the
// consumers, which do not write them); the barriers before the first consumer are dropped (those
// among the consumers stay). It becomes
//
//   allocate each buffer S times over (stage s at offset s x its size)
//   __syncthreads()
//   producers of k = 0 .. S-2 into stages 0 .. S-2, a commit after each
//   for k in [0, N):
//     wait until at most S-2 commits are pending; __syncthreads()
//     if k + S-1 < N: producers of k + S-1 into stage (k + S-1) % S
//     commit
//     consumers of k from stage k % S
//
// The barrier at the top of an iteration both publishes stage k and guarantees that every thread
// has finished reading stage (k - 1) % S, the one the producers refill. With `async_copies`
// (sm_80 and later) each producer loop that copies a global element into a shared one is
// annotated kAsyncCopy, which CUDA code generation issues as cp.async (commit and wait are
// cp.async.commit_group and cp.async.wait_group); without, the copies are plain stores that
// complete before the barrier and there are no commits or waits. S is capped at N; S < 2
// leaves the loop as written.
//
// A loop whose producers are TMA copies (lower_gpu_internal.h kTmaLoad, sm_90) is pipelined even
// at S = 1: one mbarrier per stage, initialized by thread (0, 0, 0) before the loop; that thread
// arms a stage's barrier with the bytes of its copies (expect_tx) and issues them, for
// iterations 0 .. S-2 before the loop and k + S-1 in iteration k after the barrier; every thread
// then waits on the barrier of stage k % S for phase k / S % 2. Consumers that issue wgmma are
// fenced before and committed and awaited (wait_group 0) after.
#ifndef TESSERA_CODEGEN_SOFTWARE_PIPELINE_H_
#define TESSERA_CODEGEN_SOFTWARE_PIPELINE_H_

#include "absl/status/statusor.h"
#include "ir/stmt.h"

namespace tessera {

// Names of the extern calls the pipeline adds (the CUDA prelude defines them).
inline constexpr char kCpAsyncCommit[] = "tessera_cp_async_commit";
inline constexpr char kCpAsyncWait[] = "tessera_cp_async_wait";  // (pending groups allowed)

// Rewrites every annotated loop of one lowered kernel as above. kInvalidArgument naming the
// loop when its body is not of that form (no shared buffer allocated in it, no producer, a
// producer after a consumer, a consumer writing a filled buffer, a non-constant extent).
absl::StatusOr<Stmt> InjectSoftwarePipelines(const Stmt& kernel, bool async_copies);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_SOFTWARE_PIPELINE_H_
