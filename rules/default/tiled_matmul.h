// The register-tiled CPU GEMM shared by the default schedule (CpuDefault, fixed factors) and the
// PackedPanelGemm schedule rule (sampled factors): one function builds the loop nest from tile
// decisions, so the default is one point of the rule's design space and the evolutionary search
// mutates the default's trace like any other (docs/default-schedules.md "cpu",
// docs/design-spaces.md "PackedPanelGemm").
#ifndef TESSERA_RULES_DEFAULT_TILED_MATMUL_H_
#define TESSERA_RULES_DEFAULT_TILED_MATMUL_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"
#include "rules/default/analysis.h"
#include "rules/default/cpu_core.h"
#include "schedule/instruction.h"
#include "schedule/schedule.h"

namespace tessera {
namespace dlight {

// The largest register tile the samplers draw: rows (unrolled) and columns (vectorized, whole
// vectors of the core's lanes), on a core of 32 vector registers; MaxTileRows and
// MaxTileVectors give a core's own bounds.
constexpr int64_t kMaxTileRows = 16;
constexpr int64_t kMaxTileColumns = 64;
// The most K blocks the K-blocked nest samples (blocks of at least K / kMaxKBlocks).
constexpr int64_t kMaxKBlocks = 16;

// Which loop nest TiledMatmul builds. A trace replays the same instructions whatever its
// decisions, so the three nests are three design spaces, not a sampled choice.
enum class MatmulLayout {
  // (S, J_o | pack | I_o, J_m | K, I_i, J_i): (J_i: vectors unrolled, lanes vectorized) a K x
  // panel-columns panel of B copied per panel,
  // the C tile accumulated in a local tile written back per tile.
  kPacked,
  // (S, J_o, I_b | K_o | pack | I_o, J_m | K_i, I_i, J_i): as kPacked with K cut into blocks, a
  // K_i x panel-columns panel packed per K block (it stays in L2 for any K), the C block of
  // I_o * I_i rows accumulated in a local buffer across the K blocks and written back (with the
  // epilogues) once per row block.
  kPackedKBlocked,
  // (S, J_o, I_o, J_m | K, I_i, J_i) fused and parallel, B read in place.
  kUnpacked,
  // kUnpacked's nest reading a layout-free B (ir/prepack.h) that a nest of its own packs once,
  // outside the call, into [.., J / lanes, K, lanes] strips (MLAS's packed-B layout): each tile
  // vector reads its strip contiguously along K. The strips do not depend on the tile decisions,
  // so a mutated trace keeps a layout its loops read well.
  kPrepacked,
};

// The decisions of the samplers TiledMatmul records; InstValue() (None) draws one.
struct MatmulTiling {
  MatmulLayout layout = MatmulLayout::kPacked;
  // SamplePaddedTile of the fused I loop: [tiles, rows] (kPackedKBlocked: [blocks, tiles,
  // rows]), rows at most MaxTileRows.
  InstValue rows;
  // SamplePaddedTile of the fused J loop's vectors (J split by the core's lanes first): [panels,
  // tiles per panel, vectors per tile], at most MaxTileVectors vectors.
  InstValue columns;
  // kPackedKBlocked only: SamplePerfectTile of the fused K loop, [block length, blocks] (the
  // split takes them in the other order), at most kMaxKBlocks blocks.
  InstValue k;
  // SampleCategorical over kPrefetchDistances: how many iterations ahead the tile's reduction
  // loop prefetches the lines of B it streams (kPrefetchAhead; 0: none).
  InstValue prefetch_ahead;
  // kPacked and kPrepacked, where CpuDotFor finds a dot product: B packed in groups of its k
  // ([.., K / g, J, g]) and each tile vector's sums taken g k at a time by that tensor intrinsic
  // (schedule/tensor_intrin.h) instead of widening every element. Another nest (a split and a
  // Tensorize more), so a branch like the layout, not a sampled decision. The tiles must divide
  // I and J: a padded tile's guard falls inside the intrinsic's block.
  bool dot_groups = false;
};

// A dot product of the core for a GEMM's element type (ir/cpu_intrinsics.h): the tensor
// intrinsic, and how many k it sums per column.
// A group of more k than a lane takes is stored as lanes' groups one after another
// (lane_group k each).
struct CpuDot {
  const char* intrin = nullptr;
  int64_t group = 0;
  int64_t lane_group = 0;
  // The intrinsic multiplies A + 128 (int8): the product is first rewritten by ShiftInt8Product.
  bool shifted = false;
};

// PrepackIntoStrips of `block`'s layout-free read `read` in the groups of k the dot product `dot`
// takes (K's dimension `group_dim`; plain strips without `dot`). An int8 product is first
// shifted (ShiftInt8Product), and its weight's sums are computed with the packing, once.
absl::Status PrepackInGroups(Schedule* sch, BlockRV block, int read, int strip_dim, int64_t lanes,
                             int group_dim, const std::optional<CpuDot>& dot);

// The dot product `core` has for products of `in` summed in `acc` over `k` (the reduction's
// extent, a multiple of the group), or nullopt: bfloat16 in float32 with AVX-512 BF16
// (CpuCore::dot_bf16: pairs of k), int8 in int32 with AVX-512 VNNI (dot_int8: eights, or fours
// where 8 does not divide k, in the shifted form).
std::optional<CpuDot> CpuDotOfTypes(DataType in, DataType acc, int64_t k, const CpuCore& core);

// The dot product `core` has for the GEMM `g` of `block` (`extents` as in BlockInfo), or
// nullopt: bfloat16 A and B summed in float32 with AVX-512 BF16 (CpuCore::dot_bf16: pairs of k),
// int8 A and B summed in int32 with AVX-512 VNNI (dot_int8: fours); I, J and K one iterator each,
// K a multiple of the group and A's last dimension, B [.., K, J] or [.., J, K].
std::optional<CpuDot> CpuDotFor(const Block& block, const GemmMatch& g,
                                const std::vector<int64_t>& extents, const CpuCore& core);

// The prefetch distances the space samples, in iterations of K. The default takes 64 (a 4 KiB
// page of a packed strip ahead): 32 to 128 ran alike, 16 and 256 slower (docs/cpu-backend.md).
inline constexpr int64_t kPrefetchDistances[] = {0, 32, 64};
inline constexpr int64_t kDefaultPrefetchChoice = 2;

// The samplers' bounds on `core`: rows at most kMaxTileRows (12 with 16 registers), and at most
// kMaxTileColumns floats (half with 16 registers) in whole vectors of `lanes` floats.
int64_t MaxTileRows(const CpuCore& core);
int64_t MaxTileVectors(const CpuCore& core, int64_t lanes);

// Schedules the GEMM block `main` (`block`, matched as `g`) as `tiling` says: parallel outer
// loops, rows unrolled, columns vectorized, epilogues inlined into the write-back. An I or J
// that no default tile divides is first padded (PadEinsum) to whole tiles, every layout alike,
// with the copies in and out parallel and the epilogues in the copy out. Returns the block that
// now computes the product (`main`'s, or with dot_bf16_pairs the block holding the intrinsic's
// calls), for the caller to mark. Errors from the primitives (the caller treats them as "does
// not apply").
absl::StatusOr<BlockRV> TiledMatmul(Schedule* sch, const BlockInfo& main, const Block& block,
                                    const GemmMatch& g, const MatmulTiling& tiling,
                                    const CpuCore& core);

// The default's point of the space (docs/default-schedules.md "cpu"): kPacked with tiles of 2
// vectors' columns and 8 rows (32 registers: 8 x 32 floats on AVX-512, or 16 x 16) or 6 rows
// (16 registers: 6 x 16 floats on AVX2), one tile per panel, the columns halved until a K x
// columns panel fits half the core's L2; kUnpacked when that leaves fewer than kMinPanels
// panels. The extents are the padded ones (TiledMatmul pads I and J to whole default tiles where
// that wastes little). With `cores` (the target's, 0 when unknown) and 32 registers a panel of 3
// vectors (one 8 x 48 tile) replaces the 32- or 64-column panels where its panels divide J and
// spread over the cores with a shorter slowest core.
// With `b_layout_free` (ReadsLayoutFreeB) the layout is kPrepacked where its strips divide J.
MatmulTiling DefaultMatmulTiling(const BlockInfo& main, const GemmMatch& g, const CpuCore& core,
                                 int64_t cores = 0, bool b_layout_free = false);

// The default's decision for a tile whose weights (B, a convolution's kernel) take
// `weight_bytes`: kDefaultPrefetchChoice where they exceed half of L2, so that inside a model
// they come from memory at each call; 0 (none) where they stay cached, as the prefetches then
// only take issue slots (a small CNN's convolutions of 3 to 64 channels ran up to 10% slower
// with them).
InstValue DefaultPrefetchAhead(int64_t weight_bytes, const CpuCore& core);

// Samples a distance of kPrefetchDistances (`decision`, or drawn uniformly) and annotates the
// reduction loop `loop` of a tile with it as kPrefetchAhead (ir/loop_annotations.h): the lines
// the tile streams along it (GEMM or convolution strips) are prefetched that many iterations
// ahead.
absl::Status PrefetchAhead(Schedule* sch, const LoopRV& loop, const InstValue& decision);

// True if the GEMM's B (`block` reads it as `g.b`) is a layout-free parameter of `func`.
bool ReadsLayoutFreeB(const PrimFunc& func, const Block& block, const GemmMatch& g);

// A product of one row by a layout-free weight [K, N] (`g` from MatchGemm with one_row: a
// decoder's projection of one token, x[1, K] W[K, N]) from strips packed once, as kPrepacked
// reads them: each parallel iteration sums kOneRowStrips strips of `lanes` columns along K, one
// contiguous stream each, into that many vector accumulators. Read in place, W's [K, N] rows
// give each iteration a 16 KiB-strided walk of 512-byte pieces (LINEAR 1 x 4096 x 4096: 3.7 ms
// against 1.1 ms from strips, docs/cpu-backend.md). With `dot_groups` the core's dot product
// for the types sums k in groups (the strips [N / 16, K / g, 16, g], int8 shifted as in
// TiledMatmul). Errors where W is not layout-free, not [K, N], its columns are no whole number of
// tiles, or (with `dot_groups`) there is no dot product for its types and K.
absl::Status OneRowFromStrips(Schedule* sch, const BlockInfo& main, const Block& block,
                              const GemmMatch& g, const CpuCore& core, bool dot_groups = false);

}  // namespace dlight
}  // namespace tessera

#endif  // TESSERA_RULES_DEFAULT_TILED_MATMUL_H_
