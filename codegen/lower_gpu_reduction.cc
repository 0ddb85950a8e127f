// Cross-thread reductions (step 1 of LowerForGpu), after TVM's LowerCrossThreadReduction.
//
// Pattern: a chain of directly nested loops ending in a reduction block, every loop of the chain
// feeding only reduction bindings, one of them bound to threadIdx.x:
//
//   for ko in range(K / T):                      for tx in range(T) (threadIdx.x):
//     for tx in range(T) (threadIdx.x):    =>      red[0] = identity
//       block C (init C[i] = c0):                  for ko in range(K / T): red[0] = red[0] + A[i, ko*T + tx]
//         C[i] = C[i] + A[i, ko*T + tx]            red[0] = tessera_block_reduce_sum(red[0], scratch, T)
//                                                  if tx == 0: C[i] = c0 + red[0]
//
// red is a local register (float for float16/bfloat16, int32 for narrower integers: the final
// cast gives the same wrapped result), scratch a shared array of one value per warp.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/lower_gpu_internal.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"

namespace tessera {
namespace lower_gpu_internal {
namespace {

struct Combiner {
  BinaryOp op;
  const char* name;
};

bool FindCombiner(BinaryOp op, Combiner* out) {
  switch (op) {
    case BinaryOp::kAdd:
      *out = {op, "sum"};
      return true;
    case BinaryOp::kMul:
      *out = {op, "prod"};
      return true;
    case BinaryOp::kMax:
      *out = {op, "max"};
      return true;
    case BinaryOp::kMin:
      *out = {op, "min"};
      return true;
    default:
      return false;
  }
}

Expr Identity(BinaryOp op, DataType t) {
  switch (op) {
    case BinaryOp::kMul:
      return MakeConst(t, 1);
    case BinaryOp::kMax:
      return MinValue(t);
    case BinaryOp::kMin:
      return MaxValue(t);
    default:
      return MakeConst(t, 0);
  }
}

Expr CastTo(DataType t, const Expr& e) { return e.dtype() == t ? e : Cast(t, e); }

bool SameIndices(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!arith::ExprDeepEqual(a[i], b[i])) return false;
  }
  return true;
}

bool LoadsBuffer(const Expr& e, const Buffer& b) {
  bool found = false;
  PostOrderVisitExprs(e, [&](const Expr& x) {
    if (const auto* load = x.as<BufferLoadNode>()) found = found || load->buffer.same_as(b);
  });
  return found;
}

class CrossThreadReductionLowerer : public IRMutator {
 public:
  explicit CrossThreadReductionLowerer(const Target& target)
      : scratch_size_(std::max<int64_t>(1, target.max_threads_per_block() / 32)) {}
  const absl::Status& status() const { return status_; }

 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (!status_.ok()) return self;
    Stmt lowered;
    if (TryLower(op, &lowered)) return status_.ok() ? lowered : self;
    bool binds = op->for_kind == ForKind::kThreadBinding &&
                 (IsBlockIdxTag(op->thread_tag) || IsThreadIdxTag(op->thread_tag));
    if (binds) thread_vars_[op->loop_var.get()] = op->thread_tag;
    Stmt out = IRMutator::VisitStmt_(op, self);
    if (binds) thread_vars_.erase(op->loop_var.get());
    return out;
  }

