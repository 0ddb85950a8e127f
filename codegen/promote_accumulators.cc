#include "codegen/promote_accumulators.h"

#include <algorithm>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/arith/linear.h"
#include "ir/functor.h"
#include "ir/structural_equal.h"

namespace tessera {
namespace {

// The loops from `s` down to `target`, reached through loops and sequences only; false where
// `target` is not under `s` that way (behind a branch, an allocation, ...).
bool LoopsTo(const Stmt& s, const StmtNode* target, std::vector<const ForNode*>* path) {
  if (s.get() == target) return true;
  if (const auto* loop = s.as<ForNode>()) {
    path->push_back(loop);
    if (LoopsTo(loop->body, target, path)) return true;
    path->pop_back();
    return false;
  }
  if (const auto* seq = s.as<SeqStmtNode>()) {
    for (const Stmt& child : seq->seq) {
      if (LoopsTo(child, target, path)) return true;
    }
  }
  return false;
}

// The loads of `buffer` under `s` (its indices' included).
int CountLoads(const Stmt& s, const BufferNode* buffer) {
  int loads = 0;
  PostOrderVisitExprs(s, [&](const Expr& x) {
    const auto* load = x.as<BufferLoadNode>();
    if (load != nullptr && load->buffer.get() == buffer) ++loads;
  });
  return loads;
}

// What a promotion replaces: the buffer, its index in the store, and the loops (between the
// promoted loop and the store, outermost first) whose box the array holds.
struct Accumulator {
  Buffer buffer;
  Expr index;
  std::vector<const ForNode*> box;
};

// The accumulator `loop` keeps in an allocated buffer at a moving address (see the header), if
// there is one.
// `unit_loops`: the variables of enclosing loops of extent 1 (a batch of one), constants in fact.
std::optional<Accumulator> FindAccumulator(const ForNode* loop,
                                           const std::unordered_set<const BufferNode*>& allocated,
                                           const std::unordered_set<const VarNode*>& unit_loops) {
  std::vector<const BufferStoreNode*> stores;
  PostOrderVisitStmts(loop->body, [&](const Stmt& s) {
    if (const auto* store = s.as<BufferStoreNode>()) stores.push_back(store);
  });
  for (const BufferStoreNode* store : stores) {
    const BufferNode* buffer = store->buffer.get();
    if (allocated.count(buffer) == 0 || store->indices.size() != 1) continue;
    const bool only_store = std::count_if(stores.begin(), stores.end(), [&](const auto* other) {
                              return other->buffer.get() == buffer;
                            }) == 1;
    if (!only_store) continue;
    const Expr& index = store->indices[0];
    // Every load of the buffer in the loop is one of this element, inside the store's value.
    int loads_of_element = 0;
    PostOrderVisitExprs(store->value, [&](const Expr& x) {
      const auto* load = x.as<BufferLoadNode>();
      if (load != nullptr && load->buffer.get() == buffer && load->indices.size() == 1 &&
          StructuralEqual(load->indices[0], index)) {
        ++loads_of_element;
      }
    });
    if (CountLoads(loop->body, buffer) != loads_of_element) continue;
    const VarNode* own = loop->loop_var.get();
    if (UsesVar(index, [&](const VarNode* v) { return v == own; })) continue;
    std::vector<const ForNode*> path;
    if (!LoopsTo(loop->body, store, &path)) continue;
    Accumulator acc{store->buffer, index, {}};
    std::vector<Var> vars;
    std::vector<int64_t> extents;
    bool ok = true;
    for (const ForNode* inner : path) {
      ok =
          ok && inner->for_kind != ForKind::kParallel && inner->for_kind != ForKind::kThreadBinding;
      const VarNode* var = inner->loop_var.get();
      if (!UsesVar(index, [&](const VarNode* v) { return v == var; })) continue;
      const int64_t* extent = AsConstInt(inner->extent);
      ok = ok && extent != nullptr && *extent > 0;
      if (!ok) break;
      acc.box.push_back(inner);
      vars.push_back(inner->loop_var);
      extents.push_back(*extent);
    }
    // A tile of accumulators: GCC keeps a single vector at a moving address in a register
    // itself, and the array ran slower there (the default softmax's row sums, 5-10%).
    const bool tile = std::any_of(acc.box.begin(), acc.box.end(), [](const ForNode* inner) {
      return inner->for_kind == ForKind::kUnrolled;
    });
    if (!ok || !tile) continue;
    std::optional<arith::LinearEquation> linear = arith::DetectLinearEquation(index, vars);
    if (!linear.has_value() ||
        !UsesVar(linear->base, [&](const VarNode* v) { return unit_loops.count(v) == 0; })) {
      continue;
    }
    // One-to-one: by increasing coefficient, each exceeds the largest offset of the smaller ones.
    std::vector<std::pair<int64_t, int64_t>> terms;  // coefficient, extent
    for (size_t i = 0; i < vars.size() && ok; ++i) {
      const int64_t* coeff = AsConstInt(linear->coeffs[i]);
      ok = coeff != nullptr && *coeff > 0;
      if (ok) terms.push_back({*coeff, extents[i]});
    }
    if (!ok) continue;
    std::sort(terms.begin(), terms.end());
    int64_t reach = 0;
    int64_t elements = 1;
    for (const auto& [coeff, extent] : terms) {
      ok = ok && coeff > reach;
      reach += coeff * (extent - 1);
      elements *= extent;
    }
    if (!ok || elements * store->buffer.dtype().bytes() > kMaxPromotedBytes) continue;
    return acc;
  }
  return std::nullopt;
}

// The box's element of the array: its loops' variables in row-major order.
Expr BoxIndex(const std::vector<const ForNode*>& box, const DataType& dtype) {
  Expr index;
  int64_t stride = 1;
  for (auto it = box.rbegin(); it != box.rend(); ++it) {
    Expr term = (*it)->loop_var;
    if (stride != 1) term = term * IntImm(dtype, stride);
    index = index.defined() ? term + index : term;
    stride *= *AsConstInt((*it)->extent);
  }
  return index;
}

// for the box's loops (fresh variables, the same kinds): store(box index, buffer index).
Stmt CopyNest(const Accumulator& acc, const Buffer& array, bool into_array) {
  VarMap fresh;
  std::vector<Var> vars;
  for (const ForNode* loop : acc.box) {
    vars.push_back(loop->loop_var.Copy());
    fresh[loop->loop_var] = vars.back();
  }
  const Expr box_index = Substitute(BoxIndex(acc.box, acc.index.dtype()), fresh);
  const Expr index = Substitute(acc.index, fresh);
  Stmt nest = into_array ? BufferStore(array, acc.buffer.Load({index}), {box_index})
                         : BufferStore(acc.buffer, array.Load({box_index}), {index});
  for (size_t i = acc.box.size(); i-- > 0;) {
    nest = For(vars[i], acc.box[i]->extent, acc.box[i]->for_kind, nest);
  }
  return nest;
}

// The accumulator's buffer replaced by the array, at the box index.
class UseArray : public IRMutator {
 public:
  UseArray(const Accumulator& acc, Buffer array)
      : buffer_(acc.buffer.get()),
        array_(std::move(array)),
        index_(BoxIndex(acc.box, acc.index.dtype())) {}

