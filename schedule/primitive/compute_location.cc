// Compute location: ComputeAt, ReverseComputeAt, ComputeInline, ReverseComputeInline and
// SampleComputeLocation, after TVM's schedule/primitive/compute_at.cc and compute_inline.cc.
//
// compute_at moves a producer under a loop of its consumers. The region the consumers read under
// the loop (their reads relaxed over the loops inside it, and over the thread-bound loops whose
// threads share the buffer when it is in shared or warp memory) is solved for the producer's
// iteration variables through its write indices, and new loops `ax<i>` cover that domain with
// bindings `region_min + ax<i>`; a predicate keeps the bindings inside the original domain where
// the region is not provably within it. Reduction loops directly around the producer that only
// drive its reduction variables are kept intact (same loop variables, kinds and annotations).
// reverse_compute_at is the mirror: a consumer is moved under a loop of its producers and covers
// what they write there. Both check that the moved block jumps over no block it conflicts with.
#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/arith/int_set.h"
#include "ir/arith/iter_map.h"
#include "ir/arith/linear.h"
#include "ir/functor.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

using primitive::WithPrimitive;

// Defined with their replay functions at the end of the file.
extern const InstructionKind kComputeAt;
extern const InstructionKind kReverseComputeAt;
extern const InstructionKind kComputeInline;
extern const InstructionKind kReverseComputeInline;
extern const InstructionKind kSampleComputeLocation;

absl::Status Invalid(const char* primitive, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(primitive, ": ", message));
}

const Block& BlockOf(const Stmt& realize) { return realize.as<BlockRealizeNode>()->block; }

bool Accesses(const std::vector<BufferRegion>& regions, const Buffer& buffer) {
  for (const BufferRegion& r : regions) {
    if (r.buffer.same_as(buffer)) return true;
  }
  return false;
}

// The first buffer of `a` that `b` also names, or an undefined buffer.
Buffer SharedBuffer(const std::vector<BufferRegion>& a, const std::vector<BufferRegion>& b) {
  for (const BufferRegion& x : a) {
    if (Accesses(b, x.buffer)) return x.buffer;
  }
  return Buffer();
}

bool Contains(const StmtPath& path, const Stmt& stmt) {
  for (const Stmt& s : path) {
    if (s.same_as(stmt)) return true;
  }
  return false;
}

bool HasReduction(const Block& block) {
  for (const IterVar& iv : block->iter_vars) {
    if (iv.kind == IterKind::kReduction) return true;
  }
  return false;
}

bool UsesAnyOf(const Expr& e, const std::set<const VarNode*>& vars) {
  return UsesVar(e, [&](const VarNode* v) { return vars.count(v) != 0; });
}

void SplitConjuncts(const Expr& e, std::vector<Expr>* out) {
  const auto* op = e.as<BinaryNode>();
  if (op != nullptr && op->op == BinaryOp::kAnd) {
    SplitConjuncts(op->a, out);
    SplitConjuncts(op->b, out);
  } else if (!IsConstInt(e, 1)) {
    out->push_back(e);
  }
}

// The statements of a loop body, one per element of its sequence.
std::vector<Stmt> Subtrees(const Stmt& body) {
  if (const auto* seq = body.as<SeqStmtNode>()) return seq->seq;
  return {body};
}

// The block realizes of `subtree` that are direct children of the scope (`subtree` itself if
// it is one).
std::vector<Stmt> BlocksIn(const Stmt& subtree) {
  if (subtree.kind() == StmtKind::kBlockRealize) return {subtree};
  return ChildBlockRealizes(subtree);
}

// Removes the block realize at the end of `path` together with the loops that hold nothing else.
absl::StatusOr<PrimFunc> RemoveLeaf(const char* primitive, const PrimFunc& func,
                                    const StmtPath& path) {
  size_t i = path.size() - 1;
  while (i > 0 && path[i - 1].kind() == StmtKind::kFor) --i;
  if (i == 0 || path[i - 1].kind() != StmtKind::kSeq) {
    return Invalid(primitive, absl::StrCat("block ", BlockOf(path.back())->name,
                                           " is the only statement of its scope"));
  }
  return ReplaceStmt(func, path[i], Stmt());
}

// Whether `buffer` is allocated by the scope block (so not an output of the scope).
bool AllocatedIn(const Block& scope, const Buffer& buffer) {
  for (const Buffer& b : scope->alloc_buffers) {
    if (b.same_as(buffer)) return true;
  }
  return false;
}

// ---- compute_at / reverse_compute_at ---------------------------------------------------

struct VarDomain {
  Expr lo;  // inclusive, undefined: no constraint
  Expr hi;  // inclusive
};

// Solves `indices` (one per buffer dimension, each a single point in the block's iteration
// variables) ∈ `region` for the iteration variables, intersecting into `doms`.
absl::Status SolveRegion(const char* primitive, const Block& block, const BufferRegion& provided,
                         const std::vector<Range>& needed, arith::Analyzer* analyzer,
                         std::vector<VarDomain>* doms) {
  std::vector<Var> vars;
  for (const IterVar& iv : block->iter_vars) vars.push_back(iv.var);
  for (size_t d = 0; d < provided.region.size(); ++d) {
    const Range& r = provided.region[d];
    const std::string where =
        absl::StrCat("dimension ", d, " of ", provided.buffer.name(), " in block ", block->name);
    if (!IsConstInt(analyzer->Simplify(r.extent), 1)) {
      return Invalid(primitive, absl::StrCat(where, " is accessed as a range, not a point"));
    }
    std::optional<arith::LinearEquation> eq = arith::DetectLinearEquation(r.min, vars, analyzer);
    if (!eq)
      return Invalid(primitive, absl::StrCat(where, " is not affine in its iteration variables"));
    int used = -1;
    for (size_t i = 0; i < vars.size(); ++i) {
      if (IsConstInt(eq->coeffs[i], 0)) continue;
      if (used != -1) {
        return Invalid(primitive, absl::StrCat(where, " uses more than one iteration variable"));
      }
      used = static_cast<int>(i);
    }
    if (used == -1) continue;
    const int64_t* a = AsConstInt(eq->coeffs[used]);
    if (a == nullptr || *a <= 0) {
      return Invalid(primitive, absl::StrCat(where, " does not grow with its iteration variable"));
    }
    Expr lo = needed[d].min - eq->base;
    Expr hi = needed[d].min + needed[d].extent - Expr(1) - eq->base;
    if (*a != 1) {
      lo = FloorDiv(lo + Expr(*a - 1), Expr(*a));
      hi = FloorDiv(hi, Expr(*a));
    }
    VarDomain& dom = (*doms)[used];
    dom.lo = analyzer->Simplify(dom.lo.defined() ? Max(dom.lo, lo) : lo);
    dom.hi = analyzer->Simplify(dom.hi.defined() ? Min(dom.hi, hi) : hi);
  }
  return absl::OkStatus();
}

