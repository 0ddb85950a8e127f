#include "schedule/primitive/util.h"

#include "absl/strings/str_cat.h"
#include "ir/functor.h"

namespace tessera {
namespace primitive {
namespace {

class BindingSimplifier : public IRMutator {
 public:
  explicit BindingSimplifier(arith::Analyzer* analyzer) : analyzer_(analyzer) {}

 protected:
  Expr VisitExpr(const Expr& e) override { return e; }

  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    analyzer_->Bind(op->loop_var, Range{Expr(0), op->extent});
    return IRMutator::VisitStmt_(op, self);
  }

  Stmt VisitStmt_(const BlockRealizeNode* op, const Stmt& self) override {
    bool changed = false;
    std::vector<Expr> values;
    for (const Expr& v : op->iter_values) {
      values.push_back(analyzer_->Simplify(v));
      if (!values.back().same_as(v)) changed = true;
    }
    Expr predicate = analyzer_->Simplify(op->predicate);
    if (!predicate.same_as(op->predicate)) changed = true;
    Stmt block = VisitStmt(op->block);
    if (!block.same_as(op->block)) changed = true;
    if (!changed) return self;
    return BlockRealize(std::move(values), std::move(predicate),
                        Block(std::static_pointer_cast<const BlockNode>(block.node_ptr())));
  }

 private:
  arith::Analyzer* analyzer_;
};

class PredicateAdder : public IRMutator {
 public:
  explicit PredicateAdder(Expr predicate) : predicate_(std::move(predicate)) {}

 protected:
  Expr VisitExpr(const Expr& e) override { return e; }
  Stmt VisitStmt_(const BlockRealizeNode* op, const Stmt&) override {
    Expr predicate = IsConstInt(op->predicate, 1) ? predicate_ : And(op->predicate, predicate_);
    return BlockRealize(op->iter_values, predicate, op->block);
  }

 private:
  Expr predicate_;
};

}  // namespace

void BindLoopRanges(const std::vector<Stmt>& loops, arith::Analyzer* analyzer) {
  for (const Stmt& loop : loops) {
    const auto* op = loop.as<ForNode>();
    analyzer->Bind(op->loop_var, Range{Expr(0), op->extent});
  }
}

Stmt SimplifyBindings(const Stmt& stmt, const std::vector<Stmt>& outer_loops) {
  arith::Analyzer analyzer;
  BindLoopRanges(outer_loops, &analyzer);
  BindingSimplifier simplifier(&analyzer);
  return simplifier.VisitStmt(stmt);
}

Stmt AddPredicate(const Stmt& stmt, const Expr& predicate) {
  PredicateAdder adder(predicate);
  return adder.VisitStmt(stmt);
}

absl::Status WithPrimitive(const char* primitive, const absl::Status& status) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(primitive, ": ", status.message()));
}

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

Buffer SharedBuffer(const std::vector<BufferRegion>& a, const std::vector<BufferRegion>& b) {
  for (const BufferRegion& x : a) {
    if (Accesses(b, x.buffer)) return x.buffer;
  }
  return Buffer();
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

bool AllocatedIn(const Block& scope, const Buffer& buffer) {
  for (const Buffer& b : scope->alloc_buffers) {
    if (b.same_as(buffer)) return true;
  }
  return false;
}

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

}  // namespace primitive
}  // namespace tessera
