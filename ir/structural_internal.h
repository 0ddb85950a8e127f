// Internal to ir/: the one traversal behind StructuralEqual, StructuralDiff and
// StructuralHash. The walker visits two trees in lockstep and hands every leaf (integers,
// doubles, strings, dtypes, node kinds, counts) and every variable or buffer occurrence to a
// reducer. The equality reducer compares the two sides; the hash reducer is run on (x, x)
// and feeds the left side into its stream. Because both use this same field order, equal
// values hash equally by construction.
//
// Reducer interface (each bool method returns false to stop at a difference):
//   void Push(const char* field); void PushIndex(int64_t i); void PushKey(const std::string&);
//   void Pop();                                            // path, for diffs
//   bool Defined(bool a, bool b);                          // null handles
//   bool ExprHead(const Expr& a, const Expr& b);  bool StmtHead(const Stmt& a, const Stmt& b);
//   bool Count(size_t a, size_t b);  bool Int(int64_t a, int64_t b);
//   bool Double(double a, double b);  bool Str(const std::string& a, const std::string& b);
//   bool DType(DataType a, DataType b);
//   PairResult PairVar(const Var& a, const Var& b, bool define);
//   PairResult PairBuffer(const Buffer& a, const Buffer& b, bool define);
#ifndef TESSERA_IR_STRUCTURAL_INTERNAL_H_
#define TESSERA_IR_STRUCTURAL_INTERNAL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/function.h"

namespace tessera {
namespace structural_internal {

// What a reducer made of a variable or buffer occurrence: a mismatch, a repeat of a known
// pairing, or a new pairing whose definition (dtype, shape, ...) the walker then visits.
enum class PairResult { kMismatch, kPaired, kNew };

// The attribute holding a function's own name; ignored like the name itself.
inline constexpr char kGlobalSymbolAttr[] = "global_symbol";

inline const char* AnnotationTypeName(const AnnotationValue& v) {
  static constexpr const char* kNames[] = {"int", "float", "str", "expr", "ints"};
  return kNames[v.index()];
}

template <typename R>
class Walker {
 public:
  explicit Walker(R* r) : r_(r) {}

  bool Func(const PrimFuncNode& a, const PrimFuncNode& b) {
    {
      Scope s(r_, "params");
      if (!r_->Count(a.params.size(), b.params.size())) return false;
    }
    for (size_t i = 0; i < a.params.size(); ++i) {
      Scope s(r_, "params", i);
      if (!Buf(a.params[i], b.params[i], /*define=*/true)) return false;
    }
    {
      Scope s(r_, "attrs");
      if (!Annots(a.attrs, b.attrs, kGlobalSymbolAttr)) return false;
    }
    Scope s(r_, "body");
    return S(a.body, b.body);
  }

