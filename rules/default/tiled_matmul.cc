// TiledMatmul: the register-tiled, packed-panel CPU GEMM (rules/default/tiled_matmul.h).
#include "rules/default/tiled_matmul.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "base/divisors.h"
#include "base/status_macros.h"
#include "ir/loop_annotations.h"
#include "ir/prepack.h"
#include "schedule/index_map.h"
#include "schedule/tensor_intrin.h"

namespace tessera {
namespace dlight {
namespace {

// The default's tile: DefaultRows x 2 vectors of accumulators. With 32 registers (AVX-512), of
// the tiles of 16-32 accumulators 8 rows x 2-4 vectors ran fastest: the emitted C of
// 128x768x768 and DENSE 128x3072x768 compiled into one driver and timed alternately (5 rounds
// of 40 calls, 2026-11-26, Zen 4, loaded machine: medians within 1%) took 0.376 / 1.60 ms with
// 4 x 4 vectors, 0.303 / 1.32 ms with 8 x 2, 0.302 / 1.31 ms with 8 x 3 and 0.306 / 1.35 with
// 8 x 4; the 8 x 2 tile keeps panels a power of two wide. With 16 registers (AVX2) 8 x 2
// vectors is 16 accumulators beside 2 B vectors and the broadcast, and gcc spills; 6 x 2 (12
// accumulators, 15 registers: BLIS's Haswell tile) is the largest that fits (docs/cpu-backend.md
// "Micro-kernels by core" has the Zen 3 timings).
constexpr int64_t kDefaultVectors = 2;
int64_t DefaultRows(const CpuCore& core) { return core.registers >= 32 ? 8 : 6; }
int64_t DefaultColumns(const CpuCore& core) { return kDefaultVectors * core.lanes; }
// Packing B per column panel needs enough panels for the parallel loop (2+ per core). Even 5
// panels (GMM 127x257x509: 3 on one thread, 2 on the other) ran faster packed than as 160
// fused unpacked tiles on the 2-core machine.
constexpr int64_t kMinPanels = 4;
// The largest packed panel: half of the core's L2 (512 KiB on the 1 MiB L2 of Zen 4, where
// it was measured).
int64_t MaxPanelBytes(const CpuCore& core) { return core.l2_bytes / 2; }

// True if the innermost dimension of B (read `g.b`) is indexed by a K iterator: B is laid out
// [.., J, K] (DENSE's weight X * W^T), so a vector over J columns would be a strided gather.
bool BIsReductionContiguous(const Block& block, const GemmMatch& g) {
  std::vector<int> b = AccessIters(block, block->reads[g.b].buffer);
  return !b.empty() && b.back() >= 0 &&
         std::count(g.groups[kGemmK].begin(), g.groups[kGemmK].end(), b.back()) > 0;
}

// The index map that moves B's J dimensions last ([.., J, K] -> [.., K, J]), so the packed panel
// is a row of columns per k, read as vectors by the register tile.
absl::StatusOr<IndexMap> ColumnsLastMap(const Block& block, const GemmMatch& g) {
  std::vector<int> b = AccessIters(block, block->reads[g.b].buffer);
  std::vector<Var> vars;
  std::vector<Expr> rest, columns;
  for (size_t d = 0; d < b.size(); ++d) {
    vars.push_back(Var("d" + std::to_string(d)));
    const bool is_j =
        b[d] >= 0 && std::count(g.groups[kGemmJ].begin(), g.groups[kGemmJ].end(), b[d]) > 0;
    (is_j ? columns : rest).push_back(vars.back());
  }
  rest.insert(rest.end(), columns.begin(), columns.end());
  return IndexMap::Make(vars, rest);
}

// The index map that packs B in groups of k for the dot product `dot` ([.., K, J] or [.., J, K] ->
// [.., K / group, J, group], batch dimensions first): a tile vector's 16 columns at a group of k
// are then one row of 64 bytes. A group of several lanes' groups is stored as those one after
// another, in 16-column strips: [.., K / group, J / 16, group / lane_group, 16, lane_group].
absl::StatusOr<IndexMap> GroupsLastMap(const Block& block, const GemmMatch& g, const CpuDot& dot) {
  std::vector<int> b = AccessIters(block, block->reads[g.b].buffer);
  auto in = [&](int group, int iter) {
    return iter >= 0 && std::count(g.groups[group].begin(), g.groups[group].end(), iter) > 0;
  };
  std::vector<Var> vars;
  std::vector<Expr> layout;
  std::optional<Var> j, k;
  for (size_t d = 0; d < b.size(); ++d) {
    vars.push_back(Var("d" + std::to_string(d)));
    if (in(kGemmJ, b[d])) {
      j = vars.back();
    } else if (in(kGemmK, b[d])) {
      k = vars.back();
    } else {
      layout.push_back(vars.back());
    }
  }
  if (!j.has_value() || !k.has_value()) {
    return absl::FailedPreconditionError("dot product: B has no J or K dimension");
  }
  layout.push_back(FloorDiv(*k, Expr(dot.group)));
  if (dot.group > dot.lane_group) {
    const Expr lanes(kCpuDotLanes), lane_group(dot.lane_group);
    layout.insert(layout.end(),
                  {FloorDiv(*j, lanes), FloorDiv(FloorMod(*k, Expr(dot.group)), lane_group),
                   FloorMod(*j, lanes), FloorMod(*k, lane_group)});
  } else {
    layout.insert(layout.end(), {*j, FloorMod(*k, Expr(dot.group))});
  }
  return IndexMap::Make(vars, layout);
}

// The dimension of B that holds J, when B is [.., K, J] or [.., J, K] (batch dimensions first):
// kPrepacked's strip dimension.
absl::StatusOr<int> StripDimension(const Block& block, const GemmMatch& g) {
  const std::vector<int> b = AccessIters(block, block->reads[g.b].buffer);
  auto in = [&](int group, int iter) {
    return iter >= 0 && std::count(g.groups[group].begin(), g.groups[group].end(), iter) > 0;
  };
  int j = -1, k = -1;
  for (int d = 0; d < static_cast<int>(b.size()); ++d) {
    if (in(kGemmJ, b[d]) && j < 0) {
      j = d;
    } else if (in(kGemmK, b[d]) && k < 0) {
      k = d;
    } else if (!in(kGemmS, b[d]) || j >= 0 || k >= 0) {
      return absl::FailedPreconditionError("prepacked gemm: B is not [.., K, J] or [.., J, K]");
    }
  }
  if (j < 0 || k < 0) return absl::FailedPreconditionError("prepacked gemm: B has no J or K");
  return j;
}

std::vector<InstValue> Factors(const std::vector<ExprRV>& rvs) {
  std::vector<InstValue> factors;
  for (ExprRV rv : rvs) factors.push_back(InstValue::Of(rv));
  return factors;
}

// The side of the square tiles the transposing panel copy moves at a time (a 64-byte line of
// floats).
constexpr int64_t kCopyTile = 16;

// The packing copy of a B laid out [.., J, K] (DENSE's weight) iterates (J, K) like its
// source, so each store of a K row of the source went to another line of the [K, J] panel,
// 256 B apart: perf on bert_ffn1 (128x3072x768) put 27% of the kernel's samples on that copy,
// and replacing it by a memset ran 0.54 ms of 1.98 ms faster. Cut into kCopyTile x kCopyTile
// tiles, (J_o, K_o, K_i, J_i) with J_i vectorized, a tile reads 16 source lines and writes 16
// panel lines, all in L1: the same kernel spent 0.12 ms on the copy. Copies whose last two
// loops kCopyTile does not divide keep the plain loop order.
absl::Status TileTransposingCopy(Schedule* sch, BlockRV copy) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(copy));
  if (loops.size() < 2) return absl::OkStatus();
  const LoopRV j = loops[loops.size() - 2];
  const LoopRV k = loops.back();
  const int64_t extent_j = LoopExtent(*sch, j);
  const int64_t extent_k = LoopExtent(*sch, k);
  if (extent_j <= 0 || extent_k <= 0 || extent_j % kCopyTile != 0 || extent_k % kCopyTile != 0) {
    return absl::OkStatus();
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> js,
                           sch->Split(j, {InstValue(), InstValue::Int(kCopyTile)}));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> ks,
                           sch->Split(k, {InstValue(), InstValue::Int(kCopyTile)}));
  TESSERA_RETURN_IF_ERROR(sch->Reorder({js[0], ks[0], ks[1], js[1]}));
  return sch->Vectorize(js[1]);
}

