// The hand-written GPU schedules in examples/gpu/, one per workload of the library: each is
// canonical trace JSON, replays at the workload's default shape into kernels in which every block
// is bound to blockIdx/threadIdx loops within the CUDA limits (VerifyGpuCode; at most 1024
// threads and 48 KB of shared memory per thread block), computes what the unscheduled workload
// computes (reference interpreter, where thread-bound loops run serially), and generates CUDA
// that NVRTC compiles for sm_80 and sm_90 (skipped in a build without CUDA). No GPU needed.
//
// The interpreter runs every thread's copy of a cooperative fetch, so the tiled examples cost
// hundreds of times their FLOPs there: by default their outputs are compared at a smaller shape
// on which the same trace replays (the split factors are fixed with the outer one inferred);
// TESSERA_SLOW_TESTS=1 compares every example at its default shape (about 25 minutes on the
// shared 2-core development machine, T2D alone 8).
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/status_macros.h"
#include "codegen/codegen_cuda.h"
#include "codegen/lower_gpu.h"
#include "codegen/verify_gpu.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "ir/target.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "tests/testing/schedule_testing.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

// What an example must show besides being bound and within limits.
enum class Pattern {
  kTiled,        // shared-memory tiles of the inputs and a local accumulator
  kCrossThread,  // a reduction loop bound to threadIdx.x
  kInjective,    // a vectorized loop
};

struct GpuExample {
  std::string workload;
  Pattern pattern;
  // Where outputs are compared unless TESSERA_SLOW_TESTS is set; empty: the default shape.
  std::map<std::string, int64_t> check_shape;
};

std::vector<GpuExample> Examples() {
  const Pattern kTiled = Pattern::kTiled, kCross = Pattern::kCrossThread;
  return {
      {"GMM", kTiled, {{"M", 128}, {"N", 128}, {"K", 64}}},
      {"C1D", kTiled, {{"L", 64}}},
      {"C2D", kTiled, {{"H", 32}, {"W", 32}}},
      {"C3D", kTiled, {{"D", 2}, {"H", 8}, {"W", 16}}},
      {"DEP", kTiled, {{"H", 16}, {"W", 16}}},
      {"MAX_POOL", Pattern::kInjective, {{"H", 16}, {"W", 16}}},
      {"DIL", kTiled, {{"H", 32}, {"W", 32}}},
      {"GRP", kTiled, {{"H", 16}, {"W", 16}, {"CI", 32}, {"CO", 64}, {"groups", 2}}},
      {"T2D", kTiled, {{"H", 2}, {"W", 2}, {"CI", 32}, {"CO", 32}}},
      {"CAP", kTiled, {{"H", 4}, {"W", 4}, {"CI", 8}}},
      {"NRM", kCross, {}},
      {"SFM", kCross, {}},
      {"CBR", kTiled, {{"H", 32}, {"W", 32}}},
      {"TBG", kTiled, {{"seq_len", 64}, {"n_head", 2}}},
      {"GEMV", kCross, {{"M", 256}}},
      {"DENSE_BIAS_RELU", kTiled, {{"M", 32}, {"N", 64}, {"K", 64}}},
      {"LINEAR", kTiled, {{"M", 64}, {"N", 64}, {"K", 32}}},
      {"LAYER_NORM", kCross, {}},
      {"RMS_NORM", kCross, {}},
      {"TRANSPOSE", Pattern::kInjective, {}},
      {"REDUCE_SUM", kCross, {}},
      {"ELEMENTWISE", Pattern::kInjective, {}},
  };
}

std::string FileOf(const std::string& workload) {
  std::string file = "examples/gpu/";
  for (char c : workload) file += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return file + ".json";
}

std::string ReadExample(const std::string& workload) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/" + FileOf(workload));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<Schedule> Replay(const PrimFunc& func, const std::string& workload) {
  TESSERA_ASSIGN_OR_RETURN(Trace trace, Trace::FromJson(ReadExample(workload)));
  Schedule sch = Schedule::Create(func, /*seed=*/0);
  TESSERA_RETURN_IF_ERROR(trace.ApplyTo(&sch, /*remove_postproc=*/false));
  return sch;
}

Target CudaTarget(const std::string& arch) {
  absl::StatusOr<Target> target = Target::Parse(
      "cuda -arch=" + arch + " -max_threads_per_block=1024 -max_shared_memory_per_block=49152");
  TESSERA_CHECK(target.ok()) << target.status();
  return *target;
}

bool SlowTests() {
  const char* slow = std::getenv("TESSERA_SLOW_TESTS");
  return slow != nullptr && std::string(slow) != "" && std::string(slow) != "0";
}

