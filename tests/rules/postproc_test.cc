// The postprocessors together (rules/postproc.h): their factories refuse bad parameters and
// wrong targets, and the design spaces of the schedule rules go through the default
// postprocessors of a target into programs that build (CPU: C backend; CUDA: VerifyGPUCode and
// NVRTC). Each postprocessor has its own test in tests/rules/postproc/.
#include "rules/postproc.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/schedule_rule.h"
#include "tests/rules/postproc_testing.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

using postproc_testing::Contains;
using postproc_testing::Cpu;
using postproc_testing::Cuda;
using postproc_testing::CudaPostprocs;
using postproc_testing::ExpectNvrtcCompiles;
using postproc_testing::Make;
using postproc_testing::RunPostprocs;
using postproc_testing::Workload;
using testing::CheckCBackendMatches;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

TEST(PostprocFactoryTest, RejectsUnknownParametersAndWrongTargets) {
  absl::StatusOr<PostprocPtr> p = NewRewriteUnboundBlock(Cuda(), {{"max_blocks", 3}});
  EXPECT_FALSE(p.ok());
  EXPECT_TRUE(Contains(std::string(p.status().message()), "max_blocks")) << p.status();
  EXPECT_FALSE(NewRewriteUnboundBlock(Cuda(), {{"max_threadblocks", 0}}).ok());
  EXPECT_FALSE(NewVerifyGPUCode(Cpu(), nlohmann::json::object()).ok());
  EXPECT_FALSE(NewRewriteCooperativeFetch(Cpu(), nullptr).ok());
  EXPECT_TRUE(NewRewriteTensorize(Cpu(), {{"vectorize_init_loop", false}}).ok());
}

// MultiLevelTiling on C and ParallelizeVectorizeUnroll on the root, as PostOrderApply applies
// them; every resulting design space goes through the target's postprocessors.
std::vector<Schedule> DesignSpaces(const PrimFunc& func, const Target& target, int64_t seed) {
  Schedule sch = Schedule::Create(func, seed);
  BlockRV root = *sch.GetBlock("root");
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<ScheduleRulePtr> mlt = NewMultiLevelTiling(target, nullptr);
  absl::StatusOr<ScheduleRulePtr> pvu = NewParallelizeVectorizeUnroll(target, nullptr);
  EXPECT_TRUE(mlt.ok() && pvu.ok());
  absl::StatusOr<std::vector<Schedule>> tiled = (*mlt)->Apply(&sch, c);
  EXPECT_TRUE(tiled.ok()) << tiled.status();
  std::vector<Schedule> spaces;
  for (Schedule& s : *tiled) {
    absl::StatusOr<std::vector<Schedule>> annotated = (*pvu)->Apply(&s, root);
    EXPECT_TRUE(annotated.ok()) << annotated.status();
    spaces.insert(spaces.end(), annotated->begin(), annotated->end());
  }
  return spaces;
}

TEST(PostprocEndToEndTest, TiledGmmOnCpuBuildsAndMatches) {
  PrimFunc func = SmallWorkload("GMM");
  const Target cpu = Cpu();
  std::vector<PostprocPtr> postprocs = {Make(NewDisallowDynamicLoop, cpu),
                                        Make(NewRewriteParallelVectorizeUnroll, cpu),
                                        Make(NewRewriteReductionBlock, cpu)};
  int checked = 0;
  // One seed: a space whose sampled unroll depth is 512 takes the host compiler ~20 s.
  for (Schedule& sch : DesignSpaces(func, cpu, /*seed=*/1)) {
    absl::Status s = RunPostprocs(&sch, postprocs);
    ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
    EXPECT_TRUE(sch.GetBlock("C_init").ok()) << PrintFunc(sch.func());
    bool parallel = false;
    PostOrderVisitStmts(sch.func().body(), [&](const Stmt& st) {
      const auto* loop = st.as<ForNode>();
      parallel = parallel || (loop != nullptr && loop->for_kind == ForKind::kParallel);
    });
    EXPECT_TRUE(parallel) << PrintFunc(sch.func());
    absl::Status correct = CheckScheduleCorrect(sch, func);
    EXPECT_TRUE(correct.ok()) << correct;
    absl::Status built = CheckCBackendMatches(func, sch.func());
    EXPECT_TRUE(built.ok()) << built;
    ++checked;
  }
  EXPECT_EQ(checked, 3);  // no write cache, cache at slot 0, cache at slot 1
}

TEST(PostprocEndToEndTest, TiledGmmOnCudaPassesVerificationAndCompiles) {
  PrimFunc func = Workload("GMM", {{"B", 1}, {"M", 64}, {"N", 64}, {"K", 32}});
  const Target cuda = Cuda();
  int accepted = 0, rejected = 0;
  for (int64_t seed = 1; seed <= 40 && accepted < 2; ++seed) {
    for (Schedule& sch : DesignSpaces(func, cuda, seed)) {
      absl::Status s = RunPostprocs(&sch, CudaPostprocs());
      if (!s.ok()) {
        // Only the verifier may reject a sampled tiling (too many threads or too few).
        EXPECT_TRUE(Contains(std::string(s.message()), "VerifyGPUCode: ")) << s;
        ++rejected;
        continue;
      }
      ++accepted;
      std::string text = PrintFunc(sch.func());
      EXPECT_FALSE(Contains(text, attr::kCooperativeFetch)) << text;
      absl::Status replay = testing::CheckReplay(sch, func);
      EXPECT_TRUE(replay.ok()) << replay;
      ExpectNvrtcCompiles(sch.func(), cuda);
    }
  }
  EXPECT_GE(accepted, 1) << rejected << " rejected";
}

}  // namespace
}  // namespace tessera
