// The well-formedness checker: one recursive walk with explicit scopes for variables and
// buffers, and a stack of the blocks entered (to tell loop variables used across a block
// boundary, and to collect each block's own buffer accesses).
#include "ir/verify.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/linear.h"
#include "ir/functor.h"

namespace tessera {
namespace {

bool ValidThreadTag(const std::string& tag) {
  for (const char* prefix : {"blockIdx.", "threadIdx.", "vthread."}) {
    std::string p = prefix;
    if (tag.size() == p.size() + 1 && tag.compare(0, p.size(), p) == 0) {
      char axis = tag.back();
      return axis == 'x' || axis == 'y' || axis == 'z';
    }
  }
  return false;
}

class Verifier {
 public:
  explicit Verifier(const PrimFunc& f) : f_(f) {}

  absl::Status Run() {
    for (const Buffer& b : f_->params) {
      if (!b.defined()) return Error("a parameter buffer is null");
      if (!params_.insert(b.get()).second) {
        return Error(absl::StrCat("buffer ", b.name(), " is a parameter twice"));
      }
      // Shape and stride variables of parameters are the function's free variables.
      for (const auto* dims : {&b.shape(), &b->strides}) {
        for (const Expr& e : *dims) {
          if (!e.defined()) return Error(absl::StrCat("buffer ", b.name(), " has a null extent"));
          DefineFreeVars(e);
        }
      }
      buffers_in_scope_.insert(b.get());
    }
    const auto* root = f_->body.as<BlockRealizeNode>();
    if (root == nullptr || !root->block.defined()) {
      return Error("the body is not the BlockRealize of a root block");
    }
    if (!root->block->iter_vars.empty()) {
      return Error(absl::StrCat("root block \"", root->block->name, "\" has iteration variables"));
    }
    return VisitStmt(f_->body);
  }

 private:
  struct VarInfo {
    bool is_loop = false;
    size_t block_depth = 0;  // blocks_.size() where a loop variable was defined
  };
  // One load or store by a block's own statements.
  struct Access {
    Buffer buffer;
    const std::vector<Expr>* indices;
    bool is_store;
  };
  struct BlockFrame {
    const BlockNode* block;
    bool has_iter_vars;
    std::vector<Access> accesses;
    std::vector<const ForNode*> loops;  // loops entered inside the block, outside nested blocks
  };

  absl::Status Error(const std::string& message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("verify ", f_.defined() ? f_->name : "", ": ", Where(), message));
  }

  // "block \"C\": " for the innermost block, or "".
  std::string Where() const {
    if (blocks_.empty()) return "";
    return absl::StrCat("block \"", blocks_.back().block->name, "\": ");
  }

  void DefineFreeVars(const Expr& e) {
    PostOrderVisitExprs(e, [this](const Expr& x) {
      if (const auto* v = x.as<VarNode>()) vars_.emplace(v, VarInfo{});
    });
  }

  absl::Status DefineVar(const Var& v, bool is_loop, const char* what) {
    if (!v.defined()) return Error(absl::StrCat("a ", what, " is null"));
    if (!v.dtype().is_integer()) {
      return Error(
          absl::StrCat(what, " ", v.name(), " has non-integer type ", v.dtype().ToString()));
    }
    if (!ever_defined_.insert(v.get()).second || vars_.count(v.get()) != 0) {
      return Error(absl::StrCat(what, " ", v.name(), " is defined twice"));
    }
    vars_.emplace(v.get(), VarInfo{is_loop, blocks_.size()});
    return absl::OkStatus();
  }

  // The innermost block with iteration variables, as a depth (size of blocks_ up to it).
  size_t IsolatingDepth() const {
    for (size_t i = blocks_.size(); i > 0; --i) {
      if (blocks_[i - 1].has_iter_vars) return i;
    }
    return 0;
  }

  absl::Status CheckBuffer(const Buffer& b, size_t num_indices, const char* access) {
    if (!b.defined()) return Error(absl::StrCat("a ", access, " has a null buffer"));
    if (buffers_in_scope_.count(b.get()) == 0) {
      return Error(absl::StrCat(access, " of buffer ", b.name(),
                                ", which is neither a parameter nor allocated by an enclosing "
                                "block"));
    }
    if (static_cast<int>(num_indices) != b.ndim()) {
      return Error(absl::StrCat(access, " of buffer ", b.name(), " has ", num_indices,
                                " indices for ", b.ndim(), " dimensions"));
    }
    return absl::OkStatus();
  }

