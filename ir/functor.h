// Visitors and mutators over expressions and statements.
//
// IRVisitor walks every expression and statement (children before nothing: pre-order
// dispatch, override a VisitExpr_/VisitStmt_ and call the base to keep descending).
// IRMutator rebuilds the tree bottom-up and returns the very same node when nothing below it
// changed, so `result.same_as(input)` tells whether a pass did anything. Buffers referenced
// by loads, stores, regions, allocations and params go through VisitBuffer, which a pass can
// override to replace buffers everywhere at once.
#ifndef TESSERA_IR_FUNCTOR_H_
#define TESSERA_IR_FUNCTOR_H_

#include <functional>
#include <unordered_map>

#include "ir/function.h"
#include "ir/stmt.h"

namespace tessera {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void VisitExpr(const Expr& e);
  virtual void VisitStmt(const Stmt& s);

 protected:
  virtual void VisitExpr_(const IntImmNode* op);
  virtual void VisitExpr_(const FloatImmNode* op);
  virtual void VisitExpr_(const VarNode* op);
  virtual void VisitExpr_(const BinaryNode* op);
  virtual void VisitExpr_(const NotNode* op);
  virtual void VisitExpr_(const SelectNode* op);
  virtual void VisitExpr_(const CastNode* op);
  virtual void VisitExpr_(const BufferLoadNode* op);
  virtual void VisitExpr_(const CallNode* op);

  virtual void VisitStmt_(const BufferStoreNode* op);
  virtual void VisitStmt_(const SeqStmtNode* op);
  virtual void VisitStmt_(const IfThenElseNode* op);
  virtual void VisitStmt_(const EvaluateNode* op);
  virtual void VisitStmt_(const ForNode* op);
  virtual void VisitStmt_(const BlockNode* op);
  virtual void VisitStmt_(const BlockRealizeNode* op);
  virtual void VisitStmt_(const AllocateNode* op);

  virtual void VisitBufferRegion(const BufferRegion& region);
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr VisitExpr(const Expr& e);
  virtual Stmt VisitStmt(const Stmt& s);
  // Replaces a buffer wherever it is referenced. Default: unchanged.
  virtual Buffer VisitBuffer(const Buffer& buffer) { return buffer; }

 protected:
  // `self` is the handle of `op`, returned when nothing changes.
  virtual Expr VisitExpr_(const IntImmNode* op, const Expr& self);
  virtual Expr VisitExpr_(const FloatImmNode* op, const Expr& self);
  virtual Expr VisitExpr_(const VarNode* op, const Expr& self);
  virtual Expr VisitExpr_(const BinaryNode* op, const Expr& self);
  virtual Expr VisitExpr_(const NotNode* op, const Expr& self);
  virtual Expr VisitExpr_(const SelectNode* op, const Expr& self);
  virtual Expr VisitExpr_(const CastNode* op, const Expr& self);
  virtual Expr VisitExpr_(const BufferLoadNode* op, const Expr& self);
  virtual Expr VisitExpr_(const CallNode* op, const Expr& self);

  virtual Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const SeqStmtNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const IfThenElseNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const EvaluateNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const ForNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const BlockNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const BlockRealizeNode* op, const Stmt& self);
  virtual Stmt VisitStmt_(const AllocateNode* op, const Stmt& self);

  // Helpers: mutate each element; `*changed` is set when any element changed.
  std::vector<Expr> VisitExprs(const std::vector<Expr>& exprs, bool* changed);
  Range VisitRange(const Range& range, bool* changed);
  BufferRegion VisitBufferRegion(const BufferRegion& region, bool* changed);
};

// Calls `fn` on every expression under `stmt`/`expr`, children before parents.
void PostOrderVisitExprs(const Stmt& stmt, const std::function<void(const Expr&)>& fn);
void PostOrderVisitExprs(const Expr& expr, const std::function<void(const Expr&)>& fn);
// Calls `fn` on every statement (post-order: children first).
void PostOrderVisitStmts(const Stmt& stmt, const std::function<void(const Stmt&)>& fn);

// Replaces variables by expressions (by identity). Unmapped variables stay.
using VarMap = std::unordered_map<Var, Expr, VarIdentityHash, VarIdentityEqual>;
Expr Substitute(const Expr& expr, const VarMap& vmap);
Stmt Substitute(const Stmt& stmt, const VarMap& vmap);

// True if `expr` refers to any of the variables for which `pred` holds.
bool UsesVar(const Expr& expr, const std::function<bool(const VarNode*)>& pred);

}  // namespace tessera

#endif  // TESSERA_IR_FUNCTOR_H_
