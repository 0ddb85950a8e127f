#include "codegen/lower_gpu.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/compact_buffers.h"
#include "codegen/lower_gpu_internal.h"
#include "codegen/lower_internal.h"
#include "codegen/software_pipeline.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/int_set.h"
#include "ir/functor.h"
#include "ir/tensor_core_fragments.h"

namespace tessera {
namespace lower_gpu_internal {

int ThreadDim(const std::string& tag) {
  if (tag.size() < 2 || tag[tag.size() - 2] != '.') return -1;
  if (!IsBlockIdxTag(tag) && !IsThreadIdxTag(tag)) return -1;
  char c = tag.back();
  return c == 'x' ? 0 : c == 'y' ? 1 : c == 'z' ? 2 : -1;
}
bool IsBlockIdxTag(const std::string& tag) { return tag.rfind("blockIdx.", 0) == 0; }
bool IsThreadIdxTag(const std::string& tag) { return tag.rfind("threadIdx.", 0) == 0; }
bool IsVthreadTag(const std::string& tag) { return tag.rfind("vthread", 0) == 0; }

}  // namespace lower_gpu_internal

namespace {

using namespace lower_gpu_internal;  // NOLINT: this file implements them.

// The top-level statements of a body (its sequence, or itself).
std::vector<Stmt> TopLevel(const Stmt& body) {
  if (const auto* seq = body.as<SeqStmtNode>()) return seq->seq;
  return {body};
}

// ---- Unbound computation (block form) ----------------------------------------------------

absl::Status CheckBound(const Stmt& s, bool bound) {
  if (!s.defined()) return absl::OkStatus();
  switch (s.kind()) {
    case StmtKind::kFor: {
      const auto* f = s.as<ForNode>();
      bool binds = f->for_kind == ForKind::kThreadBinding &&
                   (IsBlockIdxTag(f->thread_tag) || IsThreadIdxTag(f->thread_tag));
      return CheckBound(f->body, bound || binds);
    }
    case StmtKind::kBlockRealize:
      if (!bound) {
        return absl::InvalidArgumentError(absl::StrCat(
            "verify_gpu: block ", s.as<BlockRealizeNode>()->block->name,
            " is not bound to threads (bind a loop above it to blockIdx or threadIdx)"));
      }
      return absl::OkStatus();
    case StmtKind::kSeq:
      for (const Stmt& c : s.as<SeqStmtNode>()->seq) TESSERA_RETURN_IF_ERROR(CheckBound(c, bound));
      return absl::OkStatus();
    case StmtKind::kIfThenElse: {
      const auto* ite = s.as<IfThenElseNode>();
      TESSERA_RETURN_IF_ERROR(CheckBound(ite->then_case, bound));
      return CheckBound(ite->else_case, bound);
    }
    case StmtKind::kAllocate:
      return CheckBound(s.as<AllocateNode>()->body, bound);
    case StmtKind::kBufferStore:
      if (!bound) {
        return absl::InvalidArgumentError(
            absl::StrCat("verify_gpu: a store into ", s.as<BufferStoreNode>()->buffer.name(),
                         " is not bound to threads"));
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
}

// ---- WMMA fragments (block form, after compaction) ----------------------------------------

constexpr int64_t kWmmaTile = 16;

// Turns fragment buffers into 1-D arrays of 16x16 tiles and the fragment calls into their lowered
// argument lists (lower_gpu.h).
class FragmentRewriter : public IRMutator {
 public:
  const absl::Status& status() const { return status_; }

 protected:
  // The bindings of the iteration variables of the blocks around (wgmma's operand alignment is
  // proven on the loop variables).
  Stmt VisitStmt_(const BlockRealizeNode* op, const Stmt& self) override {
    for (size_t i = 0; i < op->iter_values.size() && i < op->block->iter_vars.size(); ++i) {
      bindings_[op->block->iter_vars[i].var] = Substitute(op->iter_values[i], bindings_);
    }
    return IRMutator::VisitStmt_(op, self);
  }
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (IsConstInt(op->extent, 1)) bindings_[op->loop_var] = Expr(0);  // a loop run once
    loops_.emplace_back(op->loop_var, op->extent);
    Stmt out = IRMutator::VisitStmt_(op, self);
    loops_.pop_back();
    return out;
  }

  Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    const Buffer& b = op->buffer;
    if (!IsFragmentScope(b.scope())) return IRMutator::VisitStmt_(op, self);
    // 2-D, or with leading unit dimensions (a batch of 1).
    const int nd = b.ndim();
    bool matrix = nd >= 2;
    for (int d = 0; matrix && d + 2 < nd; ++d) matrix = IsConstInt(b.shape()[d], 1);
    const int64_t* rows = matrix ? AsConstInt(b.shape()[nd - 2]) : nullptr;
    const int64_t* cols = matrix ? AsConstInt(b.shape()[nd - 1]) : nullptr;
    // A warpgroup's accumulator is one 64 x N tile (N a multiple of 8 up to 256).
    const bool wgmma = FragmentNamespace(b.scope()) == kWgmmaNamespace;
    const int64_t tile_rows = wgmma ? kWgmmaM : kWmmaTile;
    const int64_t tile_cols = wgmma && cols != nullptr ? *cols : kWmmaTile;
    if (rows == nullptr || cols == nullptr || *rows % tile_rows || *cols % tile_cols ||
        (wgmma && (*cols % 8 != 0 || *cols > 256))) {
      Fail(absl::StrCat("lower_gpu: fragment ", b.name(), " (", b.scope(),
                        ") must be 2-D (or have leading extents 1) with constant multiples of ",
                        wgmma ? "64 rows and 8 to 256 columns" : "16", " as extents"));
      return self;
    }
    Buffer tiles = Buffer::Make(b.name(), b.dtype(),
                                {Expr((*rows / tile_rows) * (*cols / tile_cols))}, b.scope());
    tiles_[b.get()] = {tiles, *cols / tile_cols, tile_rows, tile_cols};
    return Allocate(tiles, VisitStmt(op->body));
  }

  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    if (tiles_.count(op->buffer.get())) {
      Fail(absl::StrCat("lower_gpu: fragment ", op->buffer.name(),
                        " is read element-wise (only fragment calls can access fragments)"));
      return self;
    }
    return IRMutator::VisitExpr_(op, self);
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (IsFragmentScope(op->buffer.scope())) {
      Fail(absl::StrCat("lower_gpu: fragment ", op->buffer.name(),
                        " is written element-wise (only fragment calls can access fragments)"));
      return self;
    }
    return IRMutator::VisitStmt_(op, self);
  }