// The multiple to pad `extent` to: the largest of `tile`, tile / 2, ... (down to `smallest`)
// whose rounding wastes at most a quarter of it; 1 (no padding) when one of them already
// divides it first or every rounding wastes more.
int64_t PaddingMultiple(int64_t extent, int64_t tile, int64_t smallest) {
  for (int64_t t = tile; t >= smallest && t > 1; t /= 2) {
    const int64_t padded = CeilDiv(extent, t) * t;
    if (padded == extent) return 1;
    if ((padded - extent) * 4 <= extent) return t;
  }
  return 1;
}

// The default's panel width and tile rows for a GEMM of these extents (docs/default-schedules.md
// "cpu"): DefaultColumns (fewer for narrow J) halved while a K x columns panel exceeds
// MaxPanelBytes, and rows that keep DefaultRows x DefaultColumns accumulators.
struct DefaultTile {
  int64_t columns;
  int64_t rows;
};
DefaultTile DefaultTileFor(int64_t extent_i, bool pad_i, int64_t extent_j, int64_t extent_k,
                           const CpuCore& core) {
  int64_t rows = DefaultRows(core);
  int64_t full = DefaultColumns(core);
  // An I of several loops is not padded (PaddedGemmExtents), and 6 rows that do not divide it
  // leave a guarded tail in the k loop, where gcc keeps the tile in memory: there 8 rows of one
  // vector, where 8 divides I (8 x 1 ran LINEAR 128x768x768 at 112.7 GFLOP/s on Zen 3).
  if (core.registers < 32 && !pad_i && extent_i % rows != 0 && extent_i % 8 == 0) {
    rows = 8;
    full = core.lanes;
  }
  int64_t columns = FloorPowerOfTwo(extent_j, full);
  while (columns > core.lanes && extent_k * columns * 4 > MaxPanelBytes(core)) columns /= 2;
  if (columns == full && CeilDiv(extent_i, rows) * rows - extent_i > extent_i / 8) {
    // Few rows that whole tiles of DefaultRows cover badly take the row count nearest to it
    // that covers them best (ties: the nearest, then the taller), within the registers:
    // ResNet-18's stage-3 Winograd products (17 rows a point: 24 with a guarded third tile)
    // 505-768 us in tiles of 8 rows, 397-468 in tiles of 9 and 411-456 in tiles of 6 (`tessera
    // run --trace`, 3 alternating rounds, Zen 4).
    const int64_t default_rows = rows;
    const int64_t most = std::min(default_rows + default_rows / 2,
                                  (core.registers - 4) / std::max<int64_t>(1, full / core.lanes));
    auto worse = [&](int64_t r) {  // rows covered, distance from the default, shorter
      return std::make_tuple(CeilDiv(extent_i, r) * r, std::abs(r - default_rows), -r);
    };
    for (int64_t r = default_rows - 2; r <= most; ++r) {
      if (worse(r) < worse(rows)) rows = r;
    }
  }
  return {columns, std::max<int64_t>(rows, rows * full / columns)};
}