// The innermost loops of the block (a single-branch chain) that drive only its reduction
// variables; they are kept as they are.
std::vector<Stmt> KeptReductionLoops(const StmtPath& block_path) {
  const auto* realize = block_path.back().as<BlockRealizeNode>();
  const Block& block = realize->block;
  std::vector<Stmt> loops = LoopsOnPath(block_path);
  size_t begin = loops.size();
  while (begin > 0) {
    const auto* op = loops[begin - 1].as<ForNode>();
    const Stmt& inner = begin < loops.size() ? loops[begin] : block_path.back();
    if (!op->body.same_as(inner)) break;
    bool only_reduction = true, used = false;
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      if (!UsesAnyOf(realize->iter_values[i], {op->loop_var.get()})) continue;
      used = true;
      if (block->iter_vars[i].kind != IterKind::kReduction) only_reduction = false;
    }
    if (!used || !only_reduction) break;
    --begin;
  }
  // Every reduction variable bound by a kept loop must be bound by kept loops only.
  while (begin < loops.size()) {
    std::set<const VarNode*> kept, outer;
    for (size_t j = 0; j < loops.size(); ++j) {
      (j >= begin ? kept : outer).insert(loops[j].as<ForNode>()->loop_var.get());
    }
    bool closed = true;
    for (const Expr& v : realize->iter_values) {
      if (UsesAnyOf(v, kept) && UsesAnyOf(v, outer)) closed = false;
    }
    if (closed) break;
    ++begin;
  }
  return std::vector<Stmt>(loops.begin() + static_cast<long>(begin), loops.end());
}

// Checks that moving `self` past `jumped` keeps every access order that matters.
absl::Status CheckJumped(const char* primitive, const Block& self, const std::vector<Stmt>& jumped,
                         bool reverse) {
  for (const Stmt& realize : jumped) {
    const Block& other = BlockOf(realize);
    Buffer conflict = SharedBuffer(other->writes, self->reads);
    if (!conflict.defined()) conflict = SharedBuffer(other->writes, self->writes);
    if (!conflict.defined() && reverse) conflict = SharedBuffer(other->reads, self->writes);
    if (conflict.defined()) {
      return Invalid(primitive,
                     absl::StrCat("block ", self->name, " would move past block ", other->name,
                                  ", which also accesses buffer ", conflict.name()));
    }
  }
  return absl::OkStatus();
}

// One compute_at / reverse_compute_at request, resolved.
struct MoveRequest {
  const char* primitive;
  bool reverse;
  StmtPath block_path;
  StmtPath loop_path;
  const BlockRealizeNode* realize;
  Block block;
  const ForNode* loop;
  std::string block_name;
  std::string loop_name;
  Stmt scope_realize;

  bool IsSelf(const Stmt& s) const { return s.same_as(block_path.back()); }
  // Writes what the block reads / reads what the block writes.
  bool IsProducer(const Stmt& s) const {
    return !IsSelf(s) && SharedBuffer(BlockOf(s)->writes, block->reads).defined();
  }
  bool IsConsumer(const Stmt& s) const {
    return !IsSelf(s) && SharedBuffer(block->writes, BlockOf(s)->reads).defined();
  }
  // The blocks that the loop must hold: every consumer (compute_at) / producer (reverse).
  bool MustBeUnderLoop(const Stmt& s) const { return reverse ? IsProducer(s) : IsConsumer(s); }
  // The loops around the insertion point (those around the loop, and the loop).
  std::vector<Stmt> OuterLoops() const {
    std::vector<Stmt> loops = LoopsOnPath(loop_path);
    loops.push_back(loop_path.back());
    return loops;
  }
};

// The block itself may move: not the root, a sibling scope of the loop, complete or reduction,
// not writing outputs (compute_at), with affine bindings.
absl::Status CheckMovable(const MoveRequest& r) {
  const char* p = r.primitive;
  if (r.block_path.size() == 1) return Invalid(p, "cannot move the root block");
  if (Contains(r.loop_path, r.block_path.back())) {
    return Invalid(p, absl::StrCat("loop ", r.loop_name, " is inside block ", r.block_name));
  }
  if (Contains(r.block_path, r.loop_path.back())) {
    return Invalid(p, absl::StrCat("loop ", r.loop_name, " is an ancestor of block ", r.block_name,
                                   " itself"));
  }
  if (!EnclosingBlockRealize(r.loop_path).same_as(r.scope_realize)) {
    return Invalid(
        p, absl::StrCat("loop ", r.loop_name, " is not in the scope of block ", r.block_name));
  }
  if (!HasReduction(r.block) && r.block->init.defined()) {
    return Invalid(p, absl::StrCat("block ", r.block_name, " has an init but no reduction"));
  }
  for (const BufferRegion& w : r.block->writes) {
    if (!r.reverse && !AllocatedIn(BlockOf(r.scope_realize), w.buffer)) {
      return Invalid(p, absl::StrCat("block ", r.block_name, " writes buffer ", w.buffer.name(),
                                     ", an output of its scope"));
    }
  }
  std::vector<Var> loop_vars;
  arith::VarRangeMap ranges;
  for (const Stmt& l : LoopsOnPath(r.block_path)) {
    const auto* op = l.as<ForNode>();
    loop_vars.push_back(op->loop_var);
    ranges[op->loop_var] = Range{Expr(0), op->extent};
  }
  for (const Expr& v : r.realize->iter_values) {
    if (!arith::IsAffine(v, loop_vars) &&
        !arith::DetectIterMap({v}, ranges, Expr(), arith::IterMapLevel::kSurjective).ok()) {
      return Invalid(p, absl::StrCat("the bindings of block ", r.block_name, " are not affine"));
    }
  }
  return absl::OkStatus();
}

