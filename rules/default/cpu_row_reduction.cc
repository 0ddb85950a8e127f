// CpuRowReduction: softmax, layer norm, RMS norm and other row-wise chains on cpu targets, the
// CPU counterpart of GeneralReduction (docs/reference/metaschedule.md §10.7). After inlining
// blocks into elementwise consumers, the function is a chain of blocks that all start with the
// same R spatial "row" iterators: reductions S^R R..R (row statistics) and elementwise blocks
// (an RMS norm's square before its mean, a row-wise exp, the output). One parallel loop over the
// rows of the last block computes everything: each earlier block is computed at that loop with its
// output in a local row, a reduction over contiguous memory is factored into vector lanes (as
// CpuDefault's LaneReduction: a dependence-free vectorized loop of partial sums, then the sum of
// the lanes), and elementwise inner loops are vectorized. Compared with one parallel loop per block
// (CpuDefault), the row stays in L1 between the blocks, intermediate rows never go to memory,
// and OpenMP starts one parallel region instead of one per block.
#include <algorithm>

#include "base/status_macros.h"
#include "rules/default/analysis.h"
#include "rules/default/rule_factories.h"

namespace tessera {
namespace dlight {
namespace {

constexpr int64_t kMaxLanes = 16;

// Vectorizes `loop` when the block writes a buffer whose last index is that loop's variable
// (a store per lane), otherwise leaves it serial.
absl::Status VectorizeInner(Schedule* sch, BlockRV block, LoopRV loop) {
  TESSERA_ASSIGN_OR_RETURN(Block b, sch->Get(block));
  std::vector<int> out = AccessIters(b, b->writes[0].buffer);
  const int last = static_cast<int>(b->iter_vars.size()) - 1;
  if (out.empty() || out.back() != last || LoopExtent(*sch, loop) <= 1) return absl::OkStatus();
  return sch->Vectorize(loop);
}

// A reduction block computed at the row loop: its trailing reduction loops fused, split by the
// vector width V and factored into V partial results in a local array (rfactor), the lane loop
// vectorized; the V partials are combined by the original block. A reduction shorter than two
// full widths is left serial when no V in [4, 16] divides it.
// With several rows per iteration the combining loop runs over the lanes outside the rows, so
// the rows' V-step chains of dependent adds (or maxes) interleave instead of running one after
// another: softmax's two chains were a third of its time per row.
absl::Status LanesAtRow(Schedule* sch, BlockRV block, size_t reduction_loops, bool rows_in_block) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
  if (loops.size() < reduction_loops + 1) return absl::InternalError("unexpected loop nest");
  std::vector<LoopRV> reduction(loops.end() - static_cast<int64_t>(reduction_loops), loops.end());
  LoopRV r = reduction[0];
  if (reduction.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(r, sch->Fuse(reduction));
  }
  const int64_t extent = LoopExtent(*sch, r);
  // All the lanes whenever the reduction has two of their widths, the last partial width a
  // guarded tail (codegen partitions it off, and its loop is one masked vector): softmax's rows
  // of 77 took 36 us in 11 lanes (77 = 7 x 11) and 27 us in 16 plus a tail of 13. Shorter
  // reductions take a power of two that divides them, else any divisor.
  int64_t lanes = kMaxLanes;
  if (extent < 2 * kMaxLanes) {
    while (lanes >= 4 && extent % lanes != 0) lanes /= 2;
    if (lanes < 4) {
      lanes = kMaxLanes;
      while (lanes >= 4 && extent % lanes != 0) --lanes;
    }
  }
  if (lanes < 4 || extent / lanes < 2) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> split,
                           sch->Split(r, {InstValue(), InstValue::Int(lanes)}));
  TESSERA_ASSIGN_OR_RETURN(BlockRV partial, sch->RFactor(split[1], /*factor_axis=*/-1));
  TESSERA_RETURN_IF_ERROR(sch->SetScope(partial, 0, "local"));
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(partial, split[0]).status());
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> partial_loops, sch->GetLoops(partial));
  TESSERA_RETURN_IF_ERROR(sch->Vectorize(partial_loops.back()));
  if (!rows_in_block) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> combine_loops, sch->GetLoops(block));
  if (combine_loops.size() < 2) return absl::InternalError("unexpected combining loop nest");
  return sch->Reorder({combine_loops.back(), combine_loops[combine_loops.size() - 2]});
}

// Rows per iteration of the parallel loop: 4 (or 2) when they divide the innermost row loop
// (`inner_rows`), leave two iterations per core of all `rows`, and the rows are short (at most
// 1024 elements in all), where the lane chains are a large share of a row's work. Measured with
// the default schedules: softmax 1536x128 61 -> 41 us with 4 rows; layer norm 128x768 was
// 6.7 -> 10.7 us with 4, so longer rows keep one.
int64_t RowsPerIteration(int64_t inner_rows, int64_t rows, int64_t row_length, int64_t cores) {
  for (int64_t r : {4, 2}) {
    if (inner_rows % r == 0 && rows / r >= 2 * cores && r * row_length <= 1024) return r;
  }
  return 1;
}

