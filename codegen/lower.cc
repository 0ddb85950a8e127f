#include "codegen/lower.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/compact_buffers.h"
#include "codegen/lower_internal.h"
#include "codegen/panel_prefetch.h"
#include "ir/arith/analyzer.h"
#include "ir/functor.h"

namespace tessera {
namespace {

bool IsTrue(const Expr& e) { return !e.defined() || IsConstInt(e, 1); }

// a + b and a * b with the trivial cases folded, so flattened indices stay readable
// without a full simplifier.
Expr AddIndex(const Expr& a, const Expr& b) {
  const int64_t* ca = AsConstInt(a);
  const int64_t* cb = AsConstInt(b);
  if (ca && cb) return IntImm(a.dtype(), *ca + *cb);
  if (ca && *ca == 0) return b;
  if (cb && *cb == 0) return a;
  return a + b;
}

Expr MulIndex(const Expr& a, const Expr& b) {
  const int64_t* ca = AsConstInt(a);
  const int64_t* cb = AsConstInt(b);
  if (ca && cb) return IntImm(a.dtype(), *ca * *cb);
  if ((ca && *ca == 0) || (cb && *cb == 0)) return IntImm(a.dtype(), 0);
  if (ca && *ca == 1) return b;
  if (cb && *cb == 1) return a;
  return a * b;
}

// ---- Step 1: blocks -> plain statements ------------------------------------------------

class BlockRemover : public IRMutator {
 public:
  const absl::Status& status() const { return status_; }

 protected:
  Expr VisitExpr_(const VarNode*, const Expr& self) override {
    auto it = vmap_.find(Var(std::static_pointer_cast<const VarNode>(self.node_ptr())));
    return it == vmap_.end() ? self : it->second;
  }

  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(
          absl::StrCat("lower: block ", op->name, " is not under a BlockRealize"));
    }
    return self;
  }

  Stmt VisitStmt_(const BlockRealizeNode* op, const Stmt&) override {
    const BlockNode* block = op->block.get();
    bool unused = false;
    std::vector<Expr> values = VisitExprs(op->iter_values, &unused);
    Expr predicate = op->predicate.defined() ? VisitExpr(op->predicate) : Expr();
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      vmap_[block->iter_vars[i].var] = values[i];
    }
    Stmt body = VisitStmt(block->body);
    if (block->init.defined()) {
      Expr first_step;  // every reduction iter var at the start of its domain
      for (size_t i = 0; i < block->iter_vars.size(); ++i) {
        const IterVar& iv = block->iter_vars[i];
        if (iv.kind != IterKind::kReduction) continue;
        Expr min = VisitExpr(iv.dom.min);
        if (min.dtype() != values[i].dtype()) min = Cast(values[i].dtype(), min);
        Expr is_first = EQ(values[i], min);
        first_step = first_step.defined() ? And(first_step, is_first) : is_first;
      }
      Stmt init = VisitStmt(block->init);
      if (first_step.defined()) init = IfThenElse(first_step, init);
      body = SeqStmt({init, body});
    }
    for (auto it = block->alloc_buffers.rbegin(); it != block->alloc_buffers.rend(); ++it) {
      body = Allocate(*it, body);
    }
    if (!IsTrue(predicate)) body = IfThenElse(predicate, body);
    for (const IterVar& iv : block->iter_vars) vmap_.erase(iv.var);
    return body;
  }

 private:
  VarMap vmap_;
  absl::Status status_;
};

// ---- Step 2: multi-dimensional buffers -> 1-D -------------------------------------------

class BufferFlattener : public IRMutator {
 public:
  // Registers the flat replacement of `buffer` and returns it.
  absl::StatusOr<Buffer> Flatten(const Buffer& buffer) {
    const BufferNode* node = buffer.get();
    if (!node->strides.empty() && node->strides.size() != node->shape.size()) {
      return absl::InvalidArgumentError(absl::StrCat("lower: buffer ", node->name, " has ",
                                                     node->strides.size(), " strides for ",
                                                     node->shape.size(), " dimensions"));
    }
    Expr size;
    if (node->strides.empty()) {
      size = Expr(1);
      for (const Expr& extent : node->shape) size = MulIndex(size, extent);
    } else {
      // One past the largest reachable element: 1 + sum((extent - 1) * stride).
      size = Expr(1);
      for (size_t d = 0; d < node->shape.size(); ++d) {
        size = AddIndex(size, MulIndex(AddIndex(node->shape[d], Expr(-1)), node->strides[d]));
      }
    }
    Buffer flat = Buffer::Make(node->name, node->dtype, {size}, node->scope);
    flat_[buffer] = flat;
    strides_[buffer] = StridesOf(*node);
    return flat;
  }