// Checks the order of the scope's blocks (the loop on the right side of the block, every
// consumer / producer under it, nothing conflicting jumped over, no reduction of a producer
// carried by the loop) and returns the insertion position in the loop body (TVM's
// FindInsertionPoint: -1 before the first consumer, -2 after the last producer).
absl::StatusOr<int> FindInsertionPoint(const MoveRequest& r, int index) {
  const char* p = r.primitive;
  const std::vector<Stmt> children = ChildBlockRealizes(r.scope_realize);
  const std::vector<Stmt> in_loop = ChildBlockRealizes(r.loop_path.back());
  std::set<const StmtNode*> in_loop_set;
  for (const Stmt& s : in_loop) in_loop_set.insert(s.get());
  int self_pos = -1, loop_first = -1, loop_last = -1;
  for (int i = 0; i < static_cast<int>(children.size()); ++i) {
    if (r.IsSelf(children[i])) self_pos = i;
    if (in_loop_set.count(children[i].get())) {
      if (loop_first == -1) loop_first = i;
      loop_last = i;
    }
  }
  if (loop_first == -1) return Invalid(p, absl::StrCat("loop ", r.loop_name, " holds no block"));
  if (!r.reverse && loop_first < self_pos) {
    return Invalid(p, absl::StrCat("loop ", r.loop_name, " comes before block ", r.block_name,
                                   "; compute_at moves a producer to a later consumer"));
  }
  if (r.reverse && loop_last > self_pos) {
    return Invalid(p, absl::StrCat("loop ", r.loop_name, " comes after block ", r.block_name,
                                   "; reverse_compute_at moves a consumer to an earlier producer"));
  }
  std::vector<Stmt> jumped;
  for (int i = 0; i < static_cast<int>(children.size()); ++i) {
    const Stmt& s = children[i];
    if (r.IsSelf(s)) continue;
    Buffer both = SharedBuffer(BlockOf(s)->writes, r.block->writes);
    if (both.defined()) {
      return Invalid(p, absl::StrCat("block ", BlockOf(s)->name, " also writes buffer ",
                                     both.name(), " of block ", r.block_name));
    }
    if (r.MustBeUnderLoop(s) && !in_loop_set.count(s.get())) {
      return Invalid(
          p, absl::StrCat(r.reverse ? "producer " : "consumer ", BlockOf(s)->name, " of block ",
                          r.block_name, " is not under loop ", r.loop_name));
    }
    // Jumped over: blocks between the block and the loop, and (across iterations) every block
    // in the loop that the region analysis does not account for.
    const bool between =
        r.reverse ? (i > loop_last && i < self_pos) : (i > self_pos && i < loop_first);
    if (between || (in_loop_set.count(s.get()) && !r.MustBeUnderLoop(s))) jumped.push_back(s);
  }
  TESSERA_RETURN_IF_ERROR(CheckJumped(p, r.block, jumped, r.reverse));
  if (r.reverse) {
    // A producer's values are final within one iteration of the loop only if the loop and
    // those around it carry none of its reduction.
    std::set<const VarNode*> outer_vars;
    for (const Stmt& l : r.OuterLoops()) outer_vars.insert(l.as<ForNode>()->loop_var.get());
    for (const Stmt& s : in_loop) {
      if (!r.IsProducer(s)) continue;
      const auto* pr = s.as<BlockRealizeNode>();
      for (size_t i = 0; i < pr->iter_values.size(); ++i) {
        if (pr->block->iter_vars[i].kind == IterKind::kReduction &&
            UsesAnyOf(pr->iter_values[i], outer_vars)) {
          return Invalid(p, absl::StrCat("loop ", r.loop_name,
                                         " (or one around it) carries the "
                                         "reduction of producer ",
                                         pr->block->name, " of block ", r.block_name));
        }
      }
    }
  }
  const std::vector<Stmt> subtrees = Subtrees(r.loop->body);
  const int n = static_cast<int>(subtrees.size());
  int last_producer = -1, first_consumer = n;
  for (int i = 0; i < n; ++i) {
    for (const Stmt& s : BlocksIn(subtrees[i])) {
      if (r.IsProducer(s)) last_producer = i;
      if (r.IsConsumer(s) && first_consumer == n) first_consumer = i;
    }
  }
  if (last_producer >= first_consumer) {
    return Invalid(p, absl::StrCat("producers and consumers of block ", r.block_name,
                                   " interleave under loop ", r.loop_name));
  }
  if (index == -1) return first_consumer;
  if (index == -2) return last_producer + 1;
  if (index >= last_producer + 1 && index <= first_consumer) return index;
  return Invalid(
      p, absl::StrCat("index ", index, " under loop ", r.loop_name, " is not -1, -2 or in [",
                      last_producer + 1, ", ", first_consumer, "]"));
}

// The thread-bound loops around the insertion point (the loop included) whose threads all see
// one copy of a buffer of `scope`, as TVM's CanRelaxStorageUnderThread: threadIdx and vthread
// loops for shared memory, threadIdx.x for warp memory, none otherwise. A block computed into
// shared memory under threadIdx loops covers what every thread of the thread block needs
// there, so its copy loops can then be bound to threads (cooperative fetch).
arith::VarRangeMap ThreadRelaxedLoops(const MoveRequest& r, const std::string& scope) {
  const bool shared = scope == "shared" || scope.rfind("shared.", 0) == 0;
  const bool warp = scope == "warp";
  arith::VarRangeMap relax;
  if (!shared && !warp) return relax;
  for (const Stmt& l : r.OuterLoops()) {
    const auto* op = l.as<ForNode>();
    if (op->for_kind != ForKind::kThreadBinding) continue;
    const std::string& tag = op->thread_tag;
    const bool relaxed = warp ? tag == "threadIdx.x"
                              : tag.rfind("threadIdx.", 0) == 0 || tag.rfind("vthread.", 0) == 0;
    if (relaxed) relax[op->loop_var] = Range{Expr(0), op->extent};
  }
  return relax;
}

// The domain of each iteration variable that covers the region needed (compute_at: read by the
// consumers) or provided (reverse: written by the producers) in one iteration of the loop,
// over all threads that share the buffer (ThreadRelaxedLoops).
absl::StatusOr<std::vector<VarDomain>> NeededDomains(const MoveRequest& r,
                                                     arith::Analyzer* analyzer) {
  const std::vector<BufferRegion>& provided = r.reverse ? r.block->reads : r.block->writes;
  std::vector<VarDomain> doms(r.block->iter_vars.size());
  for (const BufferRegion& p : provided) {
    arith::BufferAccessRegions access = arith::DetectBufferAccessRegions(
        r.loop->body, ThreadRelaxedLoops(r, p.buffer.scope()), analyzer, /*exclude=*/{},
        /*only=*/{p.buffer});
    const std::vector<BufferRegion>& needed = r.reverse ? access.writes : access.reads;
    for (const BufferRegion& n : needed) {
      if (!n.buffer.same_as(p.buffer)) continue;
      TESSERA_RETURN_IF_ERROR(SolveRegion(r.primitive, r.block, p, n.region, analyzer, &doms));
    }
  }
  return doms;
}

