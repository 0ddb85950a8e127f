// ComputeInline and ReverseComputeInline, after TVM's schedule/primitive/compute_inline.cc:
// an elementwise block is substituted into the loads of its consumers, or a consumer into the
// store of its single producer, and its buffer and loops disappear.

#include <algorithm>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/arith/int_set.h"
#include "ir/arith/iter_map.h"
#include "ir/arith/linear.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/compute_location_internal.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

using primitive::AllocatedIn;
using primitive::BlockOf;
using primitive::HasReduction;
using primitive::Invalid;
using primitive::RemoveLeaf;
using primitive::SharedBuffer;
using primitive::UsesAnyOf;
using primitive::WithPrimitive;

// The single BufferStore of an elementwise block: spatial iteration variables only, no init.
absl::StatusOr<const BufferStoreNode*> ElementwiseStore(const char* primitive, const Block& block) {
  if (HasReduction(block) || block->init.defined()) {
    return Invalid(primitive, absl::StrCat("block ", block->name, " is a reduction block"));
  }
  const auto* store = block->body.as<BufferStoreNode>();
  if (store == nullptr) {
    return Invalid(primitive, absl::StrCat("the body of block ", block->name,
                                           " is not a single buffer store"));
  }
  if (!block->alloc_buffers.empty()) {
    return Invalid(primitive, absl::StrCat("block ", block->name, " allocates buffers"));
  }
  return store;
}

// The iteration variables that `indices` are, each used once; false if they are not such.
bool DistinctIterVars(const Block& block, const std::vector<Expr>& indices,
                      std::vector<Var>* vars) {
  std::set<const VarNode*> seen;
  for (const Expr& e : indices) {
    const auto* v = e.as<VarNode>();
    bool is_iter = false;
    for (const IterVar& iv : block->iter_vars) is_iter = is_iter || iv.var.get() == v;
    if (v == nullptr || !is_iter || !seen.insert(v).second) return false;
    vars->push_back(Var(std::static_pointer_cast<const VarNode>(e.node_ptr())));
  }
  return true;
}

// Replaces the loads of `buffer` by `value` (its `vars` mapped to the load indices) and updates
// the reads of the blocks that changed.
class LoadInliner : public IRMutator {
 public:
  LoadInliner(Buffer buffer, std::vector<Var> vars, Expr value)
      : buffer_(std::move(buffer)), vars_(std::move(vars)), value_(std::move(value)) {}

 protected:
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    Expr visited = IRMutator::VisitExpr_(op, self);
    const auto* load = visited.as<BufferLoadNode>();
    if (load == nullptr || !load->buffer.same_as(buffer_)) return visited;
    VarMap vmap;
    for (size_t d = 0; d < vars_.size(); ++d) vmap[vars_[d]] = load->indices[d];
    return Substitute(value_, vmap);
  }
  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    Stmt visited = IRMutator::VisitStmt_(op, self);
    if (visited.same_as(self)) return self;
    auto node = Block(std::static_pointer_cast<const BlockNode>(visited.node_ptr())).CopyNode();
    node->reads = arith::DetectBlockAccessRegions(Block(node)).reads;
    return Block(std::move(node));
  }

 private:
  Buffer buffer_;
  std::vector<Var> vars_;
  Expr value_;
};

// Removes `buffer` from the alloc_buffers of the scope block.
PrimFunc RemoveAlloc(const PrimFunc& func, const Block& scope_block, const Buffer& buffer) {
  const StmtPath path = *FindBlockPath(func, scope_block->name);
  const Block& scope = BlockOf(path.back());
  auto node = scope.CopyNode();
  node->alloc_buffers.erase(std::remove_if(node->alloc_buffers.begin(), node->alloc_buffers.end(),
                                           [&](const Buffer& b) { return b.same_as(buffer); }),
                            node->alloc_buffers.end());
  return ReplaceStmt(func, scope, Block(std::move(node)));
}

}  // namespace

