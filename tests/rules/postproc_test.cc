// The postprocessors of rules/postprocs.h on schedules built by hand with the annotations the
// schedule rules produce: what each one rewrites or rejects (with the reason), that the result
// computes what the unscheduled function computes, replays from its trace JSON (postprocessor
// part included), builds with the C backend (CPU) or passes VerifyGPUCode and NVRTC (CUDA).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "rules/annotations.h"
#include "rules/postprocs.h"
#include "rules/schedule_rules.h"
#include "schedule/state.h"
#include "schedule/tensor_intrin.h"
#include "tests/codegen/test_funcs.h"
#include "tests/testing/schedule_testing.h"
#include "worker/builder.h"
#include "worker/nvrtc_builder.h"

namespace tessera {
namespace {

using testing::CheckCBackendMatches;
using testing::CheckScheduleCorrect;
using testing::SmallWorkload;

Target Cpu() { return *Target::Parse("cpu -cores=4 -vector_bits=256"); }
Target Cuda() { return *Target::Parse("cuda -arch=sm_80"); }

using Factory = absl::StatusOr<PostprocPtr> (*)(const Target&, const nlohmann::json&);

PostprocPtr Make(Factory factory, const Target& target,
                 const nlohmann::json& params = nlohmann::json::object()) {
  absl::StatusOr<PostprocPtr> p = factory(target, params);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : nullptr;
}

// Marks the end of the rule part and runs `postprocs` in order; the first rejection, prefixed
// with the postprocessor's name as the tuner reports it.
absl::Status RunPostprocs(Schedule* sch, const std::vector<PostprocPtr>& postprocs) {
  sch->EnterPostproc();
  for (const PostprocPtr& p : postprocs) {
    absl::Status s = p->Apply(sch);
    if (!s.ok()) return absl::Status(s.code(), p->name() + ": " + std::string(s.message()));
  }
  return absl::OkStatus();
}

PrimFunc Workload(const std::string& name, const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape);
  EXPECT_TRUE(f.ok()) << f.status();
  return *f;
}

const ForNode* Loop(Schedule& sch, LoopRV rv) { return *sch.Get(rv); }

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// NVRTC compiles the function for the target (skipped in a build without CUDA).
void ExpectNvrtcCompiles(const PrimFunc& func, const Target& target) {
  if (NvrtcSupportedArchs().empty()) GTEST_SKIP() << "tessera was built without CUDA";
  std::vector<BuildResult> results = NewNvrtcBuilder()->Build({BuildInput{func, target}});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(results[0].ok()) << results[0].error_msg << "\n" << PrintFunc(func);
}

// ---- DisallowDynamicLoop ---------------------------------------------------------------------

TEST(DisallowDynamicLoopTest, RejectsLoopWithSymbolicExtentNamingIt) {
  Var n("n");
  Buffer a = Buffer::Make("A", DataType::Float32(), {n});
  Buffer b = Buffer::Make("B", DataType::Float32(), {n});
  PrimFunc func = testing_funcs::MakeFunc(
      "main", {a, b},
      testing_funcs::ElementwiseNest("B", b, {}, [&](const std::vector<Var>& v) {
        return a.Load({v[0]}) * MakeConst(DataType::Float32(), 2);
      }));
  Schedule sch = Schedule::Create(func, 0);
  absl::Status s = RunPostprocs(&sch, {Make(MakeDisallowDynamicLoop, Cpu())});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()),
                       "DisallowDynamicLoop: loop i (above block B) has the non-constant extent n"))
      << s;

  Schedule fixed = Schedule::Create(SmallWorkload("GMM"), 0);
  EXPECT_TRUE(RunPostprocs(&fixed, {Make(MakeDisallowDynamicLoop, Cpu())}).ok());
}

TEST(PostprocFactoryTest, RejectsUnknownParametersAndWrongTargets) {
  absl::StatusOr<PostprocPtr> p = MakeRewriteUnboundBlock(Cuda(), {{"max_blocks", 3}});
  EXPECT_FALSE(p.ok());
  EXPECT_TRUE(Contains(std::string(p.status().message()), "max_blocks")) << p.status();
  EXPECT_FALSE(MakeRewriteUnboundBlock(Cuda(), {{"max_threadblocks", 0}}).ok());
  EXPECT_FALSE(MakeVerifyGPUCode(Cpu(), nlohmann::json::object()).ok());
  EXPECT_FALSE(MakeRewriteCooperativeFetch(Cpu(), nullptr).ok());
  EXPECT_TRUE(MakeRewriteTensorize(Cpu(), {{"vectorize_init_loop", false}}).ok());
}

