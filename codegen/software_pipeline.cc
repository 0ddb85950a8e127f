#include "codegen/software_pipeline.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/lower_gpu_internal.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/tensor_core_fragments.h"

namespace tessera {
namespace {

using BufferSet = std::unordered_set<const BufferNode*>;

// The statements of `s` (a sequence or one statement) after its leading barriers.
std::vector<Stmt> WithoutLeadingBarriers(const Stmt& s) {
  const auto* seq = s.as<SeqStmtNode>();
  if (seq == nullptr) return {s};
  size_t first = 0;
  while (first < seq->seq.size() && lower_gpu_internal::IsSyncThreads(seq->seq[first])) ++first;
  return std::vector<Stmt>(seq->seq.begin() + first, seq->seq.end());
}

// Which of `buffers` a statement writes (stores) and reads (loads, extern-call operands).
struct Accesses {
  bool writes_other = false;  // stores into a buffer outside the set
  BufferSet writes, reads;
};

Accesses AccessesOf(const Stmt& s, const BufferSet& buffers) {
  class Collector : public IRVisitor {
   public:
    Collector(const BufferSet& buffers, Accesses* out) : buffers_(buffers), out_(out) {}
    void VisitStmt_(const BufferStoreNode* op) override {
      if (buffers_.count(op->buffer.get())) {
        out_->writes.insert(op->buffer.get());
      } else {
        out_->writes_other = true;
      }
      IRVisitor::VisitStmt_(op);
    }
    void VisitExpr_(const BufferLoadNode* op) override {
      if (buffers_.count(op->buffer.get())) out_->reads.insert(op->buffer.get());
      IRVisitor::VisitExpr_(op);
    }

   private:
    const BufferSet& buffers_;
    Accesses* out_;
  };
  Accesses out;
  Collector(buffers, &out).VisitStmt(s);
  return out;
}

// Each staged buffer's accesses moved to one stage: the staged buffer at index + stage x size.
class StageRewriter : public IRMutator {
 public:
  struct Staged {
    Buffer buffer;  // S x the original size
    int64_t size;   // of one stage
  };
  StageRewriter(const std::unordered_map<const BufferNode*, Staged>& staged, Expr stage)
      : staged_(staged), stage_(std::move(stage)) {}

  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    Expr visited = IRMutator::VisitExpr_(op, self);
    const auto* load = visited.as<BufferLoadNode>();
    auto it = staged_.find(load->buffer.get());
    if (it == staged_.end()) return visited;
    return it->second.buffer.Load({Offset(load->indices[0], it->second.size)});
  }
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    Stmt visited = IRMutator::VisitStmt_(op, self);
    const auto* store = visited.as<BufferStoreNode>();
    auto it = staged_.find(store->buffer.get());
    if (it == staged_.end()) return visited;
    return BufferStore(it->second.buffer, store->value,
                       {Offset(store->indices[0], it->second.size)});
  }

 private:
  Expr Offset(const Expr& index, int64_t size) const {
    const int64_t* stage = AsConstInt(stage_);  // the prologue's: folded
    if (stage == nullptr) return index + stage_ * Expr(size);
    return *stage == 0 ? index : index + Expr(*stage * size);
  }

  const std::unordered_map<const BufferNode*, Staged>& staged_;
  const Expr stage_;
};

// The loops of a copy of a statement with fresh variables, so that no variable is bound twice.
class LoopVarFreshener : public IRMutator {
 public:
  Stmt VisitStmt_(const ForNode* op, const Stmt& /*self*/) override {
    const Var fresh = op->loop_var.Copy();
    Stmt body = Substitute(VisitStmt(op->body), VarMap{{op->loop_var, fresh}});
    return For(fresh, op->extent, op->for_kind, body, op->thread_tag, op->annotations);
  }
};

// Marks the loops that copy one global element into one of `filled` per iteration kAsyncCopy.
class AsyncCopyMarker : public IRMutator {
 public:
  explicit AsyncCopyMarker(const BufferSet& filled) : filled_(filled) {}
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    const auto* store = op->body.as<BufferStoreNode>();
    const auto* load = store == nullptr ? nullptr : store->value.as<BufferLoadNode>();
    if (load == nullptr || !filled_.count(store->buffer.get()) ||
        load->buffer.scope() != "global" || load->dtype != store->buffer.dtype()) {
      return IRMutator::VisitStmt_(op, self);
    }
    Annotations annotations = op->annotations;
    annotations[kAsyncCopy] = int64_t{1};
    return For(op->loop_var, op->extent, op->for_kind, op->body, op->thread_tag, annotations);
  }

 private:
  const BufferSet& filled_;
};