// reverse_compute_at only runs the consumer on the region its producers write under the loop;
// over all iterations of the loop (and the loops around it) that region must still cover the
// consumer's whole domain, or some of its outputs would never be computed (e.g. the border of
// a padding block whose producer only writes the interior).
absl::Status CheckReverseCoversDomain(const MoveRequest& r, const std::vector<VarDomain>& doms,
                                      arith::Analyzer* analyzer) {
  arith::VarRangeMap loops;
  for (const Stmt& l : r.OuterLoops()) {
    const auto* op = l.as<ForNode>();
    loops[op->loop_var] = Range{Expr(0), op->extent};
  }
  for (size_t i = 0; i < r.block->iter_vars.size(); ++i) {
    const IterVar& iv = r.block->iter_vars[i];
    if (iv.kind != IterKind::kSpatial || !doms[i].lo.defined()) continue;
    arith::IntSet lo = arith::EvalSet(doms[i].lo, loops, analyzer);
    arith::IntSet hi = arith::EvalSet(doms[i].hi, loops, analyzer);
    const Expr dmax = analyzer->Simplify(iv.dom.min + iv.dom.extent - Expr(1));
    if (!lo.HasLowerBound() || !hi.HasUpperBound() ||
        !analyzer->CanProveLessEqual(lo.min(), iv.dom.min) ||
        !analyzer->CanProveGreaterEqual(hi.max(), dmax)) {
      return Invalid(r.primitive,
                     absl::StrCat("block ", r.block_name, " would not cover its whole domain of ",
                                  iv.var.name(), " under loop ", r.loop_name,
                                  ": its producers write only part of what it computes"));
    }
  }
  return absl::OkStatus();
}

// The block under new loops `ax<i>` covering `doms` (within the original domains), inside the
// kept reduction loops.
absl::StatusOr<Stmt> RegenerateLoops(const MoveRequest& r, const std::vector<VarDomain>& doms,
                                     bool preserve_unit_loops, arith::Analyzer* analyzer) {
  const char* p = r.primitive;
  const std::vector<Stmt> kept = KeptReductionLoops(r.block_path);
  std::set<const VarNode*> replaced;  // the block's loops that go away
  for (const Stmt& l : LoopsOnPath(r.block_path)) replaced.insert(l.as<ForNode>()->loop_var.get());
  for (const Stmt& l : kept) replaced.erase(l.as<ForNode>()->loop_var.get());

  std::vector<Var> new_vars;
  std::vector<Expr> new_extents, values, predicates;
  for (size_t i = 0; i < r.block->iter_vars.size(); ++i) {
    const IterVar& iv = r.block->iter_vars[i];
    const Expr& old_value = r.realize->iter_values[i];
    const Expr dmin = iv.dom.min;
    const Expr dmax = analyzer->Simplify(iv.dom.min + iv.dom.extent - Expr(1));
    VarDomain dom = doms[i];
    if (iv.kind == IterKind::kReduction && dom.lo.defined()) {
      if (!analyzer->CanProveLessEqual(dom.lo, dmin) ||
          !analyzer->CanProveGreaterEqual(dom.hi, dmax)) {
        return Invalid(p, absl::StrCat("moving block ", r.block_name, " under loop ", r.loop_name,
                                       " would split its reduction over ", iv.var.name(),
                                       " across iterations"));
      }
      dom = VarDomain{};
    }
    if (iv.kind == IterKind::kReduction && !UsesAnyOf(old_value, replaced)) {
      values.push_back(old_value);  // bound by kept loops (or a constant)
      continue;
    }
    Expr lo = dmin, hi = dmax;
    bool check_lo = false, check_hi = false;
    if (dom.lo.defined()) {
      if (!analyzer->CanProveLessEqual(dom.lo, dmin)) {
        lo = dom.lo;
        check_lo = !analyzer->CanProveGreaterEqual(lo, dmin);
      }
      if (!analyzer->CanProveGreaterEqual(dom.hi, dmax)) {
        hi = dom.hi;
        check_hi = !analyzer->CanProveLessEqual(hi, dmax);
      }
    }
    Expr extent = analyzer->Simplify(hi - lo + Expr(1));
    if (AsConstInt(extent) == nullptr) {
      // A symbolic extent: cover its largest value; the predicate keeps the domain.
      arith::ConstIntBound bound = analyzer->ConstIntBound(extent);
      if (bound.max == arith::ConstIntBound::kPosInf) {
        return Invalid(p, absl::StrCat("cannot bound the extent of ", iv.var.name(), " of block ",
                                       r.block_name, " under loop ", r.loop_name));
      }
      extent = Expr(bound.max);
      check_hi = check_hi || !analyzer->CanProveLessEqual(lo + extent - Expr(1), dmax);
    }
    if (*AsConstInt(extent) <= 0) {
      return Invalid(p, absl::StrCat("block ", r.block_name, " has nothing to compute under loop ",
                                     r.loop_name));
    }
    Expr value = lo;
    if (preserve_unit_loops || !IsConstInt(extent, 1)) {
      Var ax(absl::StrCat("ax", new_vars.size()));
      new_vars.push_back(ax);
      new_extents.push_back(extent);
      analyzer->Bind(ax, Range{Expr(0), extent});
      value = lo + ax;
    }
    value = analyzer->Simplify(value);
    values.push_back(value);
    if (check_lo && !analyzer->CanProveGreaterEqual(value, dmin)) {
      predicates.push_back(GE(value, dmin));
    }
    if (check_hi && !analyzer->CanProveLessEqual(value, dmax)) {
      predicates.push_back(LE(value, dmax));
    }
  }
  // Old conjuncts that only involve kept loops still hold; the others were domain bounds of the
  // replaced loops, re-derived above.
  std::vector<Expr> old_conjuncts;
  SplitConjuncts(r.realize->predicate, &old_conjuncts);
  for (const Expr& c : old_conjuncts) {
    if (!UsesAnyOf(c, replaced)) predicates.push_back(c);
  }
  Expr predicate = True();
  for (const Expr& c : predicates) predicate = IsConstInt(predicate, 1) ? c : And(predicate, c);

  Stmt subtree = BlockRealize(values, predicate, r.block);
  for (size_t i = kept.size(); i-- > 0;) {
    const auto* op = kept[i].as<ForNode>();
    subtree = For(op->loop_var, op->extent, op->for_kind, subtree, op->thread_tag, op->annotations);
  }
  for (size_t i = new_vars.size(); i-- > 0;) {
    subtree = For(new_vars[i], new_extents[i], ForKind::kSerial, subtree);
  }
  return primitive::SimplifyBindings(subtree, r.OuterLoops());
}

