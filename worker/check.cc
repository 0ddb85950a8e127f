#include "worker/check.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "ir/analysis.h"
#include "ir/flops.h"
#include "ir/functor.h"
#include "ir/interpreter.h"
#include "ir/ndarray.h"
#include "schedule/schedule.h"
#include "worker/backends.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace {

// Above this many FLOPs the interpreter would take too long as the oracle, so the check uses a
// naive compilation instead. The interpreter does ~40 MFLOP/s (GMM 512^3, 2.7e8 FLOPs: 7 s),
// a -O0 serial build of the same function compiles and runs in ~0.5 s; at this budget the
// interpreter takes about a second at most.
constexpr double kInterpreterFlopBudget = 5e7;

RunnerConfig RunOnce(double timeout_sec) {
  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  once.number = 1;
  once.timeout_sec = timeout_sec;
  return once;
}

// The naive reference of a large program made faster without changing one result: in each
// block at the root, the longest run of leading loops that `parallel` accepts (loops no
// reduction of a block under them uses) is fused and run in parallel. Each output element is
// still computed by one thread in the program's own order, so the outputs are the serial
// program's bit for bit. GMM 4096^3 took over 60 s serial at -O0, past any run's time-out.
PrimFunc ParallelizeOuterLoops(const PrimFunc& func) {
  Schedule sch = Schedule::Create(func, /*seed=*/0);
  absl::StatusOr<BlockRV> root = sch.GetBlock("root");
  if (!root.ok()) return func;
  absl::StatusOr<std::vector<BlockRV>> blocks = sch.GetChildBlocks(*root);
  if (!blocks.ok()) return func;
  for (BlockRV block : *blocks) {
    absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(block);
    if (!loops.ok()) continue;
    for (size_t n = loops->size(); n >= 1; --n) {
      Schedule attempt = sch.Copy();
      absl::StatusOr<LoopRV> fused =
          n == 1 ? absl::StatusOr<LoopRV>((*loops)[0])
                 : attempt.Fuse(std::vector<LoopRV>(loops->begin(), loops->begin() + n));
      if (fused.ok() && attempt.Parallel(*fused).ok()) {
        sch = attempt;
        break;
      }
    }
  }
  return sch.func();
}

// The most terms one reduction of `func` adds up: the largest product of a block's reduction
// extents (1 without reductions).
double LongestReduction(const PrimFunc& func) {
  double longest = 1;
  PostOrderVisitStmts(func.body(), [&](const Stmt& s) {
    const auto* realize = s.as<BlockRealizeNode>();
    if (realize == nullptr) return;
    double terms = 1;
    for (const IterVar& iv : realize->block->iter_vars) {
      const int64_t* extent = AsConstInt(iv.dom.extent);
      if (iv.kind == IterKind::kReduction && extent != nullptr)
        terms *= static_cast<double>(*extent);
    }
    longest = std::max(longest, terms);
  });
  return longest;
}

// The absolute tolerance of a 16-bit float output beyond its dtype's default. A sum of K terms
// that rounds every partial sum to float16 (unit roundoff 2^-11; bfloat16 2^-8) depends on the
// order of the additions: two orders differ by about sqrt(K) roundings of partial sums as large
// as the results, and a schedule may add in another order (a tensor core's float16 GEMM with
// K = 64 differed by 0.027 in 2 of 32768 outputs, past the default 0.01 + 0.01 |e|). Twice that
// is allowed; 0 for other dtypes, whose default tolerances cover their reductions.
double AccumulationTolerance(const NDArray& expected, double reduction_terms) {
  const DataType dtype = expected.dtype();
  if (!dtype.is_float() || dtype.bits() != 16 || reduction_terms <= 1) return 0;
  const double unit_roundoff =
      dtype.code() == DataType::Code::kBFloat ? std::ldexp(1.0, -8) : std::ldexp(1.0, -11);
  double largest = 0;
  for (int64_t i = 0; i < expected.size(); ++i) {
    const double e = std::fabs(expected.GetFlat(i));
    if (std::isfinite(e)) largest = std::max(largest, e);
  }
  return 2 * std::sqrt(reduction_terms) * unit_roundoff * largest;
}

}  // namespace

std::vector<NDArray> RandomArgs(const PrimFunc& func, int64_t seed) {
  Random rng(seed);
  std::vector<NDArray> args;
  for (const ArgInfo& info : ArgInfosOf(func)) {
    args.push_back(NDArray::Empty(info.dtype, info.shape));
    args.back().FillRandom(&rng);
  }
  return args;
}