  bool E(const Expr& a, const Expr& b) {
    if (!r_->Defined(a.defined(), b.defined())) return false;
    if (!a.defined()) return true;
    if (!r_->ExprHead(a, b)) return false;
    {
      Scope s(r_, "dtype");
      if (!r_->DType(a.dtype(), b.dtype())) return false;
    }
    switch (a.kind()) {
      case ExprKind::kIntImm:
        return r_->Int(a.as<IntImmNode>()->value, b.as<IntImmNode>()->value);
      case ExprKind::kFloatImm:
        return r_->Double(a.as<FloatImmNode>()->value, b.as<FloatImmNode>()->value);
      case ExprKind::kVar:
        return VarRef(AsVar(a), AsVar(b), /*define=*/false);
      case ExprKind::kBinary: {
        const auto* x = a.as<BinaryNode>();
        const auto* y = b.as<BinaryNode>();
        return Field("op", BinaryOpName(x->op), BinaryOpName(y->op)) && Field("a", x->a, y->a) &&
               Field("b", x->b, y->b);
      }
      case ExprKind::kNot:
        return Field("a", a.as<NotNode>()->a, b.as<NotNode>()->a);
      case ExprKind::kSelect: {
        const auto* x = a.as<SelectNode>();
        const auto* y = b.as<SelectNode>();
        return Field("condition", x->condition, y->condition) &&
               Field("true_value", x->true_value, y->true_value) &&
               Field("false_value", x->false_value, y->false_value);
      }
      case ExprKind::kCast:
        return Field("value", a.as<CastNode>()->value, b.as<CastNode>()->value);
      case ExprKind::kBufferLoad: {
        const auto* x = a.as<BufferLoadNode>();
        const auto* y = b.as<BufferLoadNode>();
        Scope s(r_, "buffer");
        if (!Buf(x->buffer, y->buffer, /*define=*/false)) return false;
        s.Reset();
        return Exprs("indices", x->indices, y->indices);
      }
      case ExprKind::kCall: {
        const auto* x = a.as<CallNode>();
        const auto* y = b.as<CallNode>();
        // The name only exists for extern calls (and entering it only for them keeps the
        // hashes of math calls what they were before extern calls existed).
        return Field("op", CallOpName(x->op), CallOpName(y->op)) &&
               (x->op != CallOp::kExtern || Field("name", x->name, y->name)) &&
               Exprs("args", x->args, y->args);
      }
    }
    return false;
  }

  bool S(const Stmt& a, const Stmt& b) {
    if (!r_->Defined(a.defined(), b.defined())) return false;
    if (!a.defined()) return true;
    if (!r_->StmtHead(a, b)) return false;
    switch (a.kind()) {
      case StmtKind::kBufferStore: {
        const auto* x = a.as<BufferStoreNode>();
        const auto* y = b.as<BufferStoreNode>();
        {
          Scope s(r_, "buffer");
          if (!Buf(x->buffer, y->buffer, /*define=*/false)) return false;
        }
        return Field("value", x->value, y->value) && Exprs("indices", x->indices, y->indices);
      }
      case StmtKind::kSeq: {
        const auto& x = a.as<SeqStmtNode>()->seq;
        const auto& y = b.as<SeqStmtNode>()->seq;
        Scope s(r_, "seq");
        if (!r_->Count(x.size(), y.size())) return false;
        s.Reset();
        for (size_t i = 0; i < x.size(); ++i) {
          Scope item(r_, "seq", i);
          if (!S(x[i], y[i])) return false;
        }
        return true;
      }
      case StmtKind::kIfThenElse: {
        const auto* x = a.as<IfThenElseNode>();
        const auto* y = b.as<IfThenElseNode>();
        return Field("condition", x->condition, y->condition) &&
               StmtField("then_case", x->then_case, y->then_case) &&
               StmtField("else_case", x->else_case, y->else_case);
      }
      case StmtKind::kEvaluate:
        return Field("value", a.as<EvaluateNode>()->value, b.as<EvaluateNode>()->value);
      case StmtKind::kFor: {
        const auto* x = a.as<ForNode>();
        const auto* y = b.as<ForNode>();
        {
          Scope s(r_, "loop_var");
          if (!VarRef(x->loop_var, y->loop_var, /*define=*/true)) return false;
        }
        if (!Field("extent", x->extent, y->extent) ||
            !Field("kind", ForKindName(x->for_kind), ForKindName(y->for_kind)) ||
            !Field("thread_tag", x->thread_tag, y->thread_tag)) {
          return false;
        }
        {
          Scope s(r_, "annotations");
          if (!Annots(x->annotations, y->annotations, nullptr)) return false;
        }
        return StmtField("body", x->body, y->body);
      }
      case StmtKind::kBlock:
        return BlockFields(*a.as<BlockNode>(), *b.as<BlockNode>());
      case StmtKind::kBlockRealize: {
        const auto* x = a.as<BlockRealizeNode>();
        const auto* y = b.as<BlockRealizeNode>();
        if (!Exprs("iter_values", x->iter_values, y->iter_values) ||
            !Field("predicate", x->predicate, y->predicate)) {
          return false;
        }
        Scope s(r_, "block");
        if (!r_->Defined(x->block.defined(), y->block.defined())) return false;
        return !x->block.defined() || BlockFields(*x->block.get(), *y->block.get());
      }
      case StmtKind::kAllocate: {
        const auto* x = a.as<AllocateNode>();
        const auto* y = b.as<AllocateNode>();
        {
          Scope s(r_, "buffer");
          if (!Buf(x->buffer, y->buffer, /*define=*/true)) return false;
        }
        return StmtField("body", x->body, y->body);
      }
    }
    return false;
  }

