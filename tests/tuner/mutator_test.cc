// The mutator registry (tuner/mutator.cc): names, factories, parameters and default weights;
// and the acceptance tests over every mutator: 1000 chained applications to hand-built traces,
// and to traces sampled from real design spaces, keep traces replayable and programs correct.
#include "tuner/mutator.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/testing/schedule_testing.h"
#include "tests/tuner/mutator_testing.h"
#include "tuner/space_generator.h"

namespace tessera {
namespace {

using mutator_testing::ComputeLocationTrace;
using mutator_testing::Cpu;
using mutator_testing::Cuda;
using mutator_testing::Make;
using mutator_testing::Replay;
using mutator_testing::SmallDenseBiasRelu;
using mutator_testing::SmallElementwise;
using mutator_testing::SmallGmm;
using mutator_testing::ThreadBindingTrace;
using mutator_testing::TiledGmmTrace;
using testing::CheckScheduleCorrect;

TEST(MutatorsTest, NamesAndFactories) {
  const std::vector<std::string> names = MutatorNames();
  EXPECT_EQ(names,
            (std::vector<std::string>{"MutateComputeLocation", "MutateParallel",
                                      "MutateThreadBinding", "MutateTileSize", "MutateUnroll"}));
  for (const std::string& name : names) {
    absl::StatusOr<MutatorPtr> m = NewMutator(name, Cpu());
    ASSERT_TRUE(m.ok()) << name << ": " << m.status();
    EXPECT_EQ((*m)->name(), name);
  }
  absl::StatusOr<MutatorPtr> unknown = NewMutator("MutateEverything", Cpu());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("MutateTileSize"), std::string::npos);
}

TEST(MutatorsTest, RejectsBadParameters) {
  EXPECT_EQ(NewMutator("MutateTileSize", Cpu(), {{"limit", 3}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NewMutator("MutateParallel", Cpu(), {{"max_jobs_per_core", 0}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NewMutator("MutateParallel", Cpu(), {{"max_jobs_per_core", "x"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(NewMutator("MutateParallel", Cpu(), {{"max_jobs_per_core", 4}}).ok());
  absl::StatusOr<MutatorPtr> cuda = NewMutator("MutateParallel", Cuda());
  EXPECT_EQ(cuda.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cuda.status().message().find("cpu"), std::string::npos);
}

TEST(MutatorsTest, DefaultWeightsFollowTheReference) {
  auto summary = [](const std::vector<WeightedMutator>& ms) {
    std::map<std::string, double> out;
    for (const WeightedMutator& m : ms) out[m.mutator->name()] = m.weight;
    return out;
  };
  absl::StatusOr<std::vector<WeightedMutator>> cpu = DefaultMutators(Cpu());
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(summary(*cpu), (std::map<std::string, double>{{"MutateTileSize", 0.9},
                                                          {"MutateComputeLocation", 0.05},
                                                          {"MutateUnroll", 0.03},
                                                          {"MutateParallel", 0.02}}));
  absl::StatusOr<std::vector<WeightedMutator>> cuda = DefaultMutators(Cuda());
  ASSERT_TRUE(cuda.ok()) << cuda.status();
  EXPECT_EQ(summary(*cuda),
            (std::map<std::string, double>{
                {"MutateTileSize", 0.9}, {"MutateUnroll", 0.08}, {"MutateThreadBinding", 0.02}}));
}

// ---- Acceptance: 1000 applications keep traces replayable -----------------------------------

struct Case {
  std::string mutator;
  Target target;
  PrimFunc func;
  Trace trace;
};

TEST(MutatorAcceptanceTest, ThousandChainedMutationsOfHandBuiltTracesReplay) {
  size_t unused = 0;
  const PrimFunc gmm = SmallGmm(), dbr = SmallDenseBiasRelu(), ew = SmallElementwise();
  const std::vector<Case> cases = {
      {"MutateTileSize", Cpu(), gmm, TiledGmmTrace(gmm, 1).trace},
      {"MutateUnroll", Cpu(), gmm, TiledGmmTrace(gmm, 2).trace},
      {"MutateParallel", Cpu(), gmm, TiledGmmTrace(gmm, 3).trace},
      {"MutateComputeLocation", Cpu(), dbr, ComputeLocationTrace(dbr, &unused)},
      {"MutateThreadBinding", Cuda(), ew, ThreadBindingTrace(ew, "threadIdx.x", true, &unused)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mutator);
    MutatorPtr m = Make(c.mutator, c.target);
    Random rng(21);
    Trace current = c.trace;
    int applied = 0;
    for (int i = 0; i < 1000; ++i) {
      std::optional<Trace> out = m->Apply(current, c.func, &rng);
      if (!out) continue;
      ++applied;
      absl::StatusOr<Schedule> sch = Replay(*out, c.func);
      ASSERT_TRUE(sch.ok()) << "application " << i << ": " << sch.status() << "\n" << out->ToJson();
      if (i % 100 == 0) {
        absl::Status correct = CheckScheduleCorrect(*sch, c.func);
        ASSERT_TRUE(correct.ok()) << correct;
      }
      current = *out;
    }
    EXPECT_GT(applied, 500);
  }
}

// The acceptance test of issue #5 on real design spaces: traces sampled from the default
// spaces of several workloads (MakeCandidate with fresh decisions, postprocessors included),
// each mutator applied 1000 times per target, every mutated trace replayed by MakeCandidate
// (a postprocessor may still reject it; the replay itself must succeed), and a sample of the
// mutated candidates checked against the interpreter. An accepted candidate replaces its
// parent in the pool, so mutations chain as in the evolutionary search.
struct SampledPool {
  std::vector<PrimFunc> funcs;
  std::vector<Trace> traces;  // full traces (postproc part included), of funcs[owner[i]]
  std::vector<size_t> owner;
};

SampledPool SampleTraces(const std::vector<std::string>& workloads, const SpaceConfig& config,
                         int per_workload) {
  SampledPool pool;
  Random rng(31);
  for (const std::string& name : workloads) {
    const PrimFunc func = testing::SmallWorkload(name);
    absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(func, config, 7);
    EXPECT_TRUE(spaces.ok()) << name << ": " << spaces.status();
    if (!spaces.ok() || spaces->empty()) continue;
    pool.funcs.push_back(func);
    for (int k = 0, tries = 0; k < per_workload && tries < 8 * per_workload; ++tries) {
      const Schedule& space = (*spaces)[tries % spaces->size()];
      absl::StatusOr<Schedule> sch = MakeCandidate(func, space.trace(), config.postprocs,
                                                   rng.ForkSeed(), /*erase_decisions=*/true);
      if (!sch.ok()) continue;
      pool.traces.push_back(sch->trace());
      pool.owner.push_back(pool.funcs.size() - 1);
      ++k;
    }
  }
  return pool;
}

// `min_applied`: per mutator, the fewest applications expected to change something (100 when
// not listed), so that every mutator finds its pattern in real traces.
void CheckMutationsOfSampledTraces(const Target& target, const std::vector<std::string>& workloads,
                                   const std::map<std::string, int>& min_applied) {
  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(target);
  ASSERT_TRUE(config.ok()) << config.status();
  SampledPool pool = SampleTraces(workloads, *config, /*per_workload=*/6);
  ASSERT_GE(pool.traces.size(), workloads.size());
  Random rng(41);
  for (const WeightedMutator& wm : config->mutators) {
    const std::string name = wm.mutator->name();
    SCOPED_TRACE(name);
    int applied = 0, rejected_by_postproc = 0;
    for (int i = 0; i < 1000; ++i) {
      const size_t t = static_cast<size_t>(i) % pool.traces.size();
      const PrimFunc& func = pool.funcs[pool.owner[t]];
      std::optional<Trace> out = wm.mutator->Apply(pool.traces[t], func, &rng);
      if (!out) continue;
      ++applied;
      ASSERT_EQ(out->PostprocStart(), out->size()) << "not truncated at EnterPostproc";
      CandidateFailure failure;
      absl::StatusOr<Schedule> sch =
          MakeCandidate(func, *out, config->postprocs, /*seed=*/i, false, &failure);
      ASSERT_NE(failure.stage, "replay") << failure.message << "\n" << out->ToJson();
      if (!sch.ok()) {
        ++rejected_by_postproc;
        continue;
      }
      if (applied % 97 == 1) {
        absl::Status correct = CheckScheduleCorrect(*sch, func);
        ASSERT_TRUE(correct.ok()) << correct;
      }
      pool.traces[t] = sch->trace();
    }
    auto it = min_applied.find(name);
    EXPECT_GE(applied, it == min_applied.end() ? 100 : it->second)
        << "mutations applied out of 1000 (" << rejected_by_postproc
        << " of them rejected by a postprocessor)";
  }
}

TEST(MutatorAcceptanceTest, ThousandMutationsOfSampledCpuTracesReplay) {
  CheckMutationsOfSampledTraces(Cpu(), {"GMM", "C2D", "DENSE_BIAS_RELU", "SFM", "NRM"},
                                {{"MutateTileSize", 800}, {"MutateUnroll", 800}});
}

TEST(MutatorAcceptanceTest, ThousandMutationsOfSampledCudaTracesReplay) {
  // SFM and REDUCE_SUM have no tiled block on cuda (cross-thread reductions instead).
  CheckMutationsOfSampledTraces(Cuda(), {"GMM", "DENSE_BIAS_RELU", "SFM", "REDUCE_SUM"},
                                {{"MutateTileSize", 200}, {"MutateUnroll", 800}});
}

}  // namespace
}  // namespace tessera
