// Tests of the mutators on hand-built traces shaped like the ones the schedule rules emit:
// each mutation changes exactly one decision (or the parallel annotation's integer) in the
// documented way, keeps the trace replayable, and is nullopt when nothing applies.
#include "tuner/mutators.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "rules/annotations.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"
#include "tuner/space_generator.h"

namespace tessera {
namespace {

using testing::CheckScheduleCorrect;

Target Cpu() { return *Target::Parse("cpu -cores=4"); }
Target Cuda() { return *Target::Parse("cuda -arch=sm_80"); }

MutatorPtr Make(const std::string& name, const Target& target) {
  absl::StatusOr<MutatorPtr> m = MakeMutator(name, target);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

PrimFunc Workload(const std::string& name, const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape);
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// Indices whose decisions differ (the traces must have the same instructions up to the
// shorter one's length).
std::vector<size_t> ChangedDecisions(const Trace& before, const Trace& after) {
  std::vector<size_t> changed;
  for (size_t i = 0; i < std::min(before.size(), after.size()); ++i) {
    if (before.decision(i) != after.decision(i)) changed.push_back(i);
  }
  return changed;
}

absl::StatusOr<Schedule> Replay(const Trace& trace, const PrimFunc& func) {
  Schedule sch = Schedule::Create(func, /*seed=*/1);
  absl::Status s = trace.ApplyTo(&sch, /*remove_postproc=*/false);
  if (!s.ok()) return s;
  return sch;
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// ---- Hand-built traces ---------------------------------------------------------------------

PrimFunc SmallGmm() { return Workload("GMM", {{"B", 2}, {"M", 8}, {"N", 16}, {"K", 4}}); }

// GMM block C: i tiled 4 ways (innermost <= 4), j tiled 2 ways (innermost <= 8), the root
// annotated with a sampled unroll step; index of each sampling instruction returned.
struct GmmTrace {
  Trace trace;
  size_t tile_i = 0, tile_j = 0, unroll = 0;
};

GmmTrace TiledGmmTrace(const PrimFunc& func, int64_t seed) {
  Schedule sch = Schedule::Create(func, seed);
  GmmTrace out;
  BlockRV c = *sch.GetBlock("C");
  BlockRV root = *sch.GetBlock("root");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  std::vector<InstValue> fi, fj;
  out.tile_i = sch.trace().size();
  const std::vector<ExprRV> ti = *sch.SamplePerfectTile(loops[1], 4, 4);
  for (ExprRV v : ti) fi.push_back(InstValue::Of(v));
  EXPECT_TRUE(sch.Split(loops[1], fi).ok());
  out.tile_j = sch.trace().size();
  const std::vector<ExprRV> tj = *sch.SamplePerfectTile(loops[2], 2, 8);
  for (ExprRV v : tj) fj.push_back(InstValue::Of(v));
  EXPECT_TRUE(sch.Split(loops[2], fj).ok());
  out.unroll = sch.trace().size();
  ExprRV step = *sch.SampleCategorical({0, 16, 64, 512}, {0.25, 0.25, 0.25, 0.25});
  EXPECT_TRUE(sch.Annotate(root, attr::kUnrollExplicit, InstValue::Of(step)).ok());
  EXPECT_TRUE(sch.Annotate(root, attr::kParallel, InstValue::Int(64)).ok());
  sch.EnterPostproc();
  EXPECT_TRUE(sch.Annotate(root, "postproc_marker", InstValue::Int(1)).ok());
  out.trace = sch.trace();
  return out;
}

// DENSE_BIAS_RELU with T_add placed by SampleComputeLocation + ComputeAt (RandomComputeLocation).
Trace ComputeLocationTrace(const PrimFunc& func, size_t* sample_index) {
  Schedule sch = Schedule::Create(func, 5);
  BlockRV add = *sch.GetBlock("T_add");
  *sample_index = sch.trace().size();
  LoopRV loc = *sch.SampleComputeLocation(add, InstValue::Int(1));
  EXPECT_TRUE(sch.ComputeAt(add, loc, /*preserve_unit_loops=*/true).ok());
  return sch.trace();
}

PrimFunc SmallDenseBiasRelu() {
  return Workload("DENSE_BIAS_RELU", {{"M", 8}, {"N", 16}, {"K", 8}});
}

// ELEMENTWISE on cuda: fused loop split by a sampled thread extent (AutoBind's pattern).
Trace ThreadBindingTrace(const PrimFunc& func, const std::string& inner_axis, bool none_first,
                         size_t* sample_index) {
  Schedule sch = Schedule::Create(func, 3);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  LoopRV fused = *sch.Fuse(loops);
  *sample_index = sch.trace().size();
  ExprRV v = *sch.SampleCategorical({32, 64, 128, 256}, {0.25, 0.25, 0.25, 0.25});
  std::vector<InstValue> factors = {InstValue(), InstValue::Of(v)};
  if (!none_first) std::swap(factors[0], factors[1]);
  std::vector<LoopRV> split = *sch.Split(fused, factors);
  EXPECT_TRUE(sch.Bind(split[0], none_first ? "blockIdx.x" : inner_axis).ok());
  EXPECT_TRUE(sch.Bind(split[1], none_first ? inner_axis : "blockIdx.x").ok());
  return sch.trace();
}

PrimFunc SmallElementwise() { return Workload("ELEMENTWISE", {{"M", 16}, {"N", 32}}); }

// ---- Factories -------------------------------------------------------------------------------

TEST(MutatorsTest, NamesAndFactories) {
  const std::vector<std::string> names = MutatorNames();
  EXPECT_EQ(names, (std::vector<std::string>{"MutateComputeLocation", "MutateParallel",
                                             "MutateThreadBinding", "MutateTileSize",
                                             "MutateUnroll"}));
  for (const std::string& name : names) {
    absl::StatusOr<MutatorPtr> m = MakeMutator(name, Cpu());
    ASSERT_TRUE(m.ok()) << name << ": " << m.status();
    EXPECT_EQ((*m)->name(), name);
  }
  absl::StatusOr<MutatorPtr> unknown = MakeMutator("MutateEverything", Cpu());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("MutateTileSize"), std::string::npos);
}

TEST(MutatorsTest, RejectsBadParameters) {
  EXPECT_EQ(MakeMutator("MutateTileSize", Cpu(), {{"limit", 3}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeMutator("MutateParallel", Cpu(), {{"max_jobs_per_core", 0}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeMutator("MutateParallel", Cpu(), {{"max_jobs_per_core", "x"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(MakeMutator("MutateParallel", Cpu(), {{"max_jobs_per_core", 4}}).ok());
  absl::StatusOr<MutatorPtr> cuda = MakeMutator("MutateParallel", Cuda());
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
  EXPECT_EQ(summary(*cuda), (std::map<std::string, double>{{"MutateTileSize", 0.9},
                                                           {"MutateUnroll", 0.08},
                                                           {"MutateThreadBinding", 0.02}}));
}

// ---- MutateTileSize --------------------------------------------------------------------------

TEST(MutateTileSizeTest, MovesOneDivisorBetweenTwoTilesOfOneDecision) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(11);
  std::set<size_t> mutated_insts;
  for (int seed = 0; seed < 200; ++seed) {
    GmmTrace g = TiledGmmTrace(func, seed);
    std::optional<Trace> out = m->Apply(g.trace, func, &rng);
    if (!out) continue;  // j has two tiles: growing its innermost past 8 fails
    EXPECT_EQ(out->size(), g.trace.PostprocStart());
    const std::vector<size_t> changed = ChangedDecisions(g.trace, *out);
    ASSERT_EQ(changed.size(), 1u);
    const size_t k = changed[0];
    ASSERT_TRUE(k == g.tile_i || k == g.tile_j);
    mutated_insts.insert(k);
    const std::vector<int64_t> before = g.trace.decision(k).AsIntArray();
    const std::vector<int64_t> after = out->decision(k).AsIntArray();
    EXPECT_EQ(Product(after), Product(before));
    EXPECT_LE(after.back(), k == g.tile_i ? 4 : 8);
    std::vector<size_t> moved;
    for (size_t t = 0; t < before.size(); ++t) {
      if (before[t] != after[t]) moved.push_back(t);
    }
    ASSERT_EQ(moved.size(), 2u);  // one tile divided by d > 1, one multiplied by it
    const size_t x = before[moved[0]] > after[moved[0]] ? moved[0] : moved[1];
    const size_t y = x == moved[0] ? moved[1] : moved[0];
    EXPECT_EQ(before[x] / after[x], after[y] / before[y]);
    EXPECT_TRUE(Replay(*out, func).ok());
  }
  EXPECT_EQ(mutated_insts.size(), 2u);
}

TEST(MutateTileSizeTest, InnermostTileNeverGrowsWithoutALimit) {
  const PrimFunc func = SmallGmm();
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.SamplePerfectTile(loops[2], 2, -1, InstValue::IntArray({4, 4})).ok());
  const Trace trace = sch.trace();
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(2);
  int nullopts = 0;
  for (int i = 0; i < 200; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    if (!out) {
      ++nullopts;
      continue;
    }
    const std::vector<int64_t> after = out->decision(trace.size() - 1).AsIntArray();
    EXPECT_LT(after[1], 4);
    EXPECT_EQ(after[0] * after[1], 16);
  }
  EXPECT_GT(nullopts, 0);
  EXPECT_LT(nullopts, 200);
}

TEST(MutateTileSizeTest, RedrawsTheCooperativeFetchVectorLength) {
  const PrimFunc func = SmallGmm();
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  ExprRV len = *sch.SampleCategorical({1, 2, 4}, {1, 1, 1}, InstValue::Int(1));
  ASSERT_TRUE(sch.Annotate(c, attr::kCooperativeFetch, InstValue::Of(len)).ok());
  ExprRV other = *sch.SampleCategorical({1, 2}, {1, 1}, InstValue::Int(0));  // feeds nothing
  ASSERT_TRUE(sch.Annotate(c, "other", InstValue::Of(other)).ok());
  const Trace trace = sch.trace();
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(4);
  std::set<int64_t> seen;
  for (int i = 0; i < 100; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(ChangedDecisions(trace, *out), std::vector<size_t>{1});
    seen.insert(out->decision(1).as_int());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{0, 2}));
}

TEST(MutateTileSizeTest, NulloptWhenNothingIsTiled) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateTileSize", Cpu());
  Random rng(0);
  EXPECT_FALSE(m->Apply(Trace(), func, &rng).has_value());
  // A perfect tile of an extent-1 loop (GMM's b loop at B=1) has nothing to move.
  const PrimFunc b1 = Workload("GMM", {{"B", 1}, {"M", 8}, {"N", 8}, {"K", 8}});
  Schedule sch = Schedule::Create(b1, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.SamplePerfectTile(loops[0], 3, 4).ok());
  EXPECT_FALSE(m->Apply(sch.trace(), b1, &rng).has_value());
}

// ---- MutateUnroll ----------------------------------------------------------------------------

TEST(MutateUnrollTest, RedrawsTheSampledUnrollStepOnly) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateUnroll", Cpu());
  Random rng(5);
  std::set<int64_t> seen;
  for (int seed = 0; seed < 100; ++seed) {
    GmmTrace g = TiledGmmTrace(func, seed);
    std::optional<Trace> out = m->Apply(g.trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->size(), g.trace.PostprocStart());
    EXPECT_EQ(ChangedDecisions(g.trace, *out), std::vector<size_t>{g.unroll});
    seen.insert(out->decision(g.unroll).as_int());
    EXPECT_TRUE(Replay(*out, func).ok());
  }
  EXPECT_EQ(seen.size(), 4u);
}

TEST(MutateUnrollTest, ImplicitUnrollAndZeroWeights) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateUnroll", Cpu());
  Random rng(6);
  Schedule sch = Schedule::Create(func, 0);
  BlockRV root = *sch.GetBlock("root");
  // Only index 2 has weight besides the current one.
  ExprRV step = *sch.SampleCategorical({0, 16, 64}, {1, 0, 1}, InstValue::Int(0));
  ASSERT_TRUE(sch.Annotate(root, attr::kUnrollImplicit, InstValue::Of(step)).ok());
  for (int i = 0; i < 20; ++i) {
    std::optional<Trace> out = m->Apply(sch.trace(), func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->decision(1).as_int(), 2);
  }
  // No other candidate with a positive weight: nothing to mutate.
  Schedule fixed = Schedule::Create(func, 0);
  BlockRV r = *fixed.GetBlock("root");
  ExprRV only = *fixed.SampleCategorical({0, 16}, {1, 0}, InstValue::Int(0));
  ASSERT_TRUE(fixed.Annotate(r, attr::kUnrollExplicit, InstValue::Of(only)).ok());
  EXPECT_FALSE(m->Apply(fixed.trace(), func, &rng).has_value());
  // A categorical that feeds no unroll annotation is not the unroll step.
  Schedule other = Schedule::Create(func, 0);
  ASSERT_TRUE(other.SampleCategorical({0, 16}, {1, 1}).ok());
  EXPECT_FALSE(m->Apply(other.trace(), func, &rng).has_value());
}

// ---- MutateThreadBinding ---------------------------------------------------------------------

TEST(MutateThreadBindingTest, RedrawsTheThreadExtentOfTheSplitBoundToThreadIdxX) {
  const PrimFunc func = SmallElementwise();
  MutatorPtr m = Make("MutateThreadBinding", Cuda());
  size_t sample = 0;
  const Trace trace = ThreadBindingTrace(func, "threadIdx.x", /*none_first=*/true, &sample);
  Random rng(7);
  std::set<int64_t> seen;
  for (int i = 0; i < 100; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(ChangedDecisions(trace, *out), std::vector<size_t>{sample});
    EXPECT_NE(out->decision(sample), trace.decision(sample));
    seen.insert(out->decision(sample).as_int());
  }
  EXPECT_EQ(seen.size(), 3u);
  std::optional<Trace> out = m->Apply(trace, func, &rng);
  absl::StatusOr<Schedule> sch = Replay(*out, func);
  ASSERT_TRUE(sch.ok()) << sch.status();
  EXPECT_TRUE(CheckScheduleCorrect(*sch, func).ok());
}

TEST(MutateThreadBindingTest, NulloptWithoutThePattern) {
  const PrimFunc func = SmallElementwise();
  MutatorPtr m = Make("MutateThreadBinding", Cuda());
  Random rng(8);
  size_t sample = 0;
  // Bound to threadIdx.y, or the sampled factor is the outer one: not the pattern.
  EXPECT_FALSE(
      m->Apply(ThreadBindingTrace(func, "threadIdx.y", true, &sample), func, &rng).has_value());
  EXPECT_FALSE(
      m->Apply(ThreadBindingTrace(func, "threadIdx.x", false, &sample), func, &rng).has_value());
}

// ---- MutateComputeLocation -------------------------------------------------------------------

TEST(MutateComputeLocationTest, MovesTheBlockToAnotherValidLocation) {
  const PrimFunc func = SmallDenseBiasRelu();
  size_t sample = 0;
  const Trace trace = ComputeLocationTrace(func, &sample);
  // The locations valid where the instruction runs: right after GetBlock on the workload.
  Schedule probe = Schedule::Create(func, 0);
  absl::StatusOr<std::vector<int64_t>> valid =
      probe.ComputeLocationCandidates(*probe.GetBlock("T_add"));
  ASSERT_TRUE(valid.ok()) << valid.status();
  EXPECT_EQ(*valid, (std::vector<int64_t>{-2, -1, 0, 1}));
  MutatorPtr m = Make("MutateComputeLocation", Cpu());
  Random rng(9);
  std::set<int64_t> seen;
  for (int i = 0; i < 60; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(ChangedDecisions(trace, *out), std::vector<size_t>{sample});
    seen.insert(out->decision(sample).as_int());
  }
  EXPECT_EQ(seen, (std::set<int64_t>{-2, -1, 0}));  // all but the current 1
  for (int i = 0; i < 4; ++i) {
    std::optional<Trace> out = m->Apply(trace, func, &rng);
    absl::StatusOr<Schedule> sch = Replay(*out, func);
    ASSERT_TRUE(sch.ok()) << sch.status();
    EXPECT_TRUE(CheckScheduleCorrect(*sch, func).ok());
  }
}

TEST(MutateComputeLocationTest, NulloptWhenTheOnlyLocationIsTheCurrentOne) {
  const PrimFunc func = SmallDenseBiasRelu();
  MutatorPtr m = Make("MutateComputeLocation", Cpu());
  Random rng(10);
  // T_relu writes the output and has no consumer: root is its only location.
  Schedule sch = Schedule::Create(func, 0);
  BlockRV relu = *sch.GetBlock("T_relu");
  LoopRV loc = *sch.SampleComputeLocation(relu);
  ASSERT_TRUE(sch.ComputeAt(relu, loc, true).ok());
  EXPECT_FALSE(m->Apply(sch.trace(), func, &rng).has_value());
  EXPECT_FALSE(m->Apply(Trace(), func, &rng).has_value());
}

// ---- MutateParallel --------------------------------------------------------------------------

TEST(MutateParallelTest, RewritesTheLimitToAnotherFusionPlan) {
  // cores 4 × 16 jobs = 64. Block C's spatial loops b, i, j (2, 8, 16): prefix products
  // 2, 16, 256; limits 2 and 16 fuse 1 and 2 loops, the current 64 fuses 3.
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateParallel", Cpu());
  GmmTrace g = TiledGmmTrace(func, 0);
  // Tiling i does not change the analysis: its outer tiles are spatial loops, but the
  // products stop at the first >= 64.
  Random rng(12);
  std::set<int64_t> seen;
  for (int i = 0; i < 50; ++i) {
    std::optional<Trace> out = m->Apply(g.trace, func, &rng);
    ASSERT_TRUE(out.has_value());
    EXPECT_EQ(out->size(), g.trace.PostprocStart());
    EXPECT_TRUE(ChangedDecisions(g.trace, *out).empty());
    for (size_t k = 0; k < out->size(); ++k) {
      const Instruction& inst = out->insts()[k];
      if (std::string(inst.kind->name) == "Annotate" && inst.attrs[0].as_string() == attr::kParallel) {
        seen.insert(inst.inputs[1].as_int());
      }
    }
  }
  EXPECT_FALSE(seen.count(64));
  EXPECT_FALSE(seen.empty());
}

TEST(MutateParallelTest, ExactPlansOnAnUntiledNest) {
  const PrimFunc func = SmallGmm();
  MutatorPtr m = Make("MutateParallel", Cpu());
  auto trace_with = [&](int64_t limit) {
    Schedule sch = Schedule::Create(func, 0);
    EXPECT_TRUE(sch.Annotate(*sch.GetBlock("root"), attr::kParallel, InstValue::Int(limit)).ok());
    return sch.trace();
  };
  auto limit_of = [](const Trace& t) { return t.insts()[1].inputs[1].as_int(); };
  Random rng(13);
  std::set<int64_t> from64;
  for (int i = 0; i < 40; ++i) {
    std::optional<Trace> out = m->Apply(trace_with(64), func, &rng);
    ASSERT_TRUE(out.has_value());
    from64.insert(limit_of(*out));
    std::optional<Trace> from2 = m->Apply(trace_with(2), func, &rng);
    ASSERT_TRUE(from2.has_value());
    EXPECT_EQ(limit_of(*from2), 16);
    std::optional<Trace> from8 = m->Apply(trace_with(8), func, &rng);  // same plan as 16
    ASSERT_TRUE(from8.has_value());
    EXPECT_EQ(limit_of(*from8), 2);
  }
  EXPECT_EQ(from64, (std::set<int64_t>{2, 16}));
  Schedule bare = Schedule::Create(func, 0);
  ASSERT_TRUE(bare.GetBlock("root").ok());
  EXPECT_FALSE(m->Apply(bare.trace(), func, &rng).has_value());
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
      ASSERT_TRUE(sch.ok()) << "application " << i << ": " << sch.status() << "\n"
                            << out->ToJson();
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