namespace primitive {

absl::StatusOr<PrimFunc> ComputeInlineImpl(const PrimFunc& func, const std::string& block_name) {
  constexpr const char* kPrimitive = "compute_inline";
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, FindBlockPath(func, block_name));
  if (path.size() == 1) return Invalid(kPrimitive, "cannot inline the root block");
  const Block& block = BlockOf(path.back());
  TESSERA_ASSIGN_OR_RETURN(const BufferStoreNode* store, ElementwiseStore(kPrimitive, block));
  const Buffer& buffer = store->buffer;
  std::vector<Var> vars;
  if (!DistinctIterVars(block, store->indices, &vars)) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " stores to ", buffer.name(),
                                            " at indices that are not distinct iteration "
                                            "variables"));
  }
  std::set<const VarNode*> allowed;
  for (const Var& v : vars) allowed.insert(v.get());
  bool stray = false, self_read = false;
  PostOrderVisitExprs(store->value, [&](const Expr& e) {
    if (const auto* v = e.as<VarNode>()) stray = stray || !allowed.count(v);
    if (const auto* l = e.as<BufferLoadNode>()) self_read = self_read || l->buffer.same_as(buffer);
  });
  if (stray || self_read) {
    return Invalid(kPrimitive, absl::StrCat("the value block ", block_name, " stores ",
                                            stray ? "uses variables other than its store indices"
                                                  : "reads the buffer it writes"));
  }
  const Stmt scope_realize = EnclosingBlockRealize(path);
  const Block& scope = BlockOf(scope_realize);
  if (!AllocatedIn(scope, buffer)) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " writes buffer ", buffer.name(),
                                            ", an output of its scope"));
  }
  // A tensor intrinsic's call takes its operands' addresses: an element of the buffer cannot
  // become an expression there (RandomComputeLocation inlined a convolution's padded copy into
  // its dot products, which then did not build).
  bool call_operand = false;
  PostOrderVisitExprs(scope->body, [&](const Expr& e) {
    const auto* call = e.as<CallNode>();
    if (call == nullptr || call->op != CallOp::kExtern) return;
    for (const Expr& arg : call->args) {
      const auto* load = arg.as<BufferLoadNode>();
      call_operand = call_operand || (load != nullptr && load->buffer.same_as(buffer));
    }
  });
  if (call_operand) {
    return Invalid(kPrimitive, absl::StrCat("buffer ", buffer.name(), " of block ", block_name,
                                            " is an operand of an extern call (a tensor "
                                            "intrinsic), which reads it in memory"));
  }
  // Its inputs must not change before the consumers run: no later block writes them, and it
  // is the only writer of its buffer.
  bool after = false;
  for (const Stmt& s : ChildBlockRealizes(scope_realize)) {
    if (s.same_as(path.back())) {
      after = true;
      continue;
    }
    const Block& other = BlockOf(s);
    if (Accesses(other->writes, buffer)) {
      return Invalid(kPrimitive, absl::StrCat("block ", other->name, " also writes buffer ",
                                              buffer.name(), " of block ", block_name));
    }
    Buffer input = SharedBuffer(other->writes, block->reads);
    if (after && input.defined()) {
      return Invalid(kPrimitive,
                     absl::StrCat("block ", other->name, " overwrites buffer ", input.name(),
                                  " that block ", block_name, " reads before its consumers run"));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(PrimFunc removed, RemoveLeaf(kPrimitive, func, path));
  LoadInliner inliner(buffer, vars, store->value);
  const StmtPath scope_path = *FindBlockPath(removed, scope->name);
  const Block& new_scope = BlockOf(scope_path.back());
  auto node = new_scope.CopyNode();
  node->body = inliner.VisitStmt(new_scope->body);
  node->alloc_buffers.erase(std::remove_if(node->alloc_buffers.begin(), node->alloc_buffers.end(),
                                           [&](const Buffer& b) { return b.same_as(buffer); }),
                            node->alloc_buffers.end());
  return ReplaceStmt(removed, new_scope, Block(std::move(node)));
}

absl::StatusOr<PrimFunc> ReverseComputeInlineImpl(const PrimFunc& func,
                                                  const std::string& block_name) {
  constexpr const char* kPrimitive = "reverse_compute_inline";
  TESSERA_ASSIGN_OR_RETURN(StmtPath path, FindBlockPath(func, block_name));
  if (path.size() == 1) return Invalid(kPrimitive, "cannot inline the root block");
  const auto* realize = path.back().as<BlockRealizeNode>();
  const Block& block = realize->block;
  TESSERA_ASSIGN_OR_RETURN(const BufferStoreNode* store, ElementwiseStore(kPrimitive, block));
  if (!IsConstInt(realize->predicate, 1)) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " has a predicate"));
  }
  const Stmt scope_realize = EnclosingBlockRealize(path);
  const std::vector<Stmt> children = ChildBlockRealizes(scope_realize);
  std::vector<Stmt> producers;
  for (const Stmt& s : children) {
    if (!s.same_as(path.back()) && SharedBuffer(BlockOf(s)->writes, block->reads).defined()) {
      producers.push_back(s);
    }
  }
  if (producers.size() != 1) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " has ", producers.size(),
                                            " producer blocks; it needs exactly one"));
  }
  const Stmt producer_realize = producers[0];
  const Block& producer = BlockOf(producer_realize);
  if (HasReduction(producer) || producer->init.defined()) {
    return Invalid(kPrimitive, absl::StrCat("producer ", producer->name, " of block ", block_name,
                                            " is a reduction block"));
  }
  TESSERA_ASSIGN_OR_RETURN(const BufferStoreNode* pstore, ElementwiseStore(kPrimitive, producer));
  const Buffer& buffer = pstore->buffer;
  if (!AllocatedIn(BlockOf(scope_realize), buffer)) {
    return Invalid(kPrimitive, absl::StrCat("buffer ", buffer.name(), " between ", producer->name,
                                            " and ", block_name, " is an output of the scope"));
  }
  // The consumer reads the buffer at one index: per dimension one of its iteration variables
  // (each once), or a constant where the producer's variable there takes only that value (a
  // batch of one that a broadcast reads at 0). Its variables the index leaves out must take one
  // value each; they become it.
  std::vector<Expr> load_indices;
  bool consistent = true;
  PostOrderVisitExprs(store->value, [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    if (load == nullptr || !load->buffer.same_as(buffer)) return;
    if (load_indices.empty()) {
      load_indices = load->indices;
    } else {
      for (size_t d = 0; d < load_indices.size(); ++d) {
        consistent = consistent && arith::ExprDeepEqual(load_indices[d], load->indices[d]);
      }
    }
  });
  std::vector<Var> pvars;
  if (!DistinctIterVars(producer, pstore->indices, &pvars)) {
    return Invalid(kPrimitive,
                   absl::StrCat("producer ", producer->name, " stores to ", buffer.name(),
                                " at indices that are not distinct "
                                "iteration variables"));
  }
  auto iter_var_of = [](const Block& b, const VarNode* v) -> const IterVar* {
    for (const IterVar& iv : b->iter_vars) {
      if (iv.var.get() == v) return &iv;
    }
    return nullptr;
  };
  arith::Analyzer analyzer;
  VarMap vmap;  // the consumer's variables in terms of the producer's
  std::set<const VarNode*> used;
  const auto* producer_node = producer_realize.as<BlockRealizeNode>();
  // Where the consumer covers only a prefix of what the producer writes (the copy out of a
  // padded result, PadEinsum's "_unpad"), the producer keeps only those writes: its iteration
  // domain shrinks to the consumer's, and a predicate keeps its bindings there (as after a
  // split that does not divide; compute-at re-derives it from the domain).
  Expr predicate = producer_node->predicate;
  std::vector<IterVar> producer_iters = producer->iter_vars;
  consistent = consistent && !load_indices.empty() && load_indices.size() == pvars.size();
  for (size_t d = 0; consistent && d < load_indices.size(); ++d) {
    const IterVar* piv = iter_var_of(producer, pvars[d].get());
    if (const int64_t* c = AsConstInt(load_indices[d])) {
      consistent = IsConstInt(piv->dom.extent, 1) && analyzer.CanProveEqual(piv->dom.min, Expr(*c));
      continue;
    }
    const auto* v = load_indices[d].as<VarNode>();
    const IterVar* civ = v == nullptr ? nullptr : iter_var_of(block, v);
    if (civ == nullptr || !used.insert(v).second) {
      consistent = false;
      break;
    }
    const int64_t* consumer_extent = AsConstInt(civ->dom.extent);
    const int64_t* producer_extent = AsConstInt(piv->dom.extent);
    const bool same_extent = analyzer.CanProveEqual(civ->dom.extent, piv->dom.extent);
    if (!analyzer.CanProveEqual(civ->dom.min, piv->dom.min) ||
        (!same_extent && (consumer_extent == nullptr || producer_extent == nullptr ||
                          *consumer_extent > *producer_extent))) {
      return Invalid(kPrimitive, absl::StrCat("block ", block_name, " does not cover what ",
                                              producer->name, " writes in dimension ", d));
    }
    if (!same_extent) {
      const size_t index = piv - producer->iter_vars.data();
      const Expr& binding = producer_node->iter_values[index];
      predicate = And(predicate, LT(binding, analyzer.Simplify(civ->dom.min + civ->dom.extent)));
      producer_iters[index].dom = civ->dom;
    }
    vmap[civ->var] = pvars[d];
  }
  for (const IterVar& iv : block->iter_vars) {
    if (!consistent || used.count(iv.var.get()) != 0) continue;
    consistent = IsConstInt(iv.dom.extent, 1);
    vmap[iv.var] = iv.dom.min;
  }
  if (!consistent) {
    return Invalid(kPrimitive, absl::StrCat("block ", block_name, " does not read ", buffer.name(),
                                            " at exactly its iteration variables"));
  }
  // No other block reads the intermediate, and nothing between the two touches the output.
  int ppos = -1, cpos = -1;
  for (int i = 0; i < static_cast<int>(children.size()); ++i) {
    if (children[i].same_as(producer_realize)) ppos = i;
    if (children[i].same_as(path.back())) cpos = i;
  }
  for (int i = 0; i < static_cast<int>(children.size()); ++i) {
    const Block& other = BlockOf(children[i]);
    if (i == ppos || i == cpos) continue;
    if (Accesses(other->reads, buffer) || Accesses(other->writes, buffer)) {
      return Invalid(kPrimitive,
                     absl::StrCat("block ", other->name, " also accesses buffer ", buffer.name(),
                                  " between ", producer->name, " and ", block_name));
    }
    if (i > ppos && i < cpos &&
        (SharedBuffer(other->reads, block->writes).defined() ||
         SharedBuffer(other->writes, block->writes).defined() ||
         SharedBuffer(other->writes, block->reads).defined())) {
      return Invalid(kPrimitive,
                     absl::StrCat("block ", other->name, " between ", producer->name, " and ",
                                  block_name, " accesses what ", block_name, " reads or writes"));
    }
  }
  // C[f(v)] = g(B[v], ...) with v := the producer's store indices and B[...] := its value.
  LoadInliner inliner(buffer, {}, pstore->value);
  Expr value = Substitute(inliner.VisitExpr(store->value), vmap);
  std::vector<Expr> indices;
  for (const Expr& e : store->indices) indices.push_back(Substitute(e, vmap));
  auto node = producer.CopyNode();
  node->iter_vars = producer_iters;
  node->body = BufferStore(store->buffer, value, indices);
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(Block(node));
  node->reads = regions.reads;
  node->writes = regions.writes;
  PrimFunc replaced =
      ReplaceStmt(func, producer_realize,
                  BlockRealize(producer_node->iter_values, analyzer.Simplify(predicate),
                               Block(std::move(node))));
  TESSERA_ASSIGN_OR_RETURN(StmtPath new_path, FindBlockPath(replaced, block_name));
  TESSERA_ASSIGN_OR_RETURN(PrimFunc removed, RemoveLeaf(kPrimitive, replaced, new_path));
  return RemoveAlloc(removed, BlockOf(scope_realize), buffer);
}

}  // namespace primitive

using primitive::ComputeInlineImpl;
using primitive::ReverseComputeInlineImpl;

absl::Status Schedule::ComputeInline(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive("compute_inline", name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive("compute_inline", path.status());
  TESSERA_ASSIGN_OR_RETURN(func_, ComputeInlineImpl(func_, *name));
  Record(kComputeInline, {InstValue::Of(block)}, {}, {});
  return absl::OkStatus();
}

absl::Status Schedule::ReverseComputeInline(BlockRV block) {
  absl::StatusOr<std::string> name = BlockName(block);
  if (!name.ok()) return WithPrimitive("reverse_compute_inline", name.status());
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive("reverse_compute_inline", path.status());
  TESSERA_ASSIGN_OR_RETURN(func_, ReverseComputeInlineImpl(func_, *name));
  Record(kReverseComputeInline, {InstValue::Of(block)}, {}, {});
  return absl::OkStatus();
}

}  // namespace tessera
