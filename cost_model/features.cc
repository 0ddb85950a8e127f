// Per-store feature extraction (docs/reference/metaschedule.md §6.2), walking the scheduled
// TensorIR directly instead of lowering it first: block iteration variables are replaced by their
// bindings (so accesses are in terms of loop variables, as after the reference's
// convert-blocks-to-opaque), a reduction's init runs inside all the block's loops (as after
// lowering init blocks), serial un-annotated loops of extent 1 are dropped (their variable is
// 0), and a select with no buffer load counts as the constant 1. Allocations sit at the
// innermost loop enclosing every access of the buffer (the reference's allocation planning),
// with the buffer compacted to the largest box any access covers there.
#include "cost_model/features.h"

#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>

#include "cost_model/features_internal.h"
#include "ir/arith/analyzer.h"
#include "ir/functor.h"
#include "ir/prepack.h"

namespace tessera {
namespace {

using features_internal::Access;
using features_internal::LoopInfo;
using features_internal::Slog;

// Same key as rules/annotations.h kPragmaAutoUnrollMaxStep (cost_model/ sits below rules/).
constexpr char kAutoUnrollMaxStep[] = "pragma_auto_unroll_max_step";

enum ArithIndex {
  kFloatMad, kFloatAddSub, kFloatMul, kFloatDivMod, kFloatCmp, kFloatMathFunc, kFloatOtherFunc,
  kIntMad, kIntAddSub, kIntMul, kIntDivMod, kIntCmp, kIntMathFunc, kIntOtherFunc,
  kBoolOp, kSelectOp,
};

bool HasLoad(const Expr& e) {
  bool found = false;
  PostOrderVisitExprs(e, [&](const Expr& x) { found |= x.kind() == ExprKind::kBufferLoad; });
  return found;
}

// True for values the reference treats as constants (no features for their stores).
bool IsConstantValue(const Expr& e) {
  if (e.as<IntImmNode>() || e.as<FloatImmNode>()) return true;
  if (const auto* cast = e.as<CastNode>()) return IsConstantValue(cast->value);
  return e.as<SelectNode>() && !HasLoad(e);
}

// Counts the operations of one execution of `e` into counts[ArithIndex].
void CountOps(const Expr& e, double* counts) {
  switch (e.kind()) {
    case ExprKind::kBinary: {
      const auto* op = e.as<BinaryNode>();
      const bool f = e.dtype().is_float();
      switch (op->op) {
        case BinaryOp::kAdd:
        case BinaryOp::kSub: counts[f ? kFloatAddSub : kIntAddSub] += 1; break;
        case BinaryOp::kMul: counts[f ? kFloatMul : kIntMul] += 1; break;
        case BinaryOp::kDiv:
        case BinaryOp::kFloorDiv:
        case BinaryOp::kFloorMod: counts[f ? kFloatDivMod : kIntDivMod] += 1; break;
        case BinaryOp::kAnd:
        case BinaryOp::kOr: counts[kBoolOp] += 1; break;
        default: counts[f ? kFloatCmp : kIntCmp] += 1; break;  // min, max, comparisons
      }
      CountOps(op->a, counts);
      CountOps(op->b, counts);
      return;
    }
    case ExprKind::kNot:
      counts[kBoolOp] += 1;
      CountOps(e.as<NotNode>()->a, counts);
      return;
    case ExprKind::kSelect: {
      if (!HasLoad(e)) return;  // the constant 1 of the reference's pre-simplification
      const auto* op = e.as<SelectNode>();
      counts[kSelectOp] += 1;
      CountOps(op->condition, counts);
      CountOps(op->true_value, counts);
      CountOps(op->false_value, counts);
      return;
    }
    case ExprKind::kCast: CountOps(e.as<CastNode>()->value, counts); return;
    case ExprKind::kBufferLoad:
      for (const Expr& i : e.as<BufferLoadNode>()->indices) CountOps(i, counts);
      return;
    case ExprKind::kCall: {
      const auto* op = e.as<CallNode>();
      const bool f = e.dtype().is_float();
      if (op->op == CallOp::kExtern) {
        counts[f ? kFloatOtherFunc : kIntOtherFunc] += 1;
      } else {
        counts[f ? kFloatMathFunc : kIntMathFunc] += 1;
      }
      for (const Expr& a : op->args) CountOps(a, counts);
      return;
    }
    default: return;
  }
}

// Features of one stored buffer, filled by its latest store.
struct Row {
  Buffer buffer;
  float values[kFeatureDim] = {};
  double outer_prod = 1;
};

// What the allocation group needs about a buffer: the loops enclosing all its accesses and
// the boxes its accesses cover under each of their loop levels.
struct AllocInfo {
  std::vector<const ForNode*> common_loops;  // common prefix of the loop stacks
  bool seen = false;
  std::vector<std::vector<std::vector<int64_t>>> boxes;  // per recorded access: [level][dim]
};

class Extractor {
 public:
  explicit Extractor(const Target& target) : is_gpu_(target.is_cuda()) {}

