// MutateParallel (docs/reference/metaschedule.md §3.6): rewrites the integer of a
// meta_schedule.parallel annotation so that RewriteParallelVectorizeUnroll fuses a different
// number of leading loops in some block. Candidate limits are the prefix products of the
// outermost run of constant-extent spatial loops of each block directly under the annotated
// block (in the replayed schedule), up to num_cores × max_jobs_per_core; limits that give the
// same plan (loops fused per block) are one choice, and the current plan is excluded.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "ir/functor.h"
#include "rules/annotations.h"
#include "rules/rule/params.h"
#include "schedule/schedule.h"
#include "schedule/state.h"
#include "tuner/mutator.h"
#include "tuner/mutator/util.h"

namespace tessera {
namespace {

constexpr char kParallelName[] = "MutateParallel";

using Plan = std::vector<int64_t>;  // per block: the number of leading loops fused

// For each block realize directly under block `scope`: prefix products (outermost loop first)
// of its outermost run of constant-extent spatial loops, stopping at the first >= `limit`.
std::vector<std::vector<int64_t>> AnalyzeParallel(const PrimFunc& func, const std::string& scope,
                                                  int64_t limit) {
  std::vector<std::vector<int64_t>> result;
  absl::StatusOr<StmtPath> scope_path = FindBlockPath(func, scope);
  if (!scope_path.ok()) return result;
  const Block& scope_block = scope_path->back().as<BlockRealizeNode>()->block;
  const std::vector<Stmt> realizes = ChildBlockRealizes(scope_block->body);
  // Bindings of non-spatial iterators: a loop they use is not spatial.
  std::vector<Expr> non_spatial;
  for (const Stmt& s : realizes) {
    const auto* realize = s.as<BlockRealizeNode>();
    for (size_t i = 0; i < realize->iter_values.size(); ++i) {
      if (realize->block->iter_vars[i].kind != IterKind::kSpatial) {
        non_spatial.push_back(realize->iter_values[i]);
      }
    }
  }
  for (const Stmt& s : realizes) {
    absl::StatusOr<StmtPath> path = FindBlockPath(func, s.as<BlockRealizeNode>()->block->name);
    if (!path.ok()) continue;
    const std::vector<Stmt> loops = LoopsOnPath(*path);
    std::vector<int64_t> extents;  // innermost first, reset by a non-spatial or dynamic loop
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
      const auto* loop = it->as<ForNode>();
      const int64_t* extent = AsConstInt(loop->extent);
      const VarNode* var = loop->loop_var.get();
      const bool spatial = std::none_of(non_spatial.begin(), non_spatial.end(), [&](const Expr& e) {
        return UsesVar(e, [var](const VarNode* v) { return v == var; });
      });
      if (extent == nullptr || !spatial) {
        extents.clear();
      } else {
        extents.push_back(*extent);
      }
    }
    if (extents.empty()) continue;
    std::reverse(extents.begin(), extents.end());
    std::vector<int64_t> prods;
    int64_t prod = 1;
    for (int64_t e : extents) {
      prods.push_back(prod *= e);
      if (prod >= limit) break;
    }
    result.push_back(std::move(prods));
  }
  return result;
}

// Per block, the number of leading loops fused under `limit`: up to and including the first
// whose prefix product reaches the limit, all of them if none does.
Plan FusedLoops(const std::vector<std::vector<int64_t>>& prods_per_block, int64_t limit) {
  Plan plan;
  for (const std::vector<int64_t>& prods : prods_per_block) {
    const auto first = std::lower_bound(prods.begin(), prods.end(), limit);
    plan.push_back(first == prods.end() ? static_cast<int64_t>(prods.size())
                                        : (first - prods.begin()) + 1);
  }
  return plan;
}

class MutateParallel : public Mutator {
 public:
  explicit MutateParallel(int64_t max_parallel_extent)
      : max_parallel_extent_(max_parallel_extent) {}

  std::string name() const override { return kParallelName; }

  std::optional<Trace> Apply(const Trace& trace, const PrimFunc& workload,
                             Random* rng) const override {
    // Candidates: Annotate(block from GetBlock, <int>, meta_schedule.parallel).
    std::map<int64_t, std::string> block_names;  // BlockRV id -> name, from GetBlock
    std::vector<size_t> annotations;
    for (size_t i = 0; i < trace.PostprocStart(); ++i) {
      const Instruction& inst = trace.insts()[i];
      if (mutator::IsKind(inst, "GetBlock") && inst.outputs.size() == 1) {
        block_names[inst.outputs[0].rv_id()] = mutator::StringAttr(inst, 0);
      } else if (mutator::IsKind(inst, "Annotate") && inst.inputs.size() == 2 &&
                 mutator::StringAttr(inst, 0) == attr::kParallel && inst.inputs[0].is_rv() &&
                 inst.inputs[0].rv_kind() == RVKind::kBlock && inst.inputs[1].is_int() &&
                 block_names.count(inst.inputs[0].rv_id())) {
        annotations.push_back(i);
      }
    }
    if (annotations.empty()) return std::nullopt;
    const size_t index = annotations[rng->UniformInt(0, static_cast<int64_t>(annotations.size()))];
    const Instruction& annotate = trace.insts()[index];

    Schedule sch = Schedule::Create(workload, rng->ForkSeed());
    if (!trace.ApplyTo(&sch, /*remove_postproc=*/true).ok()) return std::nullopt;
    const std::vector<std::vector<int64_t>> prods = AnalyzeParallel(
        sch.func(), block_names.at(annotate.inputs[0].rv_id()), max_parallel_extent_);

    std::set<int64_t> limits;
    for (const std::vector<int64_t>& p : prods) {
      for (int64_t limit : p) {
        if (limit <= max_parallel_extent_) limits.insert(limit);
      }
    }
    std::map<Plan, int64_t> plans;  // plan -> the smallest limit giving it
    for (int64_t limit : limits) plans.emplace(FusedLoops(prods, limit), limit);
    plans.erase(FusedLoops(prods, annotate.inputs[1].as_int()));
    if (plans.empty()) return std::nullopt;
    auto chosen = plans.begin();
    std::advance(chosen, rng->UniformInt(0, static_cast<int64_t>(plans.size())));

    Instruction mutated = annotate;
    mutated.inputs[1] = InstValue::Int(chosen->second);
    return mutator::WithInstruction(trace, index, std::move(mutated));
  }

 private:
  int64_t max_parallel_extent_;
};

}  // namespace

absl::StatusOr<MutatorPtr> NewMutateParallel(const Target& target, const nlohmann::json& params) {
  TESSERA_ASSIGN_OR_RETURN(RuleParams p,
                           RuleParams::Parse(kParallelName, params, {"max_jobs_per_core"}));
  TESSERA_ASSIGN_OR_RETURN(int64_t max_jobs_per_core, p.Int("max_jobs_per_core", 16));
  if (max_jobs_per_core <= 0) return p.Error("max_jobs_per_core", "must be positive");
  if (!target.is_cpu()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kParallelName, ": needs a cpu target (the core count), got ", target.ToString()));
  }
  return std::make_shared<MutateParallel>(target.cores() * max_jobs_per_core);
}

}  // namespace tessera
