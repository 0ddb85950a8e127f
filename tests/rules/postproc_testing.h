// Targets, factories and hand-built schedules shared by the postprocessor tests
// (tests/rules/postproc/*_test.cc, tests/rules/postproc_test.cc).
#ifndef TESSERA_TESTS_RULES_POSTPROC_TESTING_H_
#define TESSERA_TESTS_RULES_POSTPROC_TESTING_H_

#include <map>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/postproc.h"
#include "schedule/schedule.h"
#include "worker/builder.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace postproc_testing {

inline Target Cpu() { return *Target::Parse("cpu -cores=4 -vector_bits=256"); }
inline Target Cuda() { return *Target::Parse("cuda -arch=sm_80"); }

using Factory = absl::StatusOr<PostprocPtr> (*)(const Target&, const nlohmann::json&);

inline PostprocPtr Make(Factory factory, const Target& target,
                        const nlohmann::json& params = nlohmann::json::object()) {
  absl::StatusOr<PostprocPtr> p = factory(target, params);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : nullptr;
}

// Marks the end of the rule part and runs `postprocs` in order; the first rejection, prefixed
// with the postprocessor's name as the tuner reports it.
inline absl::Status RunPostprocs(Schedule* sch, const std::vector<PostprocPtr>& postprocs) {
  sch->EnterPostproc();
  for (const PostprocPtr& p : postprocs) {
    absl::Status s = p->Apply(sch);
    if (!s.ok()) return absl::Status(s.code(), p->name() + ": " + std::string(s.message()));
  }
  return absl::OkStatus();
}

inline PrimFunc Workload(const std::string& name, const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape);
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

inline const ForNode* Loop(Schedule& sch, LoopRV rv) { return *sch.Get(rv); }

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// NVRTC compiles the function for the target (skipped in a build without CUDA).
inline void ExpectNvrtcCompiles(const PrimFunc& func, const Target& target) {
  if (NvrtcSupportedArchs().empty()) GTEST_SKIP() << "tessera was built without CUDA";
  std::vector<BuildResult> results = NewNvrtcBuilder()->Build({BuildInput{func, target}});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok()) << results[0].error_msg << "\n" << PrintFunc(func);
}

inline std::vector<PostprocPtr> CudaPostprocs() {
  const Target t = Cuda();
  return {Make(NewDisallowDynamicLoop, t),   Make(NewRewriteCooperativeFetch, t),
          Make(NewRewriteUnboundBlock, t),   Make(NewRewriteParallelVectorizeUnroll, t),
          Make(NewRewriteReductionBlock, t), Make(NewVerifyGPUCode, t),
          Make(NewRewriteTensorize, t)};
}

// GMM tiled as MultiLevelTiling does on GPU (blockIdx, threadIdx.y = 4, threadIdx.x = 8), with
// shared-memory copies of A and B at the outer reduction loop, their loops fused and annotated
// for a cooperative fetch of `lanes`.
inline Schedule TiledGpuGmm(const PrimFunc& func, int64_t lanes) {
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> l = *sch.GetLoops(c);  // b, i, j, k
  std::vector<LoopRV> i = *sch.Split(l[1], {InstValue(), InstValue::Int(4), InstValue::Int(2)});
  std::vector<LoopRV> j = *sch.Split(l[2], {InstValue(), InstValue::Int(8), InstValue::Int(2)});
  std::vector<LoopRV> k = *sch.Split(l[3], {InstValue(), InstValue::Int(8)});
  EXPECT_TRUE(sch.Reorder({i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2]}).ok());
  LoopRV by = *sch.Fuse({l[0], i[0]});
  EXPECT_TRUE(sch.Bind(by, "blockIdx.y").ok());
  EXPECT_TRUE(sch.Bind(j[0], "blockIdx.x").ok());
  EXPECT_TRUE(sch.Bind(i[1], "threadIdx.y").ok());
  EXPECT_TRUE(sch.Bind(j[1], "threadIdx.x").ok());
  BlockRV local = *sch.CacheWrite(c, 0, "local");
  EXPECT_TRUE(sch.ReverseComputeAt(local, j[1], true).ok());
  for (int read : {1, 2}) {
    BlockRV copy = *sch.CacheRead(c, read, "shared");
    EXPECT_TRUE(sch.ComputeAt(copy, k[0], true).ok());
    std::vector<LoopRV> cl = *sch.GetLoops(copy);
    EXPECT_TRUE(sch.Fuse({cl[cl.size() - 3], cl[cl.size() - 2], cl.back()}).ok());
    ExprRV v = *sch.SampleCategorical({lanes}, {1.0});
    EXPECT_TRUE(sch.Annotate(copy, attr::kCooperativeFetch, InstValue::Of(v)).ok());
  }
  return sch;
}

}  // namespace postproc_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_RULES_POSTPROC_TESTING_H_
