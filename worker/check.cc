#include "worker/check.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "base/status_macros.h"
#include "ir/analysis.h"
#include "ir/flops.h"
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
  absl::StatusOr<RunResult> ref_ran =
      RunCpuKernel(ref_build.artifact_path, ref_build.symbol, &out.outputs, RunOnce(timeout_sec));
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
    TESSERA_ASSIGN_OR_RETURN(Comparison cmp, Compare(actual[index], reference.outputs[index]));
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