// ---- RewriteParallelVectorizeUnroll + RewriteReductionBlock (CPU) -----------------------------

// The root of GMM annotated as ParallelizeVectorizeUnroll does, with j split so that a
// spatial loop is innermost: b * i fused and parallel, the inner j vectorized, the unroll
// pragmas on the outermost loop; then the init split out at the first reduction loop.
TEST(RewriteParallelVectorizeUnrollTest, AnnotatedGmmRootBecomesParallelVectorizedUnrolled) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);  // b, i, j, k
  ASSERT_EQ(loops.size(), 4u);
  std::vector<LoopRV> j = *sch.Split(loops[2], {InstValue(), InstValue::Int(8)});
  ASSERT_TRUE(sch.Reorder({loops[0], loops[1], j[0], loops[3], j[1]}).ok());
  BlockRV root = *sch.GetBlock("root");
  ASSERT_TRUE(sch.Annotate(root, attr::kParallel, InstValue::Int(16)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kVectorize, InstValue::Int(8)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kUnrollExplicit, InstValue::Int(64)).ok());

  absl::Status s = RunPostprocs(&sch, {Make(MakeDisallowDynamicLoop, Cpu()),
                                       Make(MakeRewriteParallelVectorizeUnroll, Cpu()),
                                       Make(MakeRewriteReductionBlock, Cpu())});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE((*sch.Get(root))->annotations.empty());
  std::vector<LoopRV> after = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_EQ(after.size(), 4u) << PrintFunc(sch.func());  // b*i, j_0, k, j_1
  const ForNode* outer = Loop(sch, after[0]);
  EXPECT_EQ(outer->for_kind, ForKind::kParallel);
  EXPECT_TRUE(IsConstInt(outer->extent, 1 * 32)) << PrintExpr(outer->extent);
  EXPECT_EQ(std::get<int64_t>(outer->annotations.at(attr::kPragmaAutoUnrollMaxStep)), 64);
  EXPECT_EQ(std::get<int64_t>(outer->annotations.at(attr::kPragmaUnrollExplicit)), 1);
  EXPECT_EQ(Loop(sch, after[1])->for_kind, ForKind::kSerial);
  EXPECT_EQ(Loop(sch, after[2])->for_kind, ForKind::kSerial);
  EXPECT_EQ(Loop(sch, after[3])->for_kind, ForKind::kVectorized);
  // The init is its own block, before the reduction loop k.
  ASSERT_TRUE(sch.GetBlock("C_init").ok()) << PrintFunc(sch.func());
  EXPECT_FALSE((*sch.Get(*sch.GetBlock("C")))->init.defined());

  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  absl::Status built = CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

// Every loop of an elementwise block is spatial and contiguous: all are fused, split by the
// vector extent, the outer part parallel and the inner part vectorized; a purely spatial
// block gets no unroll pragma.
TEST(RewriteParallelVectorizeUnrollTest, ContiguousElementwiseIsFusedSplitParallelVectorized) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 32}, {"N", 32}});
  Schedule sch = Schedule::Create(func, 0);
  BlockRV root = *sch.GetBlock("root");
  ASSERT_TRUE(sch.Annotate(root, attr::kParallel, InstValue::Int(16)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kVectorize, InstValue::Int(16)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kUnrollImplicit, InstValue::Int(16)).ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(MakeRewriteParallelVectorizeUnroll, Cpu())}).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_EQ(loops.size(), 2u) << PrintFunc(sch.func());
  EXPECT_EQ(Loop(sch, loops[0])->for_kind, ForKind::kParallel);
  EXPECT_TRUE(IsConstInt(Loop(sch, loops[0])->extent, 64));
  EXPECT_TRUE(Loop(sch, loops[0])->annotations.empty());
  EXPECT_EQ(Loop(sch, loops[1])->for_kind, ForKind::kVectorized);
  EXPECT_TRUE(IsConstInt(Loop(sch, loops[1])->extent, 16));
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  absl::Status built = CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

// A transpose reads along i and writes along j: only the innermost loop walks both
// contiguously, so only j is vectorized and i alone is parallel.
TEST(RewriteParallelVectorizeUnrollTest, TransposeVectorizesOnlyTheContiguousInnerLoop) {
  PrimFunc func = Workload("TRANSPOSE", {{"M", 16}, {"N", 8}});
  Schedule sch = Schedule::Create(func, 0);
  BlockRV root = *sch.GetBlock("root");
  ASSERT_TRUE(sch.Annotate(root, attr::kParallel, InstValue::Int(256)).ok());
  ASSERT_TRUE(sch.Annotate(root, attr::kVectorize, InstValue::Int(64)).ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(MakeRewriteParallelVectorizeUnroll, Cpu())}).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("T_transpose"));
  ASSERT_EQ(loops.size(), 2u) << PrintFunc(sch.func());
  EXPECT_EQ(Loop(sch, loops[0])->for_kind, ForKind::kParallel);
  EXPECT_EQ(Loop(sch, loops[1])->for_kind, ForKind::kVectorized);
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  absl::Status built = CheckCBackendMatches(func, sch.func());
  EXPECT_TRUE(built.ok()) << built;
}