// Whether `s` is made of kTmaLoad calls only (through sequences and loops).
bool IsTmaFill(const Stmt& s) {
  if (const auto* seq = s.as<SeqStmtNode>()) {
    return !seq->seq.empty() && std::all_of(seq->seq.begin(), seq->seq.end(), IsTmaFill);
  }
  if (const auto* loop = s.as<ForNode>()) return IsTmaFill(loop->body);
  const auto* eval = s.as<EvaluateNode>();
  const auto* call = eval == nullptr ? nullptr : eval->value.as<CallNode>();
  return call != nullptr && call->op == CallOp::kExtern &&
         call->name == lower_gpu_internal::kTmaLoad;
}

// Whether `s` calls `callee` (or a callee whose name starts with it).
bool Calls(const Stmt& s, const std::string& callee) {
  bool found = false;
  PostOrderVisitExprs(s, [&](const Expr& x) {
    const auto* call = x.as<CallNode>();
    found = found ||
            (call != nullptr && call->op == CallOp::kExtern && call->name.rfind(callee, 0) == 0);
  });
  return found;
}

// The bytes the kTmaLoad calls of `fill` (IsTmaFill) copy: their boxes times the tile's element
// size, times the extents of the loops around them; -1 under a loop of non-constant extent.
int64_t TmaBytes(const Stmt& fill) {
  if (const auto* seq = fill.as<SeqStmtNode>()) {
    int64_t bytes = 0;
    for (const Stmt& s : seq->seq) {
      const int64_t b = TmaBytes(s);
      if (b < 0) return -1;
      bytes += b;
    }
    return bytes;
  }
  if (const auto* loop = fill.as<ForNode>()) {
    const int64_t* extent = AsConstInt(loop->extent);
    const int64_t body = TmaBytes(loop->body);
    return extent == nullptr || body < 0 ? -1 : *extent * body;
  }
  const auto* call = fill.as<EvaluateNode>()->value.as<CallNode>();
  const int64_t rank = *AsConstInt(call->args[2]);
  int64_t box = call->args[0].dtype().bytes();
  for (int64_t d = 0; d < rank; ++d) box *= *AsConstInt(call->args[3 + d]);
  return box;
}

// Appends `barrier` to every kTmaLoad call.
class BarrierAppender : public IRMutator {
 public:
  explicit BarrierAppender(Expr barrier) : barrier_(std::move(barrier)) {}
  Expr VisitExpr_(const CallNode* op, const Expr& self) override {
    if (op->name != lower_gpu_internal::kTmaLoad) return IRMutator::VisitExpr_(op, self);
    std::vector<Expr> args = op->args;
    args.push_back(barrier_);
    return CallExtern(op->dtype, op->name, args);
  }

 private:
  Expr barrier_;
};

Stmt Call(const char* callee, std::vector<Expr> args) {
  return Evaluate(CallExtern(DataType::Int32(), callee, std::move(args)));
}