// Whether `func` shows `pattern` (see Pattern).
bool HasPattern(const PrimFunc& func, Pattern pattern) {
  std::set<std::string> scopes;
  bool vectorized = false, cross_thread = false;
  std::set<const VarNode*> thread_x;
  PostOrderVisitStmts(func->body, [&](const Stmt& s) {
    if (const auto* loop = s.as<ForNode>()) {
      vectorized = vectorized || loop->for_kind == ForKind::kVectorized;
      if (loop->for_kind == ForKind::kThreadBinding && loop->thread_tag == "threadIdx.x") {
        thread_x.insert(loop->loop_var.get());
      }
    }
  });
  PostOrderVisitStmts(func->body, [&](const Stmt& s) {
    const auto* realize = s.as<BlockRealizeNode>();
    if (realize == nullptr) return;
    for (const Buffer& b : realize->block->alloc_buffers) scopes.insert(b.scope());
    for (size_t i = 0; i < realize->iter_values.size(); ++i) {
      if (realize->block->iter_vars[i].kind != IterKind::kReduction) continue;
      cross_thread = cross_thread || UsesVar(realize->iter_values[i], [&](const VarNode* v) {
                       return thread_x.count(v) != 0;
                     });
    }
  });
  switch (pattern) {
    case Pattern::kTiled:
      return scopes.count("shared") && scopes.count("local");
    case Pattern::kCrossThread:
      return cross_thread;
    case Pattern::kInjective:
      return vectorized;
  }
  return false;
}

class GpuExamplesTest : public ::testing::TestWithParam<GpuExample> {};

TEST(GpuExamplesListTest, EveryWorkloadHasAnExample) {
  std::set<std::string> listed;
  for (const GpuExample& e : Examples()) listed.insert(e.workload);
  for (const WorkloadInfo& info : ListWorkloads()) {
    EXPECT_TRUE(listed.count(info.name)) << info.name << " has no entry here";
    EXPECT_FALSE(ReadExample(info.name).empty()) << "cannot read " << FileOf(info.name);
  }
}

TEST_P(GpuExamplesTest, FileIsCanonicalTraceJson) {
  const std::string text = ReadExample(GetParam().workload);
  ASSERT_FALSE(text.empty()) << "cannot read " << FileOf(GetParam().workload);
  absl::StatusOr<Trace> trace = Trace::FromJson(text);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ(nlohmann::json::parse(text), nlohmann::json::parse(trace->ToJson()));
}

TEST_P(GpuExamplesTest, ReplaysAtDefaultShapeIntoVerifiedKernels) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(GetParam().workload);
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<Schedule> sch = Replay(*func, GetParam().workload);
  ASSERT_TRUE(sch.ok()) << sch.status();
  absl::Status replay = testing::CheckReplay(*sch, *func);
  EXPECT_TRUE(replay.ok()) << replay;
  EXPECT_TRUE(HasPattern(sch->func(), GetParam().pattern)) << PrintFunc(sch->func());

  const Target target = CudaTarget("sm_90");
  absl::Status verified = VerifyGpuCode(sch->func(), target);
  ASSERT_TRUE(verified.ok()) << verified << "\n" << PrintFunc(sch->func());
  absl::StatusOr<PrimFunc> lowered = LowerForGpu(sch->func(), target);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  absl::StatusOr<std::vector<GpuKernelInfo>> kernels = SplitKernels(*lowered);
  ASSERT_TRUE(kernels.ok()) << kernels.status();
  ASSERT_FALSE(kernels->empty());
  for (const GpuKernelInfo& k : *kernels) {
    const int64_t threads = k.block[0] * k.block[1] * k.block[2];
    EXPECT_GE(threads, 32) << k.name;
    EXPECT_LE(threads, 1024) << k.name;
    EXPECT_LE(k.shared_bytes, 48 * 1024) << k.name;
    std::cout << GetParam().workload << " " << k.name << ": grid " << k.grid[0] << "x"
              << k.grid[1] << "x" << k.grid[2] << ", block " << k.block[0] << "x" << k.block[1]
              << "x" << k.block[2] << ", shared " << k.shared_bytes << " B\n";
  }
}

TEST_P(GpuExamplesTest, SameOutputsAsUnscheduled) {
  const std::map<std::string, int64_t> shape =
      SlowTests() ? std::map<std::string, int64_t>() : GetParam().check_shape;
  absl::StatusOr<PrimFunc> func = MakeWorkload(GetParam().workload, shape);
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<Schedule> sch = Replay(*func, GetParam().workload);
  ASSERT_TRUE(sch.ok()) << sch.status();
  absl::Status same = testing::CheckSameOutputs(*func, sch->func());
  EXPECT_TRUE(same.ok()) << same << "\n" << PrintFunc(sch->func());
}

TEST_P(GpuExamplesTest, GeneratedCudaCompilesForSm80AndSm90) {
  absl::StatusOr<PrimFunc> func = MakeWorkload(GetParam().workload);
  ASSERT_TRUE(func.ok()) << func.status();
  absl::StatusOr<Schedule> sch = Replay(*func, GetParam().workload);
  ASSERT_TRUE(sch.ok()) << sch.status();
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::StatusOr<CudaModule> module = GenerateCuda(sch->func(), CudaTarget(arch));
    ASSERT_TRUE(module.ok()) << arch << ": " << module.status();
    ASSERT_FALSE(module->kernels.empty());
    absl::StatusOr<std::string> cubin = CompileCudaSource(module->source, arch);
    if (cubin.status().code() == absl::StatusCode::kFailedPrecondition) {
      GTEST_SKIP() << "no NVRTC: " << cubin.status();
    }
    ASSERT_TRUE(cubin.ok()) << arch << ": " << cubin.status() << "\n" << module->source;
    EXPECT_FALSE(cubin->empty());
  }
}

