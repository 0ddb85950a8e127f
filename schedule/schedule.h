// A Schedule transforms one function step by step through primitives, each recorded as an
// instruction of its Trace. Random variables (BlockRV, LoopRV, ExprRV) are handles into the
// schedule's symbol table:
//   - a BlockRV names a block (block names are unique within a function);
//   - a LoopRV is a loop variable (a loop replaced by a primitive is gone: using its RV
//     afterwards is an error), or one of the markers SampleComputeLocation returns
//     ("root": leave the block where it is; "inline": inline it);
//   - an ExprRV is an integer chosen by a sampling instruction.
// Copy() is cheap (the IR is shared, immutable) and forks the random generator, so
// thousands of candidates can branch from one schedule.
//
// Every primitive validates its preconditions and returns kInvalidArgument (or kNotFound
// for a stale RV) naming the primitive, the block or loop and the reason; on error the
// schedule is unchanged and nothing is recorded.
#ifndef TESSERA_SCHEDULE_SCHEDULE_H_
#define TESSERA_SCHEDULE_SCHEDULE_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/random.h"
#include "ir/function.h"
#include "schedule/instruction.h"
#include "schedule/state.h"
#include "schedule/trace.h"

namespace tessera {

class IndexMap;  // schedule/index_map.h

// A bound on a product of tile factors taken across the loops of one loop nest, for tilings
// sampled one loop at a time (e.g. the threads per block of a GPU tiling: the product over
// all loops of the factors bound to threadIdx). For the SamplePerfectTile of one loop: the
// product of its factors at `positions`, times the values of `prior` (those factors of the
// loops tiled before), times one divisor of each extent in `later` (the loops tiled after
// this one, whose factors are not known yet), must be able to lie in [min, max]. Checking
// `later` makes sampling exact: a tiling chosen under the limit always leaves the later loops
// a way to meet it, and when every loop's factors are fixed it is the plain bound.
struct TileProductLimit {
  std::vector<int> positions;   // indices into the n factors, each at most once
  std::vector<ExprRV> prior;    // factors already sampled (their product counts)
  int64_t min = 1;              // >= 1
  int64_t max = -1;             // >= min, or -1: no upper bound
  std::vector<int64_t> later;   // extents (>= 1) of the loops tiled after this one
};

class Schedule {
 public:
  // A schedule of `func`, which the trace refers to as function "main".
  static Schedule Create(const PrimFunc& func, int64_t seed);

  // A copy with the same IR, symbol table and trace, and a forked random generator.
  Schedule Copy();

  const PrimFunc& func() const { return func_; }
  IRModule mod() const { return IRModule::FromFunction(func_); }
  const Trace& trace() const { return trace_; }
  Random* rng() { return &rng_; }

  // ---- Resolving random variables ----------------------------------------------------
  absl::StatusOr<Block> Get(BlockRV rv) const;
  // The BlockRealize statement of the block and its ancestors.
  absl::StatusOr<StmtPath> GetPath(BlockRV rv) const;
  absl::StatusOr<StmtPath> GetPath(LoopRV rv) const;
  absl::StatusOr<const ForNode*> Get(LoopRV rv) const;
  absl::StatusOr<int64_t> Get(ExprRV rv) const;
  absl::StatusOr<std::string> BlockName(BlockRV rv) const;
  // "l3 (loop i_0)" / "b2 (block C)", for error messages.
  std::string Describe(BlockRV rv) const;
  std::string Describe(LoopRV rv) const;
  bool IsRootMarker(LoopRV rv) const;
  bool IsInlineMarker(LoopRV rv) const;