class Pipeliner : public IRMutator {
 public:
  explicit Pipeliner(bool async_copies) : async_(async_copies) {}
  const absl::Status& status() const { return status_; }

  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt visited = IRMutator::VisitStmt_(op, self);
    const auto* loop = visited.as<ForNode>();
    auto it = loop->annotations.find(kSoftwarePipelineStages);
    if (it == loop->annotations.end() || !status_.ok()) return visited;
    absl::StatusOr<Stmt> pipelined = Pipeline(loop, it->second);
    if (!pipelined.ok()) {
      status_ = pipelined.status();
      return visited;
    }
    return *pipelined;
  }

 private:
  absl::Status Invalid(const ForNode* loop, const std::string& why) const {
    return absl::InvalidArgumentError(
        absl::StrCat("software pipeline: loop ", loop->loop_var.name(), " ", why));
  }

  Stmt Commit() const { return Evaluate(CallExtern(DataType::Int32(), kCpAsyncCommit, {})); }

  absl::StatusOr<Stmt> Pipeline(const ForNode* loop, const AnnotationValue& value) {
    Annotations annotations = loop->annotations;
    annotations.erase(kSoftwarePipelineStages);
    const int64_t* extent = AsConstInt(loop->extent);
    const int64_t* stages_value = std::get_if<int64_t>(&value);
    if (extent == nullptr) return Invalid(loop, "has a non-constant extent");
    if (stages_value == nullptr) return Invalid(loop, "has a stage count that is not an integer");
    const int64_t stages = std::min(*stages_value, *extent);
    // TMA copies complete through mbarriers, which the pipeline places even for one stage.
    const bool tma = Calls(loop->body, lower_gpu_internal::kTmaLoad);
    if (stages < (tma ? 1 : 2) || loop->for_kind != ForKind::kSerial) {
      return For(loop->loop_var, loop->extent, loop->for_kind, loop->body, loop->thread_tag,
                 annotations);
    }
    // The body: barriers and shared allocations, then the producers and the consumers.
    std::vector<Buffer> allocated;
    std::vector<Stmt> items = WithoutLeadingBarriers(loop->body);
    while (items.size() == 1 && items[0].as<AllocateNode>() != nullptr) {
      const auto* alloc = items[0].as<AllocateNode>();
      if (!lower_gpu_internal::IsSharedScope(alloc->buffer.scope()) || alloc->buffer.ndim() != 1 ||
          alloc->buffer.NumElements() <= 0) {
        return Invalid(loop,
                       absl::StrCat("allocates ", alloc->buffer.name(), " (", alloc->buffer.scope(),
                                    "), not only constant shared buffers"));
      }
      allocated.push_back(alloc->buffer);
      items = WithoutLeadingBarriers(alloc->body);
    }
    if (allocated.empty()) return Invalid(loop, "allocates no shared buffer to fill");
    BufferSet filled;
    for (const Buffer& b : allocated) filled.insert(b.get());
    // The fills, without the barriers between them and before the first consumer; the
    // consumers with theirs.
    std::vector<Stmt> fills, consumers;
    for (const Stmt& item : items) {
      if (consumers.empty()) {
        if (lower_gpu_internal::IsSyncThreads(item)) continue;
        if (tma && IsTmaFill(item)) {
          fills.push_back(item);
          continue;
        }
        const Accesses a = AccessesOf(item, filled);
        if (!a.writes.empty() && !a.writes_other && a.reads.empty()) {
          fills.push_back(item);
          continue;
        }
      }
      consumers.push_back(item);
    }
    if (fills.empty()) return Invalid(loop, "does not start by filling its shared buffers");
    if (consumers.empty()) return Invalid(loop, "never reads the buffers it fills");
    if (tma && !std::all_of(fills.begin(), fills.end(), IsTmaFill)) {
      return Invalid(loop, "fills its shared buffers both by TMA and by threads");
    }
    for (const Stmt& item : consumers) {
      if (!AccessesOf(item, filled).writes.empty() ||
          (tma && Calls(item, lower_gpu_internal::kTmaLoad))) {
        return Invalid(loop, "writes its shared buffers after reading them");
      }
    }
    std::unordered_map<const BufferNode*, StageRewriter::Staged> staged;
    for (const Buffer& b : allocated) {
      staged[b.get()] = {b.WithShape({Expr(stages * b.NumElements())}), b.NumElements()};
    }
    Stmt fill = SeqStmt(fills);
    if (async_) fill = AsyncCopyMarker(filled).VisitStmt(fill);
    const Stmt compute = SeqStmt(consumers);
    const Var& k = loop->loop_var;
    // The producers of iteration `iter` into stage `stage`.
    auto fill_at = [&](const Expr& iter, const Expr& stage) {
      Stmt s = Substitute(fill, VarMap{{k, iter}});
      s = StageRewriter(staged, stage).VisitStmt(s);
      return LoopVarFreshener().VisitStmt(s);
    };
    const Expr ahead = k + Expr(stages - 1);
    if (tma) {
      if (TmaBytes(fill) < 0) return Invalid(loop, "copies by TMA under a loop of unknown extent");
      return PipelineTma(loop, annotations, allocated, staged, fill, compute, stages);
    }
    std::vector<Stmt> body;
    if (async_)
      body.push_back(Evaluate(CallExtern(DataType::Int32(), kCpAsyncWait, {Expr(stages - 2)})));
    body.push_back(lower_gpu_internal::SyncThreads());
    body.push_back(
        IfThenElse(LT(ahead, Expr(*extent)), fill_at(ahead, FloorMod(ahead, Expr(stages)))));
    if (async_) body.push_back(Commit());
    body.push_back(StageRewriter(staged, FloorMod(k, Expr(stages))).VisitStmt(compute));
    // A barrier first: an enclosing loop's previous iteration may still read the stages.
    std::vector<Stmt> seq = {lower_gpu_internal::SyncThreads()};
    for (int64_t p = 0; p + 1 < stages; ++p) {
      seq.push_back(fill_at(Expr(p), Expr(p)));
      if (async_) seq.push_back(Commit());
    }
    seq.push_back(For(k, loop->extent, ForKind::kSerial, SeqStmt(body), "", annotations));
    Stmt out = SeqStmt(seq);
    for (size_t i = allocated.size(); i-- > 0;) {
      out = Allocate(staged[allocated[i].get()].buffer, out);
    }
    return out;
  }

  // The pipeline of TMA fills: one mbarrier per stage ("<k>_full") that thread (0, 0, 0)
  // initializes, arms with the stage's bytes and starts the copies on; every thread waits on it
  // for the phase of the iteration's use of the stage (k / S % 2). A k step's wgmma products
  // are fenced before and committed and awaited after.
  Stmt PipelineTma(const ForNode* loop, const Annotations& annotations,
                   const std::vector<Buffer>& allocated,
                   std::unordered_map<const BufferNode*, StageRewriter::Staged>& staged,
                   const Stmt& fill, const Stmt& compute, int64_t stages) {
    using lower_gpu_internal::kElectedThread;
    const Var& k = loop->loop_var;
    const Buffer barriers = Buffer::Make(k.name() + "_full", DataType(DataType::Code::kUInt, 64),
                                         {Expr(stages)}, "shared");
    const int64_t bytes = TmaBytes(fill);
    auto elected = [](Stmt s) {
      return IfThenElse(CallExtern(DataType::Bool(), kElectedThread, {}), std::move(s));
    };
    auto issue = [&](const Expr& iter, const Expr& stage) {
      Stmt copies = Substitute(fill, VarMap{{k, iter}});
      copies = StageRewriter(staged, stage).VisitStmt(copies);
      copies = BarrierAppender(barriers.Load({stage})).VisitStmt(copies);
      copies = LoopVarFreshener().VisitStmt(copies);
      return elected(SeqStmt(
          {Call(lower_gpu_internal::kMbarrierExpectTx, {barriers.Load({stage}), Expr(bytes)}),
           copies}));
    };
    const Expr ahead = k + Expr(stages - 1);
    const Expr stage = FloorMod(k, Expr(stages));
    std::vector<Stmt> body = {
        lower_gpu_internal::SyncThreads(),
        IfThenElse(LT(ahead, loop->extent), issue(ahead, FloorMod(ahead, Expr(stages)))),
        Call(lower_gpu_internal::kMbarrierWait,
             {barriers.Load({stage}), FloorMod(FloorDiv(k, Expr(stages)), Expr(2))})};
    const bool wgmma = Calls(compute, std::string(kWgmmaNamespace) + "::mma_async");
    if (wgmma) body.push_back(Call(lower_gpu_internal::kWgmmaFence, {}));
    body.push_back(StageRewriter(staged, stage).VisitStmt(compute));
    if (wgmma) body.push_back(Call(lower_gpu_internal::kWgmmaCommitWait, {}));
    std::vector<Stmt> inits;
    for (int64_t s = 0; s < stages; ++s) {
      inits.push_back(Call(lower_gpu_internal::kMbarrierInit, {barriers.Load({Expr(s)}), Expr(1)}));
    }
    inits.push_back(Call(lower_gpu_internal::kMbarrierInitFence, {}));
    std::vector<Stmt> seq = {lower_gpu_internal::SyncThreads(), elected(SeqStmt(inits)),
                             lower_gpu_internal::SyncThreads()};
    for (int64_t p = 0; p + 1 < stages; ++p) seq.push_back(issue(Expr(p), Expr(p)));
    seq.push_back(For(k, loop->extent, ForKind::kSerial, SeqStmt(body), "", annotations));
    Stmt out = SeqStmt(seq);
    for (size_t i = allocated.size(); i-- > 0;) {
      out = Allocate(staged[allocated[i].get()].buffer, out);
    }
    return Allocate(barriers, out);
  }

  const bool async_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<Stmt> InjectSoftwarePipelines(const Stmt& kernel, bool async_copies) {
  Pipeliner pipeliner(async_copies);
  Stmt out = pipeliner.VisitStmt(kernel);
  TESSERA_RETURN_IF_ERROR(pipeliner.status());
  return out;
}

}  // namespace tessera
