// Targets, workloads and hand-built traces shared by the mutator tests
// (tests/tuner/mutator/*_test.cc, tests/tuner/mutator_test.cc): traces shaped like the ones the
// schedule rules emit, with the index of each sampling instruction a mutator redraws.
#ifndef TESSERA_TESTS_TUNER_MUTATOR_TESTING_H_
#define TESSERA_TESTS_TUNER_MUTATOR_TESTING_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "rules/annotations.h"
#include "schedule/schedule.h"
#include "tuner/mutator.h"

namespace tessera {
namespace mutator_testing {

inline Target Cpu() { return *Target::Parse("cpu -cores=4"); }
inline Target Cuda() { return *Target::Parse("cuda -arch=sm_80"); }

inline MutatorPtr Make(const std::string& name, const Target& target) {
  absl::StatusOr<MutatorPtr> m = NewMutator(name, target);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

inline PrimFunc Workload(const std::string& name, const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape);
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

// Indices whose decisions differ (the traces must have the same instructions up to the
// shorter one's length).
inline std::vector<size_t> ChangedDecisions(const Trace& before, const Trace& after) {
  std::vector<size_t> changed;
  for (size_t i = 0; i < std::min(before.size(), after.size()); ++i) {
    if (before.decision(i) != after.decision(i)) changed.push_back(i);
  }
  return changed;
}

inline absl::StatusOr<Schedule> Replay(const Trace& trace, const PrimFunc& func) {
  Schedule sch = Schedule::Create(func, /*seed=*/1);
  absl::Status s = trace.ApplyTo(&sch, /*remove_postproc=*/false);
  if (!s.ok()) return s;
  return sch;
}

inline int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

// ---- Hand-built traces ---------------------------------------------------------------------

inline PrimFunc SmallGmm() { return Workload("GMM", {{"B", 2}, {"M", 8}, {"N", 16}, {"K", 4}}); }

// GMM block C: i tiled 4 ways (innermost <= 4), j tiled 2 ways (innermost <= 8), the root
// annotated with a sampled unroll step; index of each sampling instruction returned.
struct GmmTrace {
  Trace trace;
  size_t tile_i = 0, tile_j = 0, unroll = 0;
};

inline GmmTrace TiledGmmTrace(const PrimFunc& func, int64_t seed) {
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
inline Trace ComputeLocationTrace(const PrimFunc& func, size_t* sample_index) {
  Schedule sch = Schedule::Create(func, 5);
  BlockRV add = *sch.GetBlock("T_add");
  *sample_index = sch.trace().size();
  LoopRV loc = *sch.SampleComputeLocation(add, InstValue::Int(1));
  EXPECT_TRUE(sch.ComputeAt(add, loc, /*preserve_unit_loops=*/true).ok());
  return sch.trace();
}

inline PrimFunc SmallDenseBiasRelu() {
  return Workload("DENSE_BIAS_RELU", {{"M", 8}, {"N", 16}, {"K", 8}});
}

// ELEMENTWISE on cuda: fused loop split by a sampled thread extent (AutoBind's pattern).
inline Trace ThreadBindingTrace(const PrimFunc& func, const std::string& inner_axis,
                                bool none_first, size_t* sample_index) {
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

inline PrimFunc SmallElementwise() { return Workload("ELEMENTWISE", {{"M", 16}, {"N", 32}}); }

}  // namespace mutator_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TUNER_MUTATOR_TESTING_H_