INSTANTIATE_TEST_SUITE_P(GpuExamples, GpuExamplesTest, ::testing::ValuesIn(Examples()),
                         [](const auto& info) { return info.param.workload; });

// Binding 2048 threads to threadIdx.x is more than a thread block may have: the GPU checks and
// the CUDA generator reject it, naming the limit.
TEST(GpuExamplesNegativeTest, TooManyThreadsPerBlockIsRejected) {
  absl::StatusOr<PrimFunc> func = MakeWorkload("ELEMENTWISE");
  ASSERT_TRUE(func.ok()) << func.status();
  Schedule sch = Schedule::Create(*func, /*seed=*/0);
  absl::StatusOr<BlockRV> c = sch.GetBlock("C");
  ASSERT_TRUE(c.ok());
  absl::StatusOr<std::vector<LoopRV>> loops = sch.GetLoops(*c);
  ASSERT_TRUE(loops.ok());
  absl::StatusOr<LoopRV> fused = sch.Fuse(*loops);
  ASSERT_TRUE(fused.ok());
  absl::StatusOr<std::vector<LoopRV>> parts =
      sch.Split(*fused, {InstValue(), InstValue::Int(2048)});
  ASSERT_TRUE(parts.ok());
  ASSERT_TRUE(sch.Bind((*parts)[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind((*parts)[1], "threadIdx.x").ok());

  absl::Status verified = VerifyGpuCode(sch.func(), CudaTarget("sm_90"));
  EXPECT_EQ(verified.code(), absl::StatusCode::kInvalidArgument) << verified;
  EXPECT_NE(std::string(verified.message()).find("max_threads_per_block"), std::string::npos)
      << verified;
  absl::StatusOr<CudaModule> module = GenerateCuda(sch.func(), CudaTarget("sm_90"));
  EXPECT_EQ(module.status().code(), absl::StatusCode::kInvalidArgument) << module.status();
}

// compute_at of a shared-memory copy under threadIdx loops covers the tile of the whole thread
// block (the threads share the buffer), so the copy can be split among the threads; a local
// (per-thread) buffer covers one thread's part only.
TEST(GpuComputeAtTest, SharedCopyUnderThreadLoopsCoversTheThreadBlock) {
  PrimFunc func = *MakeWorkload("GMM", {{"B", 1}, {"M", 64}, {"N", 64}, {"K", 32}});
  Schedule sch = Schedule::Create(func, /*seed=*/0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> l = *sch.GetLoops(c);  // b i j k
  std::vector<LoopRV> i = *sch.Split(l[1], {InstValue(), InstValue::Int(8), InstValue::Int(4)});
  std::vector<LoopRV> j = *sch.Split(l[2], {InstValue(), InstValue::Int(8), InstValue::Int(4)});
  std::vector<LoopRV> k = *sch.Split(l[3], {InstValue(), InstValue::Int(8)});
  ASSERT_TRUE(sch.Reorder({i[0], j[0], i[1], j[1], k[0], k[1], i[2], j[2]}).ok());
  ASSERT_TRUE(sch.Bind(i[0], "blockIdx.y").ok());
  ASSERT_TRUE(sch.Bind(j[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind(i[1], "threadIdx.y").ok());
  ASSERT_TRUE(sch.Bind(j[1], "threadIdx.x").ok());
  BlockRV shared = *sch.CacheRead(c, 1, "shared");
  ASSERT_TRUE(sch.ComputeAt(shared, k[0], /*preserve_unit_loops=*/true).ok());
  BlockRV local = *sch.CacheRead(c, 2, "local");
  ASSERT_TRUE(sch.ComputeAt(local, k[0], /*preserve_unit_loops=*/true).ok());

  auto copy_extents = [&](BlockRV block) {
    std::vector<int64_t> extents;
    std::vector<LoopRV> loops = *sch.GetLoops(block);
    for (size_t n = loops.size() - 3; n < loops.size(); ++n) {
      extents.push_back(*AsConstInt((*sch.Get(loops[n]))->extent));
    }
    return extents;
  };
  // A[b, i, k]: the block's 32 rows (8 threads x 4) by the k tile.
  EXPECT_EQ(copy_extents(shared), (std::vector<int64_t>{1, 32, 8})) << PrintFunc(sch.func());
  // B[b, k, j] in local memory: the k tile by one thread's 4 columns.
  EXPECT_EQ(copy_extents(local), (std::vector<int64_t>{1, 8, 4})) << PrintFunc(sch.func());
  absl::Status same = testing::CheckSameOutputs(func, sch.func());
  EXPECT_TRUE(same.ok()) << same;
  absl::Status replay = testing::CheckReplay(sch, func);
  EXPECT_TRUE(replay.ok()) << replay;
}

}  // namespace
}  // namespace tessera
