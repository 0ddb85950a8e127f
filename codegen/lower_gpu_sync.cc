// __syncthreads() insertion for shared memory (step 6 of LowerForGpu), after TVM's ThreadSync
// planner, simplified.
//
// Walking a kernel in program order, the planner keeps the shared-memory accesses made since the
// last barrier. Before each statement of a sequence whose accesses conflict with them (it reads
// what was written, or writes what was read) it inserts a barrier; loops are planned twice, the
// second time starting from what the end of an iteration leaves behind, which places the
// barrier that protects the next iteration's writes against this iteration's reads. Two accesses
// at the same index expression do not conflict when that index depends only on thread indices
// and tells every thread of the block apart (linear in the threadIdx loops with strides that
// never make two threads meet): then only one thread touches each element. Every other pair
// on one buffer conflicts (no further index analysis); a constant index, one slot that all
// threads share, always does. Extern-call operands (wmma tiles) always conflict. A barrier needed
// under a thread-dependent condition (including a thread loop narrower than the block) is an error,
// since not every thread would reach it.
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/lower_gpu_internal.h"
#include "ir/arith/linear.h"
#include "ir/arith/simplify.h"
#include "ir/functor.h"
#include "ir/tensor_core_fragments.h"

namespace tessera {
namespace lower_gpu_internal {
namespace {

struct Access {
  const BufferNode* buffer;
  std::string name;
  bool write;
  Expr index;
  bool exact;  // each thread of the block has its own element (ThreadPrivateIndex)
};

struct Summary {
  std::vector<Access> accesses;
  bool barrier = false;
};

bool IsBarrierCall(const CallNode* call) {
  return call->op == CallOp::kExtern &&
         (call->name == kSyncThreads || call->name.rfind(kBlockReducePrefix, 0) == 0);
}

void AddUnique(std::vector<Access>* set, const Access& a) {
  for (const Access& b : *set) {
    if (b.buffer == a.buffer && b.write == a.write && b.exact == a.exact &&
        arith::ExprDeepEqual(b.index, a.index)) {
      return;
    }
  }
  set->push_back(a);
}

class SyncPlanner {
 public:
  explicit SyncPlanner(const int64_t block[3]) {
    for (int d = 0; d < 3; ++d) block_[d] = block[d];
  }

  absl::StatusOr<Stmt> Run(const Stmt& kernel) {
    PostOrderVisitStmts(kernel, [&](const Stmt& s) {
      const auto* f = s.as<ForNode>();
      if (f != nullptr && f->for_kind == ForKind::kThreadBinding) {
        thread_vars_.insert(f->loop_var.get());
        if (IsThreadIdxTag(f->thread_tag)) {
          const int64_t* extent = AsConstInt(f->extent);
          thread_idx_loops_.emplace(
              f->loop_var.get(),
              ThreadLoop{f->loop_var, ThreadDim(f->thread_tag), extent != nullptr ? *extent : -1});
        }
      }
    });
    std::vector<Access> state;
    Stmt out = PlanBody(kernel, &state, /*divergent=*/false);
    TESSERA_RETURN_IF_ERROR(status_);
    return out;
  }

 private:
  void Fail(const std::string& message) {
    if (status_.ok() && report_) status_ = absl::InvalidArgumentError(message);
  }

  bool UsesThreadIdx(const Expr& e) const {
    return UsesVar(e, [&](const VarNode* v) { return thread_idx_loops_.count(v) != 0; });
  }
  bool OnlyThreadVars(const Expr& e) const {
    return !UsesVar(e, [&](const VarNode* v) { return thread_vars_.count(v) == 0; });
  }

  // True when `index` depends on thread indices only and no two threads of the block get the
  // same value: it is linear in the threadIdx loops it uses, with constant strides that order
  // them as mixed-radix digits (each stride beyond the span of the smaller ones), and it uses a
  // loop of every threadIdx dimension the block has more than one thread in. A constant index
  // is one element for all threads.
  bool ThreadPrivateIndex(const Expr& index) const {
    if (!OnlyThreadVars(index)) return false;
    std::vector<Var> vars;
    std::vector<int64_t> extents;
    bool dim_used[3] = {false, false, false};
    PostOrderVisitExprs(index, [&](const Expr& e) {
      const auto* v = e.as<VarNode>();
      if (v == nullptr) return;
      auto it = thread_idx_loops_.find(v);
      if (it == thread_idx_loops_.end()) return;
      for (const Var& seen : vars) {
        if (seen.get() == v) return;
      }
      vars.push_back(it->second.var);
      extents.push_back(it->second.extent);
      if (it->second.dim >= 0) dim_used[it->second.dim] = true;
    });
    for (int d = 0; d < 3; ++d) {
      if (block_[d] > 1 && !dim_used[d]) return false;
    }
    std::optional<arith::LinearEquation> linear = arith::DetectLinearEquation(index, vars);
    if (!linear.has_value()) return false;
    std::vector<std::pair<int64_t, int64_t>> strides;  // |stride|, extent
    for (size_t i = 0; i < vars.size(); ++i) {
      const int64_t* stride = AsConstInt(linear->coeffs[i]);
      if (stride == nullptr || *stride == 0 || extents[i] < 1) return false;
      strides.emplace_back(std::abs(*stride), extents[i]);
    }
    std::sort(strides.begin(), strides.end());
    int64_t span = 0;  // the largest distance the smaller strides cover
    for (const auto& [stride, extent] : strides) {
      if (stride <= span) return false;
      span += stride * (extent - 1);
    }
    return true;
  }