  absl::Status ExpectBool(const Expr& e, const char* what) {
    TESSERA_RETURN_IF_ERROR(VisitExpr(e, what));
    if (!e.dtype().is_bool()) {
      return Error(absl::StrCat(what, " has type ", e.dtype().ToString(), ", not bool"));
    }
    return absl::OkStatus();
  }

  absl::Status VisitExpr(const Expr& e, const char* what) {
    if (!e.defined()) return Error(absl::StrCat(what, " is null"));
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
        return absl::OkStatus();
      case ExprKind::kVar: {
        const auto* v = e.as<VarNode>();
        auto it = vars_.find(v);
        if (it == vars_.end()) {
          return Error(absl::StrCat(what, " uses undefined variable ", v->name));
        }
        if (it->second.is_loop && IsolatingDepth() > it->second.block_depth) {
          return Error(absl::StrCat(what, " uses loop variable ", v->name,
                                    " of an enclosing loop outside the block; bind it through "
                                    "an iteration variable"));
        }
        return absl::OkStatus();
      }
      case ExprKind::kBinary: {
        const auto* op = e.as<BinaryNode>();
        TESSERA_RETURN_IF_ERROR(VisitExpr(op->a, what));
        TESSERA_RETURN_IF_ERROR(VisitExpr(op->b, what));
        if (op->a.dtype() != op->b.dtype()) {
          return Error(absl::StrCat(what, ": operands of ", BinaryOpName(op->op),
                                    " differ in type: ", op->a.dtype().ToString(), " vs ",
                                    op->b.dtype().ToString()));
        }
        return absl::OkStatus();
      }
      case ExprKind::kNot:
        return ExpectBool(e.as<NotNode>()->a, what);
      case ExprKind::kSelect: {
        const auto* op = e.as<SelectNode>();
        TESSERA_RETURN_IF_ERROR(ExpectBool(op->condition, what));
        TESSERA_RETURN_IF_ERROR(VisitExpr(op->true_value, what));
        return VisitExpr(op->false_value, what);
      }
      case ExprKind::kCast:
        return VisitExpr(e.as<CastNode>()->value, what);
      case ExprKind::kBufferLoad: {
        const auto* op = e.as<BufferLoadNode>();
        TESSERA_RETURN_IF_ERROR(CheckBuffer(op->buffer, op->indices.size(), "load"));
        for (const Expr& index : op->indices) TESSERA_RETURN_IF_ERROR(VisitExpr(index, what));
        if (!blocks_.empty()) blocks_.back().accesses.push_back({op->buffer, &op->indices, false});
        return absl::OkStatus();
      }
      case ExprKind::kCall: {
        const auto* op = e.as<CallNode>();
        if (op->op != CallOp::kExtern &&
            static_cast<int>(op->args.size()) != CallOpArity(op->op)) {
          return Error(absl::StrCat(what, ": ", CallOpName(op->op), " takes ", CallOpArity(op->op),
                                    " arguments, got ", op->args.size()));
        }
        for (const Expr& arg : op->args) TESSERA_RETURN_IF_ERROR(VisitExpr(arg, what));
        return absl::OkStatus();
      }
    }
    return Error(absl::StrCat(what, " has an unknown expression kind"));
  }