  // ---- Lookup (pure) -------------------------------------------------------------------
  absl::StatusOr<BlockRV> GetBlock(const std::string& name, const std::string& func_name = "main");
  absl::StatusOr<std::vector<LoopRV>> GetLoops(BlockRV block);
  absl::StatusOr<std::vector<BlockRV>> GetChildBlocks(BlockRV block);
  absl::StatusOr<std::vector<BlockRV>> GetChildBlocks(LoopRV loop);
  // Blocks of the same scope that write a buffer `block` reads / read a buffer it writes.
  absl::StatusOr<std::vector<BlockRV>> GetProducers(BlockRV block);
  absl::StatusOr<std::vector<BlockRV>> GetConsumers(BlockRV block);

  // ---- Sampling ------------------------------------------------------------------------
  // `decision` (None, or the index to reuse) is validated against the candidates.
  absl::StatusOr<ExprRV> SampleCategorical(const std::vector<int64_t>& candidates,
                                           const std::vector<double>& probs,
                                           const InstValue& decision = InstValue());
  // n factors whose product is the loop's constant extent, the innermost at most
  // `max_innermost_factor` (-1: no limit). A stale decision is repaired into a perfect tiling.
  absl::StatusOr<std::vector<ExprRV>> SamplePerfectTile(LoopRV loop, int n,
                                                        int64_t max_innermost_factor,
                                                        const InstValue& decision = InstValue());
  // As above, under product limits (see TileProductLimit): a fresh draw is uniform over the
  // perfect tilings that meet every limit (kInvalidArgument naming the loop when none does).
  // A recorded decision is only repaired, as above: one a mutator changed may break a limit,
  // and whatever checks the bound (e.g. VerifyGPUCode) rejects it there. The limits are
  // recorded with the instruction. Without limits this is the plain SamplePerfectTile.
  absl::StatusOr<std::vector<ExprRV>> SamplePerfectTile(
      LoopRV loop, int n, int64_t max_innermost_factor,
      const std::vector<TileProductLimit>& limits, const InstValue& decision = InstValue());

  // n factors whose product covers the loop's constant extent E without dividing it
  // necessarily (schedule/padded_tile.h): a fresh draw picks a padding quantum q, 1 with
  // probability 1/2, else uniformly among the powers of two up to max_innermost_factor (-1: 64)
  // that pad E by at most E/8, then a uniform perfect tiling of E rounded up to q (innermost
  // at most max_innermost_factor).
  // The outer factor is always ceil(E / product of the others), also for a recorded decision,
  // which is otherwise kept as it is (non-positive factors become 1). Split with these factors
  // guards the tail with a predicate. Records the extent as an attr for MutateTileSize.
  absl::StatusOr<std::vector<ExprRV>> SamplePaddedTile(LoopRV loop, int n,
                                                       int64_t max_innermost_factor,
                                                       const InstValue& decision = InstValue());

  // ---- Loop kinds and annotations ------------------------------------------------------
  absl::Status Parallel(LoopRV loop);
  absl::Status Vectorize(LoopRV loop);
  absl::Status Unroll(LoopRV loop);
  // thread_axis: blockIdx.{x,y,z}, threadIdx.{x,y,z}, vthread.{x,y,z}.
  absl::Status Bind(LoopRV loop, const std::string& thread_axis);
  // value: an int, float or string constant, or an ExprRV.
  absl::Status Annotate(BlockRV block, const std::string& key, const InstValue& value);
  absl::Status Annotate(LoopRV loop, const std::string& key, const InstValue& value);
  absl::Status Unannotate(BlockRV block, const std::string& key);
  absl::Status Unannotate(LoopRV loop, const std::string& key);