  // ---- access summaries ----

  void CollectExpr(const Expr& e, Summary* sum) const {
    PostOrderVisitExprs(e, [&](const Expr& x) {
      if (const auto* load = x.as<BufferLoadNode>()) {
        if (load->buffer.scope() == "shared") {
          AddUnique(&sum->accesses,
                    {load->buffer.get(), load->buffer.name(), false,
                     load->indices.empty() ? Expr(0) : load->indices[0],
                     ThreadPrivateIndex(load->indices.empty() ? Expr(0) : load->indices[0])});
        }
      } else if (const auto* call = x.as<CallNode>()) {
        if (IsBarrierCall(call)) {
          sum->barrier = true;
          return;
        }
        if (call->op != CallOp::kExtern) return;
        // Extern operands are addresses of whole tiles: never "the same element".
        for (size_t i = 0; i < call->args.size(); ++i) {
          const auto* load = call->args[i].as<BufferLoadNode>();
          if (load == nullptr || load->buffer.scope() != "shared") continue;
          const std::string operation = FragmentOperation(call->name);
          bool writes = (operation == "store_matrix_sync" && i == 0) ||
                        (operation.empty() && call->name != "__dp4a");
          Expr index = load->indices.empty() ? Expr(0) : load->indices[0];
          AddUnique(&sum->accesses, {load->buffer.get(), load->buffer.name(), false, index, false});
          if (writes) {
            AddUnique(&sum->accesses, {load->buffer.get(), load->buffer.name(), true, index, false});
          }
        }
      }
    });
  }

  Summary Summarize(const Stmt& s) const {
    Summary sum;
    PostOrderVisitStmts(s, [&](const Stmt& st) {
      if (const auto* store = st.as<BufferStoreNode>()) {
        for (const Expr& i : store->indices) CollectExpr(i, &sum);
        CollectExpr(store->value, &sum);
        if (store->buffer.scope() == "shared") {
          Expr index = store->indices.empty() ? Expr(0) : store->indices[0];
          AddUnique(&sum.accesses, {store->buffer.get(), store->buffer.name(), true, index,
                                    ThreadPrivateIndex(index)});
        }
      } else if (const auto* ev = st.as<EvaluateNode>()) {
        CollectExpr(ev->value, &sum);
      } else if (const auto* ite = st.as<IfThenElseNode>()) {
        CollectExpr(ite->condition, &sum);
      } else if (const auto* f = st.as<ForNode>()) {
        CollectExpr(f->extent, &sum);
      }
    });
    return sum;
  }

  // The first buffer on which `cur` conflicts with `prev`, or nullptr.
  static const Access* Conflict(const std::vector<Access>& prev, const std::vector<Access>& cur) {
    for (const Access& c : cur) {
      for (const Access& p : prev) {
        if (p.buffer != c.buffer || p.write == c.write) continue;
        if (p.exact && c.exact && arith::ExprDeepEqual(p.index, c.index)) continue;
        return &c;
      }
    }
    return nullptr;
  }

  // ---- planning ----

  // Plans a statement that may be a sequence: a barrier goes before each element that conflicts.
  Stmt PlanBody(const Stmt& body, std::vector<Access>* state, bool divergent) {
    std::vector<Stmt> items;
    if (const auto* seq = body.as<SeqStmtNode>()) {
      items = seq->seq;
    } else {
      items = {body};
    }
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& item : items) {
      Summary sum = Summarize(item);
      if (!sum.barrier) {
        if (const Access* c = Conflict(*state, sum.accesses)) {
          if (divergent) {
            Fail(absl::StrCat("lower_gpu: a __syncthreads() is needed for shared buffer ", c->name,
                              " under a thread-dependent condition, where not every thread "
                              "reaches it"));
          }
          out.push_back(SyncThreads());
          state->clear();
          changed = true;
        }
      }
      Stmt planned = PlanStmt(item, state, divergent);
      changed |= !planned.same_as(item);
      out.push_back(planned);
    }
    if (!changed) return body;
    return SeqStmt(out);
  }