  Expr VisitExpr_(const CallNode* op, const Expr& self) override {
    if (op->op != CallOp::kExtern || !IsFragmentCall(op->name)) {
      return IRMutator::VisitExpr_(op, self);
    }
    const std::string& name = op->name;
    const std::string operation = FragmentOperation(name);
    if (name.rfind(kWgmmaNamespace, 0) == 0) return WgmmaCall(op, operation, self);
    std::vector<Expr> args;
    size_t arity = 0;
    if (operation == "load_matrix_sync" || operation == "store_matrix_sync") {
      arity = 2;
    } else if (operation == "fill_fragment") {
      arity = 2;
    } else if (operation == "mma_sync") {
      arity = 4;
    } else {
      Fail(absl::StrCat("lower_gpu: unknown fragment call ", name));
      return self;
    }
    if (op->args.size() < arity) {
      Fail(absl::StrCat("lower_gpu: ", name, " has ", op->args.size(), " arguments"));
      return self;
    }
    Expr ld;
    std::string memory;  // the buffer of the memory operand
    for (size_t i = 0; i < arity; ++i) {
      const auto* load = op->args[i].as<BufferLoadNode>();
      if (load != nullptr && tiles_.count(load->buffer.get())) {
        args.push_back(TileLoad(load));
      } else if (load != nullptr && IsFragmentScope(load->buffer.scope())) {
        Fail(absl::StrCat("lower_gpu: fragment ", load->buffer.name(),
                          " must be allocated by the root block"));
        return self;
      } else if (load != nullptr && operation != "fill_fragment") {
        args.push_back(IRMutator::VisitExpr(op->args[i]));
        ld = LeadingDimension(load->buffer);
        memory = load->buffer.name();
      } else {
        args.push_back(IRMutator::VisitExpr(op->args[i]));
      }
    }
    if (operation == "load_matrix_sync" || operation == "store_matrix_sync") {
      if (!ld.defined()) {
        Fail(absl::StrCat("lower_gpu: ", name, " has no memory operand"));
        return self;
      }
      // ldmatrix reads rows of 16 bytes at 16-byte aligned addresses: the tile's rows must
      // start so (the tile itself starts at a multiple of 16 elements of an aligned buffer).
      const int64_t* ld_elements = AsConstInt(ld);
      if (name.rfind(kMmaNamespace, 0) == 0 && operation == "load_matrix_sync" &&
          (ld_elements == nullptr || *ld_elements * op->args[1].dtype().bytes() % 16 != 0)) {
        Fail(absl::StrCat(
            "lower_gpu: ", name, " of ", memory,
            ": ldmatrix needs rows a constant "
            "multiple of 16 bytes apart, the leading dimension is ",
            ld_elements != nullptr ? absl::StrCat(*ld_elements, " elements") : "not constant"));
        return self;
      }
      args.push_back(ld);
    }
    return CallExtern(op->dtype, name, args);
  }