// The I and J extents the tiles cover: I padded to a multiple of the default's rows and J to a
// multiple of its panel width (or of a power-of-two share of it, at least a vector: then at least
// no vector has a scalar tail) where that wastes at most a quarter (GMM 127x257x509: 128 x 320).
// Only single-loop I and J are padded; the multiples are 1 where nothing is.
struct PaddedGemm {
  int64_t i, j;                    // the padded extents
  int64_t multiple_i, multiple_j;  // PadEinsum's padding of the I and J iteration variables
};
PaddedGemm PaddedGemmExtents(const BlockInfo& main, const GemmMatch& g, const CpuCore& core) {
  const int64_t extent_i = GroupExtent(main.extents, g, kGemmI);
  const int64_t extent_j = GroupExtent(main.extents, g, kGemmJ);
  if (g.groups[kGemmI].size() != 1 || g.groups[kGemmJ].size() != 1) {
    return {extent_i, extent_j, 1, 1};
  }
  const DefaultTile tile = DefaultTileFor(extent_i, /*pad_i=*/true, extent_j,
                                          GroupExtent(main.extents, g, kGemmK), core);
  // Rows pad only to whole default tiles: a multiple of fewer rows would keep its guard.
  const int64_t multiple_i = PaddingMultiple(extent_i, tile.rows, tile.rows);
  const int64_t multiple_j = PaddingMultiple(extent_j, tile.columns, core.lanes);
  return {CeilDiv(extent_i, multiple_i) * multiple_i, CeilDiv(extent_j, multiple_j) * multiple_j,
          multiple_i, multiple_j};
}

// (outer fused and parallel | last vectorized): the zero-filling copy of B for the unpacked
// layout, one OpenMP region.
absl::Status ParallelCopy(Schedule* sch, BlockRV copy) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(copy));
  if (loops.empty()) return absl::OkStatus();
  const LoopRV last = loops.back();
  loops.pop_back();
  if (!loops.empty()) {
    LoopRV outer = loops[0];
    if (loops.size() > 1) {
      TESSERA_ASSIGN_OR_RETURN(outer, sch->Fuse(loops));
    }
    TESSERA_RETURN_IF_ERROR(sch->Parallel(outer));
  }
  return sch->Vectorize(last);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Pads the GEMM (PadEinsum) to the extents PaddedGemmExtents gives and refreshes `main` and