TEST(RewriteParallelVectorizeUnrollTest, UnannotatedRootIsLeftAlone) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  ASSERT_TRUE(RunPostprocs(&sch, {Make(MakeRewriteParallelVectorizeUnroll, Cpu())}).ok());
  EXPECT_TRUE(sch.func().same_as(func));
}

// ---- RewriteReductionBlock -------------------------------------------------------------------

TEST(RewriteReductionBlockTest, MovesTheInitTensorizeAnnotationToTheInitBlock) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  ASSERT_TRUE(sch.Annotate(c, attr::kAutoTensorize, InstValue::String("update_intrin")).ok());
  ASSERT_TRUE(sch.Annotate(c, attr::kAutoTensorizeInit, InstValue::String("init_intrin")).ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(MakeRewriteReductionBlock, Cpu())}).ok());
  ASSERT_TRUE(sch.GetBlock("C_init").ok()) << PrintFunc(sch.func());
  Block update = *sch.Get(*sch.GetBlock("C"));
  Block init = *sch.Get(*sch.GetBlock("C_init"));
  EXPECT_EQ(update->annotations.count(attr::kAutoTensorizeInit), 0u);
  EXPECT_EQ(std::get<std::string>(update->annotations.at(attr::kAutoTensorize)), "update_intrin");
  EXPECT_EQ(std::get<std::string>(init->annotations.at(attr::kAutoTensorize)), "init_intrin");
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
}

// A reduction bound to threadIdx.x is lowered as a cross-thread reduction: its init stays.
TEST(RewriteReductionBlockTest, KeepsTheInitOfACrossThreadReduction) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_TRUE(sch.Bind(loops[3], "threadIdx.x").ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(MakeRewriteReductionBlock, Cuda())}).ok());
  EXPECT_FALSE(sch.GetBlock("C_init").ok());
  EXPECT_TRUE((*sch.Get(*sch.GetBlock("C")))->init.defined());
}

// ---- CUDA: RewriteCooperativeFetch, RewriteUnboundBlock, VerifyGPUCode -------------------------

std::vector<PostprocPtr> CudaPostprocs() {
  const Target t = Cuda();
  return {Make(MakeDisallowDynamicLoop, t),         Make(MakeRewriteCooperativeFetch, t),
          Make(MakeRewriteUnboundBlock, t),         Make(MakeRewriteParallelVectorizeUnroll, t),
          Make(MakeRewriteReductionBlock, t),       Make(MakeVerifyGPUCode, t),
          Make(MakeRewriteTensorize, t)};
}

// GMM tiled as MultiLevelTiling does on GPU (blockIdx, threadIdx.y = 4, threadIdx.x = 8), with
// shared-memory copies of A and B at the outer reduction loop, their loops fused and annotated
// for a cooperative fetch of `lanes`.
Schedule TiledGpuGmm(const PrimFunc& func, int64_t lanes) {
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

TEST(RewriteCooperativeFetchTest, SharedCopiesAreSplitOverTheThreadsAndVectorized) {
  PrimFunc func = Workload("GMM", {{"B", 1}, {"M", 16}, {"N", 32}, {"K", 16}});
  Schedule sch = TiledGpuGmm(func, 4);
  absl::Status s = RunPostprocs(&sch, CudaPostprocs());
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
  for (const char* name : {"A_shared", "B_shared"}) {
    BlockRV copy = *sch.GetBlock(name);
    EXPECT_EQ((*sch.Get(copy))->annotations.count(attr::kCooperativeFetch), 0u);
    std::vector<LoopRV> loops = *sch.GetLoops(copy);
    ASSERT_GE(loops.size(), 3u);
    const ForNode* ty = Loop(sch, loops[loops.size() - 3]);
    const ForNode* tx = Loop(sch, loops[loops.size() - 2]);
    const ForNode* vec = Loop(sch, loops.back());
    EXPECT_EQ(ty->thread_tag, "threadIdx.y") << name;
    EXPECT_TRUE(IsConstInt(ty->extent, 4));
    EXPECT_EQ(tx->thread_tag, "threadIdx.x") << name;
    EXPECT_TRUE(IsConstInt(tx->extent, 8));
    EXPECT_EQ(vec->for_kind, ForKind::kVectorized) << name;
    EXPECT_TRUE(IsConstInt(vec->extent, 4));
  }
  EXPECT_TRUE(sch.GetBlock("C_init").ok());
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  ExpectNvrtcCompiles(sch.func(), Cuda());
}

// 3 lanes do not divide the copies' extents: no lane loop.
TEST(RewriteCooperativeFetchTest, LanesThatDoNotDivideFallBackToScalarCopies) {
  PrimFunc func = Workload("GMM", {{"B", 1}, {"M", 16}, {"N", 32}, {"K", 16}});
  Schedule sch = TiledGpuGmm(func, 3);
  ASSERT_TRUE(RunPostprocs(&sch, CudaPostprocs()).ok());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("A_shared"));
  EXPECT_EQ(Loop(sch, loops.back())->thread_tag, "threadIdx.x");
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
}