 private:
  struct Tiles {
    Buffer buffer;
    int64_t tiles_per_row, tile_rows, tile_cols;
  };

  Expr TileLoad(const BufferLoadNode* load) {
    const Tiles& t = tiles_.at(load->buffer.get());
    const size_t n = load->indices.size();
    if (n < 2) return t.buffer.Load({Expr(0)});
    Expr row = FloorDiv(IRMutator::VisitExpr(load->indices[n - 2]), Expr(t.tile_rows));
    Expr col = FloorDiv(IRMutator::VisitExpr(load->indices[n - 1]), Expr(t.tile_cols));
    return t.buffer.Load({row * Expr(t.tiles_per_row) + col});
  }

  // tessera_wgmma's calls, each with the accumulator tile's N appended:
  //   fill_fragment(tile, value, N);
  //   mma_async(tile, A element, B element, B's block stride in bytes, N), the elements of the
  //     TMA tiles where the 64 x 16 and 16 x N operands start (A K-major, B N-major);
  //   store_matrix_sync(memory element, tile, leading dimension, N).
  Expr WgmmaCall(const CallNode* op, const std::string& operation, const Expr& self) {
    const size_t arity = operation == "mma_async" ? 3 : 2;
    const size_t frag_arg = operation == "store_matrix_sync" ? 1 : 0;
    if (op->args.size() != arity || op->args[frag_arg].as<BufferLoadNode>() == nullptr ||
        !tiles_.count(op->args[frag_arg].as<BufferLoadNode>()->buffer.get())) {
      Fail(absl::StrCat("lower_gpu: ", op->name, " needs ", arity,
                        " arguments, the accumulator tile ", frag_arg == 0 ? "first" : "second"));
      return self;
    }
    const auto* frag = op->args[frag_arg].as<BufferLoadNode>();
    const Tiles& t = tiles_.at(frag->buffer.get());
    const Expr n(t.tile_cols);
    if (operation == "fill_fragment") {
      return CallExtern(op->dtype, op->name, {TileLoad(frag), op->args[1], n});
    }
    if (operation == "store_matrix_sync") {
      const auto* mem = op->args[0].as<BufferLoadNode>();
      if (mem == nullptr) {
        Fail(absl::StrCat("lower_gpu: ", op->name, " has no memory operand"));
        return self;
      }
      return CallExtern(
          op->dtype, op->name,
          {IRMutator::VisitExpr(op->args[0]), TileLoad(frag), LeadingDimension(mem->buffer), n});
    }
    if (operation != "mma_async") {
      Fail(absl::StrCat("lower_gpu: unknown fragment call ", op->name));
      return self;
    }
    std::vector<Expr> operands;
    Expr b_block_bytes;
    for (int i : {1, 2}) {
      const auto* tile = op->args[i].as<BufferLoadNode>();
      if (tile == nullptr || tile->buffer.scope() != kTmaSharedScope) {
        Fail(absl::StrCat("lower_gpu: ", op->name, " reads its operands from ", kTmaSharedScope,
                          " tiles"));
        return self;
      }
      const Buffer& b = tile->buffer;
      const int nd = b.ndim();
      const int64_t* rows = nd >= 2 ? AsConstInt(b.shape()[nd - 2]) : nullptr;
      if (rows == nullptr) {
        Fail(absl::StrCat("lower_gpu: TMA tile ", b.name(), " has no constant row count"));
        return self;
      }
      Expr r = IRMutator::VisitExpr(tile->indices[nd - 2]);
      Expr c = IRMutator::VisitExpr(tile->indices[nd - 1]);
      // Descriptors address 16-byte units inside 8-row swizzle atoms; B's N spans whole blocks.
      const int64_t width = lower_gpu_internal::TmaBlockWidth(b.dtype());
      arith::Analyzer analyzer;
      for (const auto& [var, extent] : loops_) analyzer.Bind(var, Range{Expr(0), extent});
      r = analyzer.Simplify(Substitute(r, bindings_));
      c = analyzer.Simplify(Substitute(c, bindings_));
      const bool aligned =
          analyzer.CanProve(EQ(FloorMod(r, Expr(8)), Expr(0))) &&
          analyzer.CanProve(
              EQ(FloorMod(c, Expr(i == 1 ? 16 / b.dtype().bytes() : width)), Expr(0)));
      if (!aligned) {
        Fail(absl::StrCat("lower_gpu: ", op->name, " reads ", b.name(),
                          " from a row that is no multiple of 8 or a column off its ",
                          i == 1 ? "16-byte unit" : "128-byte block"));
        return self;
      }
      operands.push_back(
          lower_gpu_internal::TmaTileElement(b, lower_gpu_internal::TmaTileOffset(b, *rows, r, c)));
      if (i == 2) b_block_bytes = Expr(*rows * 128);
    }
    return CallExtern(op->dtype, op->name,
                      {TileLoad(frag), operands[0], operands[1], b_block_bytes, n});
  }