 protected:
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    if (op->buffer.get() == buffer_) return array_.Load({index_});
    return IRMutator::VisitExpr_(op, self);
  }
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (op->buffer.get() != buffer_) return IRMutator::VisitStmt_(op, self);
    return BufferStore(array_, VisitExpr(op->value), {index_});
  }

 private:
  const BufferNode* buffer_;
  Buffer array_;
  Expr index_;
};

class Promoter : public IRMutator {
 protected:
  Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    allocated_.insert(op->buffer.get());
    Stmt result = IRMutator::VisitStmt_(op, self);
    allocated_.erase(op->buffer.get());
    return result;
  }
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (IsConstInt(op->extent, 1)) {
      unit_loops_.insert(op->loop_var.get());
      Stmt result = IRMutator::VisitStmt_(op, self);
      unit_loops_.erase(op->loop_var.get());
      return result;
    }
    if (op->for_kind == ForKind::kSerial) {
      if (std::optional<Accumulator> acc = FindAccumulator(op, allocated_, unit_loops_)) {
        int64_t elements = 1;
        for (const ForNode* loop : acc->box) elements *= *AsConstInt(loop->extent);
        Buffer array = Buffer::Make(acc->buffer.name() + "_sum", acc->buffer.dtype(),
                                    {IntImm(acc->index.dtype(), elements)}, "local");
        Stmt loop = For(op->loop_var, op->extent, op->for_kind,
                        UseArray(*acc, array).VisitStmt(op->body), op->thread_tag, op->annotations);
        return Allocate(array, SeqStmt({CopyNest(*acc, array, /*into_array=*/true), loop,
                                        CopyNest(*acc, array, /*into_array=*/false)}));
      }
    }
    return IRMutator::VisitStmt_(op, self);
  }

 private:
  std::unordered_set<const BufferNode*> allocated_;
  std::unordered_set<const VarNode*> unit_loops_;
};

}  // namespace

PrimFunc PromoteAccumulators(const PrimFunc& f) {
  Promoter promoter;
  Stmt body = promoter.VisitStmt(f->body);
  return body.same_as(f->body) ? f : f.WithBody(body);
}

}  // namespace tessera