// `block` to the padded block. Tiles that do not divide an extent leave guards in the k loop
// (a tail loop per partial vector and tile), and gcc then keeps the whole accumulator tile in
// memory, loading and storing it per k (the assembly of GMM 127x257x509's default): 0.26 ms
// there against 0.126 ms for the unguarded 128x320x509. The copy of A (zero rows) is inlined
// into the GEMM, a select on the row inside the broadcast operand, as a copy of its own it was
// another OpenMP region (127x257x509: 0.141 ms with it, 0.119 ms inlined).
//
// Returns the padded copy of B (none without padding), for TiledMatmul to place in its parallel
// loop (inlined into the packing copy when there is one): as a loop nest of its own it was an
// OpenMP region of its own, and on the loaded 2-core machine a region can wait milliseconds for
// a descheduled thread (127x257x509 with four regions: 0.156 ms in quiet rounds, 32 ms in loaded
// ones). The epilogues are inlined into the cropping copy out of the padded product, which
// needs no place: WriteBackUnder inlines it into the tiles' write-back, which then stores into
// the output under a predicate on the padded rows and columns. Computed per panel into a padded
// block instead, 127x257x509 ran 152-158 against 139-148 us (4 alternating rounds of 100 runs;
// 2026-12-06, Emerald Rapids).
//
// With `plain_a` (a tile of dot products, whose intrinsic reads A's groups as plain loads) A's
// padded copy stays a parallel copy too.
absl::StatusOr<std::optional<BlockRV>> PadToTiles(Schedule* sch, const GemmMatch& g,
                                                  const CpuCore& core, bool plain_a,
                                                  BlockInfo* main, Block* block) {
  std::optional<BlockRV> b_copy;
  const PaddedGemm padded = PaddedGemmExtents(*main, g, core);
  if (padded.multiple_i == 1 && padded.multiple_j == 1) return b_copy;
  const int var_i = g.groups[kGemmI][0];
  const int var_j = g.groups[kGemmJ][0];
  std::vector<int64_t> padding(main->extents.size(), 1);
  padding[var_i] = padded.multiple_i;
  padding[var_j] = padded.multiple_j;
  TESSERA_RETURN_IF_ERROR(sch->PadEinsum(main->rv, padding));
  TESSERA_ASSIGN_OR_RETURN(*block, sch->Get(main->rv));
  // PadEinsum names each copy after the buffer it writes.
  const std::string b_pad = (*block)->reads[g.b].buffer.name();
  TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> producers, sch->GetProducers(main->rv));
  TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> consumers, sch->GetConsumers(main->rv));
  for (BlockRV producer : producers) {
    TESSERA_ASSIGN_OR_RETURN(Block node, sch->Get(producer));
    if (node->name == b_pad) {
      b_copy = producer;
    } else if (EndsWith(node->name, "_pad")) {
      // With 16 registers the inlined row test stays in the k loop as a branch per row, and gcc
      // keeps the whole tile in memory: A's padded copy is a parallel loop nest of its own. So
      // the 6-row tile pads 128 rows to 132 and still beats the 8 x 1 tiles that divide them
      // (Zen 3, 2 threads, twice: LINEAR 128x768x3072 3.36-3.50 ms against 4.52-4.55, LLaMA's
      // 32x4096x4096 7.26-7.63 against 8.79-8.87, DENSE 128x3072x768 3.48-3.64 against 3.78).
      TESSERA_RETURN_IF_ERROR(core.registers >= 32 && !plain_a ? sch->ComputeInline(producer)
                                                               : ParallelCopy(sch, producer));
    }
  }
  for (BlockRV consumer : consumers) {
    TESSERA_ASSIGN_OR_RETURN(Block node, sch->Get(consumer));
    if (!EndsWith(node->name, "_unpad")) continue;
    TESSERA_RETURN_IF_ERROR(InlineEpilogues(sch, consumer));
  }
  TESSERA_ASSIGN_OR_RETURN(main->loops, sch->GetLoops(main->rv));
  main->extents[var_i] = padded.i;
  main->extents[var_j] = padded.j;
  return b_copy;
}

