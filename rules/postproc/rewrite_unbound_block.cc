// RewriteUnboundBlock (docs/reference/metaschedule.md §4.4, GPU): every block that would run
// outside a kernel's thread grid, i.e. is not under both a blockIdx and a threadIdx loop, gets its
// leading spatial loops bound to blockIdx.x / threadIdx.x by BindBlockThreadIdx
// (rules/thread_bind.h) with min(max_threads_per_block, extent) threads, no sampling. Blocks
// nested in such a block move with it, so only the outermost unbound blocks are bound.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "rules/postproc.h"
#include "rules/rule/params.h"
#include "rules/thread_bind.h"

namespace tessera {
namespace {

// The outermost non-root blocks not under both a blockIdx and a threadIdx loop, in program
// order.
class UnboundBlockFinder : public IRVisitor {
 public:
  std::vector<std::string> names;

 protected:
  void VisitStmt_(const ForNode* op) override {
    int* counter = nullptr;
    if (op->for_kind == ForKind::kThreadBinding) {
      if (op->thread_tag.rfind("blockIdx.", 0) == 0) counter = &block_idx_;
      if (op->thread_tag.rfind("threadIdx.", 0) == 0) counter = &thread_idx_;
    }
    if (counter != nullptr) ++*counter;
    if (block_idx_ == 0 || thread_idx_ == 0) IRVisitor::VisitStmt_(op);
    if (counter != nullptr) --*counter;
  }
  void VisitStmt_(const BlockNode* op) override {
    if (!seen_root_) {
      seen_root_ = true;
      IRVisitor::VisitStmt_(op);
      return;
    }
    names.push_back(op->name);
  }

 private:
  bool seen_root_ = false;
  int block_idx_ = 0;
  int thread_idx_ = 0;
};

class RewriteUnboundBlock final : public Postproc {
 public:
  RewriteUnboundBlock(int64_t max_threadblocks, int64_t max_threads_per_block)
      : max_threadblocks_(max_threadblocks), max_threads_per_block_(max_threads_per_block) {}

  std::string name() const override { return "RewriteUnboundBlock"; }

  absl::Status Apply(Schedule* sch) const override {
    UnboundBlockFinder finder;
    finder.VisitStmt(sch->func().body());
    const ThreadExtentSampler sampler = MakeFixedThreadExtentSampler();
    for (const std::string& block_name : finder.names) {
      TESSERA_ASSIGN_OR_RETURN(BlockRV block, sch->GetBlock(block_name));
      absl::Status s =
          BindBlockThreadIdx(sch, block, max_threadblocks_, max_threads_per_block_, sampler);
      if (!s.ok()) {
        return absl::Status(s.code(), absl::StrCat("cannot bind block ", block_name,
                                                   " to threads: ", s.message()));
      }
    }
    return absl::OkStatus();
  }

 private:
  int64_t max_threadblocks_;
  int64_t max_threads_per_block_;
};

}  // namespace

absl::StatusOr<PostprocPtr> NewRewriteUnboundBlock(const Target& target,
                                                   const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(RuleParams parsed,
                           RuleParams::Parse("RewriteUnboundBlock", params, {"max_threadblocks"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t max_threadblocks, parsed.Int("max_threadblocks", 256));
  if (max_threadblocks < 1) return parsed.Error("max_threadblocks", "must be at least 1");
  if (!target.is_cuda()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RewriteUnboundBlock: target ", target.ToString(), " is not a cuda target"));
  }
  return std::make_shared<const RewriteUnboundBlock>(max_threadblocks,
                                                     target.max_threads_per_block());
}

}  // namespace tessera