TEST(RewriteUnboundBlockTest, UnboundElementwiseIsBoundAndCompiles) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 64}, {"N", 64}});
  Schedule sch = Schedule::Create(func, 0);
  absl::Status s = RunPostprocs(&sch, CudaPostprocs());
  ASSERT_TRUE(s.ok()) << s << "\n" << PrintFunc(sch.func());
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  ASSERT_EQ(loops.size(), 2u) << PrintFunc(sch.func());
  EXPECT_EQ(Loop(sch, loops[0])->thread_tag, "blockIdx.x");
  EXPECT_TRUE(IsConstInt(Loop(sch, loops[0])->extent, 4));
  EXPECT_EQ(Loop(sch, loops[1])->thread_tag, "threadIdx.x");
  EXPECT_TRUE(IsConstInt(Loop(sch, loops[1])->extent, 1024));
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
  ExpectNvrtcCompiles(sch.func(), Cuda());
}

TEST(VerifyGPUCodeTest, RejectsA2048ThreadBlockWithTheReason) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 64}, {"N", 64}});
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  LoopRV fused = *sch.Fuse(loops);
  std::vector<LoopRV> parts = *sch.Split(fused, {InstValue(), InstValue::Int(2048)});
  ASSERT_TRUE(sch.Bind(parts[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind(parts[1], "threadIdx.x").ok());
  absl::Status s = RunPostprocs(&sch, CudaPostprocs());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(std::string(s.message()),
                       "VerifyGPUCode: verify_gpu: 2048 threads per block exceed "
                       "max_threads_per_block=1024"))
      << s;
}

