// The Hopper design space (MultiLevelTilingWgmma, rules/default/wgmma_gemm.h) end to end on
// sm_90a: the default cuda space of a float16 / bfloat16 GMM summed in float32 has a branch per C
// tile that divides the GEMM, beside MultiLevelTilingTensorCore's mma.sync branch; its candidates
// (fresh k steps and pipeline depths, the default cuda postprocessors) compute what the GMM
// computes in the interpreter, and compile for sm_90a into wgmma (HGMMA), TMA loads (UTMALDG) and
// mbarriers (SYNCS) with nothing spilled and shared memory within the target's limit. Other
// targets have no such branch.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "codegen/codegen_cuda.h"
#include "frontend/workloads.h"
#include "ir/loop_annotations.h"
#include "ir/printer.h"
#include "rules/registry.h"
#include "tests/testing/cubin_inspection.h"
#include "tests/testing/schedule_testing.h"
#include "tests/testing/scoped_temp_dir.h"
#include "tuner/space_generator.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

Target Sm90a() { return *Target::Parse("cuda -arch=sm_90a"); }

PrimFunc NarrowGmm(int64_t m, int64_t n, int64_t k, const std::string& dtype) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}}, dtype, "float32");
}

bool Printed(const Schedule& s, const std::string& text) {
  return PrintFunc(s.func()).find(text) != std::string::npos;
}

// The design spaces of `func` on `target`: those with warpgroup accumulators, and the others.
struct Spaces {
  std::vector<Schedule> wgmma, other;
};
Spaces SpacesOf(const PrimFunc& func, const Target& target) {
  Spaces out;
  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(target);
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return out;
  absl::StatusOr<std::vector<Schedule>> spaces = GenerateDesignSpaces(func, *config, /*seed=*/1);
  EXPECT_TRUE(spaces.ok()) << spaces.status();
  if (!spaces.ok()) return out;
  for (Schedule& s : *spaces) {
    (Printed(s, "wgmma.accumulator") ? out.wgmma : out.other).push_back(s);
  }
  return out;
}

// `count` candidates drawn round-robin from the wgmma spaces of `func` on sm_90a with fresh
// decisions; only tiles over the shared-memory limit may be rejected.
std::vector<Schedule> WgmmaCandidates(const PrimFunc& func, int count) {
  absl::StatusOr<SpaceConfig> config = DefaultSpaceConfig(Sm90a());
  const std::vector<Schedule> spaces = SpacesOf(func, Sm90a()).wgmma;
  std::vector<Schedule> out;
  if (!config.ok() || spaces.empty()) return out;
  for (int64_t seed = 1; static_cast<int>(out.size()) < count && seed < 8 * count; ++seed) {
    CandidateFailure failure;
    absl::StatusOr<Schedule> c = MakeCandidate(func, spaces[seed % spaces.size()].trace(),
                                               config->postprocs, seed, true, &failure);
    if (c.ok()) {
      out.push_back(*c);
    } else if (failure.stage != "VerifyGPUCode" ||
               failure.message.find("exceed") == std::string::npos) {
      ADD_FAILURE() << "seed " << seed << ": " << c.status();
    }
  }
  EXPECT_EQ(static_cast<int>(out.size()), count);
  return out;
}

// A 128 x 256 x 128 GMM: C tiles of 64 and 128 rows by 8, 16, 32, 64, 128 and 256 columns (the
// multiples of 8 up to 256 that divide 256) are twelve wgmma branches; the untouched block gives
// MultiLevelTilingTensorCore's. The parameter n keeps the listed widths only.
TEST(WgmmaSpaceTest, ABranchPerCTileThatDividesTheGemm) {
  const Spaces spaces = SpacesOf(NarrowGmm(128, 256, 128, "float16"), Sm90a());
  EXPECT_EQ(spaces.wgmma.size(), 12u);
  int mma = 0;
  for (const Schedule& s : spaces.other) mma += Printed(s, "mma.accumulator");
  EXPECT_EQ(mma, 1);
  for (const Schedule& s : spaces.wgmma) {
    EXPECT_TRUE(Printed(s, "shared.tma")) << PrintFunc(s.func());
    EXPECT_TRUE(Printed(s, kSoftwarePipelineStages));
  }
}

// Candidates of both input types at small shapes compute what the GMM computes.
TEST(WgmmaSpaceTest, CandidatesComputeWhatTheGmmComputes) {
  for (const char* dtype : {"float16", "bfloat16"}) {
    SCOPED_TRACE(dtype);
    const PrimFunc func = NarrowGmm(128, 128, 128, dtype);
    for (const Schedule& c : WgmmaCandidates(func, 4)) {
      absl::Status s = testing::CheckTensorizedScheduleCorrect(c, func);
      EXPECT_TRUE(s.ok()) << s;
    }
  }
}