  Expr LeadingDimension(const Buffer& b) {
    if (b.ndim() < 2) {
      Fail(absl::StrCat("lower_gpu: fragment operand ", b.name(), " has fewer than 2 dimensions"));
      return Expr(0);
    }
    if (!b->strides.empty()) return b->strides[b.ndim() - 2];
    return b.shape()[b.ndim() - 1];
  }

  void Fail(const std::string& message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(message);
  }

  std::unordered_map<const BufferNode*, Tiles> tiles_;
  VarMap bindings_;
  std::vector<std::pair<Var, Expr>> loops_;
  absl::Status status_;
};

// ---- Virtual threads -------------------------------------------------------------------

class VthreadUnroller : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding || !IsVthreadTag(op->thread_tag)) {
      return IRMutator::VisitStmt_(op, self);
    }
    Annotations annotations = op->annotations;
    annotations[kVthreadAnnotation] = op->thread_tag;
    return For(op->loop_var, op->extent, ForKind::kUnrolled, VisitStmt(op->body), "", annotations);
  }
};

// ---- Kernel analysis (lowered form) ----------------------------------------------------------

class KernelAnalyzer : public IRVisitor {
 public:
  KernelAnalyzer(const std::string& name, const std::vector<Buffer>& params) : name_(name) {
    for (size_t i = 0; i < params.size(); ++i) param_index_[params[i].get()] = static_cast<int>(i);
  }

  absl::Status Run(const Stmt& kernel, GpuKernelInfo* info) {
    VisitStmt(kernel);
    TESSERA_RETURN_IF_ERROR(status_);
    if (!saw_thread_loop_) {
      return absl::InvalidArgumentError(
          absl::StrCat("verify_gpu: kernel ", name_, " has no loop bound to blockIdx or threadIdx"));
    }
    info->name = name_;
    info->body = kernel;
    for (int d = 0; d < 3; ++d) {
      info->grid[d] = extents_[d];
      info->block[d] = extents_[3 + d];
    }
    info->shared_bytes = shared_bytes_;
    info->vthreads = 1;
    for (const auto& [tag, extent] : vthreads_) info->vthreads *= extent;
    info->param_indices.assign(used_params_.begin(), used_params_.end());
    return absl::OkStatus();
  }

