// A recursive walk: a statement's count is its loops' extents times its body's count. Only
// value expressions are visited (never buffer indices), as in TVM's FlopEstimator.
#include "ir/flops.h"

#include <algorithm>

namespace tessera {
namespace {

double ExprFlops(const Expr& e) {
  if (!e.defined()) return 0;
  switch (e.kind()) {
    case ExprKind::kBinary: {
      const auto* op = e.as<BinaryNode>();
      if (BinaryOpIsComparison(op->op) || BinaryOpIsLogical(op->op)) return 0;
      return 1 + ExprFlops(op->a) + ExprFlops(op->b);
    }
    case ExprKind::kSelect: {
      const auto* op = e.as<SelectNode>();
      return std::max(ExprFlops(op->true_value), ExprFlops(op->false_value));
    }
    case ExprKind::kCast:
      return ExprFlops(e.as<CastNode>()->value);
    case ExprKind::kCall: {
      double total = 1;
      for (const Expr& arg : e.as<CallNode>()->args) total += ExprFlops(arg);
      return total;
    }
    default:
      return 0;  // immediates, variables, loads, not
  }
}

double StmtFlops(const Stmt& s) {
  if (!s.defined()) return 0;
  switch (s.kind()) {
    case StmtKind::kBufferStore:
      return ExprFlops(s.as<BufferStoreNode>()->value);
    case StmtKind::kSeq: {
      double total = 0;
      for (const Stmt& child : s.as<SeqStmtNode>()->seq) total += StmtFlops(child);
      return total;
    }
    case StmtKind::kIfThenElse: {
      const auto* op = s.as<IfThenElseNode>();
      return std::max(StmtFlops(op->then_case), StmtFlops(op->else_case));
    }
    case StmtKind::kEvaluate:
      return ExprFlops(s.as<EvaluateNode>()->value);
    case StmtKind::kFor: {
      const auto* op = s.as<ForNode>();
      const int64_t* extent = AsConstInt(op->extent);
      return (extent != nullptr ? static_cast<double>(*extent) : 1.0) * StmtFlops(op->body);
    }
    case StmtKind::kBlock: {
      const auto* op = s.as<BlockNode>();
      return StmtFlops(op->body) + StmtFlops(op->init);
    }
    case StmtKind::kBlockRealize:
      return StmtFlops(s.as<BlockRealizeNode>()->block);
    case StmtKind::kAllocate:
      return StmtFlops(s.as<AllocateNode>()->body);
  }
  return 0;
}

}  // namespace

double EstimateFlops(const PrimFunc& func) {
  if (!func.defined()) return 0;
  return StmtFlops(func.body());
}

}  // namespace tessera