// Computes ShiftInt8Product's `sums` under `at` (the loop of the panel they serve): the
// reduction's loops outside, the sums' last dimension inside and vectorized, so each step adds a
// row of B.
absl::Status SumsUnder(Schedule* sch, BlockRV sums, LoopRV at) {
  TESSERA_RETURN_IF_ERROR(sch->ComputeAt(sums, at));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(sums));
  TESSERA_ASSIGN_OR_RETURN(const ForNode* at_loop, sch->Get(at));
  size_t under = loops.size();
  for (size_t d = 0; d < loops.size(); ++d) {
    TESSERA_ASSIGN_OR_RETURN(const ForNode* loop, sch->Get(loops[d]));
    if (loop == at_loop) under = d + 1;
  }
  if (under + 2 > loops.size()) return absl::OkStatus();  // one loop: nothing to vectorize along
  TESSERA_ASSIGN_OR_RETURN(BlockRV init, sch->DecomposeReduction(sums, loops[under]));
  for (BlockRV b : {init, sums}) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> own, sch->GetLoops(b));
    TESSERA_RETURN_IF_ERROR(sch->Vectorize(own.back()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status PrepackInGroups(Schedule* sch, BlockRV block, int read, int strip_dim, int64_t lanes,
                             int group_dim, const std::optional<CpuDot>& dot) {
  std::optional<BlockRV> sums;
  if (dot.has_value() && dot->shifted) {
    TESSERA_ASSIGN_OR_RETURN(sums, sch->ShiftInt8Product(block, read));
  }
  TESSERA_RETURN_IF_ERROR(
      PrepackIntoStrips(sch, block, read, strip_dim, lanes, dot.has_value() ? group_dim : -1,
                        dot.has_value() ? dot->group : 1, dot.has_value() ? dot->lane_group : 1)
          .status());
  // A weight's sums are computed with its packing, once.
  if (!sums.has_value()) return absl::OkStatus();
  return sch->Annotate(*sums, kLayoutRewritePreproc, InstValue::Int(1));
}

int64_t MaxTileRows(const CpuCore& core) { return core.registers >= 32 ? kMaxTileRows : 12; }

int64_t MaxTileVectors(const CpuCore& core, int64_t lanes) {
  return std::max<int64_t>(1, (core.registers >= 32 ? kMaxTileColumns : kMaxTileColumns / 2) /
                                  std::max<int64_t>(1, lanes));
}

// The column tile loop is outside the row tile loop, so one panel of B is copied once into a
// contiguous buffer (cache_read at the panel loop; a B laid out [J, K], DENSE's weight, also
// transposed to [K, J] so the tile reads it as vectors) and stays in L2 while every row tile of
// A passes it. Row tiles outside made each thread stream all of B once per row tile (LLaMA's
// 32x4096x4096 read its 64 MiB B 8 times from memory), a [J, K] B was a strided gather, and
// unpacked panels of a wide B touch one page per k.
//
// K blocks accumulate in a local C block under the parallel loop, not in the register tile: the
// write-back (which carries the inlined epilogues, e.g. bias and relu, that must see the whole
// sum) cannot be computed inside a loop that carries the GEMM's reduction (ReverseComputeAt
// refuses it), so the accumulators of a row block live across the K blocks in that local
// buffer; code generation holds each register tile of it in registers along K_i
// (codegen/promote_accumulators.h).
absl::StatusOr<BlockRV> TiledMatmul(Schedule* sch, const BlockInfo& unpadded_main,
                                    const Block& unpadded_block, const GemmMatch& g,
                                    const MatmulTiling& tiling, const CpuCore& core) {
  const bool k_blocked = tiling.layout == MatmulLayout::kPackedKBlocked;
  const bool prepack = tiling.layout == MatmulLayout::kPrepacked;
  const bool pack = tiling.layout == MatmulLayout::kPacked || k_blocked;
  std::optional<CpuDot> dot;
  if (tiling.dot_groups) {
    dot = CpuDotFor(unpadded_block, g, unpadded_main.extents, core);
    if (k_blocked || tiling.layout == MatmulLayout::kUnpacked || !dot.has_value()) {
      return absl::FailedPreconditionError(
          "dot product: not a product the core has one for, with B packed or prepacked");
    }
  }
  BlockInfo main = unpadded_main;
  Block block = unpadded_block;
  TESSERA_ASSIGN_OR_RETURN(std::optional<BlockRV> padded_b,
                           PadToTiles(sch, g, core, dot.has_value(), &main, &block));
  const bool groups = dot.has_value();
  if (prepack && !ReadsLayoutFreeB(sch->func(), unpadded_block, g)) {
    return absl::FailedPreconditionError("prepacked gemm: B is not a layout-free parameter");
  }
  TESSERA_ASSIGN_OR_RETURN(GemmLoops loops, FuseGemmLoops(sch, main, g));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<ExprRV> row_factors,
      sch->SamplePaddedTile(loops.i, k_blocked ? 3 : 2, MaxTileRows(core), tiling.rows));
  // Columns come in whole vectors: J is split by the vector length first and only the number
  // of vectors is sampled, so every draw of the space has vector-sized tile columns.
  const int64_t lanes = FloorPowerOfTwo(loops.extent_j, core.lanes);
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> j_lanes,
                           sch->Split(loops.j, {InstValue(), InstValue::Int(lanes)}));
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<ExprRV> column_factors,
      sch->SamplePaddedTile(j_lanes[0], 3, MaxTileVectors(core, lanes), tiling.columns));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> i, sch->Split(loops.i, Factors(row_factors)));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> j, sch->Split(j_lanes[0], Factors(column_factors)));
  j.push_back(j_lanes[1]);
  std::vector<LoopRV> k = {loops.k};
  if (groups) {
    TESSERA_ASSIGN_OR_RETURN(k, sch->Split(loops.k, {InstValue(), InstValue::Int(dot->group)}));
  }
  if (k_blocked) {
    // The sampled innermost factor (at most kMaxKBlocks) is the number of K blocks, the outer
    // loop: every draw keeps blocks of at least K / kMaxKBlocks.
    TESSERA_ASSIGN_OR_RETURN(std::vector<ExprRV> k_factors,
                             sch->SamplePerfectTile(loops.k, 2, kMaxKBlocks, tiling.k));
    TESSERA_ASSIGN_OR_RETURN(
        k, sch->Split(loops.k, {InstValue::Of(k_factors[1]), InstValue::Of(k_factors[0])}));
  }
  const LoopRV tile_rows = i.back();
  const LoopRV tile_vectors = j[2];
  const LoopRV tile_lanes = j[3];
  std::vector<LoopRV> outer = {j[0]};  // fused and parallel
  if (loops.has_batch) outer.insert(outer.begin(), loops.batch);
  switch (tiling.layout) {
    case MatmulLayout::kPacked:
    case MatmulLayout::kUnpacked:
    case MatmulLayout::kPrepacked:
      TESSERA_RETURN_IF_ERROR(groups
                                  ? sch->Reorder({j[0], i[0], j[1], k[0], i[1], j[2], j[3], k[1]})
                                  : sch->Reorder({j[0], i[0], j[1], k[0], i[1], j[2], j[3]}));
      if (!pack) outer.insert(outer.end(), {i[0], j[1]});
      break;
    case MatmulLayout::kPackedKBlocked:
      TESSERA_RETURN_IF_ERROR(sch->Reorder({j[0], i[0], k[0], i[1], j[1], k[1], i[2], j[2], j[3]}));
      outer.push_back(i[0]);
      break;
  }
  LoopRV parallel = outer[0];
  if (outer.size() > 1) {
    TESSERA_ASSIGN_OR_RETURN(parallel, sch->Fuse(outer));
  }
  if (pack) {
    // An int8 product is shifted (ShiftInt8Product); the sums read B itself, each panel's in
    // the panel's iteration.
    std::vector<BlockRV> b_readers;
    if (groups && dot->shifted) {
      b_readers = {main.rv};
      TESSERA_ASSIGN_OR_RETURN(BlockRV sums, sch->ShiftInt8Product(main.rv, g.b));
      TESSERA_RETURN_IF_ERROR(SumsUnder(sch, sums, parallel));
    }
    TESSERA_ASSIGN_OR_RETURN(BlockRV packed, sch->CacheRead(main.rv, g.b, "global", b_readers));
    if (groups) {
      TESSERA_ASSIGN_OR_RETURN(IndexMap groups_last, GroupsLastMap(block, g, *dot));
      TESSERA_RETURN_IF_ERROR(
          sch->TransformLayout(packed, 0, /*buffer_index_type=*/1, groups_last));
      // The copy iterates the groups too, so that its stores are affine for ComputeAt.
      TESSERA_RETURN_IF_ERROR(sch->TransformBlockLayout(packed, groups_last));
    } else if (BIsReductionContiguous(block, g)) {
      TESSERA_ASSIGN_OR_RETURN(IndexMap columns_last, ColumnsLastMap(block, g));
      TESSERA_RETURN_IF_ERROR(
          sch->TransformLayout(packed, 0, /*buffer_index_type=*/1, columns_last));
    }
    TESSERA_RETURN_IF_ERROR(sch->ComputeAt(packed, k_blocked ? k[0] : parallel));
    if (!groups && BIsReductionContiguous(block, g)) {
      TESSERA_RETURN_IF_ERROR(TileTransposingCopy(sch, packed));
    }
  }
  if (prepack) {
    TESSERA_ASSIGN_OR_RETURN(int strip_dim, StripDimension(block, g));
    int group_dim = -1;
    if (groups) {
      const std::vector<int> b = AccessIters(block, block->reads[g.b].buffer);
      group_dim = static_cast<int>(std::find(b.begin(), b.end(), g.groups[kGemmK][0]) - b.begin());
    }
    TESSERA_RETURN_IF_ERROR(PrepackInGroups(sch, main.rv, g.b, strip_dim, lanes, group_dim, dot));
  }
  const LoopRV write_at = tiling.layout == MatmulLayout::kPacked ? j[1] : parallel;
  TESSERA_ASSIGN_OR_RETURN(BlockRV write_back, WriteBackUnder(sch, main.rv, write_at, "local"));
  if (padded_b.has_value()) {
    // Packed, the padded B is read only by the packing copy, which then pads as it copies;
    // unpacked, it stays a parallel copy (a select inside the FMAs' operand is a branch).
    TESSERA_RETURN_IF_ERROR(pack || prepack ? sch->ComputeInline(*padded_b)
                                            : ParallelCopy(sch, *padded_b));
  }
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(main.rv, k[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Parallel(parallel));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(tile_rows));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(tile_vectors));
  BlockRV product = main.rv;
  if (groups) {
    TESSERA_ASSIGN_OR_RETURN(product, sch->Blockize(tile_lanes));
    TESSERA_RETURN_IF_ERROR(sch->Tensorize(product, dot->intrin));
  } else if (lanes > 1) {
    TESSERA_RETURN_IF_ERROR(sch->Vectorize(tile_lanes));
  }
  // The lines of B that the tile streams along K (a line per k for each vector of a packed
  // panel or strip), prefetched ahead into L1 (code generation, ir/loop_annotations.h).
  std::vector<int64_t> distances(std::begin(kPrefetchDistances), std::end(kPrefetchDistances));
  TESSERA_ASSIGN_OR_RETURN(
      ExprRV ahead, sch->SampleCategorical(
                        distances, std::vector<double>(distances.size(), 1.0 / distances.size()),
                        tiling.prefetch_ahead));
  TESSERA_RETURN_IF_ERROR(
      sch->Annotate(groups ? k[0] : k.back(), kPrefetchAhead, InstValue::Of(ahead)));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> wb, sch->GetLoops(write_back));
  if (LoopExtent(*sch, wb.back()) > 1 && VectorizeWriteBack(core)) {
    TESSERA_RETURN_IF_ERROR(sch->Vectorize(wb.back()));
  }
  // The write-back's rows unrolled too (its own loops: .., rows, columns): GMM 127x257x509's
  // emitted C ran 0.105 ms with them unrolled against 0.123 ms (7 alternating rounds of one
  // driver); 128x768x768 the same. Only tile-sized row loops: a K-blocked C block has more.
  TESSERA_ASSIGN_OR_RETURN(const ForNode* at, sch->Get(write_at));
  size_t own = wb.size();
  for (size_t d = 0; d < wb.size(); ++d) {
    absl::StatusOr<const ForNode*> loop = sch->Get(wb[d]);
    if (loop.ok() && *loop == at) own = wb.size() - d - 1;
  }
  if (own >= 2 && own < wb.size()) {
    const LoopRV rows = wb[wb.size() - 2];
    const int64_t extent = LoopExtent(*sch, rows);
    if (extent > 1 && extent <= kMaxTileRows) TESSERA_RETURN_IF_ERROR(sch->Unroll(rows));
  }
  return product;
}

