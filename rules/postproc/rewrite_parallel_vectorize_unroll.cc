// RewriteParallelVectorizeUnroll (docs/reference/metaschedule.md §4.4, after the annotations of the
// ParallelizeVectorizeUnroll rule, 4.3.8): the root block's meta_schedule.parallel = P,
// meta_schedule.vectorize = V and meta_schedule.unroll_explicit / unroll_implicit = S become
// loop transformations of every block directly under the root:
//   - parallel: the leading spatial loops (serial, unannotated, constant extent) are fused and
//     made parallel, up to and including the loop where the product of extents exceeds P or
//     the body branches;
//   - vectorize: the trailing spatial loops with a single child are fused and vectorized while
//     the product of extents stays <= V and the accesses stay contiguous: for every buffer
//     access of the block the innermost loops must walk memory with strides that continue
//     each other (stride(l) == stride(inner) * extent(inner)); loops an access does not use
//     are free. Vectorized loops win over parallel ones when they compete for a loop;
//   - when every loop qualifies for both, all loops are fused, split [None, V], the outer part
//     made parallel and the inner part vectorized;
//   - unroll: a block that is not purely spatial gets pragma_auto_unroll_max_step = S and
//     pragma_unroll_explicit = 1 (explicit) or 0 on its outermost loop when S > 0.
// The C backend turns these into OpenMP parallel loops, `omp simd` loops and unroll pragmas
// (codegen/codegen_c.h). Everything goes through Schedule primitives, so it is in the trace.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/linear.h"
#include "ir/functor.h"
#include "rules/analysis.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "rules/rule/params.h"

namespace tessera {
namespace {

// The root block's requests; -1 where absent.
struct Request {
  int64_t max_parallel = -1;
  int64_t max_vectorize = -1;
  int64_t unroll_step = -1;
  bool unroll_explicit = false;
};

// What the rewrite needs to know of one loop of a block.
struct LoopFacts {
  Var var;
  bool spatial = false;
  bool free = false;  // serial and without annotations
  std::optional<int64_t> extent;
  bool single_child = false;
  bool rewritable() const { return spatial && free && extent.has_value(); }
};

// Reads and removes the root block's annotations. False if it has none of them.
absl::StatusOr<bool> TakeRequest(Schedule* sch, BlockRV root, Request* request) {
  TESSERA_ASSIGN_OR_RETURN(Block block, sch->Get(root));
  bool found = false;
  for (const char* key :
       {attr::kParallel, attr::kVectorize, attr::kUnrollExplicit, attr::kUnrollImplicit}) {
    auto it = block->annotations.find(key);
    if (it == block->annotations.end()) continue;
    const auto* value = std::get_if<int64_t>(&it->second);
    if (value == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("root block annotation ", key, " is not an integer"));
    }
    found = true;
    const std::string k = key;
    if (k == attr::kParallel) request->max_parallel = *value;
    if (k == attr::kVectorize) request->max_vectorize = *value;
    if (k == attr::kUnrollExplicit || k == attr::kUnrollImplicit) {
      request->unroll_step = *value;
      request->unroll_explicit = k == attr::kUnrollExplicit;
    }
    TESSERA_RETURN_IF_ERROR(sch->Unannotate(root, key));
  }
  return found;
}

bool IsSingleChild(const Stmt& body) { return body.as<SeqStmtNode>() == nullptr; }

// Element stride of `var` in an access of `buffer` whose dimensions start at `starts` (in
// loop variables): its constant coefficient in the innermost dimension whose start uses it,
// times the dimension's stride; 0 when unused; nullopt when the use is not linear with a
// constant coefficient or the layout is not constant.
std::optional<int64_t> AccessStride(const Buffer& buffer, const std::vector<Expr>& starts,
                                    const Var& var, arith::Analyzer* analyzer) {
  int64_t dim_stride = 1;
  for (int d = static_cast<int>(starts.size()) - 1; d >= 0; --d) {
    if (!buffer->strides.empty()) {
      const int64_t* s = AsConstInt(buffer->strides[d]);
      if (s == nullptr) return std::nullopt;
      dim_stride = *s;
    }
    const Expr& index = starts[d];
    if (UsesVar(index, [&](const VarNode* v) { return v == var.get(); })) {
      std::optional<arith::LinearEquation> eq = arith::DetectLinearEquation(index, {var}, analyzer);
      if (!eq) return std::nullopt;
      const int64_t* coeff = AsConstInt(eq->coeffs[0]);
      if (coeff == nullptr) return std::nullopt;
      return *coeff * dim_stride;
    }
    if (buffer->strides.empty()) {
      const int64_t* extent = AsConstInt(buffer.shape()[d]);
      if (extent == nullptr) return std::nullopt;
      dim_stride *= *extent;
    }
  }
  return 0;
}

// How many innermost loops walk `region` contiguously.
int ContiguousLoops(const BufferRegion& region, const VarMap& bindings,
                    const std::vector<LoopFacts>& loops) {
  // The region's starts in loop variables, simplified once for all loops.
  arith::Analyzer analyzer;
  std::vector<Expr> starts;
  for (const Range& r : region.region) {
    starts.push_back(analyzer.Simplify(Substitute(r.min, bindings)));
  }
  int count = 0;
  int prev_used = -1;
  int64_t prev_stride = 0;
  for (int i = static_cast<int>(loops.size()) - 1; i >= 0; --i) {
    std::optional<int64_t> stride = AccessStride(region.buffer, starts, loops[i].var, &analyzer);
    if (!stride) break;
    if (*stride == 0) {
      ++count;
      continue;
    }
    if (prev_used == -1) {
      // The innermost used loop may be strided only if no unused loop sits inside it.
      if (*stride != 1 && count != 0) break;
    } else if (!loops[prev_used].extent || *stride != prev_stride * *loops[prev_used].extent) {
      break;
    }
    ++count;
    prev_used = i;
    prev_stride = *stride;
  }
  return count;
}

class RewriteParallelVectorizeUnroll final : public Postproc {
 public:
  std::string name() const override { return "RewriteParallelVectorizeUnroll"; }