  Stmt VisitStmt_(const BlockRealizeNode* op, const Stmt& self) override {
    const Block& block = op->block;
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      if (block->iter_vars[i].kind != IterKind::kReduction) continue;
      std::string tag;
      UsesVar(op->iter_values[i], [&](const VarNode* v) {
        auto it = thread_vars_.find(v);
        if (it != thread_vars_.end()) tag = it->second;
        return false;
      });
      if (!tag.empty()) {
        Fail(absl::StrCat("lower_gpu: block ", block->name, " reduces over a loop bound to ", tag,
                          ", which is supported only as a cross-thread reduction: the reduction "
                          "loops directly above the block, one of them bound to threadIdx.x, and "
                          "an update C[...] = C[...] + (or *, max, min) value"));
        return self;
      }
    }
    return IRMutator::VisitStmt_(op, self);
  }

 private:
  void Fail(const std::string& message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(message);
  }

  // Lowers the chain starting at `top` if it has the pattern; false if it does not (errors for
  // a chain that has a thread-bound reduction loop but cannot be lowered).
  bool TryLower(const ForNode* top, Stmt* out) {
    std::vector<const ForNode*> chain;
    Stmt s;
    for (const ForNode* f = top; f != nullptr; f = s.as<ForNode>()) {
      chain.push_back(f);
      s = f->body;
    }
    const auto* realize = s.as<BlockRealizeNode>();
    if (realize == nullptr) return false;
    const Block& block = realize->block;
    std::unordered_set<const VarNode*> chain_vars;
    for (const ForNode* f : chain) chain_vars.insert(f->loop_var.get());
    auto uses_chain = [&](const Expr& e) {
      return UsesVar(e, [&](const VarNode* v) { return chain_vars.count(v) != 0; });
    };
    bool has_reduction = false;
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      if (block->iter_vars[i].kind == IterKind::kSpatial) {
        if (uses_chain(realize->iter_values[i])) return false;
      } else {
        has_reduction = true;
      }
    }
    if (!has_reduction) return false;
    const ForNode* thread_loop = nullptr;
    for (const ForNode* f : chain) {
      if (f->for_kind != ForKind::kThreadBinding) continue;
      if (!IsThreadIdxTag(f->thread_tag) && !IsBlockIdxTag(f->thread_tag)) continue;
      if (thread_loop != nullptr || f->thread_tag != "threadIdx.x") {
        Fail(absl::StrCat("lower_gpu: cross-thread reduction of block ", block->name,
                          " must bind exactly one of its reduction loops, to threadIdx.x (found ",
                          f->thread_tag, ")"));
        return true;
      }
      thread_loop = f;
    }
    if (thread_loop == nullptr) return false;
    *out = Lower(chain, thread_loop, realize);
    return true;
  }

  Stmt Lower(const std::vector<const ForNode*>& chain, const ForNode* thread_loop,
             const BlockRealizeNode* realize) {
    const Block& block = realize->block;
    const std::string& name = block->name;
    const int64_t* threads = AsConstInt(thread_loop->extent);
    if (threads == nullptr || *threads < 1 ||
        !((*threads <= 32 && (*threads & (*threads - 1)) == 0) || *threads % 32 == 0)) {
      Fail(absl::StrCat("lower_gpu: cross-thread reduction of block ", name, ": threadIdx.x extent ",
                        threads ? std::to_string(*threads) : "(not constant)",
                        " is neither a power of two up to 32 nor a multiple of 32"));
      return Stmt();
    }
    const auto* store = block->body.as<BufferStoreNode>();
    const BinaryNode* update = store ? store->value.as<BinaryNode>() : nullptr;
    Combiner combiner;
    if (update == nullptr || !FindCombiner(update->op, &combiner)) {
      Fail(absl::StrCat("lower_gpu: cross-thread reduction of block ", name,
                        ": the body is not C[...] = C[...] + (or *, max, min) value"));
      return Stmt();
    }
    const Buffer& out = store->buffer;
    auto is_self = [&](const Expr& e) {
      const auto* load = e.as<BufferLoadNode>();
      return load != nullptr && load->buffer.same_as(out) && SameIndices(load->indices, store->indices);
    };
    Expr value = is_self(update->a) ? update->b : is_self(update->b) ? update->a : Expr();
    if (!value.defined() || LoadsBuffer(value, out)) {
      Fail(absl::StrCat("lower_gpu: cross-thread reduction of block ", name,
                        ": the update does not combine ", out.name(), " with a value"));
      return Stmt();
    }
    Expr init_value;
    if (block->init.defined()) {
      const auto* init = block->init.as<BufferStoreNode>();
      if (init == nullptr || !init->buffer.same_as(out) ||
          !SameIndices(init->indices, store->indices) || LoadsBuffer(init->value, out)) {
        Fail(absl::StrCat("lower_gpu: cross-thread reduction of block ", name,
                          ": the init is not a store into the updated element"));
        return Stmt();
      }
      init_value = init->value;
    }
    DataType t = out.dtype();
    if (t.is_bool()) {
      Fail(absl::StrCat("lower_gpu: cross-thread reduction of block ", name, " over bool"));
      return Stmt();
    }
    DataType acc = t;
    if (t.is_float() && t.bits() < 32) acc = DataType::Float32();
    if (t.is_integer() && t.bits() < 32) acc = DataType(t.code(), 32);

    VarMap vmap;
    for (size_t i = 0; i < block->iter_vars.size(); ++i) {
      vmap[block->iter_vars[i].var] = realize->iter_values[i];
    }
    std::vector<Expr> indices;
    for (const Expr& i : store->indices) indices.push_back(Substitute(i, vmap));
    value = CastTo(acc, Substitute(value, vmap));

    std::unordered_set<const VarNode*> chain_vars;
    for (const ForNode* f : chain) chain_vars.insert(f->loop_var.get());
    std::vector<Expr> conds, store_conds;
    SplitConjuncts(realize->predicate, &conds);
    for (const Expr& c : conds) {
      if (!UsesVar(c, [&](const VarNode* v) { return chain_vars.count(v) != 0; })) {
        store_conds.push_back(c);
      }
    }

    Buffer red = Buffer::Make(out.name() + "_red", acc, {Expr(1)}, "local");
    Buffer scratch = Buffer::Make(out.name() + "_red_scratch", acc, {Expr(scratch_size_)}, "shared");
    Expr red0 = red.Load({Expr(0)});
    Stmt accumulate = BufferStore(red, MakeBinary(combiner.op, red0, value), {Expr(0)});
    if (!conds.empty()) accumulate = IfThenElse(Conjunction(conds), accumulate);
    for (size_t i = chain.size(); i-- > 0;) {
      const ForNode* f = chain[i];
      if (f == thread_loop) continue;
      accumulate = For(f->loop_var, f->extent, f->for_kind, accumulate, f->thread_tag, f->annotations);
    }
    Expr reduced = CallExtern(acc, std::string(kBlockReducePrefix) + combiner.name,
                              {red0, scratch.Load({Expr(0)}), Expr(*threads)});
    Expr start = init_value.defined() ? Substitute(init_value, vmap) : out.Load(indices);
    Stmt result = BufferStore(out, CastTo(t, MakeBinary(combiner.op, CastTo(acc, start), red0)),
                              indices);
    store_conds.insert(store_conds.begin(), EQ(thread_loop->loop_var, Expr(0)));
    Stmt body = SeqStmt({BufferStore(red, Identity(combiner.op, acc), {Expr(0)}), accumulate,
                         BufferStore(red, reduced, {Expr(0)}),
                         IfThenElse(Conjunction(store_conds), result)});
    body = Allocate(red, Allocate(scratch, body));
    return For(thread_loop->loop_var, thread_loop->extent, ForKind::kThreadBinding, body,
               thread_loop->thread_tag, thread_loop->annotations);
  }

  int64_t scratch_size_;
  std::unordered_map<const VarNode*, std::string> thread_vars_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<Stmt> LowerCrossThreadReductions(const Stmt& root_body, const Target& target) {
  CrossThreadReductionLowerer lowerer(target);
  Stmt out = lowerer.VisitStmt(root_body);
  TESSERA_RETURN_IF_ERROR(lowerer.status());
  return out;
}

}  // namespace lower_gpu_internal
}  // namespace tessera
