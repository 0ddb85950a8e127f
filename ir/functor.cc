#include "ir/functor.h"

#include "base/check.h"

namespace tessera {

// ---- IRVisitor ----------------------------------------------------------------------

void IRVisitor::VisitExpr(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm: return VisitExpr_(static_cast<const IntImmNode*>(e.get()));
    case ExprKind::kFloatImm: return VisitExpr_(static_cast<const FloatImmNode*>(e.get()));
    case ExprKind::kVar: return VisitExpr_(static_cast<const VarNode*>(e.get()));
    case ExprKind::kBinary: return VisitExpr_(static_cast<const BinaryNode*>(e.get()));
    case ExprKind::kNot: return VisitExpr_(static_cast<const NotNode*>(e.get()));
    case ExprKind::kSelect: return VisitExpr_(static_cast<const SelectNode*>(e.get()));
    case ExprKind::kCast: return VisitExpr_(static_cast<const CastNode*>(e.get()));
    case ExprKind::kBufferLoad: return VisitExpr_(static_cast<const BufferLoadNode*>(e.get()));
    case ExprKind::kCall: return VisitExpr_(static_cast<const CallNode*>(e.get()));
  }
}

void IRVisitor::VisitStmt(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::kBufferStore: return VisitStmt_(static_cast<const BufferStoreNode*>(s.get()));
    case StmtKind::kSeq: return VisitStmt_(static_cast<const SeqStmtNode*>(s.get()));
    case StmtKind::kIfThenElse: return VisitStmt_(static_cast<const IfThenElseNode*>(s.get()));
    case StmtKind::kEvaluate: return VisitStmt_(static_cast<const EvaluateNode*>(s.get()));
    case StmtKind::kFor: return VisitStmt_(static_cast<const ForNode*>(s.get()));
    case StmtKind::kBlock: return VisitStmt_(static_cast<const BlockNode*>(s.get()));
    case StmtKind::kBlockRealize:
      return VisitStmt_(static_cast<const BlockRealizeNode*>(s.get()));
    case StmtKind::kAllocate: return VisitStmt_(static_cast<const AllocateNode*>(s.get()));
  }
}

void IRVisitor::VisitExpr_(const IntImmNode*) {}
void IRVisitor::VisitExpr_(const FloatImmNode*) {}
void IRVisitor::VisitExpr_(const VarNode*) {}
void IRVisitor::VisitExpr_(const BinaryNode* op) {
  VisitExpr(op->a);
  VisitExpr(op->b);
}
void IRVisitor::VisitExpr_(const NotNode* op) { VisitExpr(op->a); }
void IRVisitor::VisitExpr_(const SelectNode* op) {
  VisitExpr(op->condition);
  VisitExpr(op->true_value);
  VisitExpr(op->false_value);
}
void IRVisitor::VisitExpr_(const CastNode* op) { VisitExpr(op->value); }
void IRVisitor::VisitExpr_(const BufferLoadNode* op) {
  for (const Expr& i : op->indices) VisitExpr(i);
}
void IRVisitor::VisitExpr_(const CallNode* op) {
  for (const Expr& a : op->args) VisitExpr(a);
}

void IRVisitor::VisitStmt_(const BufferStoreNode* op) {
  VisitExpr(op->value);
  for (const Expr& i : op->indices) VisitExpr(i);
}
void IRVisitor::VisitStmt_(const SeqStmtNode* op) {
  for (const Stmt& s : op->seq) VisitStmt(s);
}
void IRVisitor::VisitStmt_(const IfThenElseNode* op) {
  VisitExpr(op->condition);
  VisitStmt(op->then_case);
  if (op->else_case.defined()) VisitStmt(op->else_case);
}
void IRVisitor::VisitStmt_(const EvaluateNode* op) { VisitExpr(op->value); }
void IRVisitor::VisitStmt_(const ForNode* op) {
  VisitExpr(op->extent);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const BlockNode* op) {
  for (const IterVar& iv : op->iter_vars) {
    VisitExpr(iv.dom.min);
    VisitExpr(iv.dom.extent);
  }
  for (const BufferRegion& r : op->reads) VisitBufferRegion(r);
  for (const BufferRegion& r : op->writes) VisitBufferRegion(r);
  if (op->init.defined()) VisitStmt(op->init);
  VisitStmt(op->body);
}
void IRVisitor::VisitStmt_(const BlockRealizeNode* op) {
  for (const Expr& v : op->iter_values) VisitExpr(v);
  VisitExpr(op->predicate);
  VisitStmt(op->block);
}
void IRVisitor::VisitStmt_(const AllocateNode* op) { VisitStmt(op->body); }

