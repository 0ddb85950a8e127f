#include "ir/stmt.h"

#include "base/check.h"

namespace tessera {

const char* ForKindName(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial: return "serial";
    case ForKind::kParallel: return "parallel";
    case ForKind::kVectorized: return "vectorized";
    case ForKind::kUnrolled: return "unroll";
    case ForKind::kThreadBinding: return "thread_binding";
  }
  return "?";
}

bool ParseForKind(const std::string& name, ForKind* kind) {
  for (ForKind k : {ForKind::kSerial, ForKind::kParallel, ForKind::kVectorized,
                    ForKind::kUnrolled, ForKind::kThreadBinding}) {
    if (name == ForKindName(k)) {
      *kind = k;
      return true;
    }
  }
  return false;
}

const char* IterKindName(IterKind kind) { return kind == IterKind::kSpatial ? "S" : "R"; }

BufferRegion BufferRegion::Full(const Buffer& buffer) {
  BufferRegion region;
  region.buffer = buffer;
  for (const Expr& extent : buffer.shape()) region.region.push_back(Range{Expr(0), extent});
  return region;
}

Stmt BufferStore(Buffer buffer, Expr value, std::vector<Expr> indices) {
  TESSERA_CHECK_EQ(static_cast<int>(indices.size()), buffer.ndim()) << "store to " << buffer.name();
  if (value.dtype() != buffer.dtype()) {
    // Allow immediates of another type (e.g. `0` into a float buffer).
    if (const int64_t* v = AsConstInt(value)) {
      value = MakeConst(buffer.dtype(), static_cast<double>(*v));
    } else if (const auto* f = value.as<FloatImmNode>()) {
      value = MakeConst(buffer.dtype(), f->value);
    }
  }
  TESSERA_CHECK(value.dtype() == buffer.dtype())
      << "store of " << value.dtype().ToString() << " into " << buffer.dtype().ToString()
      << " buffer " << buffer.name();
  return Stmt(std::make_shared<const BufferStoreNode>(std::move(buffer), std::move(value),
                                                      std::move(indices)));
}

Stmt SeqStmt(std::vector<Stmt> seq) {
  std::vector<Stmt> flat;
  for (Stmt& s : seq) {
    if (!s.defined()) continue;
    if (const auto* inner = s.as<SeqStmtNode>()) {
      flat.insert(flat.end(), inner->seq.begin(), inner->seq.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<const SeqStmtNode>(std::move(flat)));
}

Stmt IfThenElse(Expr condition, Stmt then_case, Stmt else_case) {
  return Stmt(std::make_shared<const IfThenElseNode>(std::move(condition), std::move(then_case),
                                                     std::move(else_case)));
}

Stmt Evaluate(Expr value) { return Stmt(std::make_shared<const EvaluateNode>(std::move(value))); }

Stmt For(Var loop_var, Expr extent, ForKind kind, Stmt body, std::string thread_tag,
         Annotations annotations) {
  TESSERA_CHECK((kind == ForKind::kThreadBinding) == !thread_tag.empty())
      << "thread_tag must be set exactly for thread_binding loops";
  return Stmt(std::make_shared<const ForNode>(std::move(loop_var), std::move(extent), kind,
                                              std::move(thread_tag), std::move(annotations),
                                              std::move(body)));
}

Block MakeBlock(const BlockNode& node) { return Block(std::make_shared<const BlockNode>(node)); }

Stmt BlockRealize(std::vector<Expr> iter_values, Expr predicate, Block block) {
  TESSERA_CHECK_EQ(iter_values.size(), block->iter_vars.size()) << "block " << block->name;
  return Stmt(std::make_shared<const BlockRealizeNode>(std::move(iter_values),
                                                       std::move(predicate), std::move(block)));
}

Stmt Allocate(Buffer buffer, Stmt body) {
  return Stmt(std::make_shared<const AllocateNode>(std::move(buffer), std::move(body)));
}

Expr True() { return IntImm(DataType::Bool(), 1); }
Expr False() { return IntImm(DataType::Bool(), 0); }

void SplitConjuncts(const Expr& condition, std::vector<Expr>* out) {
  if (!condition.defined()) return;
  const auto* op = condition.as<BinaryNode>();
  if (op != nullptr && op->op == BinaryOp::kAnd) {
    SplitConjuncts(op->a, out);
    SplitConjuncts(op->b, out);
  } else if (!IsConstInt(condition, 1)) {
    out->push_back(condition);
  }
}

Expr Conjunction(const std::vector<Expr>& conditions) {
  Expr out;
  for (const Expr& c : conditions) out = out.defined() ? And(out, c) : c;
  return out;
}

}  // namespace tessera