  absl::Status Apply(Schedule* sch) const override {
    TESSERA_ASSIGN_OR_RETURN(BlockRV root, sch->GetBlock("root"));
    Request request;
    TESSERA_ASSIGN_OR_RETURN(bool found, TakeRequest(sch, root, &request));
    if (!found) return absl::OkStatus();
    TESSERA_ASSIGN_OR_RETURN(std::vector<BlockRV> blocks, sch->GetChildBlocks(root));
    for (BlockRV block : blocks) TESSERA_RETURN_IF_ERROR(RewriteBlock(sch, block, request));
    return absl::OkStatus();
  }

 private:
  static absl::StatusOr<std::vector<LoopFacts>> Facts(Schedule* sch, BlockRV block,
                                                      const std::vector<LoopRV>& loops) {
    std::vector<std::optional<IterKind>> kinds = LoopIterKinds(*sch, block);
    if (kinds.size() != loops.size()) {
      return absl::InternalError("loop kinds do not match the loops of the block");
    }
    std::vector<LoopFacts> facts;
    for (size_t i = 0; i < loops.size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(const ForNode* loop, sch->Get(loops[i]));
      LoopFacts f;
      f.var = loop->loop_var;
      f.spatial = kinds[i] == IterKind::kSpatial;
      f.free = loop->for_kind == ForKind::kSerial && loop->annotations.empty();
      if (const int64_t* e = AsConstInt(loop->extent)) f.extent = *e;
      f.single_child = IsSingleChild(loop->body);
      facts.push_back(f);
    }
    return facts;
  }

  // Trailing loops every access of `block` walks contiguously.
  static absl::StatusOr<int> MaxContiguous(Schedule* sch, BlockRV block,
                                           const std::vector<LoopFacts>& loops) {
    TESSERA_ASSIGN_OR_RETURN(StmtPath path, sch->GetPath(block));
    const auto* realize = path.back().as<BlockRealizeNode>();
    VarMap bindings;
    for (size_t i = 0; i < realize->iter_values.size(); ++i) {
      bindings[realize->block->iter_vars[i].var] = realize->iter_values[i];
    }
    int result = static_cast<int>(loops.size());
    for (const auto* regions : {&realize->block->reads, &realize->block->writes}) {
      for (const BufferRegion& r : *regions) {
        result = std::min(result, ContiguousLoops(r, bindings, loops));
      }
    }
    return result;
  }

