// ComputeAt and ReverseComputeAt, after TVM's schedule/primitive/compute_at.cc.
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
#include "schedule/primitive/compute_location_internal.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

using primitive::AllocatedIn;
using primitive::BlockOf;
using primitive::HasReduction;
using primitive::Invalid;
using primitive::RemoveLeaf;
using primitive::SharedBuffer;
using primitive::UsesAnyOf;
using primitive::WithPrimitive;

bool Contains(const StmtPath& path, const Stmt& stmt) {
  for (const Stmt& s : path) {
    if (s.same_as(stmt)) return true;
  }
  return false;
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

}  // namespace

namespace primitive {

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

}  // namespace primitive

using primitive::ComputeAtImpl;
using primitive::ComputeInlineImpl;

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

}  // namespace tessera