  absl::Status VisitStmt(const Stmt& s) {
    if (!s.defined()) return Error("a statement is null");
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        const auto* op = s.as<BufferStoreNode>();
        TESSERA_RETURN_IF_ERROR(CheckBuffer(op->buffer, op->indices.size(), "store"));
        for (const Expr& index : op->indices) {
          TESSERA_RETURN_IF_ERROR(VisitExpr(index, "store index"));
        }
        TESSERA_RETURN_IF_ERROR(VisitExpr(op->value, "stored value"));
        if (op->value.dtype() != op->buffer.dtype()) {
          return Error(absl::StrCat("store of ", op->value.dtype().ToString(), " into ",
                                    op->buffer.dtype().ToString(), " buffer ", op->buffer.name()));
        }
        if (!blocks_.empty()) blocks_.back().accesses.push_back({op->buffer, &op->indices, true});
        return absl::OkStatus();
      }
      case StmtKind::kSeq:
        for (const Stmt& child : s.as<SeqStmtNode>()->seq)
          TESSERA_RETURN_IF_ERROR(VisitStmt(child));
        return absl::OkStatus();
      case StmtKind::kIfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        TESSERA_RETURN_IF_ERROR(ExpectBool(op->condition, "if condition"));
        TESSERA_RETURN_IF_ERROR(VisitStmt(op->then_case));
        return op->else_case.defined() ? VisitStmt(op->else_case) : absl::OkStatus();
      }
      case StmtKind::kEvaluate:
        return VisitExpr(s.as<EvaluateNode>()->value, "evaluated expression");
      case StmtKind::kFor:
        return VisitFor(s.as<ForNode>());
      case StmtKind::kBlock:
        return Error(
            absl::StrCat("block \"", s.as<BlockNode>()->name, "\" is not inside a BlockRealize"));
      case StmtKind::kBlockRealize:
        return VisitBlockRealize(s.as<BlockRealizeNode>());
      case StmtKind::kAllocate: {
        const auto* op = s.as<AllocateNode>();
        if (!op->buffer.defined()) return Error("an allocation has a null buffer");
        TESSERA_RETURN_IF_ERROR(DefineBuffer(op->buffer));
        TESSERA_RETURN_IF_ERROR(VisitStmt(op->body));
        buffers_in_scope_.erase(op->buffer.get());
        return absl::OkStatus();
      }
    }
    return Error("unknown statement kind");
  }

  absl::Status VisitFor(const ForNode* op) {
    std::string name = op->loop_var.defined() ? op->loop_var.name() : "?";
    std::string what = absl::StrCat("extent of loop ", name);
    TESSERA_RETURN_IF_ERROR(VisitExpr(op->extent, what.c_str()));
    if (const int64_t* extent = AsConstInt(op->extent); extent != nullptr && *extent <= 0) {
      return Error(absl::StrCat("loop ", name, " has non-positive extent ", *extent));
    }
    if ((op->for_kind == ForKind::kThreadBinding) == op->thread_tag.empty()) {
      return Error(absl::StrCat(
          "loop ", name, " of kind ", ForKindName(op->for_kind),
          op->thread_tag.empty() ? " has no thread tag" : " has thread tag " + op->thread_tag));
    }
    if (!op->thread_tag.empty() && !ValidThreadTag(op->thread_tag)) {
      return Error(absl::StrCat("loop ", name, " has invalid thread tag \"", op->thread_tag,
                                "\" (expected blockIdx.[xyz], threadIdx.[xyz] or vthread.[xyz])"));
    }
    TESSERA_RETURN_IF_ERROR(DefineVar(op->loop_var, /*is_loop=*/true, "loop variable"));
    if (!blocks_.empty()) blocks_.back().loops.push_back(op);
    TESSERA_RETURN_IF_ERROR(VisitStmt(op->body));
    vars_.erase(op->loop_var.get());
    return absl::OkStatus();
  }

  absl::Status DefineBuffer(const Buffer& b) {
    if (params_.count(b.get()) != 0) {
      return Error(absl::StrCat("parameter buffer ", b.name(), " is allocated"));
    }
    if (!ever_allocated_.insert(b.get()).second) {
      return Error(absl::StrCat("buffer ", b.name(), " is allocated twice"));
    }
    for (const auto* dims : {&b.shape(), &b->strides}) {
      for (const Expr& e : *dims) TESSERA_RETURN_IF_ERROR(VisitExpr(e, "allocated buffer shape"));
    }
    buffers_in_scope_.insert(b.get());
    return absl::OkStatus();
  }

  absl::Status VisitRegions(const std::vector<BufferRegion>& regions, const char* what) {
    for (const BufferRegion& r : regions) {
      TESSERA_RETURN_IF_ERROR(CheckBuffer(r.buffer, r.region.size(), what));
      for (const Range& range : r.region) {
        TESSERA_RETURN_IF_ERROR(VisitExpr(range.min, what));
        TESSERA_RETURN_IF_ERROR(VisitExpr(range.extent, what));
      }
    }
    return absl::OkStatus();
  }

  absl::Status VisitBlockRealize(const BlockRealizeNode* op) {
    if (!op->block.defined()) return Error("a BlockRealize has a null block");
    const BlockNode* block = op->block.get();
    if (!block_names_.insert(block->name).second) {
      return Error(absl::StrCat("block name \"", block->name, "\" is used twice"));
    }
    if (op->iter_values.size() != block->iter_vars.size()) {
      return Error(absl::StrCat("block \"", block->name, "\" has ", block->iter_vars.size(),
                                " iteration variables but ", op->iter_values.size(),
                                " iter_values"));
    }
    for (const Expr& value : op->iter_values) {
      TESSERA_RETURN_IF_ERROR(VisitExpr(value, "iter_value"));
      if (!value.dtype().is_integer()) {
        return Error(absl::StrCat("iter_value of block \"", block->name, "\" has type ",
                                  value.dtype().ToString()));
      }
    }
    TESSERA_RETURN_IF_ERROR(ExpectBool(op->predicate, "predicate"));
    bool has_reduction = false;
    for (const IterVar& iv : block->iter_vars) {
      std::string name = iv.var.defined() ? iv.var.name() : "?";
      TESSERA_RETURN_IF_ERROR(VisitExpr(iv.dom.min, "iteration domain"));
      TESSERA_RETURN_IF_ERROR(VisitExpr(iv.dom.extent, "iteration domain"));
      if (const int64_t* extent = AsConstInt(iv.dom.extent); extent != nullptr && *extent <= 0) {
        return Error(absl::StrCat("iteration variable ", name, " of block \"", block->name,
                                  "\" has non-positive extent ", *extent));
      }
      has_reduction |= iv.kind == IterKind::kReduction;
    }
    if (block->init.defined() && !has_reduction) {
      return Error(absl::StrCat("block \"", block->name,
                                "\" has an init statement but no reduction iteration variable"));
    }

    blocks_.push_back(BlockFrame{block, !block->iter_vars.empty(), {}, {}});
    for (const IterVar& iv : block->iter_vars) {
      TESSERA_RETURN_IF_ERROR(DefineVar(iv.var, /*is_loop=*/false, "iteration variable"));
    }
    for (const Buffer& b : block->alloc_buffers) {
      if (!b.defined()) return Error("an allocated buffer is null");
      TESSERA_RETURN_IF_ERROR(DefineBuffer(b));
    }
    TESSERA_RETURN_IF_ERROR(VisitRegions(block->reads, "read region"));
    TESSERA_RETURN_IF_ERROR(VisitRegions(block->writes, "write region"));
    if (block->init.defined()) TESSERA_RETURN_IF_ERROR(VisitStmt(block->init));
    TESSERA_RETURN_IF_ERROR(VisitStmt(block->body));
    if (blocks_.size() > 1) TESSERA_RETURN_IF_ERROR(CheckAccessesDeclared());

    for (const IterVar& iv : block->iter_vars) vars_.erase(iv.var.get());
    for (const Buffer& b : block->alloc_buffers) buffers_in_scope_.erase(b.get());
    blocks_.pop_back();
    return absl::OkStatus();
  }

  // The innermost block's own loads and stores against its declared regions: each accessed
  // buffer must be declared (or allocated by the block), and an access that provably lies
  // outside every region declared for its buffer is an error. The proof binds iteration
  // variables to their domains and inner loop variables to their ranges; accesses it cannot
  // decide pass (the check is sound, not complete).
  absl::Status CheckAccessesDeclared() const {
    const BlockFrame& frame = blocks_.back();
    const BlockNode* block = frame.block;
    arith::Analyzer analyzer;
    for (const IterVar& iv : block->iter_vars) {
      if (Analyzable(iv.dom.min) && Analyzable(iv.dom.extent)) analyzer.Bind(iv.var, iv.dom);
    }
    for (const ForNode* loop : frame.loops) {
      if (Analyzable(loop->extent)) analyzer.Bind(loop->loop_var, Range{Expr(0), loop->extent});
    }
    for (const Access& access : frame.accesses) {
      bool allocated = false;
      for (const Buffer& a : block->alloc_buffers) allocated |= a.same_as(access.buffer);
      if (allocated) continue;
      std::vector<const BufferRegion*> regions;
      for (const BufferRegion& r : block->writes) {
        if (r.buffer.same_as(access.buffer)) regions.push_back(&r);
      }
      if (!access.is_store) {
        for (const BufferRegion& r : block->reads) {
          if (r.buffer.same_as(access.buffer)) regions.push_back(&r);
        }
      }
      const char* kind = access.is_store ? "stores to" : "loads";
      if (regions.empty()) {
        return Error(absl::StrCat(kind, " buffer ", access.buffer.name(),
                                  ", which is not among its ", access.is_store ? "write" : "read",
                                  " regions"));
      }
      int outside_dim = -1;
      for (const BufferRegion* r : regions) {
        outside_dim = OutsideDimension(&analyzer, *access.indices, *r);
        if (outside_dim < 0) break;
      }
      if (outside_dim >= 0) {
        return Error(absl::StrCat(kind, " buffer ", access.buffer.name(), " outside its declared ",
                                  access.is_store ? "write" : "read", " region (dimension ",
                                  outside_dim, ")"));
      }
    }
    return absl::OkStatus();
  }

  // Integer expressions of variables, immediates, + - * min max, and floordiv/floormod by a
  // non-zero constant: what the analyzer is asked about.
  static bool Analyzable(const Expr& e) {
    if (!e.defined() || !e.dtype().is_integer()) return false;
    if (e.as<IntImmNode>() != nullptr || e.as<VarNode>() != nullptr) return true;
    const auto* op = e.as<BinaryNode>();
    if (op == nullptr || op->a.dtype() != e.dtype() || op->b.dtype() != e.dtype()) return false;
    switch (op->op) {
      case BinaryOp::kAdd:
      case BinaryOp::kSub:
      case BinaryOp::kMul:
      case BinaryOp::kMin:
      case BinaryOp::kMax:
        return Analyzable(op->a) && Analyzable(op->b);
      case BinaryOp::kFloorDiv:
      case BinaryOp::kFloorMod: {
        const int64_t* divisor = AsConstInt(op->b);
        return divisor != nullptr && *divisor != 0 && Analyzable(op->a);
      }
      default:
        return false;
    }
  }

  // The first dimension in which `indices` provably lies outside `region`, or -1.
  static int OutsideDimension(arith::Analyzer* analyzer, const std::vector<Expr>& indices,
                              const BufferRegion& region) {
    for (size_t d = 0; d < indices.size() && d < region.region.size(); ++d) {
      const Expr& index = indices[d];
      const Range& range = region.region[d];
      if (!Analyzable(index) || !Analyzable(range.min) || !Analyzable(range.extent) ||
          index.dtype() != range.min.dtype() || index.dtype() != range.extent.dtype()) {
        continue;
      }
      if (analyzer->CanProveLess(index, range.min) ||
          analyzer->CanProveGreaterEqual(index, range.min + range.extent)) {
        return static_cast<int>(d);
      }
    }
    return -1;
  }

  const PrimFunc& f_;
  std::unordered_map<const VarNode*, VarInfo> vars_;
  std::unordered_set<const VarNode*> ever_defined_;
  std::unordered_set<const BufferNode*> params_;
  std::unordered_set<const BufferNode*> buffers_in_scope_;
  std::unordered_set<const BufferNode*> ever_allocated_;
  std::unordered_set<std::string> block_names_;
  std::vector<BlockFrame> blocks_;
};