absl::StatusOr<PrimFunc> ComputeAtImpl(const PrimFunc& func, const std::string& block_name,
                                       const Var& loop_var, bool reverse, bool preserve_unit_loops,
                                       int index) {
  MoveRequest r;
  r.primitive = reverse ? "reverse_compute_at" : "compute_at";
  r.reverse = reverse;
  TESSERA_ASSIGN_OR_RETURN(r.block_path, FindBlockPath(func, block_name));
  TESSERA_ASSIGN_OR_RETURN(r.loop_path, FindLoopPath(func, loop_var));
  r.realize = r.block_path.back().as<BlockRealizeNode>();
  r.block = r.realize->block;
  r.loop = r.loop_path.back().as<ForNode>();
  r.block_name = block_name;
  r.loop_name = r.loop->loop_var.name();
  r.scope_realize = EnclosingBlockRealize(r.block_path);
  TESSERA_RETURN_IF_ERROR(CheckMovable(r));
  TESSERA_ASSIGN_OR_RETURN(int insert_pos, FindInsertionPoint(r, index));
  arith::Analyzer analyzer;
  primitive::BindLoopRanges(r.OuterLoops(), &analyzer);
  TESSERA_ASSIGN_OR_RETURN(std::vector<VarDomain> doms, NeededDomains(r, &analyzer));
  if (reverse) TESSERA_RETURN_IF_ERROR(CheckReverseCoversDomain(r, doms, &analyzer));
  TESSERA_ASSIGN_OR_RETURN(Stmt subtree, RegenerateLoops(r, doms, preserve_unit_loops, &analyzer));
  std::vector<Stmt> body = Subtrees(r.loop->body);
  body.insert(body.begin() + insert_pos, subtree);
  Stmt new_loop = For(r.loop->loop_var, r.loop->extent, r.loop->for_kind, SeqStmt(body),
                      r.loop->thread_tag, r.loop->annotations);
  PrimFunc inserted = ReplaceStmt(func, r.loop_path.back(), new_loop);
  return RemoveLeaf(r.primitive, inserted, r.block_path);
}

// ---- compute_inline / reverse_compute_inline -------------------------------------------

// The single BufferStore of an elementwise block: spatial iteration variables only, no init.
absl::StatusOr<const BufferStoreNode*> ElementwiseStore(const char* primitive, const Block& block) {
  if (HasReduction(block) || block->init.defined()) {
    return Invalid(primitive, absl::StrCat("block ", block->name, " is a reduction block"));
  }
  const auto* store = block->body.as<BufferStoreNode>();
  if (store == nullptr) {
    return Invalid(primitive, absl::StrCat("the body of block ", block->name,
                                           " is not a single buffer store"));
  }
  if (!block->alloc_buffers.empty()) {
    return Invalid(primitive, absl::StrCat("block ", block->name, " allocates buffers"));
  }
  return store;
}

// The iteration variables that `indices` are, each used once; false if they are not such.
bool DistinctIterVars(const Block& block, const std::vector<Expr>& indices,
                      std::vector<Var>* vars) {
  std::set<const VarNode*> seen;
  for (const Expr& e : indices) {
    const auto* v = e.as<VarNode>();
    bool is_iter = false;
    for (const IterVar& iv : block->iter_vars) is_iter = is_iter || iv.var.get() == v;
    if (v == nullptr || !is_iter || !seen.insert(v).second) return false;
    vars->push_back(Var(std::static_pointer_cast<const VarNode>(e.node_ptr())));
  }
  return true;
}

// Replaces the loads of `buffer` by `value` (its `vars` mapped to the load indices) and updates
// the reads of the blocks that changed.
class LoadInliner : public IRMutator {
 public:
  LoadInliner(Buffer buffer, std::vector<Var> vars, Expr value)
      : buffer_(std::move(buffer)), vars_(std::move(vars)), value_(std::move(value)) {}

 protected:
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    Expr visited = IRMutator::VisitExpr_(op, self);
    const auto* load = visited.as<BufferLoadNode>();
    if (load == nullptr || !load->buffer.same_as(buffer_)) return visited;
    VarMap vmap;
    for (size_t d = 0; d < vars_.size(); ++d) vmap[vars_[d]] = load->indices[d];
    return Substitute(value_, vmap);
  }
  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    Stmt visited = IRMutator::VisitStmt_(op, self);
    if (visited.same_as(self)) return self;
    auto node = Block(std::static_pointer_cast<const BlockNode>(visited.node_ptr())).CopyNode();
    node->reads = arith::DetectBlockAccessRegions(Block(node)).reads;
    return Block(std::move(node));
  }

 private:
  Buffer buffer_;
  std::vector<Var> vars_;
  Expr value_;
};

// Removes `buffer` from the alloc_buffers of the scope block.
PrimFunc RemoveAlloc(const PrimFunc& func, const Block& scope_block, const Buffer& buffer) {
  const StmtPath path = *FindBlockPath(func, scope_block->name);
  const Block& scope = BlockOf(path.back());
  auto node = scope.CopyNode();
  node->alloc_buffers.erase(std::remove_if(node->alloc_buffers.begin(), node->alloc_buffers.end(),
                                           [&](const Buffer& b) { return b.same_as(buffer); }),
                            node->alloc_buffers.end());
  return ReplaceStmt(func, scope, Block(std::move(node)));
}