  absl::StatusOr<FeatureMatrix> Run(const PrimFunc& func) {
    const auto* root = func.body().as<BlockRealizeNode>();
    if (!root) {
      return absl::InvalidArgumentError("feature extraction: the body of function " + func.name() +
                                        " is not a root block realize");
    }
    Visit(func.body());
    if (!error_.ok()) return error_;
    return Finish();
  }

 private:
  void Visit(const Stmt& s) {
    if (!error_.ok()) return;
    switch (s.kind()) {
      case StmtKind::kFor: VisitFor(s.as<ForNode>()); return;
      case StmtKind::kSeq:
        for (const Stmt& c : s.as<SeqStmtNode>()->seq) Visit(c);
        return;
      case StmtKind::kIfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        Visit(op->then_case);
        if (op->else_case.defined()) Visit(op->else_case);
        return;
      }
      case StmtKind::kBlockRealize: VisitRealize(s.as<BlockRealizeNode>()); return;
      case StmtKind::kBlock: VisitBlock(s.as<BlockNode>()); return;
      case StmtKind::kAllocate: Visit(s.as<AllocateNode>()->body); return;
      case StmtKind::kBufferStore: VisitStore(s.as<BufferStoreNode>()); return;
      case StmtKind::kEvaluate: return;
    }
  }

  void VisitFor(const ForNode* op) {
    int64_t extent = 1;
    if (const int64_t* c = AsConstInt(op->extent)) {
      extent = *c;
    } else {
      arith::ConstIntBound b = analyzer_.ConstIntBound(Substitute(op->extent, vmap_));
      extent = b.max != arith::ConstIntBound::kPosInf ? std::max<int64_t>(b.max, 1) : 1;
    }
    analyzer_.Bind(op->loop_var, Range{Expr(0), Expr(1)});
    if (op->for_kind == ForKind::kSerial && op->annotations.empty() && extent == 1) {
      Visit(op->body);  // dropped: its variable stays the point 0
      return;
    }
    int64_t unroll_step = 0;
    auto it = op->annotations.find(kAutoUnrollMaxStep);
    if (it != op->annotations.end()) {
      if (const auto* v = std::get_if<int64_t>(&it->second)) unroll_step = *v;
    }
    if (unroll_step > 0) unroll_steps_.push_back(unroll_step);
    loops_.push_back({op, extent});
    Visit(op->body);
    loops_.pop_back();
    if (unroll_step > 0) unroll_steps_.pop_back();
  }

  void VisitRealize(const BlockRealizeNode* op) {
    const BlockNode* block = op->block.get();
    if (op->iter_values.size() != block->iter_vars.size()) {
      error_ = absl::InvalidArgumentError("feature extraction: block " + block->name + " has " +
                                          std::to_string(block->iter_vars.size()) +
                                          " iteration variables but " +
                                          std::to_string(op->iter_values.size()) + " bindings");
      return;
    }
    for (size_t i = 0; i < op->iter_values.size(); ++i) {
      vmap_[block->iter_vars[i].var] = Substitute(op->iter_values[i], vmap_);
    }
    VisitBlock(block);
    for (const IterVar& iv : block->iter_vars) vmap_.erase(iv.var);
  }

  void VisitBlock(const BlockNode* block) {
    for (const Buffer& b : block->alloc_buffers) allocs_[b.get()];
    if (block->init.defined()) Visit(block->init);
    Visit(block->body);
  }