absl::StatusOr<ReferenceOutputs> ComputeReference(const PrimFunc& reference, int64_t seed,
                                                  double timeout_sec) {
  ReferenceOutputs out;
  out.params = ArgInfosOf(reference);
  out.written = WrittenParamIndices(reference);
  out.reduction_terms = LongestReduction(reference);
  out.inputs = RandomArgs(reference, seed);
  for (const NDArray& a : out.inputs) out.outputs.push_back(a.Clone());
  if (EstimateFlops(reference) <= kInterpreterFlopBudget) {
    out.reference = "interpreter";
    std::vector<NDArray*> pointers;
    for (NDArray& e : out.outputs) pointers.push_back(&e);
    TESSERA_RETURN_IF_ERROR(Interpret(reference, pointers));
    return out;
  }
  out.reference = "naive compiled C (-O2 strict, outer data-parallel loops in parallel)";
  // -O2 keeps IEEE arithmetic in the program's order; -ffp-contract=off forbids fusing a
  // multiply and an add (which rounds once instead of twice), -fwrapv makes integer overflow
  // wrap as the interpreter's does.
  CBuilderOptions naive;
  naive.optimization_flags = {"-O2", "-ffp-contract=off", "-fwrapv", "-fno-strict-aliasing"};
  std::unique_ptr<Builder> builder = NewCBuilder(naive);
  // The reference always runs on the host, whatever the target of the candidates.
  TESSERA_ASSIGN_OR_RETURN(Target host, ResolveTarget("cpu"));
  TESSERA_ASSIGN_OR_RETURN(BuildResult ref_build,
                           BuildOne(builder.get(), ParallelizeOuterLoops(reference), host));
  // The naive build runs at 0.2-0.4 GFLOP/s a core (float16 GMM 512x512x1024 at 0.2 on one),
  // and a task computes its reference once: give it the time its size needs at 0.2 GFLOP/s in
  // all. At the candidates' time-out (120 s) a float16 GMM 4096^3 (137 GFLOP) on 16 cores may
  // not finish, and a failed reference fails every check of its task.
  constexpr double kNaiveFlopsPerSecond = 2e8;
  const double reference_timeout =
      std::max(timeout_sec, EstimateFlops(reference) / kNaiveFlopsPerSecond);
  absl::StatusOr<RunResult> ref_ran = RunCpuKernel(ref_build.artifact_path, ref_build.symbol,
                                                   &out.outputs, RunOnce(reference_timeout));
  if (!ref_ran.ok()) return ref_ran.status();
  if (!ref_ran->ok()) {
    return absl::InternalError(absl::StrCat("reference run failed: ", ref_ran->error_msg));
  }
  return out;
}

absl::StatusOr<CheckOutcome> CheckAgainstReference(const PrimFunc& func,
                                                   const ReferenceOutputs& reference,
                                                   const Target& target, const BuildResult& built,
                                                   double timeout_sec) {
  std::vector<ArgInfo> params = ArgInfosOf(func);
  bool same = params.size() == reference.params.size();
  for (size_t i = 0; same && i < params.size(); ++i) {
    same = params[i].dtype == reference.params[i].dtype &&
           params[i].shape == reference.params[i].shape;
  }
  if (!same) {
    return absl::InvalidArgumentError(
        "check: the function and its reference have different parameters");
  }
  std::vector<NDArray> actual;
  for (const NDArray& a : reference.inputs) actual.push_back(a.Clone());
  absl::StatusOr<RunResult> ran = RunKernel(target, built, &actual, RunOnce(timeout_sec));
  if (!ran.ok()) return ran.status();
  if (!ran->ok()) return absl::InternalError(absl::StrCat("run failed: ", ran->error_msg));

  CheckOutcome outcome;
  outcome.reference = reference.reference;
  outcome.passed = true;
  for (int index : reference.written) {
    const NDArray& expected = reference.outputs[index];
    double rtol = 0, atol = 0;
    DefaultTolerance(expected.dtype(), &rtol, &atol);
    atol += AccumulationTolerance(expected, reference.reduction_terms);
    TESSERA_ASSIGN_OR_RETURN(Comparison cmp, Compare(actual[index], expected, rtol, atol));
    outcome.max_abs_error = std::max(outcome.max_abs_error, cmp.max_abs_error);
    outcome.max_rel_error = std::max(outcome.max_rel_error, cmp.max_rel_error);
    outcome.mismatches += cmp.mismatches;
    if (!cmp.ok()) outcome.passed = false;
  }
  return outcome;
}

absl::StatusOr<CheckOutcome> CheckAgainstReference(const PrimFunc& func, const PrimFunc& reference,
                                                   const Target& target, const BuildResult& built,
                                                   int64_t seed, double timeout_sec) {
  TESSERA_ASSIGN_OR_RETURN(ReferenceOutputs outputs,
                           ComputeReference(reference, seed, timeout_sec));
  return CheckAgainstReference(func, outputs, target, built, timeout_sec);
}

absl::StatusOr<CheckOutcome> BuildAndCheck(Builder* builder, const PrimFunc& func,
                                           const PrimFunc& reference, const Target& target,
                                           int64_t seed, double timeout_sec) {
  TESSERA_ASSIGN_OR_RETURN(BuildResult built, BuildOne(builder, func, target));
  return CheckAgainstReference(func, reference, target, built, seed, timeout_sec);
}

}  // namespace tessera