  static absl::Status RewriteBlock(Schedule* sch, BlockRV block, const Request& request) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopRV> loops, sch->GetLoops(block));
    if (loops.empty()) return absl::OkStatus();
    const int n = static_cast<int>(loops.size());
    TESSERA_ASSIGN_OR_RETURN(std::vector<LoopFacts> facts, Facts(sch, block, loops));
    int n_parallel = 0, n_vectorize = 0;
    int64_t all_extent = 1;
    bool all_rewritable = true;
    for (const LoopFacts& f : facts) {
      all_rewritable = all_rewritable && f.rewritable() && f.single_child;
      if (f.extent) all_extent *= *f.extent;
    }
    if (request.max_parallel > 0) {
      int64_t product = 1;
      for (int i = 0; i < n && facts[i].rewritable(); ++i) {
        ++n_parallel;
        product *= *facts[i].extent;
        if (product > request.max_parallel || !facts[i].single_child) break;
      }
      if (product == 1) n_parallel = 0;
    }
    int contiguous = 0;
    if (request.max_vectorize > 0) {
      TESSERA_ASSIGN_OR_RETURN(contiguous, MaxContiguous(sch, block, facts));
      int64_t product = 1;
      for (int i = n - 1; i >= 0 && n_vectorize < contiguous; --i) {
        if (!facts[i].rewritable() || !facts[i].single_child) break;
        if (product * *facts[i].extent > request.max_vectorize) break;
        product *= *facts[i].extent;
        ++n_vectorize;
      }
      if (product == 1) n_vectorize = 0;
    }
    if (request.max_parallel > 0 && request.max_vectorize > 0 && all_rewritable &&
        contiguous == n && all_extent > request.max_vectorize) {
      TESSERA_ASSIGN_OR_RETURN(LoopRV fused, FuseAll(sch, loops));
      TESSERA_ASSIGN_OR_RETURN(
          std::vector<LoopRV> parts,
          sch->Split(fused, {InstValue(), InstValue::Int(request.max_vectorize)}));
      TESSERA_RETURN_IF_ERROR(sch->Parallel(parts[0]));
      TESSERA_RETURN_IF_ERROR(sch->Vectorize(parts[1]));
      loops = parts;
    } else {
      n_parallel = std::min(n_parallel, n - n_vectorize);
      if (n_parallel > 0) {
        std::vector<LoopRV> head(loops.begin(), loops.begin() + n_parallel);
        TESSERA_ASSIGN_OR_RETURN(LoopRV fused, FuseAll(sch, head));
        TESSERA_RETURN_IF_ERROR(sch->Parallel(fused));
        loops.erase(loops.begin(), loops.begin() + n_parallel);
        loops.insert(loops.begin(), fused);
      }
      if (n_vectorize > 0) {
        std::vector<LoopRV> tail(loops.end() - n_vectorize, loops.end());
        TESSERA_ASSIGN_OR_RETURN(LoopRV fused, FuseAll(sch, tail));
        TESSERA_RETURN_IF_ERROR(sch->Vectorize(fused));
        loops.erase(loops.end() - n_vectorize, loops.end());
        loops.push_back(fused);
      }
    }
    if (request.unroll_step > 0) {
      TESSERA_ASSIGN_OR_RETURN(Block b, sch->Get(block));
      if (!IsSpatialBlock(b)) {
        TESSERA_RETURN_IF_ERROR(sch->Annotate(loops[0], attr::kPragmaAutoUnrollMaxStep,
                                              InstValue::Int(request.unroll_step)));
        TESSERA_RETURN_IF_ERROR(sch->Annotate(loops[0], attr::kPragmaUnrollExplicit,
                                              InstValue::Int(request.unroll_explicit ? 1 : 0)));
      }
    }
    return absl::OkStatus();
  }

  static absl::StatusOr<LoopRV> FuseAll(Schedule* sch, const std::vector<LoopRV>& loops) {
    if (loops.size() == 1) return loops[0];
    return sch->Fuse(loops);
  }
};

}  // namespace

absl::StatusOr<PostprocPtr> NewRewriteParallelVectorizeUnroll(const Target& /*target*/,
                                                              const nlohmann::json& params) {
  TESSERA_RETURN_IF_ERROR(
      RuleParams::Parse("RewriteParallelVectorizeUnroll", params, {}).status());
  return std::make_shared<const RewriteParallelVectorizeUnroll>();
}

}  // namespace tessera