void IRVisitor::VisitBufferRegion(const BufferRegion& region) {
  for (const Range& r : region.region) {
    VisitExpr(r.min);
    VisitExpr(r.extent);
  }
}

// ---- IRMutator ----------------------------------------------------------------------

Expr IRMutator::VisitExpr(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm: return VisitExpr_(static_cast<const IntImmNode*>(e.get()), e);
    case ExprKind::kFloatImm: return VisitExpr_(static_cast<const FloatImmNode*>(e.get()), e);
    case ExprKind::kVar: return VisitExpr_(static_cast<const VarNode*>(e.get()), e);
    case ExprKind::kBinary: return VisitExpr_(static_cast<const BinaryNode*>(e.get()), e);
    case ExprKind::kNot: return VisitExpr_(static_cast<const NotNode*>(e.get()), e);
    case ExprKind::kSelect: return VisitExpr_(static_cast<const SelectNode*>(e.get()), e);
    case ExprKind::kCast: return VisitExpr_(static_cast<const CastNode*>(e.get()), e);
    case ExprKind::kBufferLoad:
      return VisitExpr_(static_cast<const BufferLoadNode*>(e.get()), e);
    case ExprKind::kCall: return VisitExpr_(static_cast<const CallNode*>(e.get()), e);
  }
  return e;
}

Stmt IRMutator::VisitStmt(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::kBufferStore:
      return VisitStmt_(static_cast<const BufferStoreNode*>(s.get()), s);
    case StmtKind::kSeq: return VisitStmt_(static_cast<const SeqStmtNode*>(s.get()), s);
    case StmtKind::kIfThenElse:
      return VisitStmt_(static_cast<const IfThenElseNode*>(s.get()), s);
    case StmtKind::kEvaluate: return VisitStmt_(static_cast<const EvaluateNode*>(s.get()), s);
    case StmtKind::kFor: return VisitStmt_(static_cast<const ForNode*>(s.get()), s);
    case StmtKind::kBlock: return VisitStmt_(static_cast<const BlockNode*>(s.get()), s);
    case StmtKind::kBlockRealize:
      return VisitStmt_(static_cast<const BlockRealizeNode*>(s.get()), s);
    case StmtKind::kAllocate: return VisitStmt_(static_cast<const AllocateNode*>(s.get()), s);
  }
  return s;
}

std::vector<Expr> IRMutator::VisitExprs(const std::vector<Expr>& exprs, bool* changed) {
  std::vector<Expr> out;
  out.reserve(exprs.size());
  for (const Expr& e : exprs) {
    out.push_back(VisitExpr(e));
    if (!out.back().same_as(e)) *changed = true;
  }
  return out;
}

Range IRMutator::VisitRange(const Range& range, bool* changed) {
  Range out{VisitExpr(range.min), VisitExpr(range.extent)};
  if (!out.min.same_as(range.min) || !out.extent.same_as(range.extent)) *changed = true;
  return out;
}

BufferRegion IRMutator::VisitBufferRegion(const BufferRegion& region, bool* changed) {
  BufferRegion out;
  out.buffer = VisitBuffer(region.buffer);
  if (!out.buffer.same_as(region.buffer)) *changed = true;
  for (const Range& r : region.region) out.region.push_back(VisitRange(r, changed));
  return out;
}

Expr IRMutator::VisitExpr_(const IntImmNode*, const Expr& self) { return self; }
Expr IRMutator::VisitExpr_(const FloatImmNode*, const Expr& self) { return self; }
Expr IRMutator::VisitExpr_(const VarNode*, const Expr& self) { return self; }