absl::StatusOr<PrimFunc> ComputeInlineImpl(const PrimFunc& func, const std::string& block_name) {
  constexpr const char* kPrimitive = "compute_inline";
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, FindBlockPath(func, block_name));
  if (path.size() == 1) return Invalid(kPrimitive, "cannot inline the root block");
  const Block& block = BlockOf(path.back());
  TESSERA_ASSIGN_OR_RETURN(const BufferStoreNode* store, ElementwiseStore(kPrimitive, block));
  const Buffer& buffer = store->buffer;
  std::vector<Var> vars;
  if (!DistinctIterVars(block, store->indices, &vars)) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " stores to ", buffer.name(),
                                            " at indices that are not distinct iteration "
                                            "variables"));
  }
  std::set<const VarNode*> allowed;
  for (const Var& v : vars) allowed.insert(v.get());
  bool stray = false, self_read = false;
  PostOrderVisitExprs(store->value, [&](const Expr& e) {
    if (const auto* v = e.as<VarNode>()) stray = stray || !allowed.count(v);
    if (const auto* l = e.as<BufferLoadNode>()) self_read = self_read || l->buffer.same_as(buffer);
  });
  if (stray || self_read) {
    return Invalid(kPrimitive, absl::StrCat("the value block ", block_name, " stores ",
                                            stray ? "uses variables other than its store indices"
                                                  : "reads the buffer it writes"));
  }
  const Stmt scope_realize = EnclosingBlockRealize(path);
  const Block& scope = BlockOf(scope_realize);
  if (!AllocatedIn(scope, buffer)) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " writes buffer ", buffer.name(),
                                            ", an output of its scope"));
  }
  // Its inputs must not change before the consumers run: no later block writes them, and it
  // is the only writer of its buffer.
  bool after = false;
  for (const Stmt& s : ChildBlockRealizes(scope_realize)) {
    if (s.same_as(path.back())) {
      after = true;
      continue;
    }
    const Block& other = BlockOf(s);
    if (Accesses(other->writes, buffer)) {
      return Invalid(kPrimitive, absl::StrCat("block ", other->name, " also writes buffer ",
                                              buffer.name(), " of block ", block_name));
    }
    Buffer input = SharedBuffer(other->writes, block->reads);
    if (after && input.defined()) {
      return Invalid(kPrimitive,
                     absl::StrCat("block ", other->name, " overwrites buffer ", input.name(),
                                  " that block ", block_name, " reads before its consumers run"));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(PrimFunc removed, RemoveLeaf(kPrimitive, func, path));
  LoadInliner inliner(buffer, vars, store->value);
  const StmtPath scope_path = *FindBlockPath(removed, scope->name);
  const Block& new_scope = BlockOf(scope_path.back());
  auto node = new_scope.CopyNode();
  node->body = inliner.VisitStmt(new_scope->body);
  node->alloc_buffers.erase(std::remove_if(node->alloc_buffers.begin(), node->alloc_buffers.end(),
                                           [&](const Buffer& b) { return b.same_as(buffer); }),
                            node->alloc_buffers.end());
  return ReplaceStmt(removed, new_scope, Block(std::move(node)));
}

absl::StatusOr<PrimFunc> ReverseComputeInlineImpl(const PrimFunc& func,
                                                  const std::string& block_name) {
  constexpr const char* kPrimitive = "reverse_compute_inline";
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, FindBlockPath(func, block_name));
  if (path.size() == 1) return Invalid(kPrimitive, "cannot inline the root block");
  const auto* realize = path.back().as<BlockRealizeNode>();
  const Block& block = realize->block;
  TESSERA_ASSIGN_OR_RETURN(const BufferStoreNode* store, ElementwiseStore(kPrimitive, block));
  if (!IsConstInt(realize->predicate, 1)) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " has a predicate"));
  }
  const Stmt scope_realize = EnclosingBlockRealize(path);
  const std::vector<Stmt> children = ChildBlockRealizes(scope_realize);
  std::vector<Stmt> producers;
  for (const Stmt& s : children) {
    if (!s.same_as(path.back()) && SharedBuffer(BlockOf(s)->writes, block->reads).defined()) {
      producers.push_back(s);
    }
  }
  if (producers.size() != 1) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " has ", producers.size(),
                                            " producer blocks; it needs exactly one"));
  }
  const Stmt producer_realize = producers[0];
  const Block& producer = BlockOf(producer_realize);
  if (HasReduction(producer) || producer->init.defined()) {
    return Invalid(kPrimitive, absl::StrCat("producer ", producer->name, " of block ", block_name,
                                            " is a reduction block"));
  }
  TESSERA_ASSIGN_OR_RETURN(const BufferStoreNode* pstore, ElementwiseStore(kPrimitive, producer));
  const Buffer& buffer = pstore->buffer;
  if (!AllocatedIn(BlockOf(scope_realize), buffer)) {
    return Invalid(kPrimitive, absl::StrCat("buffer ", buffer.name(), " between ", producer->name,
                                            " and ", block_name, " is an output of the scope"));
  }
  // The consumer reads the buffer at one index, its iteration variables, all of them.
  std::vector<Expr> load_indices;
  bool consistent = true;
  PostOrderVisitExprs(store->value, [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (load == nullptr || !load->buffer.same_as(buffer)) return;
    if (load_indices.empty()) {
      load_indices = load->indices;
    } else {
      for (size_t d = 0; d < load_indices.size(); ++d) {
        consistent = consistent && load_indices[d].get() == load->indices[d].get();
      }
    }
  });
  std::vector<Var> cvars, pvars;
  if (load_indices.empty() || !consistent || !DistinctIterVars(block, load_indices, &cvars) ||
      cvars.size() != block->iter_vars.size()) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " does not read ", buffer.name(),
                                            " at exactly its iteration variables"));
  }
  if (!DistinctIterVars(producer, pstore->indices, &pvars)) {
    return Invalid(kPrimitive,
                   absl::StrCat("producer ", producer->name, " stores to ", buffer.name(),
                                " at indices that are not distinct "
                                "iteration variables"));
  }
  arith::Analyzer analyzer;
  for (size_t d = 0; d < cvars.size(); ++d) {
    const IterVar* civ = nullptr;
    const IterVar* piv = nullptr;
    for (const IterVar& iv : block->iter_vars)
      if (iv.var.same_as(cvars[d])) civ = &iv;
    for (const IterVar& iv : producer->iter_vars)
      if (iv.var.same_as(pvars[d])) piv = &iv;
    if (!analyzer.CanProveEqual(civ->dom.min, piv->dom.min) ||
        !analyzer.CanProveEqual(civ->dom.extent, piv->dom.extent)) {
      return Invalid(kPrimitive, absl::StrCat("block ", block_name, " does not cover what ",
                                              producer->name, " writes in dimension ", d));
    }
  }
  // No other block reads the intermediate, and nothing between the two touches the output.
  int ppos = -1, cpos = -1;
  for (int i = 0; i < static_cast<int>(children.size()); ++i) {
    if (children[i].same_as(producer_realize)) ppos = i;
    if (children[i].same_as(path.back())) cpos = i;
  }
  for (int i = 0; i < static_cast<int>(children.size()); ++i) {
    const Block& other = BlockOf(children[i]);
    if (i == ppos || i == cpos) continue;
    if (Accesses(other->reads, buffer) || Accesses(other->writes, buffer)) {
      return Invalid(kPrimitive,
                     absl::StrCat("block ", other->name, " also accesses buffer ", buffer.name(),
                                  " between ", producer->name, " and ", block_name));
    }
    if (i > ppos && i < cpos &&
        (SharedBuffer(other->reads, block->writes).defined() ||
         SharedBuffer(other->writes, block->writes).defined() ||
         SharedBuffer(other->writes, block->reads).defined())) {
      return Invalid(kPrimitive,
                     absl::StrCat("block ", other->name, " between ", producer->name, " and ",
                                  block_name, " accesses what ", block_name, " reads or writes"));
    }
  }
  // C[f(v)] = g(B[v], ...) with v := the producer's store indices and B[...] := its value.
  VarMap vmap;
  for (size_t d = 0; d < cvars.size(); ++d) vmap[cvars[d]] = pvars[d];
  LoadInliner inliner(buffer, {}, pstore->value);
  Expr value = Substitute(inliner.VisitExpr(store->value), vmap);
  std::vector<Expr> indices;
  for (const Expr& e : store->indices) indices.push_back(Substitute(e, vmap));
  auto node = producer.CopyNode();
  node->body = BufferStore(store->buffer, value, indices);
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(Block(node));
  node->reads = regions.reads;
  node->writes = regions.writes;
  PrimFunc replaced = ReplaceStmt(func, producer, Block(std::move(node)));
  TESSERA_ASSIGN_OR_RETURN(StmtPath new_path, FindBlockPath(replaced, block_name));
  TESSERA_ASSIGN_OR_RETURN(PrimFunc removed, RemoveLeaf(kPrimitive, replaced, new_path));
  return RemoveAlloc(removed, BlockOf(scope_realize), buffer);
}

}  // namespace