  const absl::Status& status() const { return status_; }

 protected:
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    bool unused = false;
    std::vector<Expr> indices = VisitExprs(op->indices, &unused);
    Buffer flat;
    Expr index;
    if (!Access(op->buffer, indices, &flat, &index)) return self;
    return flat.Load({index});
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    bool unused = false;
    std::vector<Expr> indices = VisitExprs(op->indices, &unused);
    Expr value = VisitExpr(op->value);
    Buffer flat;
    Expr index;
    if (!Access(op->buffer, indices, &flat, &index)) return self;
    return BufferStore(flat, value, {index});
  }

  // Loop variables range over [0, extent): what lets the simplifier fold floordiv/floormod
  // of split and fused loops in the flattened indices.
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    analyzer_.Bind(op->loop_var, Range{Expr(0), op->extent});
    return IRMutator::VisitStmt_(op, self);
  }

  Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    absl::StatusOr<Buffer> flat = Flatten(op->buffer);
    if (!flat.ok()) {
      if (status_.ok()) status_ = flat.status();
      return self;
    }
    return Allocate(*flat, VisitStmt(op->body));
  }

 private:
  static std::vector<Expr> StridesOf(const BufferNode& node) {
    if (!node.strides.empty()) return node.strides;
    std::vector<Expr> strides(node.shape.size());
    Expr stride(1);
    for (size_t d = node.shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride = MulIndex(stride, node.shape[d]);
    }
    return strides;
  }

  bool Access(const Buffer& buffer, const std::vector<Expr>& indices, Buffer* flat, Expr* index) {
    auto it = flat_.find(buffer);
    if (it == flat_.end()) {
      if (status_.ok()) {
        status_ = absl::InvalidArgumentError(absl::StrCat(
            "lower: buffer ", buffer.name(), " is neither a parameter nor allocated by a block"));
      }
      return false;
    }
    const std::vector<Expr>& strides = strides_.at(buffer);
    Expr flat_index(0);
    for (size_t d = 0; d < indices.size(); ++d) {
      Expr i = indices[d];
      if (i.dtype() != DataType::Index()) i = Cast(DataType::Index(), i);
      flat_index = AddIndex(flat_index, MulIndex(i, strides[d]));
    }
    *flat = it->second;
    *index = analyzer_.Simplify(flat_index);
    return true;
  }

  std::unordered_map<Buffer, Buffer, BufferIdentityHash, BufferIdentityEqual> flat_;
  std::unordered_map<Buffer, std::vector<Expr>, BufferIdentityHash, BufferIdentityEqual> strides_;
  arith::Analyzer analyzer_;
  absl::Status status_;
};

// Step 0 (block form): intermediates of the root block shrink to the tile one iteration of
// their innermost enclosing loop touches and move there (codegen/compact_buffers.h); those
// accessed outside every loop, or by predicated blocks where some access splits fused loops
// inside that loop (one iteration may read another's writes), stay whole at the root. Tail-guarded
// padded tiles compact to the padded tile.
absl::StatusOr<Stmt> CompactRootAllocations(const Stmt& body) {
  const auto* realize = body.as<BlockRealizeNode>();
  if (realize == nullptr || realize->block->alloc_buffers.empty()) return body;
  const Block& root = realize->block;
  std::vector<Buffer> kept;
  TESSERA_ASSIGN_OR_RETURN(Stmt root_body,
                           lower_internal::CompactBuffers(root->body, root->alloc_buffers,
                                                          /*keep_predicated=*/true, &kept));
  std::shared_ptr<BlockNode> node = root.CopyNode();
  node->body = root_body;
  node->alloc_buffers.clear();
  // Untouched buffers are dropped; the rest keep their order.
  for (const Buffer& b : root->alloc_buffers) {
    if (std::find_if(kept.begin(), kept.end(), [&](const Buffer& o) { return o.same_as(b); }) !=
        kept.end()) {
      node->alloc_buffers.push_back(b);
    }
  }
  return BlockRealize(realize->iter_values, realize->predicate, MakeBlock(*node));
}

}  // namespace