 protected:
  void VisitStmt_(const ForNode* op) override {
    const int64_t* extent = AsConstInt(op->extent);
    bool is_thread = op->for_kind == ForKind::kThreadBinding;
    if (is_thread) {
      int dim = ThreadDim(op->thread_tag);
      if (dim < 0) {
        Fail(absl::StrCat("verify_gpu: loop ", op->loop_var.name(), " is bound to ",
                          op->thread_tag, ", which a CUDA kernel does not have"));
        return;
      }
      if (extent == nullptr) {
        Fail(absl::StrCat("verify_gpu: loop ", op->loop_var.name(), " bound to ", op->thread_tag,
                          " has a non-constant extent in kernel ", name_));
        return;
      }
      bool block_tag = IsBlockIdxTag(op->thread_tag);
      if (block_tag && serial_depth_ > 0) {
        Fail(absl::StrCat("verify_gpu: loop ", op->loop_var.name(), " bound to ", op->thread_tag,
                          " is nested in a loop that is not bound to threads in kernel ", name_));
        return;
      }
      int slot = (block_tag ? 0 : 3) + dim;
      if (seen_[slot] && extents_[slot] != *extent) {
        Fail(absl::StrCat("verify_gpu: ", op->thread_tag, " has extents ", extents_[slot],
                          " and ", *extent, " in kernel ", name_));
        return;
      }
      seen_[slot] = true;
      extents_[slot] = *extent;
      saw_thread_loop_ = true;
      ++bound_depth_;
      IRVisitor::VisitStmt_(op);
      --bound_depth_;
      return;
    }
    auto vt = op->annotations.find(kVthreadAnnotation);
    if (vt != op->annotations.end() && extent != nullptr) {
      if (const auto* tag = std::get_if<std::string>(&vt->second)) {
        vthreads_[*tag] = std::max(vthreads_[*tag], *extent);
      }
    }
    // A unit loop runs once: it may sit above blockIdx loops.
    int depth = IsConstInt(op->extent, 1) ? 0 : 1;
    serial_depth_ += depth;
    IRVisitor::VisitStmt_(op);
    serial_depth_ -= depth;
  }

  void VisitStmt_(const AllocateNode* op) override {
    if (IsSharedScope(op->buffer.scope())) {
      int64_t n = op->buffer.NumElements();
      if (n < 0) {
        Fail(absl::StrCat("verify_gpu: shared buffer ", op->buffer.name(),
                          " has a non-constant size in kernel ", name_));
        return;
      }
      // TMA tiles start at 1024-byte boundaries of a base that code generation aligns so.
      if (op->buffer.scope() == kTmaSharedScope) {
        if (!tma_tiles_) shared_bytes_ += kTmaAlignment;
        tma_tiles_ = true;
        shared_bytes_ = (shared_bytes_ + kTmaAlignment - 1) / kTmaAlignment * kTmaAlignment;
      }
      shared_bytes_ += n * op->buffer.dtype().bytes();
    }
    IRVisitor::VisitStmt_(op);
  }

  void VisitStmt_(const BufferStoreNode* op) override {
    if (bound_depth_ == 0) {
      Fail(absl::StrCat("verify_gpu: a store into ", op->buffer.name(), " in kernel ", name_,
                        " is not bound to threads"));
      return;
    }
    Use(op->buffer);
    IRVisitor::VisitStmt_(op);
  }

  void VisitStmt_(const EvaluateNode* op) override {
    if (bound_depth_ == 0) {
      Fail(absl::StrCat("verify_gpu: a call in kernel ", name_, " is not bound to threads"));
      return;
    }
    IRVisitor::VisitStmt_(op);
  }

  void VisitExpr_(const BufferLoadNode* op) override {
    Use(op->buffer);
    IRVisitor::VisitExpr_(op);
  }

 private:
  void Use(const Buffer& b) {
    auto it = param_index_.find(b.get());
    if (it != param_index_.end()) used_params_.insert(it->second);
  }
  void Fail(const std::string& message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(message);
  }

  std::string name_;
  std::unordered_map<const BufferNode*, int> param_index_;
  std::set<int> used_params_;
  int64_t extents_[6] = {1, 1, 1, 1, 1, 1};
  bool seen_[6] = {false, false, false, false, false, false};
  bool saw_thread_loop_ = false;
  int serial_depth_ = 0;
  int bound_depth_ = 0;
  int64_t shared_bytes_ = 0;
  bool tma_tiles_ = false;
  std::map<std::string, int64_t> vthreads_;
  absl::Status status_;
};

}  // namespace

bool HasBlocks(const PrimFunc& f) {
  bool found = false;
  if (!f.defined() || !f.body().defined()) return false;
  PostOrderVisitStmts(f.body(), [&](const Stmt& s) {
    found = found || s.kind() == StmtKind::kBlockRealize || s.kind() == StmtKind::kBlock;
  });
  return found;
}

