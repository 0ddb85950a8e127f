#include "codegen/unrolled_offsets.h"

#include <algorithm>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/functor.h"

namespace tessera {
namespace {

struct Summand {
  Expr term;
  bool negated;
};

// The summands of `e`, a tree of integer + and -.
void CollectSummands(const Expr& e, bool negated, std::vector<Summand>* out) {
  const auto* op = e.as<BinaryNode>();
  if (op != nullptr && e.dtype().is_int() &&
      (op->op == BinaryOp::kAdd || op->op == BinaryOp::kSub)) {
    CollectSummands(op->a, negated, out);
    CollectSummands(op->b, op->op == BinaryOp::kSub ? !negated : negated, out);
    return;
  }
  out->push_back({e, negated});
}

class UnrolledTermsLast : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    const bool unrolled = op->for_kind == ForKind::kUnrolled;
    if (unrolled) unrolled_.insert(op->loop_var.get());
    Stmt result = IRMutator::VisitStmt_(op, self);
    if (unrolled) unrolled_.erase(op->loop_var.get());
    return result;
  }
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    Expr visited = IRMutator::VisitExpr_(op, self);
    const auto* load = visited.as<BufferLoadNode>();
    if (load->indices.size() != 1) return visited;
    Expr index = Reorder(load->indices[0]);
    return index.same_as(load->indices[0]) ? visited : load->buffer.Load({index});
  }
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Stmt visited = IRMutator::VisitStmt_(op, self);
    const auto* store = visited.as<BufferStoreNode>();
    if (store->indices.size() != 1) return visited;
    Expr index = Reorder(store->indices[0]);
    return index.same_as(store->indices[0]) ? visited
                                            : BufferStore(store->buffer, store->value, {index});
  }

 private:
  Expr Reorder(const Expr& index) {
    if (unrolled_.empty()) return index;
    std::vector<Summand> terms;
    CollectSummands(index, false, &terms);
    auto free_of_unrolled = [&](const Summand& s) {
      return !UsesVar(s.term, [&](const VarNode* v) { return unrolled_.count(v) > 0; });
    };
    if (std::is_partitioned(terms.begin(), terms.end(), free_of_unrolled)) return index;
    std::stable_partition(terms.begin(), terms.end(), free_of_unrolled);
    // A sum that would start with a subtraction keeps its order (no `0 - x` is introduced).
    if (terms[0].negated) return index;
    Expr sum = terms[0].term;
    for (size_t i = 1; i < terms.size(); ++i) {
      sum = MakeBinary(terms[i].negated ? BinaryOp::kSub : BinaryOp::kAdd, sum, terms[i].term);
    }
    return sum;
  }

  std::unordered_set<const VarNode*> unrolled_;
};

}  // namespace

PrimFunc MoveUnrolledTermsLast(const PrimFunc& f) {
  UnrolledTermsLast mutator;
  Stmt body = mutator.VisitStmt(f->body);
  return body.same_as(f->body) ? f : f.WithBody(body);
}

}  // namespace tessera