namespace lower_internal {

absl::StatusOr<Stmt> RemoveBlocks(const Stmt& stmt) {
  BlockRemover remover;
  Stmt body = remover.VisitStmt(stmt);
  TESSERA_RETURN_IF_ERROR(remover.status());
  return body;
}

absl::StatusOr<Stmt> FlattenBuffers(const std::vector<Buffer>& params, const Stmt& body,
                                    std::vector<Buffer>* flat_params) {
  BufferFlattener flattener;
  flat_params->clear();
  for (const Buffer& param : params) {
    TESSERA_ASSIGN_OR_RETURN(Buffer flat, flattener.Flatten(param));
    flat_params->push_back(flat);
  }
  Stmt flat_body = flattener.VisitStmt(body);
  TESSERA_RETURN_IF_ERROR(flattener.status());
  return flat_body;
}

namespace {

// InnerIterations; with `analyzer`, its upper bound: a loop whose extent is not a constant counts
// with the largest value of its extent given the loops above it in `s` (and what `analyzer` knew
// before), each bound to its range on the way down.
int64_t CountInnerIterations(const Stmt& s, arith::Analyzer* analyzer, bool add_sequences) {
  bool unknown = false;
  std::function<int64_t(const Stmt&)> walk = [&](const Stmt& st) -> int64_t {
    if (!st.defined()) return 1;
    if (const auto* f = st.as<ForNode>()) {
      int64_t extent = 0;
      if (const int64_t* constant = AsConstInt(f->extent)) {
        extent = *constant;
      } else if (analyzer != nullptr) {
        const arith::ConstIntBound bound = analyzer->ConstIntBound(f->extent);
        if (bound.max == arith::ConstIntBound::kPosInf) {
          unknown = true;
          return 1;
        }
        extent = std::max<int64_t>(bound.max, 0);
      } else {
        unknown = true;
        return 1;
      }
      if (analyzer != nullptr) analyzer->Bind(f->loop_var, Range{Expr(0), f->extent});
      return arith::BoundMul(extent, walk(f->body));
    }
    if (const auto* seq = st.as<SeqStmtNode>()) {
      int64_t m = 1;
      if (add_sequences) {
        int64_t sum = 0;
        for (const Stmt& c : seq->seq) sum += walk(c);
        return std::max<int64_t>(sum, 1);
      }
      for (const Stmt& c : seq->seq) m = std::max(m, walk(c));
      return m;
    }
    if (const auto* ite = st.as<IfThenElseNode>()) {
      return std::max(walk(ite->then_case), walk(ite->else_case));
    }
    if (const auto* alloc = st.as<AllocateNode>()) return walk(alloc->body);
    return 1;
  };
  int64_t most = walk(s);
  return unknown ? -1 : most;
}

}  // namespace

int64_t InnerIterations(const Stmt& s) { return CountInnerIterations(s, nullptr, false); }

int64_t MaxWorkIterations(const Stmt& s, const arith::VarRangeMap& enclosing) {
  arith::Analyzer analyzer;
  analyzer.Bind(enclosing);
  return CountInnerIterations(s, &analyzer, true);
}

absl::Status CheckEmittableDType(DataType t, const std::string& backend, const std::string& where) {
  bool ok = false;
  switch (t.code()) {
    case DataType::Code::kFloat:
      ok = t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
      break;
    case DataType::Code::kBFloat:
      ok = t.bits() == 16;
      break;
    case DataType::Code::kInt:
    case DataType::Code::kUInt:
      ok = t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64;
      break;
    case DataType::Code::kBool:
      ok = true;
      break;
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(backend, " codegen: unsupported dtype ", t.ToString(), " of ", where));
}

}  // namespace lower_internal

absl::StatusOr<PrimFunc> LowerForCodegen(const PrimFunc& f) {
  if (!f.defined() || !f.body().defined()) {
    return absl::InvalidArgumentError("lower: function has no body");
  }
  TESSERA_ASSIGN_OR_RETURN(Stmt body, CompactRootAllocations(f.body()));
  TESSERA_ASSIGN_OR_RETURN(body, lower_internal::RemoveBlocks(body));
  body = InsertPanelPrefetches(body);
  body = InsertPrefetchesAhead(body);
  std::vector<Buffer> params;
  TESSERA_ASSIGN_OR_RETURN(body, lower_internal::FlattenBuffers(f.params(), body, &params));
  return PrimFunc::Make(f.name(), std::move(params), std::move(body), f.attrs());
}

}  // namespace tessera