 private:
  // Pushes a path segment for its lifetime (or until Reset).
  class Scope {
   public:
    Scope(R* r, const char* field) : r_(r) { r_->Push(field); }
    Scope(R* r, const char* field, size_t index) : r_(r), depth_(2) {
      r_->Push(field);
      r_->PushIndex(static_cast<int64_t>(index));
    }
    Scope(R* r, const std::string& key) : r_(r) { r_->PushKey(key); }
    ~Scope() { Reset(); }
    void Reset() {
      for (; depth_ > 0; --depth_) r_->Pop();
    }

   private:
    R* r_;
    int depth_ = 1;
  };

  static Var AsVar(const Expr& e) {
    return Var(std::static_pointer_cast<const VarNode>(e.node_ptr()));
  }

  bool Field(const char* field, const Expr& a, const Expr& b) {
    Scope s(r_, field);
    return E(a, b);
  }
  bool Field(const char* field, const std::string& a, const std::string& b) {
    Scope s(r_, field);
    return r_->Str(a, b);
  }
  bool StmtField(const char* field, const Stmt& a, const Stmt& b) {
    Scope s(r_, field);
    return S(a, b);
  }

  bool Exprs(const char* field, const std::vector<Expr>& a, const std::vector<Expr>& b) {
    {
      Scope s(r_, field);
      if (!r_->Count(a.size(), b.size())) return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
      Scope s(r_, field, i);
      if (!E(a[i], b[i])) return false;
    }
    return true;
  }

  bool VarRef(const Var& a, const Var& b, bool define) {
    if (!r_->Defined(a.defined(), b.defined())) return false;
    if (!a.defined()) return true;
    switch (r_->PairVar(a, b, define)) {
      case PairResult::kMismatch:
        return false;
      case PairResult::kPaired:
        return true;
      case PairResult::kNew: {
        Scope s(r_, "dtype");
        return r_->DType(a.dtype(), b.dtype());
      }
    }
    return false;
  }

  bool Buf(const Buffer& a, const Buffer& b, bool define) {
    if (!r_->Defined(a.defined(), b.defined())) return false;
    if (!a.defined()) return true;
    switch (r_->PairBuffer(a, b, define)) {
      case PairResult::kMismatch:
        return false;
      case PairResult::kPaired:
        return true;
      case PairResult::kNew:
        break;
    }
    {
      Scope s(r_, "dtype");
      if (!r_->DType(a.dtype(), b.dtype())) return false;
    }
    return Exprs("shape", a.shape(), b.shape()) && Field("scope", a.scope(), b.scope()) &&
           Exprs("strides", a->strides, b->strides);
  }

  bool Region(const BufferRegion& a, const BufferRegion& b) {
    {
      Scope s(r_, "buffer");
      if (!Buf(a.buffer, b.buffer, /*define=*/false)) return false;
    }
    {
      Scope s(r_, "region");
      if (!r_->Count(a.region.size(), b.region.size())) return false;
    }
    for (size_t i = 0; i < a.region.size(); ++i) {
      Scope s(r_, "region", i);
      if (!Field("min", a.region[i].min, b.region[i].min) ||
          !Field("extent", a.region[i].extent, b.region[i].extent)) {
        return false;
      }
    }
    return true;
  }