// 64 sampled candidates of GMM 256^3 float16 summed in float32 (8 of bfloat16) compile for sm_90a
// into wgmma of the branch's N, TMA loads and mbarrier waits, with nothing spilled and shared
// memory within the limit (the image counts 1 KiB the system reserves).
TEST(WgmmaSpaceTest, SampledCandidatesCompileToHgmmaFedByTma) {
  if (NvrtcSupportedArchs().empty()) GTEST_SKIP() << "no NVRTC in this build";
  const std::string cuobjdump = testing::FindCuobjdump(TESSERA_TEST_VENV_DIR);
  if (cuobjdump.empty()) GTEST_SKIP() << "no cuobjdump in build/test-venv";
  testing::ScopedTempDir scratch("wgmma_images");
  for (const auto& [dtype, samples] : {std::pair{"float16", 64}, std::pair{"bfloat16", 8}}) {
    std::map<std::string, int> products;  // HGMMA opcode -> candidates
    for (const Schedule& c : WgmmaCandidates(NarrowGmm(256, 256, 256, dtype), samples)) {
      absl::StatusOr<CudaModule> cuda = GenerateCuda(c.func(), Sm90a());
      ASSERT_TRUE(cuda.ok()) << cuda.status() << "\n" << PrintFunc(c.func());
      absl::StatusOr<std::string> cubin = CompileCudaSource(cuda->source, "sm_90a");
      ASSERT_TRUE(cubin.ok()) << cubin.status() << "\n" << cuda->source;
      absl::StatusOr<std::vector<testing::KernelImage>> images =
          testing::InspectCubin(*cubin, cuobjdump, scratch.path());
      ASSERT_TRUE(images.ok()) << images.status();
      ASSERT_EQ(images->size(), 1u);
      const testing::KernelImage& image = images->front();
      EXPECT_EQ(image.local_bytes, 0) << "spilled";
      EXPECT_EQ(image.stack_bytes, 0) << "spilled";
      EXPECT_LE(image.shared_bytes + cuda->kernels[0].dynamic_shared_bytes,
                Sm90a().max_shared_memory_per_block() + 1024);
      std::string hgmma;
      bool tma = false, mbarrier = false;
      for (const std::string& op : image.opcodes) {
        if (op.rfind("HGMMA.64x", 0) == 0) hgmma = op;
        tma = tma || op.rfind("UTMALDG", 0) == 0;
        mbarrier = mbarrier || op.rfind("SYNCS.PHASECHK", 0) == 0;
      }
      EXPECT_FALSE(hgmma.empty()) << cuda->source;
      EXPECT_TRUE(tma);
      EXPECT_TRUE(mbarrier);
      ++products[hgmma];
    }
    std::printf("%s: %d candidates for sm_90a:", dtype, samples);
    for (const auto& [op, n] : products) std::printf(" %d x %s", n, op.c_str());
    std::printf("\n");
    EXPECT_GE(products.size(), 2u) << "the branches' N differ";
  }
}

// sm_90 (without the arch-specific suffix) and sm_80 have no wgmma branch; bad keys are refused.
TEST(WgmmaSpaceTest, OnlySm90aHasTheSpaceAndBadKeysAreRefused) {
  for (const char* other : {"cuda -arch=sm_90", "cuda -arch=sm_80"}) {
    EXPECT_TRUE(SpacesOf(NarrowGmm(128, 128, 128, "float16"), *Target::Parse(other)).wgmma.empty())
        << other;
  }
  EXPECT_TRUE(SpacesOf(NarrowGmm(128, 128, 128, "float32"), Sm90a()).wgmma.empty());
  for (const auto& [params, message] :
       {std::pair{R"({"n": [100]})", "multiples of 8 from 8 to 256"},
        std::pair{R"({"warpgroups": [4]})", "must list 1 and/or 2"},
        std::pair{R"({"stages": []})", "must not be empty"},
        std::pair{R"({"n": [512]})", "multiples of 8 from 8 to 256"}}) {
    absl::StatusOr<ScheduleRulePtr> rule =
        NewScheduleRule("MultiLevelTilingWgmma", Sm90a(), nlohmann::json::parse(params));
    ASSERT_FALSE(rule.ok()) << params;
    EXPECT_NE(rule.status().message().find(message), std::string::npos) << rule.status();
  }
}

}  // namespace
}  // namespace tessera
