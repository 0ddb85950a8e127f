// GEMV (docs/reference/metaschedule.md §10.4): after inlining runs of elementwise blocks, one sum
// reduction X[...] = X[...] + Y with 2 or 3 iterators ([S, R] or [B, S, R]) reading at least two
// buffers of which some, but not all, are "vectors" (indexed by some but not all iterators),
// optionally followed by one elementwise epilogue. Inner reductions only (the matrix is read
// along its rows); other shapes fall through.
//
// Schedule: one thread block per output element (batch and S fused on blockIdx.x) and the
// reduction split [None, TR] with TR = 256 threads (DLight's TS x TR = 4 x 64 / 16 x 32 for CUDA;
// Tessera's cross-thread reductions combine over the whole thread block, so TS is 1 and the row
// gets all the threads), combined across threads; the serial part unrolled; an epilogue at the
// row loop on the same threads.
#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kThreads = 256;
constexpr int64_t kUnroll = 256;

// Among the reads other than the accumulator, some are indexed by a proper subset of the
// non-unit iterators (vectors) and some by all of them (matrices). Unit iterators do not count:
// a batch-1 classifier's y[0, n] += x[0, k] * W[n, k] reads its matrix W without the batch.
bool HasVectorOperand(const Block& block) {
  const size_t non_unit = NonUnitIters(block).size();
  int vectors = 0, matrices = 0;
  for (const BufferRegion& r : block->reads) {
    if (r.buffer.same_as(block->writes[0].buffer)) continue;
    const std::set<int> used = NonUnitAccessIters(block, r.buffer);
    if (!used.empty() && used.size() < non_unit) {
      ++vectors;
    } else {
      ++matrices;
    }
  }
  return vectors > 0 && matrices > 0;
}

std::optional<Schedule> Gemv(Schedule sch, const Target& target) {
  std::optional<InnerSumReduction> found = FindInnerSumReduction(&sch);
  if (!found.has_value()) return std::nullopt;
  const BlockInfo& main = found->main;
  if (main.kinds.size() < 2 || main.kinds.size() > 3 || main.kinds.back() != 'R' ||
      main.IsInjective() || !HasVectorOperand(found->block)) {
    return std::nullopt;
  }
  const int64_t len_tx = std::min(kThreads, target.max_threads_per_block());
  if (!ScheduleRowReduction(&sch, main, found->epilogue, len_tx, kUnroll).ok()) {
    return std::nullopt;
  }
  return IfValidOnGpu(std::move(sch), target);
}

}  // namespace

DefaultRulePtr NewGpuGemvRule() { return NewDefaultRule("GEMV", Target::Kind::kCuda, &Gemv); }

}  // namespace dlight
}  // namespace tessera