absl::StatusOr<std::vector<GpuKernelInfo>> SplitKernels(const PrimFunc& lowered) {
  std::vector<GpuKernelInfo> kernels;
  if (HasBlocks(lowered)) {
    return absl::InvalidArgumentError(
        "lower_gpu: SplitKernels needs a function lowered by LowerForGpu (it still has blocks)");
  }
  std::vector<Stmt> top = TopLevel(lowered.body());
  for (size_t i = 0; i < top.size(); ++i) {
    GpuKernelInfo info;
    KernelAnalyzer analyzer(absl::StrCat(lowered.name(), "_kernel", i), lowered.params());
    TESSERA_RETURN_IF_ERROR(analyzer.Run(top[i], &info));
    kernels.push_back(std::move(info));
  }
  return kernels;
}

absl::StatusOr<PrimFunc> LowerForGpu(const PrimFunc& f, const Target& target) {
  if (!f.defined() || !f.body().defined()) {
    return absl::InvalidArgumentError("lower_gpu: function has no body");
  }
  if (!HasBlocks(f)) return f;  // already lowered
  const auto* root_realize = f.body().as<BlockRealizeNode>();
  if (root_realize == nullptr) {
    return absl::InvalidArgumentError("lower_gpu: the body is not the root block");
  }
  const Block& root = root_realize->block;
  TESSERA_RETURN_IF_ERROR(CheckBound(root->body, /*bound=*/false));

  // 1. Cross-thread reductions.
  TESSERA_ASSIGN_OR_RETURN(Stmt body, LowerCrossThreadReductions(root->body, target));

  // 4. (before blocks disappear: block regions give the extent of tile accesses) Compaction.
  std::vector<Buffer> compactable;
  for (const Buffer& b : root->alloc_buffers) {
    if (b.scope() == "global") {
      return absl::InvalidArgumentError(absl::StrCat(
          "lower_gpu: intermediate buffer ", b.name(),
          " is in global memory, which cuda kernels cannot allocate (inline it, or cache it in "
          "shared or local memory)"));
    }
    compactable.push_back(b);
  }
  std::vector<Stmt> kernels = TopLevel(body);
  std::unordered_map<const BufferNode*, size_t> kernel_of;
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::vector<Buffer> used;
    lower_internal::AccessLcaFinder finder(compactable);
    finder.VisitStmt(kernels[k]);
    for (const Buffer& b : compactable) {
      if (finder.lca().count(b.get()) == 0) continue;
      auto [it, inserted] = kernel_of.emplace(b.get(), k);
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            "lower_gpu: ", b.scope(), " buffer ", b.name(), " is used by kernels ", it->second,
            " and ", k, " (", b.scope(), " memory does not outlive a kernel)"));
      }
      used.push_back(b);
    }
    std::vector<Buffer> outside_loops;
    TESSERA_ASSIGN_OR_RETURN(kernels[k],
                             lower_internal::CompactBuffers(kernels[k], used,
                                                            /*keep_predicated=*/false,
                                                            &outside_loops));
    if (!outside_loops.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("lower_gpu: buffer ", outside_loops[0].name(),
                                                     " (", outside_loops[0].scope(),
                                                     ") is accessed outside any loop"));
    }
    FragmentRewriter fragments;
    kernels[k] = fragments.VisitStmt(kernels[k]);
    TESSERA_RETURN_IF_ERROR(fragments.status());
  }
  body = SeqStmt(kernels);

  // 2. Blocks disappear; 3. virtual threads; 5. flattening.
  TESSERA_ASSIGN_OR_RETURN(body, lower_internal::RemoveBlocks(body));
  body = VthreadUnroller().VisitStmt(body);
  TESSERA_ASSIGN_OR_RETURN(body, LowerTmaCopies(body));
  std::vector<Buffer> params;
  TESSERA_ASSIGN_OR_RETURN(body, lower_internal::FlattenBuffers(f.params(), body, &params));

  // 6. Barriers, per kernel.
  PrimFunc lowered = PrimFunc::Make(f.name(), params, body, f.attrs());
  TESSERA_ASSIGN_OR_RETURN(std::vector<GpuKernelInfo> infos, SplitKernels(lowered));
  std::vector<Stmt> synced;
  for (const GpuKernelInfo& info : infos) {
    TESSERA_ASSIGN_OR_RETURN(Stmt s, InsertThreadSyncs(info.body, info.block));
    // 7. Software pipelines, asynchronous where the architecture has cp.async.
    TESSERA_ASSIGN_OR_RETURN(s, InjectSoftwarePipelines(s, target.compute_capability() >= 80));
    synced.push_back(s);
  }
  return lowered.WithBody(SeqStmt(synced));
}

}  // namespace tessera