// The bounds check (VerifyAccessesInBounds): one walk that keeps the constant range of every
// loop and iteration variable in scope, narrowed inside conditions that bound single
// variables, and a count of the enclosing conditions that do not (accesses under them are not
// judged).
class BoundsChecker {
 public:
  explicit BoundsChecker(const PrimFunc& f) : f_(f) {}

  absl::Status Run() { return VisitStmt(f_->body); }

 private:
  struct Interval {
    int64_t lo;
    int64_t hi;  // inclusive
  };
  using Ranges = std::unordered_map<const VarNode*, Interval>;

  absl::Status Error(const std::string& message) const {
    return absl::InvalidArgumentError(
        absl::StrCat("verify ", f_->name, ": ",
                     block_.empty() ? "" : absl::StrCat("block \"", block_, "\": "), message));
  }

  // The values `e` takes when it is affine, with constant coefficients, in variables of known
  // ranges; nullopt otherwise.
  std::optional<Interval> BoundOf(const Expr& e) const {
    std::vector<Var> vars;
    bool unknown = false;
    PostOrderVisitExprs(e, [&](const Expr& x) {
      if (const auto* v = x.as<VarNode>()) {
        if (ranges_.count(v) == 0) unknown = true;
        bool seen = false;
        for (const Var& known : vars) seen = seen || known.get() == v;
        if (!seen) vars.push_back(Var(std::static_pointer_cast<const VarNode>(x.node_ptr())));
      } else if (x.kind() == ExprKind::kBufferLoad || x.kind() == ExprKind::kCall) {
        unknown = true;
      }
    });
    if (unknown) return std::nullopt;
    std::optional<arith::LinearEquation> linear = arith::DetectLinearEquation(e, vars);
    if (!linear.has_value()) return std::nullopt;
    const int64_t* base = AsConstInt(linear->base);
    if (base == nullptr) return std::nullopt;
    __int128 lo = *base, hi = *base;
    for (size_t i = 0; i < vars.size(); ++i) {
      const int64_t* c = AsConstInt(linear->coeffs[i]);
      if (c == nullptr) return std::nullopt;
      const Interval r = ranges_.at(vars[i].get());
      const __int128 a = static_cast<__int128>(*c) * r.lo, b = static_cast<__int128>(*c) * r.hi;
      lo += std::min(a, b);
      hi += std::max(a, b);
    }
    constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
    if (lo < -kMax || hi > kMax) return std::nullopt;
    return Interval{static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
  }

  // Narrows ranges_ by `cond` (a conjunction of comparisons of one variable, with coefficient
  // +-1, against constants); false when some part of it does not narrow so.
  bool Narrow(const Expr& cond) {
    const auto* op = cond.as<BinaryNode>();
    if (op == nullptr) return false;
    if (op->op == BinaryOp::kAnd) {
      const bool a = Narrow(op->a);
      return Narrow(op->b) && a;
    }
    if (!BinaryOpIsComparison(op->op) || op->op == BinaryOp::kNE) return false;
    if (!op->a.dtype().is_integer() || op->a.dtype() != op->b.dtype()) return false;
    // lhs - rhs = c * v + base, compared with 0.
    const Expr diff = op->a - op->b;
    std::vector<Var> vars;
    bool other = false;
    PostOrderVisitExprs(diff, [&](const Expr& x) {
      if (const auto* v = x.as<VarNode>()) {
        bool seen = false;
        for (const Var& known : vars) seen = seen || known.get() == v;
        if (!seen) vars.push_back(Var(std::static_pointer_cast<const VarNode>(x.node_ptr())));
      } else if (x.kind() == ExprKind::kBufferLoad || x.kind() == ExprKind::kCall) {
        other = true;
      }
    });
    if (other || vars.size() != 1 || ranges_.count(vars[0].get()) == 0) return false;
    std::optional<arith::LinearEquation> linear = arith::DetectLinearEquation(diff, vars);
    if (!linear.has_value()) return false;
    const int64_t* c = AsConstInt(linear->coeffs[0]);
    const int64_t* base = AsConstInt(linear->base);
    if (c == nullptr || base == nullptr || (*c != 1 && *c != -1)) return false;
    // c * v + base OP 0; with c = -1 the comparison turns around: v OP' base.
    BinaryOp cmp = op->op;
    int64_t bound = -*base;  // v OP bound when c = 1
    if (*c == -1) {
      bound = *base;
      cmp = cmp == BinaryOp::kLT   ? BinaryOp::kGT
            : cmp == BinaryOp::kLE ? BinaryOp::kGE
            : cmp == BinaryOp::kGT ? BinaryOp::kLT
            : cmp == BinaryOp::kGE ? BinaryOp::kLE
                                   : cmp;
    }
    Interval& r = ranges_[vars[0].get()];
    switch (cmp) {
      case BinaryOp::kLT:
        r.hi = std::min(r.hi, bound - 1);
        break;
      case BinaryOp::kLE:
        r.hi = std::min(r.hi, bound);
        break;
      case BinaryOp::kGT:
        r.lo = std::max(r.lo, bound + 1);
        break;
      case BinaryOp::kGE:
        r.lo = std::max(r.lo, bound);
        break;
      case BinaryOp::kEQ:
        r.lo = std::max(r.lo, bound);
        r.hi = std::min(r.hi, bound);
        break;
      default:
        return false;
    }
    return true;
  }

  // Visits `body` under `cond`: with ranges_ narrowed by it, or not judged when it does not
  // narrow them (or leaves a variable without values: dead code).
  template <typename Visit>
  absl::Status Under(const Expr& cond, const Visit& visit) {
    const Ranges saved = ranges_;
    bool usable = Narrow(cond);
    for (const auto& [v, r] : ranges_) usable = usable && r.lo <= r.hi;
    if (!usable) ++unjudged_;
    absl::Status status = visit();
    if (!usable) --unjudged_;
    ranges_ = saved;
    return status;
  }

  absl::Status Unjudged(const std::function<absl::Status()>& visit) {
    ++unjudged_;
    absl::Status status = visit();
    --unjudged_;
    return status;
  }

  absl::Status CheckAccess(const Buffer& buffer, const std::vector<Expr>& indices,
                           const char* access) {
    if (unjudged_ > 0) return absl::OkStatus();
    for (size_t d = 0; d < indices.size() && d < buffer.shape().size(); ++d) {
      const int64_t* extent = AsConstInt(buffer.shape()[d]);
      if (extent == nullptr) continue;
      std::optional<Interval> values = BoundOf(indices[d]);
      if (!values.has_value() || (values->lo >= 0 && values->hi < *extent)) continue;
      return Error(absl::StrCat(access, " of ", buffer.name(), ": index ", d, " takes values ",
                                values->lo, "..", values->hi, ", outside its extent ", *extent));
    }
    return absl::OkStatus();
  }

  absl::Status VisitExpr(const Expr& e) {
    if (!e.defined()) return absl::OkStatus();
    switch (e.kind()) {
      case ExprKind::kBinary: {
        const auto* op = e.as<BinaryNode>();
        TESSERA_RETURN_IF_ERROR(VisitExpr(op->a));
        return VisitExpr(op->b);
      }
      case ExprKind::kNot:
        return VisitExpr(e.as<NotNode>()->a);
      case ExprKind::kSelect: {
        const auto* op = e.as<SelectNode>();
        TESSERA_RETURN_IF_ERROR(VisitExpr(op->condition));
        TESSERA_RETURN_IF_ERROR(Under(op->condition, [&] { return VisitExpr(op->true_value); }));
        return Unjudged([&] { return VisitExpr(op->false_value); });
      }
      case ExprKind::kCast:
        return VisitExpr(e.as<CastNode>()->value);
      case ExprKind::kBufferLoad: {
        const auto* op = e.as<BufferLoadNode>();
        for (const Expr& index : op->indices) TESSERA_RETURN_IF_ERROR(VisitExpr(index));
        return CheckAccess(op->buffer, op->indices, "load");
      }
      case ExprKind::kCall: {
        // An extern call's load arguments stand for addresses of tiles: not judged.
        const auto* op = e.as<CallNode>();
        if (op->op == CallOp::kExtern) return absl::OkStatus();
        for (const Expr& arg : op->args) TESSERA_RETURN_IF_ERROR(VisitExpr(arg));
        return absl::OkStatus();
      }
      default:
        return absl::OkStatus();
    }
  }

  absl::Status VisitStmt(const Stmt& s) {
    if (!s.defined()) return absl::OkStatus();
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        const auto* op = s.as<BufferStoreNode>();
        for (const Expr& index : op->indices) TESSERA_RETURN_IF_ERROR(VisitExpr(index));
        TESSERA_RETURN_IF_ERROR(VisitExpr(op->value));
        return CheckAccess(op->buffer, op->indices, "store");
      }
      case StmtKind::kSeq:
        for (const Stmt& child : s.as<SeqStmtNode>()->seq) {
          TESSERA_RETURN_IF_ERROR(VisitStmt(child));
        }
        return absl::OkStatus();
      case StmtKind::kIfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        TESSERA_RETURN_IF_ERROR(VisitExpr(op->condition));
        TESSERA_RETURN_IF_ERROR(Under(op->condition, [&] { return VisitStmt(op->then_case); }));
        return Unjudged([&] { return VisitStmt(op->else_case); });
      }
      case StmtKind::kEvaluate:
        return VisitExpr(s.as<EvaluateNode>()->value);
      case StmtKind::kFor: {
        const auto* op = s.as<ForNode>();
        const int64_t* extent = AsConstInt(op->extent);
        if (extent != nullptr && *extent > 0) {
          ranges_[op->loop_var.get()] = Interval{0, *extent - 1};
        }
        absl::Status status = VisitStmt(op->body);
        ranges_.erase(op->loop_var.get());
        return status;
      }
      case StmtKind::kBlockRealize:
        return VisitRealize(s.as<BlockRealizeNode>());
      case StmtKind::kBlock:
        return VisitBlock(s.as<BlockNode>());
      case StmtKind::kAllocate:
        return VisitStmt(s.as<AllocateNode>()->body);
    }
    return absl::OkStatus();
  }

  absl::Status VisitRealize(const BlockRealizeNode* op) {
    const BlockNode* block = op->block.get();
    if (block == nullptr) return absl::OkStatus();
    const int64_t* predicate = AsConstInt(op->predicate);
    const bool judged =
        unjudged_ == 0 && (!op->predicate.defined() || (predicate != nullptr && *predicate != 0));
    for (size_t i = 0; judged && i < op->iter_values.size() && i < block->iter_vars.size(); ++i) {
      const IterVar& iv = block->iter_vars[i];
      const int64_t* min = AsConstInt(iv.dom.min);
      const int64_t* extent = AsConstInt(iv.dom.extent);
      if (min == nullptr || extent == nullptr) continue;
      std::optional<Interval> values = BoundOf(op->iter_values[i]);
      if (!values.has_value() || (values->lo >= *min && values->hi < *min + *extent)) continue;
      const std::string outer = block_;
      block_ = block->name;
      absl::Status error = Error(
          absl::StrCat("iteration variable ", iv.var.name(), " is bound to values ", values->lo,
                       "..", values->hi, ", outside its domain ", *min, "..", *min + *extent - 1));
      block_ = outer;
      return error;
    }
    return VisitBlock(block);
  }

  absl::Status VisitBlock(const BlockNode* block) {
    const std::string outer = block_;
    block_ = block->name;
    for (const IterVar& iv : block->iter_vars) {
      const int64_t* min = AsConstInt(iv.dom.min);
      const int64_t* extent = AsConstInt(iv.dom.extent);
      if (min != nullptr && extent != nullptr && *extent > 0) {
        ranges_[iv.var.get()] = Interval{*min, *min + *extent - 1};
      }
    }
    absl::Status status = VisitStmt(block->init);
    if (status.ok()) status = VisitStmt(block->body);
    for (const IterVar& iv : block->iter_vars) ranges_.erase(iv.var.get());
    block_ = outer;
    return status;
  }

  const PrimFunc& f_;
  Ranges ranges_;
  int unjudged_ = 0;
  std::string block_;
};

}  // namespace

absl::Status VerifyWellFormed(const PrimFunc& f) {
  if (!f.defined()) return absl::InvalidArgumentError("verify: the function is null");
  return Verifier(f).Run();
}

absl::Status VerifyAccessesInBounds(const PrimFunc& f) {
  if (!f.defined()) return absl::InvalidArgumentError("verify: the function is null");
  return BoundsChecker(f).Run();
}

}  // namespace tessera