  void NoteAccess(const Buffer& buffer) {
    auto it = allocs_.find(buffer.get());
    if (it == allocs_.end()) return;
    AllocInfo& info = it->second;
    if (!info.seen) {
      info.seen = true;
      for (const LoopInfo& l : loops_) info.common_loops.push_back(l.loop);
      return;
    }
    size_t k = 0;
    while (k < info.common_loops.size() && k < loops_.size() &&
           info.common_loops[k] == loops_[k].loop) {
      ++k;
    }
    info.common_loops.resize(k);
  }

  void VisitStore(const BufferStoreNode* op) {
    Expr value = vmap_.empty() ? op->value : Substitute(op->value, vmap_);
    std::vector<Access> accesses;
    accesses.push_back({op->buffer, {}, true});
    for (const Expr& i : op->indices) {
      accesses[0].indices.push_back(vmap_.empty() ? i : Substitute(i, vmap_));
    }
    PostOrderVisitExprs(value, [&](const Expr& e) {
      if (const auto* load = e.as<BufferLoadNode>()) {
        accesses.push_back({load->buffer, load->indices, false});
      }
    });
    for (const Access& a : accesses) NoteAccess(a.buffer);
    if (IsConstantValue(value)) return;

    double prod = 1;
    for (const LoopInfo& l : loops_) prod *= static_cast<double>(l.extent);
    auto row_it = row_index_.find(op->buffer.get());
    if (row_it == row_index_.end()) {
      row_it = row_index_.emplace(op->buffer.get(), rows_.size()).first;
      rows_.emplace_back();
      rows_.back().buffer = op->buffer;
    }
    Row& row = rows_[row_it->second];
    row.outer_prod = prod;
    float* out = row.values;
    std::fill(out, out + kFeatureDim, 0.0f);

    // Group 1: arithmetic counts, loop kinds, GPU bindings.
    double ops[features_internal::kNumArith] = {};
    CountOps(value, ops);
    for (int i = 0; i < features_internal::kNumArith; ++i) out[i] = Slog(ops[i] * prod);
    WriteLoopKind(ForKind::kVectorized, out + 16);
    WriteLoopKind(ForKind::kUnrolled, out + 27);
    WriteLoopKind(ForKind::kParallel, out + 38);
    WriteGpu(out + 49);

    // Group 2.
    features_internal::AccessFeatures access = features_internal::ComputeAccessFeatures(
        accesses, loops_, prod, &analyzer_, &touched_);
    std::copy(access.values.begin(), access.values.end(), out + features_internal::kGroup2Offset);
    for (features_internal::BufferBoxes& box : access.boxes) {
      auto it = allocs_.find(box.buffer.get());
      if (it != allocs_.end()) it->second.boxes.push_back(std::move(box.extents));
    }

    // Group 3.
    double float_ops = 0;
    for (int i = kFloatMad; i <= kFloatOtherFunc; ++i) float_ops += ops[i];
    WriteCurve(float_ops, access.touched_bytes, out + features_internal::kGroup3Offset);

    // Group 5 (group 4 needs every access of the buffer: filled by Finish).
    float* g5 = out + features_internal::kGroup5Offset;
    g5[0] = Slog(prod);
    g5[1] = Slog(static_cast<double>(loops_.size()));
    g5[2] = Slog(unroll_steps_.empty() ? 0.0 : static_cast<double>(unroll_steps_.back()));
  }

  void WriteLoopKind(ForKind kind, float* out) const {
    int64_t count = 0;
    double prod = 1, innermost = 0;
    for (const LoopInfo& l : loops_) {
      if (l.loop->for_kind != kind) continue;
      ++count;
      prod *= static_cast<double>(l.extent);
      innermost = static_cast<double>(l.extent);
    }
    out[0] = Slog(static_cast<double>(count));
    out[1] = Slog(count ? prod : 0.0);
    out[2] = Slog(innermost);
    out[3 + (count ? 7 : 0)] = 1.0f;  // position: "none", or "mixed" as in the reference
  }

  void WriteGpu(float* out) const {
    static const char* const kTags[] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                        "threadIdx.y", "threadIdx.z", "vthread"};
    out[0] = is_gpu_ ? 1.0f : 0.0f;
    for (int t = 0; t < 7; ++t) {
      double extent = 1;
      for (const LoopInfo& l : loops_) {
        const std::string& tag = l.loop->thread_tag;
        if (l.loop->for_kind == ForKind::kThreadBinding && tag.rfind(kTags[t], 0) == 0) {
          extent = static_cast<double>(l.extent);
          break;
        }
      }
      out[1 + t] = Slog(extent);
    }
  }

