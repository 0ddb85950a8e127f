// VerifyGPUCode (docs/reference/metaschedule.md §4.4, GPU): rejects a candidate that cannot run as
// CUDA kernels on the target, before it costs a compilation:
//   1. at every block annotated meta_schedule.thread_extent_low_inclusive /
//      _high_inclusive (by MultiLevelTiling), the threads per block in effect (the product of
//      the innermost threadIdx.x, .y and .z extents around it) must lie within the bounds, and
//      be constant (threadIdx.x is the warp in a warp_execution block);
//   2. the function must lower to kernels (codegen/lower_gpu.h LowerForGpu) that respect the
//      target's limits (codegen/verify_gpu.h: threads and shared memory per block, virtual
//      threads);
//   3. no vectorized loop may access more than kMaxVectorBytes per access (MetaSchedule's
//      max_vector_bytes; CUDA's widest load is 16 bytes).
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "codegen/lower_gpu.h"
#include "codegen/verify_gpu.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "rules/rule/params.h"

namespace tessera {
namespace {

constexpr int64_t kMaxVectorBytes = 16;

std::optional<int64_t> IntAnnotation(const Annotations& annotations, const char* key) {
  auto it = annotations.find(key);
  if (it == annotations.end()) return std::nullopt;
  const auto* value = std::get_if<int64_t>(&it->second);
  return value ? std::optional<int64_t>(*value) : std::nullopt;
}

// Check 1: the first block whose threads per block violate its annotated bounds.
class ThreadExtentChecker : public IRVisitor {
 public:
  explicit ThreadExtentChecker(int64_t warp_size) : warp_size_(warp_size) {}

  absl::Status status;

 protected:
  void VisitStmt_(const ForNode* op) override {
    int dim = -1;
    if (op->for_kind == ForKind::kThreadBinding && op->thread_tag.rfind("threadIdx.", 0) == 0) {
      dim = op->thread_tag.back() - 'x';
    }
    if (dim < 0 || dim > 2) {
      IRVisitor::VisitStmt_(op);
      return;
    }
    std::optional<int64_t> saved = extents_[dim];
    std::string saved_dynamic = dynamic_loop_;
    const int64_t* extent = AsConstInt(op->extent);
    extents_[dim] = extent ? std::optional<int64_t>(*extent) : std::nullopt;
    if (extent == nullptr && dynamic_loop_.empty()) {
      dynamic_loop_ = absl::StrCat(op->loop_var.name(), " (extent ", PrintExpr(op->extent), ")");
    }
    IRVisitor::VisitStmt_(op);
    extents_[dim] = saved;
    dynamic_loop_ = saved_dynamic;
  }
  void VisitStmt_(const BlockNode* op) override {
    // A warp_execution block (a tensor-core block) runs on whole warps: threadIdx.x is the
    // warp, as in MetaSchedule's ThreadExtentChecker.
    const std::optional<int64_t> saved_x = extents_[0];
    if (op->annotations.count(attr::kWarpExecution) != 0) extents_[0] = warp_size_;
    std::optional<int64_t> low = IntAnnotation(op->annotations, attr::kThreadExtentLowInclusive);
    std::optional<int64_t> high = IntAnnotation(op->annotations, attr::kThreadExtentHighInclusive);
    if (status.ok() && (low || high)) status = Check(op->name, low, high);
    IRVisitor::VisitStmt_(op);
    extents_[0] = saved_x;
  }

 private:
  absl::Status Check(const std::string& block, std::optional<int64_t> low,
                     std::optional<int64_t> high) const {
    if (!dynamic_loop_.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("block ", block, " is under the thread loop ",
                                                     dynamic_loop_, " of non-constant extent"));
    }
    int64_t threads = 1;
    for (const std::optional<int64_t>& e : extents_) threads *= e.value_or(1);
    if ((low && threads < *low) || (high && threads > *high)) {
      return absl::InvalidArgumentError(absl::StrCat(
          threads, " threads per block in block ", block, " are outside the annotated bounds [",
          low.value_or(1), ", ", high ? absl::StrCat(*high) : std::string("inf"), "]"));
    }
    return absl::OkStatus();
  }

  const int64_t warp_size_;
  std::array<std::optional<int64_t>, 3> extents_;
  std::string dynamic_loop_;
};

// Check 3 on one lowered kernel.
absl::Status CheckVectorBytes(const GpuKernelInfo& kernel) {
  absl::Status status;
  PostOrderVisitStmts(kernel.body, [&](const Stmt& s) {
    const auto* loop = s.as<ForNode>();
    if (!status.ok() || loop == nullptr || loop->for_kind != ForKind::kVectorized) return;
    const int64_t* lanes = AsConstInt(loop->extent);
    if (lanes == nullptr) return;  // LowerForGpu rejects non-constant allocations, not loops
    int64_t widest = 0;
    std::string buffer;
    auto note = [&](const Buffer& b) {
      if (b.dtype().bytes() > widest) {
        widest = b.dtype().bytes();
        buffer = b.name();
      }
    };
    PostOrderVisitStmts(loop->body, [&](const Stmt& inner) {
      if (const auto* store = inner.as<BufferStoreNode>()) note(store->buffer);
    });
    PostOrderVisitExprs(loop->body, [&](const Expr& e) {
      if (const auto* load = e.as<BufferLoadNode>()) note(load->buffer);
    });
    if (*lanes * widest > kMaxVectorBytes) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "vectorized loop ", loop->loop_var.name(), " in kernel ", kernel.name, " accesses ",
          *lanes, " x ", widest, " bytes of buffer ", buffer, ", over the ", kMaxVectorBytes,
          "-byte vector limit"));
    }
  });
  return status;
}

class VerifyGPUCode final : public Postproc {
 public:
  explicit VerifyGPUCode(Target target) : target_(std::move(target)) {}

  std::string name() const override { return "VerifyGPUCode"; }

  absl::Status Apply(Schedule* sch) const override {
    ThreadExtentChecker checker(target_.warp_size());
    checker.VisitStmt(sch->func().body());
    TESSERA_RETURN_IF_ERROR(checker.status);
    TESSERA_ASSIGN_OR_RETURN(PrimFunc lowered, LowerForGpu(sch->func(), target_));
    TESSERA_ASSIGN_OR_RETURN(std::vector<GpuKernelInfo> kernels, SplitKernels(lowered));
    TESSERA_RETURN_IF_ERROR(VerifyGpuKernels(kernels, target_));
    for (const GpuKernelInfo& kernel : kernels) TESSERA_RETURN_IF_ERROR(CheckVectorBytes(kernel));
    return absl::OkStatus();
  }

 private:
  Target target_;
};

}  // namespace

absl::StatusOr<PostprocPtr> NewVerifyGPUCode(const Target& target, const nlohmann::json& params) {
  TESSERA_RETURN_IF_ERROR(RuleParams::Parse("VerifyGPUCode", params, {}).status());
  if (!target.is_cuda()) {
    return absl::InvalidArgumentError(
        absl::StrCat("VerifyGPUCode: target ", target.ToString(), " is not a cuda target"));
  }
  return std::make_shared<const VerifyGPUCode>(target);
}

}  // namespace tessera