  // ---- Loop transformations (primitive/loop_transform.cc) ---------------------------
  // Splits `loop` into factors.size() loops, outermost first. Each factor is an int, an ExprRV
  // or None (at most one None: inferred as ceil(extent / product of the others)). A product
  // larger than the extent adds a predicate to the blocks under the loop; a smaller one is an
  // error. With preserve_unit_iters false, unit loops do not appear in block bindings.
  absl::StatusOr<std::vector<LoopRV>> Split(LoopRV loop, const std::vector<InstValue>& factors,
                                            bool preserve_unit_iters = true);
  // Fuses a chain of directly nested loops (outermost first) into one.
  absl::StatusOr<LoopRV> Fuse(const std::vector<LoopRV>& loops, bool preserve_unit_iters = true);
  // Puts the given loops, which lie on one single-branch chain, in the given order; loops of
  // the chain that are not named keep their positions.
  absl::Status Reorder(const std::vector<LoopRV>& ordered_loops);
  // A new loop of extent 1 directly above the block / the loop.
  absl::StatusOr<LoopRV> AddUnitLoop(BlockRV block);
  absl::StatusOr<LoopRV> AddUnitLoop(LoopRV loop);

  // ---- Compute location (primitive/compute_at.cc, compute_inline.cc, sample_compute_location.cc)
  // Moves a producer block under `loop` (of its consumers), shrinking its loops to the region
  // its consumers need there. A root marker is a no-op; an inline marker inlines the block.
  absl::Status ComputeAt(BlockRV block, LoopRV loop, bool preserve_unit_loops = false,
                         int index = -1);
  // Moves a consumer block under `loop` (of its producers).
  absl::Status ReverseComputeAt(BlockRV block, LoopRV loop, bool preserve_unit_loops = false,
                                int index = -1);
  // Inlines an elementwise producer into its consumers / a consumer into its producer. A
  // consumer over a prefix of the producer's domain (PadEinsum's crop of a padded result) leaves
  // the producer that domain, its bindings kept in it by a predicate.
  absl::Status ComputeInline(BlockRV block);
  absl::Status ReverseComputeInline(BlockRV block);
  // Samples where `block` may be computed: -2 inline, -1 root, i >= 0 the i-th loop around its
  // first consumer (see the reference); returns a marker LoopRV or that loop.
  absl::StatusOr<LoopRV> SampleComputeLocation(BlockRV block,
                                               const InstValue& decision = InstValue());
  // The decisions SampleComputeLocation(block) would choose among now, ascending: -2 when the
  // block can be inlined, -1 (root), then the legal loop indices (for MutateComputeLocation).
  absl::StatusOr<std::vector<int64_t>> ComputeLocationCandidates(BlockRV block) const;

  // ---- Caching and buffers (primitive/cache.cc and the primitive files it lists) -------
  // A block copying read buffer `read_buffer_index` of `block` into a new buffer of `scope`,
  // read by `block` (and by `consumer_blocks` if given) instead.
  absl::StatusOr<BlockRV> CacheRead(BlockRV block, int read_buffer_index,
                                    const std::string& scope,
                                    const std::vector<BlockRV>& consumer_blocks = {});
  // `block` writes into a new buffer of `scope`, copied to the original by the returned block.
  absl::StatusOr<BlockRV> CacheWrite(BlockRV block, int write_buffer_index,
                                     const std::string& scope,
                                     const std::vector<BlockRV>& consumer_blocks = {});
  // A copy block so that `block` accesses buffer `buffer_index` (of its reads if
  // buffer_index_type is 0, writes if 1) indexed exactly by its iteration variables.
  absl::StatusOr<BlockRV> ReIndex(BlockRV block, int buffer_index, int buffer_index_type);
  // Changes the storage scope of write buffer `buffer_index` of `block` (an intermediate).
  absl::Status SetScope(BlockRV block, int buffer_index, const std::string& scope);
  // Pads the stride of dimension `axis` of write buffer `buffer_index` so that
  // stride % factor == offset (avoids shared-memory bank conflicts).
  absl::Status StorageAlign(BlockRV block, int buffer_index, int axis, int factor, int offset);

  // ---- Reductions (primitive/reduction.cc) ----------------------------------------------
  // Splits the init of a reduction block into its own block placed before `loop`.
  absl::StatusOr<BlockRV> DecomposeReduction(BlockRV block, LoopRV loop);
  // Factorizes the reduction over `loop` into a partial-result block (returned) and a final
  // reduction; factor_axis is where the new dimension sits in the partial buffer.
  absl::StatusOr<BlockRV> RFactor(LoopRV loop, int factor_axis);

