// Targets and appliers shared by the default schedule tests (tests/rules/default_schedule_test.cc,
// tests/rules/default/*_test.cc).
#ifndef TESSERA_TESTS_RULES_DEFAULT_SCHEDULE_TESTING_H_
#define TESSERA_TESTS_RULES_DEFAULT_SCHEDULE_TESTING_H_

#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/default/default_rule.h"
#include "schedule/schedule.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/host.h"

namespace tessera {
namespace default_schedule_testing {

inline Target CudaTarget(const std::string& arch) {
  absl::StatusOr<Target> target = Target::Parse(
      "cuda -arch=" + arch + " -max_threads_per_block=1024 -max_shared_memory_per_block=49152");
  TESSERA_CHECK(target.ok()) << target.status();
  return *target;
}

inline Target CpuTarget() {
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  TESSERA_CHECK(target.ok()) << target.status();
  return *target;
}

// The host target as an AVX-512 core (16 floats, 32 registers) with Zen 4's 1 MiB L2: the core
// whose tiles and panel budgets the tests' shapes were measured on, so they hold on any host (an
// AVX2 host's own tiles are tested with explicit cores; an Intel host's 2 MiB L2 kept the
// 32-column panel that the long-reduction test expects narrowed).
inline Target Avx512CpuTarget() {
  absl::StatusOr<Target> target = CpuTarget().With("vector_bits", "512");
  if (target.ok()) target = target->With("isa", "avx2+fma+avx512f");
  if (target.ok()) target = target->With("l2_kb", "1024");
  TESSERA_CHECK(target.ok()) << target.status();
  return *target;
}

// The host target as an AVX2 core (8 floats, 16 registers), whatever the host.
inline Target Avx2CpuTarget() {
  absl::StatusOr<Target> target = CpuTarget().With("vector_bits", "256");
  if (target.ok()) target = target->With("isa", "avx2+fma");
  TESSERA_CHECK(target.ok()) << target.status();
  return *target;
}

// Avx512CpuTarget with the dot products: AVX-512 BF16's bfloat16 pairs, VNNI's int8 fours
// (ir/cpu_intrinsics.h).
inline Target DotProductCpuTarget() {
  absl::StatusOr<Target> target =
      Avx512CpuTarget().With("isa", "avx2+fma+avx512f+avx512bw+avx512vnni+avx512bf16");
  TESSERA_CHECK(target.ok()) << target.status();
  return *target;
}

// How many extern calls named `name` `scheduled` makes.
inline int ExternCalls(const PrimFunc& scheduled, const std::string& name) {
  int calls = 0;
  PostOrderVisitExprs(scheduled->body, [&](const Expr& e) {
    const auto* call = e.as<CallNode>();
    calls += call != nullptr && call->name == name;
  });
  return calls;
}

// The first rule of the target's list that applies, with its schedule.
struct Applied {
  std::string rule;
  std::optional<Schedule> sch;
};

inline Applied ApplyFirst(const PrimFunc& func, const Target& target) {
  for (const DefaultRulePtr& rule : DefaultRulesFor(target)) {
    absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(func, target);
    TESSERA_CHECK(sch.ok()) << sch.status();
    if (sch->has_value()) return {rule->name(), std::move(*sch)};
  }
  return {"", std::nullopt};
}

// The rule ApplyDefaultSchedule reports for `func`, and the function it produced.
inline std::pair<std::string, PrimFunc> ApplyToModule(const PrimFunc& func, const Target& target) {
  std::vector<DefaultScheduleEntry> report;
  absl::StatusOr<IRModule> mod =
      ApplyDefaultSchedule(IRModule::FromFunction(func), target, DefaultRulesFor(target), &report);
  TESSERA_CHECK(mod.ok()) << mod.status();
  TESSERA_CHECK(report.size() == 1);
  return {report[0].rule, *mod->Lookup(func.name())};
}

// The names of every workload of the library, for parameterized tests.
inline std::vector<std::string> WorkloadNames() {
  std::vector<std::string> names;
  for (const WorkloadInfo& info : ListWorkloads()) names.push_back(info.name);
  return names;
}

// GMM in float16 at B=1 and the given M, N, K (the tensor-core path's input).
inline PrimFunc HalfGmm(int64_t m, int64_t n, int64_t k) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}}, "float16");
}

// The loop kinds and intermediate buffers (scope, shape) of a scheduled function.
struct ScheduleShape {
  std::set<ForKind> kinds;
  std::vector<Buffer> buffers;
  int64_t unrolled_extent = 0;  // the extent of the (last) unrolled loop
};

inline ScheduleShape ShapeOf(const PrimFunc& scheduled) {
  ScheduleShape shape;
  PostOrderVisitStmts(scheduled->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      shape.kinds.insert(loop->for_kind);
      if (loop->for_kind == ForKind::kUnrolled) {
        if (const auto* extent = loop->extent.as<IntImmNode>()) {
          shape.unrolled_extent = extent->value;
        }
      }
    }
    if (const auto* block = s.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) shape.buffers.push_back(b);
    }
  });
  return shape;
}

// The extents of `b`, -1 for one that is not a constant.
inline std::vector<int64_t> ConstantShape(const Buffer& b) {
  std::vector<int64_t> dims;
  for (const Expr& d : b.shape()) {
    const auto* value = d.as<IntImmNode>();
    dims.push_back(value != nullptr ? value->value : -1);
  }
  return dims;
}

// The constant shape of the first intermediate of `scope` (empty if none).
inline std::vector<int64_t> ShapeOfScope(const ScheduleShape& shape, const std::string& scope) {
  for (const Buffer& b : shape.buffers) {
    if (b.scope() == scope) return ConstantShape(b);
  }
  return {};
}

// The shape of the buffer named `name` in the scheduled function, or {} when there is none.
inline std::vector<int64_t> ShapeOfBuffer(const ScheduleShape& shape, const std::string& name) {
  for (const Buffer& b : shape.buffers) {
    if (b.name() == name) return ConstantShape(b);
  }
  return {};
}

// Builds `scheduled` with the C backend and checks it against `func` on random inputs.
inline void ExpectMatchesReference(const PrimFunc& scheduled, const PrimFunc& func) {
  absl::StatusOr<CheckOutcome> check =
      BuildAndCheck(NewCBuilder().get(), scheduled, func, CpuTarget(), /*seed=*/3, 60);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->passed) << PrintFunc(scheduled);
}

}  // namespace default_schedule_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_RULES_DEFAULT_SCHEDULE_TESTING_H_