absl::Status Apply(Schedule* sch, const std::vector<BlockInfo>& blocks, size_t rows,
                   const Target& target) {
  const BlockInfo& last = blocks.back();
  std::vector<LoopRV> row_loops(last.loops.begin(), last.loops.begin() + rows);
  TESSERA_RETURN_IF_ERROR(VectorizeInner(sch, last.rv, last.loops.back()));
  int64_t row_length = 1, all_rows = 1;
  for (size_t i = 0; i < last.extents.size(); ++i)
    (i < rows ? all_rows : row_length) *= last.extents[i];
  const int64_t per_iteration = RowsPerIteration(last.extents[rows - 1], all_rows, row_length,
                                                 std::max<int64_t>(1, target.cores()));
  // Several rows per iteration split the innermost row loop, before the row loops are fused:
  // split after the fusion, an iteration's rows could straddle two values of an outer row loop,
  // and the region computed at it would be a box around both (a batched softmax's intermediates
  // then outgrew the iteration and were shared by the threads).
  if (per_iteration > 1) {
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<LoopRV> split,
        sch->Split(row_loops.back(), {InstValue(), InstValue::Int(per_iteration)}));
    row_loops.back() = split[0];
  }
  LoopRV row = row_loops[0];
  if (row_loops.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(row, sch->Fuse(row_loops));
  }
  for (size_t b = blocks.size() - 1; b-- > 0;) {
    const BlockInfo& info = blocks[b];
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(info.rv, row, /*preserve_unit_loops=*/true));
    TESSERA_RETURN_IF_ERROR(sch->SetScope(info.rv, 0, "local"));
    if (info.IsReduction()) {
      const size_t trailing_r = info.kinds.size() - info.kinds.find_last_not_of('R') - 1;
      TESSERA_RETURN_IF_ERROR(LanesAtRow(sch, info.rv, trailing_r, per_iteration > 1));
    } else {
      TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(info.rv));
      TESSERA_RETURN_IF_ERROR(VectorizeInner(sch, info.rv, loops.back()));
    }
  }
  if (LoopExtent(*sch, row) > 1) TESSERA_RETURN_IF_ERROR(sch->Parallel(row));
  return absl::OkStatus();
}

// True if every block that reads an earlier block's output indexes it with the row iterators
// first (stat[i] in out[i, j]; a row of extent one also at its constant index): the producer's
// rows are then the consumer's, and computing it at the row loop computes each row once. A
// statistic read along another iterator (a column normalization, stat[j] in out[i, j]) would be
// recomputed in full for every row.
bool RowsLineUp(const Schedule& sch, const std::vector<BlockInfo>& blocks, size_t rows) {
  std::vector<Block> bodies;
  for (const BlockInfo& info : blocks) {
    absl::StatusOr<Block> block = BlockByName(sch, info.name);
    if (!block.ok()) return false;
    bodies.push_back(*block);
  }
  for (size_t p = 0; p < bodies.size(); ++p) {
    const Buffer& out = bodies[p]->writes[0].buffer;
    for (size_t c = p + 1; c < bodies.size(); ++c) {
      std::vector<int> iters = AccessIters(bodies[c], out);
      if (iters.empty()) continue;  // c does not read it
      if (iters.size() < rows) return false;
      for (size_t i = 0; i < rows; ++i) {
        // A row of extent one may be read at its one index (a broadcast over a batch of one).
        const bool unit_constant = iters[i] == -1 && blocks[c].extents[i] == 1;
        if (iters[i] != static_cast<int>(i) && !unit_constant) return false;
      }
    }
  }
  return true;
}

std::optional<Schedule> CpuRowReduction(Schedule sch, const Target& target) {
  std::optional<std::vector<BlockInfo>> blocks = NormalizeBlocks(&sch);
  if (blocks.has_value()) blocks = TryInline(&sch, *blocks, /*into_reductions=*/false);
  if (!blocks.has_value() || blocks->size() < 2) return std::nullopt;
  // The first reduction is a row statistic S^rows R..R, after elementwise blocks that feed it
  // (an RMS norm's x * x, which TryInline leaves out of reductions); every block starts with the
  // same rows. The elementwise blocks are computed at the row loop as the others.
  auto first_reduction = std::find_if(blocks->begin(), blocks->end(),
                                      [](const BlockInfo& b) { return b.IsReduction(); });
  if (first_reduction == blocks->end()) return std::nullopt;
  const BlockInfo& first = *first_reduction;
  size_t rows = first.kinds.find('R');
  // A statistic kept with its reduced axes (ONNX's keepdims: a mean over [1, 128, 1]) has unit
  // spatial iterators after its rows, which the other blocks do not share: the rows are the
  // leading iterators every block has alike.
  auto rows_agree = [&](size_t r) {
    for (const BlockInfo& info : *blocks) {
      if (info.kinds.size() <= r || info.kinds.compare(0, r, std::string(r, 'S')) != 0) {
        return false;
      }
      for (size_t i = 0; i < r; ++i) {
        if (info.extents[i] != first.extents[i] || info.extents[i] < 0) return false;
      }
    }
    return true;
  };
  while (rows != std::string::npos && rows > 0 && !rows_agree(rows)) --rows;
  if (rows == 0 || rows == std::string::npos) return std::nullopt;
  for (const BlockInfo& info : *blocks) {
    if (!info.IsReduction()) continue;
    // After the rows, a reduction has only reduced iterators and unit spatial ones.
    for (size_t i = rows; i < info.kinds.size(); ++i) {
      if (info.kinds[i] == 'S' && info.extents[i] != 1) return std::nullopt;
    }
  }
  // The last block writes whole rows (softmax's normalization, the norm's output).
  if (!blocks->back().IsInjective() || !RowsLineUp(sch, *blocks, rows)) return std::nullopt;
  if (!Apply(&sch, *blocks, rows, target).ok()) return std::nullopt;
  return sch;
}

}  // namespace

DefaultRulePtr NewCpuRowReductionRule() {
  return NewDefaultRule("CpuRowReduction", Target::Kind::kCpu, &CpuRowReduction);
}

}  // namespace dlight
}  // namespace tessera