std::optional<CpuDot> CpuDotOfTypes(DataType in, DataType acc, int64_t k, const CpuCore& core) {
  if (core.dot_bf16 && in == DataType::BFloat16() && acc == DataType::Float32() && k % 2 == 0) {
    return CpuDot{kCpuDotBf16, 2, 2};
  }
  if (core.dot_int8 && in == DataType::Int8() && acc == DataType::Int32() && k % 4 == 0) {
    return k % 8 == 0 ? CpuDot{kCpuDotInt8x8Shifted, 8, 4, true}
                      : CpuDot{kCpuDotInt8Shifted, 4, 4, true};
  }
  return std::nullopt;
}

std::optional<CpuDot> CpuDotFor(const Block& block, const GemmMatch& g,
                                const std::vector<int64_t>& extents, const CpuCore& core) {
  if (g.a < 0 || g.b < 0 || block->writes.size() != 1) return std::nullopt;
  for (int group : {kGemmI, kGemmJ, kGemmK}) {
    if (g.groups[group].size() != 1) return std::nullopt;
  }
  const Buffer& a = block->reads[g.a].buffer;
  const Buffer& b = block->reads[g.b].buffer;
  const int k = g.groups[kGemmK][0];
  const std::optional<CpuDot> dot =
      CpuDotOfTypes(a.dtype(), block->writes[0].buffer.dtype(), extents[k], core);
  if (!dot.has_value()) return std::nullopt;
  const std::vector<int> a_iters = AccessIters(block, a);
  const std::vector<int> b_iters = AccessIters(block, b);
  if (b.dtype() != a.dtype() || a_iters.empty() || a_iters.back() != k ||
      std::count(b_iters.begin(), b_iters.end(), k) != 1 ||
      std::count(b_iters.begin(), b_iters.end(), g.groups[kGemmJ][0]) != 1) {
    return std::nullopt;
  }
  return dot;
}