  Stmt PlanStmt(const Stmt& s, std::vector<Access>* state, bool divergent) {
    switch (s.kind()) {
      case StmtKind::kSeq:
        return PlanBody(s, state, divergent);
      case StmtKind::kBufferStore:
      case StmtKind::kEvaluate: {
        Summary sum = Summarize(s);
        if (sum.barrier) {
          if (divergent) {
            Fail("lower_gpu: a barrier (__syncthreads() or a cross-thread reduction) is under a "
                 "thread-dependent condition, where not every thread reaches it");
          }
          state->clear();
        }
        for (const Access& a : sum.accesses) AddUnique(state, a);
        return s;
      }
      case StmtKind::kIfThenElse: {
        const auto* ite = s.as<IfThenElseNode>();
        Summary cond;
        CollectExpr(ite->condition, &cond);
        for (const Access& a : cond.accesses) AddUnique(state, a);
        bool div = divergent || UsesThreadIdx(ite->condition);
        std::vector<Access> else_state = *state;
        Stmt then_case = PlanBody(ite->then_case, state, div);
        Stmt else_case;
        if (ite->else_case.defined()) else_case = PlanBody(ite->else_case, &else_state, div);
        for (const Access& a : else_state) AddUnique(state, a);
        if (then_case.same_as(ite->then_case) && else_case.same_as(ite->else_case)) return s;
        return IfThenElse(ite->condition, then_case, else_case);
      }
      case StmtKind::kAllocate: {
        const auto* alloc = s.as<AllocateNode>();
        Stmt body = PlanBody(alloc->body, state, divergent);
        return body.same_as(alloc->body) ? s : Allocate(alloc->buffer, body);
      }
      case StmtKind::kFor:
        return PlanFor(s.as<ForNode>(), s, state, divergent);
      default:
        return s;
    }
  }

  Stmt PlanFor(const ForNode* op, const Stmt& self, std::vector<Access>* state, bool divergent) {
    Stmt body;
    if (op->for_kind == ForKind::kThreadBinding) {
      // All threads run their iteration at once: no back edge.
      bool div = divergent;
      if (IsThreadIdxTag(op->thread_tag)) {
        int dim = ThreadDim(op->thread_tag);
        const int64_t* extent = AsConstInt(op->extent);
        div = div || extent == nullptr || (dim >= 0 && *extent < block_[dim]);
      }
      body = PlanBody(op->body, state, div);
    } else {
      bool div = divergent || UsesThreadIdx(op->extent);
      if (IsConstInt(op->extent, 1)) {
        body = PlanBody(op->body, state, div);
      } else {
        // First pass: what one iteration leaves pending. Second: plan with the back edge.
        std::vector<Access> first = *state;
        bool saved = report_;
        report_ = false;
        PlanBody(op->body, &first, div);
        report_ = saved;
        for (const Access& a : first) AddUnique(state, a);
        body = PlanBody(op->body, state, div);
      }
    }
    if (body.same_as(op->body)) return self;
    return For(op->loop_var, op->extent, op->for_kind, body, op->thread_tag, op->annotations);
  }

  int64_t block_[3];
  std::unordered_set<const VarNode*> thread_vars_;
  struct ThreadLoop {
    Var var;
    int dim;         // 0, 1, 2 for threadIdx.x, y, z
    int64_t extent;  // -1 when not constant
  };
  std::unordered_map<const VarNode*, ThreadLoop> thread_idx_loops_;
  bool report_ = true;
  absl::Status status_;
};

}  // namespace

Stmt SyncThreads() { return Evaluate(CallExtern(DataType::Int32(), kSyncThreads, {})); }

bool IsSyncThreads(const Stmt& s) {
  const auto* eval = s.as<EvaluateNode>();
  const auto* call = eval == nullptr ? nullptr : eval->value.as<CallNode>();
  return call != nullptr && call->op == CallOp::kExtern && call->name == kSyncThreads;
}

absl::StatusOr<Stmt> InsertThreadSyncs(const Stmt& kernel, const int64_t block[3]) {
  SyncPlanner planner(block);
  return planner.Run(kernel);
}

}  // namespace lower_gpu_internal
}  // namespace tessera