absl::Status Schedule::ComputeAt(BlockRV block, LoopRV loop, bool preserve_unit_loops, int index) {
  constexpr const char* kPrimitive = "compute_at";
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive(kPrimitive, name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  std::vector<InstValue> inputs = {InstValue::Of(block), InstValue::Of(loop)};
  std::vector<InstValue> attrs = {InstValue::Int(preserve_unit_loops ? 1 : 0),
                                  InstValue::Int(index)};
  if (IsRootMarker(loop)) {  // "leave it where it is"
    Record(kComputeAt, std::move(inputs), std::move(attrs), {});
    return absl::OkStatus();
  }
  absl::StatusOr<PrimFunc> result;
  if (IsInlineMarker(loop)) {
    result = ComputeInlineImpl(func_, *name);
  } else {
    absl::StatusOr<Var> loop_var = LoopVar(loop);
    if (!loop_var.ok()) return WithPrimitive(kPrimitive, loop_var.status());
    absl::StatusOr<StmtPath> loop_path = GetPath(loop);
    if (!loop_path.ok()) return WithPrimitive(kPrimitive, loop_path.status());
    result = ComputeAtImpl(func_, *name, *loop_var, /*reverse=*/false, preserve_unit_loops, index);
  }
  if (!result.ok()) return result.status();
  func_ = *std::move(result);
  Record(kComputeAt, std::move(inputs), std::move(attrs), {});
  return absl::OkStatus();
}

absl::Status Schedule::ReverseComputeAt(BlockRV block, LoopRV loop, bool preserve_unit_loops,
                                        int index) {
  constexpr const char* kPrimitive = "reverse_compute_at";
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive(kPrimitive, name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  absl::StatusOr<Var> loop_var = LoopVar(loop);
  if (!loop_var.ok()) return WithPrimitive(kPrimitive, loop_var.status());
  absl::StatusOr<StmtPath> loop_path = GetPath(loop);
  if (!loop_path.ok()) return WithPrimitive(kPrimitive, loop_path.status());
  TESSERA_ASSIGN_OR_RETURN(
      func_, ComputeAtImpl(func_, *name, *loop_var, /*reverse=*/true, preserve_unit_loops, index));
  Record(kReverseComputeAt, {InstValue::Of(block), InstValue::Of(loop)},
         {InstValue::Int(preserve_unit_loops ? 1 : 0), InstValue::Int(index)}, {});
  return absl::OkStatus();
}

absl::Status Schedule::ComputeInline(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive("compute_inline", name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive("compute_inline", path.status());
  TESSERA_ASSIGN_OR_RETURN(func_, ComputeInlineImpl(func_, *name));
  Record(kComputeInline, {InstValue::Of(block)}, {}, {});
  return absl::OkStatus();
}

absl::Status Schedule::ReverseComputeInline(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive("reverse_compute_inline", name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive("reverse_compute_inline", path.status());
  TESSERA_ASSIGN_OR_RETURN(func_, ReverseComputeInlineImpl(func_, *name));
  Record(kReverseComputeInline, {InstValue::Of(block)}, {}, {});
  return absl::OkStatus();
}

namespace {

enum class LoopIterType { kDataPar, kReduce, kOpaque };

// TVM's GetLoopIterType: how the blocks directly under `loop` use its variable.
LoopIterType GetLoopIterType(const Stmt& loop) {
  const auto* op = loop.as<ForNode>();
  int n_spatial = 0, n_reduce = 0;
  for (const Stmt& s : ChildBlockRealizes(loop)) {
    const auto* realize = s.as<BlockRealizeNode>();
    for (size_t i = 0; i < realize->iter_values.size(); ++i) {
      if (!UsesAnyOf(realize->iter_values[i], {op->loop_var.get()})) continue;
      if (realize->block->iter_vars[i].kind == IterKind::kSpatial) {
        ++n_spatial;
      } else {
        ++n_reduce;
      }
    }
  }
  if (n_spatial > 0 && n_reduce > 0) return LoopIterType::kOpaque;
  return n_reduce > 0 ? LoopIterType::kReduce : LoopIterType::kDataPar;
}

// The candidate decisions of docs/reference/metaschedule.md §3.5 and the loops of the first
// consumer.
std::vector<int64_t> CollectComputeLocation(const PrimFunc& func, const std::string& block_name,
                                            std::vector<Stmt>* consumer_loops) {
  std::vector<int64_t> candidates;
  if (ComputeInlineImpl(func, block_name).ok()) candidates.push_back(-2);
  candidates.push_back(-1);
  const StmtPath path = *FindBlockPath(func, block_name);
  if (path.size() == 1) return candidates;
  const Block& block = BlockOf(path.back());
  std::vector<StmtPath> consumers;
  for (const Stmt& s : ChildBlockRealizes(EnclosingBlockRealize(path))) {
    const Block& other = BlockOf(s);
    if (other->name != block_name && SharedBuffer(block->writes, other->reads).defined()) {
      consumers.push_back(*FindBlockPath(func, other->name));
    }
  }
  if (consumers.empty()) return candidates;
  // The boundary: the deepest loop around every consumer (the innermost loop of a single one).
  std::vector<Stmt> loops = LoopsOnPath(consumers[0]);
  size_t depth = loops.size();
  for (const StmtPath& c : consumers) {
    const std::vector<Stmt> other = LoopsOnPath(c);
    size_t common = 0;
    while (common < std::min(depth, other.size()) && other[common].same_as(loops[common])) ++common;
    depth = common;
  }
  if (depth == 0) return candidates;  // the boundary is not a loop
  loops.resize(depth);
  *consumer_loops = loops;
  std::vector<LoopIterType> types;
  for (const Stmt& l : loops) types.push_back(GetLoopIterType(l));
  int last_data_par = -1, first_reduce = static_cast<int>(depth);
  for (int i = 0; i < static_cast<int>(depth); ++i) {
    if (types[i] == LoopIterType::kDataPar) last_data_par = i;
    if (types[i] == LoopIterType::kReduce && first_reduce == static_cast<int>(depth))
      first_reduce = i;
  }
  for (int i = 0; i < static_cast<int>(depth); ++i) {
    const auto* op = loops[i].as<ForNode>();
    if (IsConstInt(op->extent, 1)) continue;
    if (types[i] == LoopIterType::kDataPar && i > first_reduce) break;
    if (types[i] == LoopIterType::kReduce && i > last_data_par) break;
    if (ComputeAtImpl(func, block_name, op->loop_var, /*reverse=*/false,
                      /*preserve_unit_loops=*/true, /*index=*/-1)
            .ok()) {
      candidates.push_back(i);
    }
  }
  return candidates;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> Schedule::ComputeLocationCandidates(BlockRV block) const {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive("compute_location_candidates", name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive("compute_location_candidates", path.status());
  std::vector<Stmt> loops;
  return CollectComputeLocation(func_, *name, &loops);
}

absl::StatusOr<LoopRV> Schedule::SampleComputeLocation(BlockRV block, const InstValue& decision) {
  constexpr const char* kPrimitive = "sample_compute_location";
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive(kPrimitive, name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  std::vector<Stmt> loops;
  const std::vector<int64_t> candidates = CollectComputeLocation(func_, *name, &loops);
  int64_t chosen;
  if (decision.is_none()) {
    chosen = candidates[rng_.UniformInt(0, static_cast<int64_t>(candidates.size()))];
  } else if (decision.is_int()) {
    // A stale decision snaps to the largest candidate below it, else to root.
    bool found = false;
    chosen = -1;
    for (int64_t c : candidates) {
      if (c <= decision.as_int() && (!found || c > chosen)) {
        chosen = c;
        found = true;
      }
    }
    if (!found) chosen = -1;
  } else {
    return Invalid(kPrimitive, "decision must be an integer");
  }
  LoopRV result;
  if (chosen >= 0) {
    result = NewLoopRV(loops[chosen].as<ForNode>()->loop_var);
  } else {
    TESSERA_ASSIGN_OR_RETURN(result, NewMarkerLoopRV(this, /*inline_marker=*/chosen == -2));
  }
  Record(kSampleComputeLocation, {InstValue::Of(block)}, {}, {InstValue::Of(result)},
         InstValue::Int(chosen));
  return result;
}

namespace {

using namespace apply_util;  // NOLINT: decoding helpers

Outputs ApplyComputeAt(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 2, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[1]));
  TESSERA_ASSIGN_OR_RETURN(int64_t preserve, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t index, AsInt(attrs[1]));
  TESSERA_RETURN_IF_ERROR(sch->ComputeAt(block, loop, preserve != 0, static_cast<int>(index)));
  return Values{};
}

Outputs ApplyReverseComputeAt(Schedule* sch, const Values& inputs, const Values& attrs,
                              const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 2, attrs, 2));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, AsLoop(inputs[1]));
  TESSERA_ASSIGN_OR_RETURN(int64_t preserve, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t index, AsInt(attrs[1]));
  TESSERA_RETURN_IF_ERROR(
      sch->ReverseComputeAt(block, loop, preserve != 0, static_cast<int>(index)));
  return Values{};
}

Outputs ApplyComputeInline(Schedule* sch, const Values& inputs, const Values& attrs,
                           const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_RETURN_IF_ERROR(sch->ComputeInline(block));
  return Values{};
}

Outputs ApplyReverseComputeInline(Schedule* sch, const Values& inputs, const Values& attrs,
                                  const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_RETURN_IF_ERROR(sch->ReverseComputeInline(block));
  return Values{};
}

Outputs ApplySampleComputeLocation(Schedule* sch, const Values& inputs, const Values& attrs,
                                   const InstValue& decision) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 0));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(LoopRV loop, sch->SampleComputeLocation(block, decision));
  return Values{InstValue::Of(loop)};
}

const InstructionKind kComputeAt = {"ComputeAt", false, &ApplyComputeAt};
const InstructionKind kReverseComputeAt = {"ReverseComputeAt", false, &ApplyReverseComputeAt};
const InstructionKind kComputeInline = {"ComputeInline", false, &ApplyComputeInline};
const InstructionKind kReverseComputeInline = {"ReverseComputeInline", false,
                                               &ApplyReverseComputeInline};
const InstructionKind kSampleComputeLocation = {"SampleComputeLocation", true,
                                                &ApplySampleComputeLocation};

}  // namespace

const std::vector<const InstructionKind*>& ComputeLocationInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = {&kComputeAt, &kReverseComputeAt,
                                                            &kComputeInline, &kReverseComputeInline,
                                                            &kSampleComputeLocation};
  return kinds;
}

}  // namespace tessera