  // Arithmetic intensity (float ops / bytes touched) at ten points of the loop-nest compute.
  void WriteCurve(double float_ops, const std::vector<double>& touched_bytes, float* out) const {
    const int n = static_cast<int>(loops_.size());
    if (float_ops <= 0 || n == 0) return;
    std::vector<double> compute(n), memory(n);
    double p = float_ops;
    for (int j = 0; j < n; ++j) {  // j: the j+1 innermost loops
      p *= static_cast<double>(loops_[n - 1 - j].extent);
      compute[j] = p;
      memory[j] = std::max(touched_bytes[n - 1 - j], 1.0);
    }
    const int samples = features_internal::kCurveSamples;
    for (int i = 0; i < samples; ++i) {
      const double target = compute[n - 1] * (i + 1) / samples;
      int j = 0;
      while (j < n - 1 && compute[j] < target - 1e-4) ++j;
      double intensity = compute[j] / memory[j];
      if (j > 0) {
        const double base = compute[j - 1] / memory[j - 1];
        const double slope = (intensity - base) / (compute[j] - compute[j - 1]);
        intensity = base + slope * (target - compute[j - 1]);
      }
      out[i] = Slog(intensity);
    }
  }

  FeatureMatrix Finish() {
    FeatureMatrix m;
    m.rows = static_cast<int64_t>(rows_.size());
    m.values.reserve(rows_.size() * kFeatureDim);
    for (Row& row : rows_) {
      WriteAlloc(row);
      m.values.insert(m.values.end(), row.values, row.values + kFeatureDim);
    }
    return m;
  }

  void WriteAlloc(Row& row) const {
    float* g4 = row.values + features_internal::kGroup4Offset;
    const Buffer& buffer = row.buffer;
    auto it = allocs_.find(buffer.get());
    double numel = static_cast<double>(std::max<int64_t>(buffer.NumElements(), 0));
    double loop_prod = 1;
    if (it != allocs_.end()) {
      const AllocInfo& info = it->second;
      for (const ForNode* loop : info.common_loops) {
        const int64_t* e = AsConstInt(loop->extent);
        loop_prod *= e ? static_cast<double>(*e) : 1.0;
      }
      // Compacted: the largest extent per dimension over the accesses, under the loops inside
      // the allocation point.
      const size_t level = info.common_loops.size();
      std::vector<int64_t> dims;
      for (const auto& boxes : info.boxes) {
        if (level >= boxes.size()) continue;
        const std::vector<int64_t>& box = boxes[level];
        dims.resize(box.size(), 0);
        for (size_t d = 0; d < box.size(); ++d) dims[d] = std::max(dims[d], box[d]);
      }
      if (!dims.empty()) {
        numel = 1;
        for (int64_t d : dims) numel *= static_cast<double>(d);
      }
    }
    g4[0] = Slog(numel * buffer.dtype().bytes());
    g4[1] = Slog(numel * loop_prod);
    g4[2] = Slog(loop_prod);
    g4[3] = Slog(row.outer_prod / loop_prod);
  }

  const bool is_gpu_;
  arith::Analyzer analyzer_;
  VarMap vmap_;
  std::vector<LoopInfo> loops_;
  std::vector<int64_t> unroll_steps_;
  features_internal::TouchedLists touched_;
  std::vector<Row> rows_;
  std::unordered_map<const BufferNode*, size_t> row_index_;
  std::unordered_map<const BufferNode*, AllocInfo> allocs_;
  absl::Status error_;
};

}  // namespace

absl::StatusOr<FeatureMatrix> ExtractFeatures(const PrimFunc& scheduled, const Target& target) {
  if (!scheduled.defined()) return absl::InvalidArgumentError("feature extraction: no function");
  // A function that packs layout-free weights is measured as its kernel alone (ir/prepack.h).
  absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(scheduled);
  if (!split.ok()) return split.status();
  return Extractor(target).Run(split->has_value() ? (*split)->prepacked : scheduled);
}

}  // namespace tessera