Expr IRMutator::VisitExpr_(const BinaryNode* op, const Expr& self) {
  Expr a = VisitExpr(op->a);
  Expr b = VisitExpr(op->b);
  if (a.same_as(op->a) && b.same_as(op->b)) return self;
  return MakeBinary(op->op, std::move(a), std::move(b));
}

Expr IRMutator::VisitExpr_(const NotNode* op, const Expr& self) {
  Expr a = VisitExpr(op->a);
  if (a.same_as(op->a)) return self;
  return Not(std::move(a));
}

Expr IRMutator::VisitExpr_(const SelectNode* op, const Expr& self) {
  Expr c = VisitExpr(op->condition);
  Expr t = VisitExpr(op->true_value);
  Expr f = VisitExpr(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
    return self;
  }
  return Select(std::move(c), std::move(t), std::move(f));
}

Expr IRMutator::VisitExpr_(const CastNode* op, const Expr& self) {
  Expr v = VisitExpr(op->value);
  if (v.same_as(op->value)) return self;
  return Cast(op->dtype, std::move(v));
}

Expr IRMutator::VisitExpr_(const BufferLoadNode* op, const Expr& self) {
  bool changed = false;
  Buffer buffer = VisitBuffer(op->buffer);
  if (!buffer.same_as(op->buffer)) changed = true;
  std::vector<Expr> indices = VisitExprs(op->indices, &changed);
  if (!changed) return self;
  return buffer.Load(std::move(indices));
}

Expr IRMutator::VisitExpr_(const CallNode* op, const Expr& self) {
  bool changed = false;
  std::vector<Expr> args = VisitExprs(op->args, &changed);
  if (!changed) return self;
  return Expr(std::make_shared<const CallNode>(op->dtype, op->op, std::move(args), op->name));
}

Stmt IRMutator::VisitStmt_(const BufferStoreNode* op, const Stmt& self) {
  bool changed = false;
  Buffer buffer = VisitBuffer(op->buffer);
  if (!buffer.same_as(op->buffer)) changed = true;
  Expr value = VisitExpr(op->value);
  if (!value.same_as(op->value)) changed = true;
  std::vector<Expr> indices = VisitExprs(op->indices, &changed);
  if (!changed) return self;
  return BufferStore(std::move(buffer), std::move(value), std::move(indices));
}

Stmt IRMutator::VisitStmt_(const SeqStmtNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> seq;
  seq.reserve(op->seq.size());
  for (const Stmt& s : op->seq) {
    seq.push_back(VisitStmt(s));
    if (!seq.back().same_as(s)) changed = true;
  }
  if (!changed) return self;
  return SeqStmt(std::move(seq));
}

Stmt IRMutator::VisitStmt_(const IfThenElseNode* op, const Stmt& self) {
  Expr c = VisitExpr(op->condition);
  Stmt t = VisitStmt(op->then_case);
  Stmt e = op->else_case.defined() ? VisitStmt(op->else_case) : Stmt();
  if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) {
    return self;
  }
  return IfThenElse(std::move(c), std::move(t), std::move(e));
}

Stmt IRMutator::VisitStmt_(const EvaluateNode* op, const Stmt& self) {
  Expr v = VisitExpr(op->value);
  if (v.same_as(op->value)) return self;
  return Evaluate(std::move(v));
}

Stmt IRMutator::VisitStmt_(const ForNode* op, const Stmt& self) {
  Expr extent = VisitExpr(op->extent);
  Stmt body = VisitStmt(op->body);
  if (extent.same_as(op->extent) && body.same_as(op->body)) return self;
  return For(op->loop_var, std::move(extent), op->for_kind, std::move(body), op->thread_tag,
             op->annotations);
}

Stmt IRMutator::VisitStmt_(const BlockNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<IterVar> iter_vars;
  for (const IterVar& iv : op->iter_vars) {
    iter_vars.push_back(IterVar{iv.var, VisitRange(iv.dom, &changed), iv.kind});
  }
  std::vector<BufferRegion> reads, writes;
  for (const BufferRegion& r : op->reads) reads.push_back(VisitBufferRegion(r, &changed));
  for (const BufferRegion& r : op->writes) writes.push_back(VisitBufferRegion(r, &changed));
  std::vector<Buffer> allocs;
  for (const Buffer& b : op->alloc_buffers) {
    allocs.push_back(VisitBuffer(b));
    if (!allocs.back().same_as(b)) changed = true;
  }
  Stmt init = op->init.defined() ? VisitStmt(op->init) : Stmt();
  Stmt body = VisitStmt(op->body);
  if (!init.same_as(op->init) || !body.same_as(op->body)) changed = true;
  if (!changed) return self;
  auto node = std::make_shared<BlockNode>(*op);
  node->iter_vars = std::move(iter_vars);
  node->reads = std::move(reads);
  node->writes = std::move(writes);
  node->alloc_buffers = std::move(allocs);
  node->init = std::move(init);
  node->body = std::move(body);
  return Block(std::move(node));
}