absl::Status OneRowFromStrips(Schedule* sch, const BlockInfo& main, const Block& block,
                              const GemmMatch& g, const CpuCore& core, bool dot_groups) {
  // Four strips: 1, 2 and 4 ran alike, 8 (eight streams) 19% slower (1 x 4096 x 4096, the
  // emitted C alternated in one driver, Zen 4).
  constexpr int64_t kOneRowStrips = 4;
  if (!g.groups[kGemmI].empty() || g.groups[kGemmJ].size() != 1 || g.groups[kGemmK].size() != 1 ||
      !ReadsLayoutFreeB(sch->func(), block, g)) {
    return absl::FailedPreconditionError("one-row product: not x[1, K] times a weight");
  }
  TESSERA_ASSIGN_OR_RETURN(int strip_dim, StripDimension(block, g));
  if (strip_dim != 1 || block->reads[g.b].buffer.ndim() != 2) {
    return absl::FailedPreconditionError("one-row product: the weight is not [K, N]");
  }
  const int64_t extent_j = GroupExtent(main.extents, g, kGemmJ);
  if (extent_j % (kOneRowStrips * core.lanes) != 0) {
    return absl::FailedPreconditionError("one-row product: N is no whole number of tiles");
  }
  std::optional<CpuDot> dot;
  if (dot_groups) {
    const DataType in = block->reads[g.a].buffer.dtype();
    if (block->reads[g.b].buffer.dtype() == in) {
      dot = CpuDotOfTypes(in, block->writes[0].buffer.dtype(), GroupExtent(main.extents, g, kGemmK),
                          core);
    }
    if (!dot.has_value() || core.lanes != kCpuDotLanes) {
      return absl::FailedPreconditionError("one-row product: no dot product for these types");
    }
  }
  TESSERA_RETURN_IF_ERROR(PrepackInGroups(sch, main.rv, g.b, strip_dim, core.lanes,
                                          /*group_dim=*/0, dot));
  TESSERA_ASSIGN_OR_RETURN(GemmLoops loops, FuseGemmLoops(sch, main, g));
  TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> j,
                           sch->Split(loops.j, {InstValue(), InstValue::Int(kOneRowStrips),
                                                InstValue::Int(core.lanes)}));
  std::vector<LoopRV> k = {loops.k};
  if (dot.has_value()) {
    TESSERA_ASSIGN_OR_RETURN(k, sch->Split(loops.k, {InstValue(), InstValue::Int(dot->group)}));
  }
  std::vector<LoopRV> order = {j[0], k[0], j[1], j[2]};
  if (dot.has_value()) order.push_back(k[1]);
  if (loops.has_batch) order.insert(order.begin(), loops.batch);
  TESSERA_RETURN_IF_ERROR(sch->Reorder(order));
  LoopRV parallel = j[0];
  if (loops.has_batch) {
    TESSERA_ASSIGN_OR_RETURN(parallel, sch->Fuse({loops.batch, j[0]}));
  }
  TESSERA_RETURN_IF_ERROR(WriteBackUnder(sch, main.rv, parallel, "local").status());
  TESSERA_RETURN_IF_ERROR(sch->DecomposeReduction(main.rv, k[0]).status());
  TESSERA_RETURN_IF_ERROR(sch->Parallel(parallel));
  TESSERA_RETURN_IF_ERROR(sch->Unroll(j[1]));
  if (!dot.has_value()) return sch->Vectorize(j[2]);
  TESSERA_ASSIGN_OR_RETURN(BlockRV product, sch->Blockize(j[2]));
  return sch->Tensorize(product, dot->intrin);
}

InstValue DefaultPrefetchAhead(int64_t weight_bytes, const CpuCore& core) {
  return InstValue::Int(weight_bytes > MaxPanelBytes(core) ? kDefaultPrefetchChoice : 0);
}

absl::Status PrefetchAhead(Schedule* sch, const LoopRV& loop, const InstValue& decision) {
  const std::vector<int64_t> distances(std::begin(kPrefetchDistances),
                                       std::end(kPrefetchDistances));
  TESSERA_ASSIGN_OR_RETURN(
      ExprRV ahead,
      sch->SampleCategorical(
          distances, std::vector<double>(distances.size(), 1.0 / distances.size()), decision));
  return sch->Annotate(loop, kPrefetchAhead, InstValue::Of(ahead));
}