  // ---- Layout and padding (primitive/layout.cc) -------------------------------------------
  absl::Status TransformLayout(BlockRV block, int buffer_index, int buffer_index_type,
                               const IndexMap& index_map);
  absl::Status TransformBlockLayout(BlockRV block, const IndexMap& index_map);
  // Pads the iteration space of an einsum-like block to multiples of `padding`.
  absl::Status PadEinsum(BlockRV block, const std::vector<int64_t>& padding);

  // ---- int8 products (primitive/shift_int8_product.cc) ------------------------------------
  // Rewrites `block`, C = C + int32(A) * int32(B) over int8 A and B (B its read `summed_read`),
  // whose init stores 0, into C = C + (int32(A) + 128) * int32(B) with init C = S, and returns
  // the new block before it that computes S, -128 times the sum of B over the reduction (one
  // value per spatial index of B): the unsigned-by-signed product x86's dot products multiply.
  absl::StatusOr<BlockRV> ShiftInt8Product(BlockRV block, int summed_read);

  // ---- Blockize and tensorize (primitive/blockize_tensorize.cc) --------------------------
  // Turns the subtree under `loop` into an outer block whose body is the inner block.
  absl::StatusOr<BlockRV> Blockize(LoopRV loop, bool preserve_unit_iters = true);
  // Replaces the computation under `loop` / in `block` by the implementation of the tensor
  // intrinsic `intrin_name` after checking it matches the intrinsic's description.
  absl::Status Tensorize(LoopRV loop, const std::string& intrin_name,
                         bool preserve_unit_iters = true);
  absl::Status Tensorize(BlockRV block, const std::string& intrin_name,
                         bool preserve_unit_iters = true);

  // Marks the start of the instructions postprocessors add.
  void EnterPostproc();

  // ---- For primitives (schedule/primitive/*) -------------------------------------------
  // Replaces the function after a successful primitive.
  void SetFunc(PrimFunc func) { func_ = std::move(func); }
  BlockRV NewBlockRV(const std::string& block_name);
  LoopRV NewLoopRV(const Var& loop_var);
  ExprRV NewExprRV(int64_t value);
  void Record(const InstructionKind& kind, std::vector<InstValue> inputs,
              std::vector<InstValue> attrs, std::vector<InstValue> outputs,
              InstValue decision = InstValue());
  // The loop variable behind a LoopRV (error for markers).
  absl::StatusOr<Var> LoopVar(LoopRV rv) const;

 private:
  struct LoopEntry {
    enum class Type { kLoop, kRootMarker, kInlineMarker } type = Type::kLoop;
    Var loop_var;
  };
  friend absl::StatusOr<LoopRV> NewMarkerLoopRV(Schedule* sch, bool inline_marker);

  Schedule(PrimFunc func, int64_t seed) : func_(std::move(func)), rng_(seed) {}
  absl::Status SetLoopKind(LoopRV loop, ForKind kind, const std::string& thread_tag,
                           const InstructionKind& inst_kind, const char* primitive);
  absl::Status AnnotateImpl(const InstValue& target, const std::string& key,
                            const InstValue& value, bool remove);

  PrimFunc func_;
  Random rng_;
  Trace trace_;
  int64_t next_rv_id_ = 0;
  std::map<int64_t, std::string> blocks_;
  std::map<int64_t, LoopEntry> loops_;
  std::map<int64_t, int64_t> exprs_;
};

// A LoopRV standing for "root" (inline_marker false) or "inline", as SampleComputeLocation
// returns for decisions -1 / -2.
absl::StatusOr<LoopRV> NewMarkerLoopRV(Schedule* sch, bool inline_marker);

}  // namespace tessera

#endif  // TESSERA_SCHEDULE_SCHEDULE_H_