  bool Regions(const char* field, const std::vector<BufferRegion>& a,
               const std::vector<BufferRegion>& b) {
    {
      Scope s(r_, field);
      if (!r_->Count(a.size(), b.size())) return false;
    }
    for (size_t i = 0; i < a.size(); ++i) {
      Scope s(r_, field, i);
      if (!Region(a[i], b[i])) return false;
    }
    return true;
  }

  bool BlockFields(const BlockNode& a, const BlockNode& b) {
    if (!Field("name", a.name, b.name)) return false;
    {
      Scope s(r_, "iter_vars");
      if (!r_->Count(a.iter_vars.size(), b.iter_vars.size())) return false;
    }
    for (size_t i = 0; i < a.iter_vars.size(); ++i) {
      Scope s(r_, "iter_vars", i);
      const IterVar& x = a.iter_vars[i];
      const IterVar& y = b.iter_vars[i];
      {
        Scope v(r_, "var");
        if (!VarRef(x.var, y.var, /*define=*/true)) return false;
      }
      Scope dom(r_, "dom");
      if (!Field("min", x.dom.min, y.dom.min) || !Field("extent", x.dom.extent, y.dom.extent)) {
        return false;
      }
      dom.Reset();
      if (!Field("kind", IterKindName(x.kind), IterKindName(y.kind))) return false;
    }
    {
      Scope s(r_, "alloc_buffers");
      if (!r_->Count(a.alloc_buffers.size(), b.alloc_buffers.size())) return false;
    }
    for (size_t i = 0; i < a.alloc_buffers.size(); ++i) {
      Scope s(r_, "alloc_buffers", i);
      if (!Buf(a.alloc_buffers[i], b.alloc_buffers[i], /*define=*/true)) return false;
    }
    if (!Regions("reads", a.reads, b.reads) || !Regions("writes", a.writes, b.writes) ||
        !StmtField("init", a.init, b.init) || !StmtField("body", a.body, b.body)) {
      return false;
    }
    Scope s(r_, "annotations");
    return Annots(a.annotations, b.annotations, nullptr);
  }

  // Compares annotation maps, leaving out the key `skip` (if not null) on both sides.
  bool Annots(const Annotations& a, const Annotations& b, const char* skip) {
    std::vector<const Annotations::value_type*> x, y;
    for (const auto& kv : a) {
      if (skip == nullptr || kv.first != skip) x.push_back(&kv);
    }
    for (const auto& kv : b) {
      if (skip == nullptr || kv.first != skip) y.push_back(&kv);
    }
    if (!r_->Count(x.size(), y.size())) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!r_->Str(x[i]->first, y[i]->first)) return false;
      Scope s(r_, x[i]->first);
      if (!AnnotValue(x[i]->second, y[i]->second)) return false;
    }
    return true;
  }

  bool AnnotValue(const AnnotationValue& a, const AnnotationValue& b) {
    if (!r_->Str(AnnotationTypeName(a), AnnotationTypeName(b))) return false;
    if (const auto* v = std::get_if<int64_t>(&a)) return r_->Int(*v, std::get<int64_t>(b));
    if (const auto* v = std::get_if<double>(&a)) return r_->Double(*v, std::get<double>(b));
    if (const auto* v = std::get_if<std::string>(&a)) return r_->Str(*v, std::get<std::string>(b));
    if (const auto* v = std::get_if<Expr>(&a)) return E(*v, std::get<Expr>(b));
    const auto& x = std::get<std::vector<int64_t>>(a);
    const auto& y = std::get<std::vector<int64_t>>(b);
    if (!r_->Count(x.size(), y.size())) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      r_->PushIndex(static_cast<int64_t>(i));
      bool ok = r_->Int(x[i], y[i]);
      r_->Pop();
      if (!ok) return false;
    }
    return true;
  }

  R* r_;
};

}  // namespace structural_internal
}  // namespace tessera

#endif  // TESSERA_IR_STRUCTURAL_INTERNAL_H_