bool ReadsLayoutFreeB(const PrimFunc& func, const Block& block, const GemmMatch& g) {
  return g.b >= 0 && g.b < static_cast<int>(block->reads.size()) &&
         IsLayoutFreeParam(func, block->reads[g.b].buffer);
}

MatmulTiling DefaultMatmulTiling(const BlockInfo& main, const GemmMatch& g, const CpuCore& core,
                                 int64_t cores, bool b_layout_free) {
  const PaddedGemm padded = PaddedGemmExtents(main, g, core);
  const int64_t batch = GroupExtent(main.extents, g, kGemmS);
  // Narrower panels (and taller tiles, the same DefaultRows x DefaultColumns accumulators)
  // when a K x DefaultColumns panel would not stay in L2 next to the rows of A.
  const DefaultTile tile = DefaultTileFor(
      GroupExtent(main.extents, g, kGemmI),
      g.groups[kGemmI].size() == 1 && g.groups[kGemmJ].size() == 1,
      GroupExtent(main.extents, g, kGemmJ), GroupExtent(main.extents, g, kGemmK), core);
  MatmulTiling tiling;
  tiling.layout = batch * CeilDiv(padded.j, tile.columns) >= kMinPanels ? MatmulLayout::kPacked
                                                                        : MatmulLayout::kUnpacked;
  tiling.rows = InstValue::IntArray({CeilDiv(padded.i, tile.rows), tile.rows});
  // Two tiles per packed panel where they divide J and leave kMinPanels panels: the copy then
  // reads 2 x columns floats per row of B. On LLaMA's 32x4096x4096 (a 16 KiB row stride: each k
  // of a panel is another page) the emitted C ran 4.20 ms with 64-column panels against 5.62 ms
  // with 32 (4 alternating rounds, one driver); 128 and 256 columns ran 4.23 and 5.08 ms, and
  // 128x768x3072 ran 1.28 / 1.30 ms (64 / 32).
  // Tiles narrower than 32 columns (16 registers) take more of them, up to 64-column panels.
  // Read from pre-packed strips (no copy to widen), the panel of all its tiles stays within
  // MaxPanelBytes too: LLaMA's down projection 128 x 2048 x 5632 (a 64-column panel is 1.4 MiB
  // of a 2 MiB L2) ran 9-10% faster in 32-column panels, its weights cold or cached (emitted C,
  // one driver, 3 rounds).
  const int64_t extent_k = GroupExtent(main.extents, g, kGemmK);
  const int64_t lanes = FloorPowerOfTwo(padded.j, core.lanes);
  // Pre-packed strips need no panel copy, so every layout's tiles read B as well from them.
  const bool prepacked = b_layout_free && lanes == core.lanes && padded.j % core.lanes == 0 &&
                         g.groups[kGemmJ].size() == 1 && g.groups[kGemmK].size() == 1;
  int64_t tiles = 1;
  for (int64_t t = 2; t * tile.columns <= std::max<int64_t>(64, 2 * tile.columns); t *= 2) {
    if (padded.j % (t * tile.columns) == 0 &&
        batch * (padded.j / (t * tile.columns)) >= kMinPanels &&
        (!prepacked || extent_k * t * tile.columns * 4 <= MaxPanelBytes(core))) {
      tiles = t;
    }
  }
  tiling.columns =
      InstValue::IntArray({CeilDiv(padded.j, tiles * tile.columns), tiles, tile.columns / lanes});
  // Panels of three vectors where they balance the cores better: the parallel loop's slowest
  // core computes ceil(panels / cores) panels, so GMM 127x257x509 (padded to 288 columns) on
  // two cores took 5 of 9 32-column panels (160 columns), against 3 of 6 48-column ones (144).
  // An 8 x 3-vector tile (24 accumulators) ran as fast as 8 x 2 per core (the emitted C of
  // 127x257x509 on one thread: 0.173 / 0.173 ms; 128x768x768: 0.302 / 0.303 ms). Not with 16
  // registers: 6 x 3 vectors is 18 accumulators.
  const int64_t wide = DefaultColumns(core) + core.lanes;
  const int64_t width = tiles * tile.columns;
  if (core.registers >= 32 && cores > 1 && batch == 1 && lanes == core.lanes &&
      tile.columns == DefaultColumns(core) && tile.rows == DefaultRows(core) &&
      padded.j % wide == 0 && padded.j / wide >= kMinPanels &&
      extent_k * wide * 4 <= MaxPanelBytes(core) &&
      CeilDiv(padded.j / wide, cores) * wide < CeilDiv(padded.j / width, cores) * width) {
    tiling.rows = InstValue::IntArray({CeilDiv(padded.i, DefaultRows(core)), DefaultRows(core)});
    tiling.columns = InstValue::IntArray({padded.j / wide, 1, wide / core.lanes});
  }
  if (prepacked) tiling.layout = MatmulLayout::kPrepacked;
  tiling.prefetch_ahead = DefaultPrefetchAhead(batch * extent_k * padded.j * 4, core);
  return tiling;
}

}  // namespace dlight
}  // namespace tessera