TEST(VerifyGPUCodeTest, RejectsThreadsOutsideTheAnnotatedBounds) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 64}, {"N", 64}});
  Schedule sch = Schedule::Create(func, 0);
  BlockRV c = *sch.GetBlock("C");
  std::vector<LoopRV> loops = *sch.GetLoops(c);
  ASSERT_TRUE(sch.Bind(loops[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind(loops[1], "threadIdx.x").ok());
  ASSERT_TRUE(sch.Annotate(c, attr::kThreadExtentLowInclusive, InstValue::Int(128)).ok());
  ASSERT_TRUE(sch.Annotate(c, attr::kThreadExtentHighInclusive, InstValue::Int(1024)).ok());
  absl::Status s = RunPostprocs(&sch, {Make(MakeVerifyGPUCode, Cuda())});
  EXPECT_TRUE(Contains(std::string(s.message()),
                       "64 threads per block in block C are outside the annotated bounds "
                       "[128, 1024]"))
      << s;
}

TEST(VerifyGPUCodeTest, RejectsVectorAccessesOver16Bytes) {
  PrimFunc func = Workload("ELEMENTWISE", {{"M", 64}, {"N", 64}});
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> j = *sch.Split(loops[1], {InstValue(), InstValue::Int(8)});
  ASSERT_TRUE(sch.Bind(loops[0], "blockIdx.x").ok());
  ASSERT_TRUE(sch.Bind(j[0], "threadIdx.x").ok());
  ASSERT_TRUE(sch.Vectorize(j[1]).ok());
  absl::Status s = RunPostprocs(&sch, {Make(MakeVerifyGPUCode, Cuda())});
  EXPECT_TRUE(Contains(std::string(s.message()), "8 x 4 bytes")) << s;
  EXPECT_TRUE(Contains(std::string(s.message()), "16-byte vector limit")) << s;
}

// ---- RewriteTensorize ------------------------------------------------------------------------

// C[i] += int32(A[i, k]) * int32(B[i, k]): the k loop split by 4 and blockized matches dp4a.
TEST(RewriteTensorizeTest, AnnotatedBlockIsTensorizedAndUnannotated) {
  const DataType i8 = DataType::Int8(), i32 = DataType::Int32();
  Buffer a = Buffer::Make("A", i8, {Expr(8), Expr(16)});
  Buffer b = Buffer::Make("B", i8, {Expr(8), Expr(16)});
  Buffer c = Buffer::Make("C", i32, {Expr(8)});
  Var i("i"), k("k"), vi("vi"), vk("vk");
  BlockNode block;
  block.name = "C";
  block.iter_vars = {IterVar{vi, Range{Expr(0), Expr(8)}, IterKind::kSpatial},
                     IterVar{vk, Range{Expr(0), Expr(16)}, IterKind::kReduction}};
  block.reads = {BufferRegion{c, {Range{vi, Expr(1)}}},
                 BufferRegion{a, {Range{vi, Expr(1)}, Range{vk, Expr(1)}}},
                 BufferRegion{b, {Range{vi, Expr(1)}, Range{vk, Expr(1)}}}};
  block.writes = {BufferRegion{c, {Range{vi, Expr(1)}}}};
  block.init = BufferStore(c, IntImm(i32, 0), {vi});
  block.body = BufferStore(
      c, c.Load({vi}) + Cast(i32, a.Load({vi, vk})) * Cast(i32, b.Load({vi, vk})), {vi});
  Stmt nest = For(i, Expr(8), ForKind::kSerial,
                  For(k, Expr(16), ForKind::kSerial,
                      BlockRealize({i, k}, True(), MakeBlock(block))));
  PrimFunc func = testing_funcs::MakeFunc("main", {a, b, c}, nest);
  Schedule sch = Schedule::Create(func, 0);
  std::vector<LoopRV> loops = *sch.GetLoops(*sch.GetBlock("C"));
  std::vector<LoopRV> ks = *sch.Split(loops[1], {InstValue(), InstValue::Int(4)});
  BlockRV outer = *sch.Blockize(ks[1]);
  ASSERT_TRUE(sch.Annotate(outer, attr::kAutoTensorize, InstValue::String(kDp4a)).ok());
  absl::Status s = RunPostprocs(&sch, {Make(MakeRewriteReductionBlock, Cuda()),
                                       Make(MakeRewriteTensorize, Cuda())});
  ASSERT_TRUE(s.ok()) << s;
  std::string text = PrintFunc(sch.func());
  EXPECT_TRUE(Contains(text, "\"__dp4a\"")) << text;
  EXPECT_FALSE(Contains(text, attr::kAutoTensorize)) << text;
  absl::Status replay = testing::CheckReplay(sch, func);
  EXPECT_TRUE(replay.ok()) << replay;
}

TEST(RewriteTensorizeTest, BlockThatDoesNotMatchStaysCorrect) {
  PrimFunc func = SmallWorkload("GMM");
  Schedule sch = Schedule::Create(func, 0);
  ASSERT_TRUE(
      sch.Annotate(*sch.GetBlock("C"), attr::kAutoTensorize, InstValue::String(kDp4a)).ok());
  ASSERT_TRUE(RunPostprocs(&sch, {Make(MakeRewriteTensorize, Cpu())}).ok());
  EXPECT_EQ((*sch.Get(*sch.GetBlock("C")))->annotations.count(attr::kAutoTensorize), 0u);
  EXPECT_TRUE(CheckScheduleCorrect(sch, func).ok()) << CheckScheduleCorrect(sch, func);
}

// ---- End to end: schedule rules, then the default postprocessors ------------------------------

// MultiLevelTiling on C and ParallelizeVectorizeUnroll on the root, as PostOrderApply applies
// them; every resulting design space goes through the target's postprocessors.
std::vector<Schedule> DesignSpaces(const PrimFunc& func, const Target& target, int64_t seed) {
  Schedule sch = Schedule::Create(func, seed);
  BlockRV root = *sch.GetBlock("root");
  BlockRV c = *sch.GetBlock("C");
  absl::StatusOr<ScheduleRulePtr> mlt = MakeMultiLevelTiling(target, nullptr);
  absl::StatusOr<ScheduleRulePtr> pvu = MakeParallelizeVectorizeUnroll(target, nullptr);
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
  std::vector<PostprocPtr> postprocs = {Make(MakeDisallowDynamicLoop, cpu),
                                        Make(MakeRewriteParallelVectorizeUnroll, cpu),
                                        Make(MakeRewriteReductionBlock, cpu)};
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