Stmt IRMutator::VisitStmt_(const BlockRealizeNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<Expr> values = VisitExprs(op->iter_values, &changed);
  Expr predicate = VisitExpr(op->predicate);
  Stmt block = VisitStmt(op->block);
  if (!predicate.same_as(op->predicate) || !block.same_as(op->block)) changed = true;
  if (!changed) return self;
  const auto* block_node = block.as<BlockNode>();
  TESSERA_CHECK(block_node != nullptr) << "a BlockRealize must hold a Block";
  return BlockRealize(std::move(values), std::move(predicate),
                      Block(std::static_pointer_cast<const BlockNode>(block.node_ptr())));
}

Stmt IRMutator::VisitStmt_(const AllocateNode* op, const Stmt& self) {
  Buffer buffer = VisitBuffer(op->buffer);
  Stmt body = VisitStmt(op->body);
  if (buffer.same_as(op->buffer) && body.same_as(op->body)) return self;
  return Allocate(std::move(buffer), std::move(body));
}

// ---- Utilities ----------------------------------------------------------------------

namespace {

class ExprCollector : public IRVisitor {
 public:
  explicit ExprCollector(const std::function<void(const Expr&)>& fn) : fn_(fn) {}
  void VisitExpr(const Expr& e) override {
    IRVisitor::VisitExpr(e);
    fn_(e);
  }

 private:
  const std::function<void(const Expr&)>& fn_;
};

class StmtCollector : public IRVisitor {
 public:
  explicit StmtCollector(const std::function<void(const Stmt&)>& fn) : fn_(fn) {}
  void VisitStmt(const Stmt& s) override {
    IRVisitor::VisitStmt(s);
    fn_(s);
  }

 private:
  const std::function<void(const Stmt&)>& fn_;
};

class VarSubstituter : public IRMutator {
 public:
  explicit VarSubstituter(const VarMap& vmap) : vmap_(vmap) {}

 protected:
  Expr VisitExpr_(const VarNode*, const Expr& self) override {
    auto it = vmap_.find(Var(std::static_pointer_cast<const VarNode>(self.node_ptr())));
    return it == vmap_.end() ? self : it->second;
  }

 private:
  const VarMap& vmap_;
};

}  // namespace

void PostOrderVisitExprs(const Stmt& stmt, const std::function<void(const Expr&)>& fn) {
  ExprCollector collector(fn);
  collector.VisitStmt(stmt);
}

void PostOrderVisitExprs(const Expr& expr, const std::function<void(const Expr&)>& fn) {
  ExprCollector collector(fn);
  collector.VisitExpr(expr);
}

void PostOrderVisitStmts(const Stmt& stmt, const std::function<void(const Stmt&)>& fn) {
  StmtCollector collector(fn);
  collector.VisitStmt(stmt);
}

Expr Substitute(const Expr& expr, const VarMap& vmap) {
  if (vmap.empty()) return expr;
  VarSubstituter substituter(vmap);
  return substituter.VisitExpr(expr);
}

Stmt Substitute(const Stmt& stmt, const VarMap& vmap) {
  if (vmap.empty()) return stmt;
  VarSubstituter substituter(vmap);
  return substituter.VisitStmt(stmt);
}

bool UsesVar(const Expr& expr, const std::function<bool(const VarNode*)>& pred) {
  bool found = false;
  PostOrderVisitExprs(expr, [&](const Expr& e) {
    if (const auto* v = e.as<VarNode>(); v != nullptr && pred(v)) found = true;
  });
  return found;
}

}  // namespace tessera
