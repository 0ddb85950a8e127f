// Tests of cost_model/features.h: the 164-value layout on hand-written loop nests with known
// values, and properties on tiled GMM schedules (determinism, sensitivity, speed).
#include "cost_model/features.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/parser.h"
#include "schedule/trace.h"
#include "tests/cost_model/gmm_schedules.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace {

// Offsets in a row (docs/reference/metaschedule.md §6.2).
constexpr int kFloatAddSub = 1, kFloatMul = 2, kIntAddSub = 8;
constexpr int kVec = 16, kUnroll = 27, kParallel = 38, kGpu = 49;
constexpr int kBuf = 57, kPerBuf = 18, kCurve = 147, kAlloc = 157, kOuter = 161;

float Slog(double x) { return static_cast<float>(std::log2(x + 1)); }

Target Cpu() { return *Target::Parse("cpu"); }

FeatureMatrix Extract(const std::string& text, const Target& target = Cpu()) {
  absl::StatusOr<PrimFunc> f = ParseFunc(text);
  EXPECT_TRUE(f.ok()) << f.status();
  absl::StatusOr<FeatureMatrix> m = ExtractFeatures(*f, target);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

// C = A * B + A over a parallel(64) x vectorized(32) nest.
constexpr char kElementwise[] = R"(
@prim_func
def f(A: Buffer((64, 32), "float32"), B: Buffer((64, 32), "float32"),
      C: Buffer((64, 32), "float32")):
    with block("root"):
        for i in parallel(64):
            for j in vectorized(32):
                with block("C"):
                    vi = axis.spatial(64, i)
                    vj = axis.spatial(32, j)
                    reads(A[vi, vj], B[vi, vj])
                    writes(C[vi, vj])
                    C[vi, vj] = A[vi, vj] * B[vi, vj] + A[vi, vj]
)";

TEST(FeaturesTest, ElementwiseKnownValues) {
  FeatureMatrix m = Extract(kElementwise);
  ASSERT_EQ(m.rows, 1);
  ASSERT_EQ(m.values.size(), static_cast<size_t>(kFeatureDim));
  const float* r = m.row(0);
  // Group 1: op counts are extent products; indices are plain loop variables.
  EXPECT_FLOAT_EQ(r[kFloatMul], Slog(2048));
  EXPECT_FLOAT_EQ(r[kFloatAddSub], Slog(2048));
  EXPECT_FLOAT_EQ(r[kIntAddSub], 0);
  EXPECT_FLOAT_EQ(r[kVec + 0], Slog(1));
  EXPECT_FLOAT_EQ(r[kVec + 1], Slog(32));
  EXPECT_FLOAT_EQ(r[kVec + 2], Slog(32));
  EXPECT_FLOAT_EQ(r[kVec + 3 + 7], 1);  // position "mixed"
  EXPECT_FLOAT_EQ(r[kUnroll + 0], 0);
  EXPECT_FLOAT_EQ(r[kUnroll + 3], 1);  // position "none"
  EXPECT_FLOAT_EQ(r[kParallel + 1], Slog(64));
  EXPECT_FLOAT_EQ(r[kParallel + 2], Slog(64));
  EXPECT_FLOAT_EQ(r[kGpu], 0);
  for (int t = 1; t < 8; ++t) EXPECT_FLOAT_EQ(r[kGpu + t], 1) << t;  // slog(1) on a CPU
  // Group 2: A, B, C tie on lines and bytes, so they sort by name. A is read-only, strided 1.
  const float* a = r + kBuf;
  EXPECT_FLOAT_EQ(a[0], 1);                  // read
  EXPECT_FLOAT_EQ(a[3], Slog(4 * 2048));     // bytes
  EXPECT_FLOAT_EQ(a[4], Slog(4 * 2048));     // unique bytes
  EXPECT_FLOAT_EQ(a[5], Slog(2048 * 4.0 / 64));  // lines
  EXPECT_FLOAT_EQ(a[6], Slog(4 * 2048 / 64));    // unique lines (rows of 128 bytes)
  EXPECT_FLOAT_EQ(a[9], 1);                  // no reuse
  EXPECT_FLOAT_EQ(a[13], Slog(4 * 2048 / 0.5));
  EXPECT_FLOAT_EQ(a[17], Slog(1));  // innermost stride
  const float* c = r + kBuf + 2 * kPerBuf;
  EXPECT_FLOAT_EQ(c[1], 1);  // write
  for (int v = kBuf + 3 * kPerBuf; v < kCurve; ++v) EXPECT_FLOAT_EQ(r[v], 0) << v;  // empty slots
  // Group 3: 2 float ops per 12 bytes touched at every level.
  for (int s = 0; s < 10; ++s) EXPECT_NEAR(r[kCurve + s], Slog(2.0 / 12), 1e-6) << s;
  // Group 4: C is a parameter (allocated outside all loops).
  EXPECT_FLOAT_EQ(r[kAlloc + 0], Slog(4 * 2048));
  EXPECT_FLOAT_EQ(r[kAlloc + 1], Slog(2048));
  EXPECT_FLOAT_EQ(r[kAlloc + 2], Slog(1));
  EXPECT_FLOAT_EQ(r[kAlloc + 3], Slog(2048));
  // Group 5.
  EXPECT_FLOAT_EQ(r[kOuter + 0], Slog(2048));
  EXPECT_FLOAT_EQ(r[kOuter + 1], Slog(2));
  EXPECT_FLOAT_EQ(r[kOuter + 2], 0);
}

TEST(FeaturesTest, MatmulAccessPatternsAndReuse) {
  FeatureMatrix m = *ExtractFeatures(testing::GmmFunc(16), Cpu());
  ASSERT_EQ(m.rows, 1);  // init and update both store C
  const float* r = m.row(0);
  EXPECT_FLOAT_EQ(r[kFloatMul], Slog(4096));
  EXPECT_FLOAT_EQ(r[kOuter + 1], Slog(3));  // the batch loop of extent 1 is dropped
  // Slots by lines: B (k strides a row: 4096 lines), A (stride 1: 4096 / 16), C (256 / 16).
  const float* b = r + kBuf;
  const float* a = b + kPerBuf;
  const float* c = a + kPerBuf;
  EXPECT_FLOAT_EQ(b[5], Slog(4096));
  EXPECT_FLOAT_EQ(b[17], Slog(16));
  EXPECT_FLOAT_EQ(a[5], Slog(256));
  EXPECT_FLOAT_EQ(c[5], Slog(16));
  EXPECT_FLOAT_EQ(c[2], 1);  // C is read and written
  EXPECT_FLOAT_EQ(c[17], 0);  // the innermost loop (k) does not move C
  // A does not depend on j: reused 16 times, 16 iterations (of k) apart, while the k loop
  // touches 1 + 16 + 16 elements of 4 bytes.
  EXPECT_FLOAT_EQ(a[7], 1);
  EXPECT_FLOAT_EQ(a[10], Slog(16));
  EXPECT_FLOAT_EQ(a[11], Slog(33 * 4));
  EXPECT_FLOAT_EQ(a[12], Slog(16));
  // C does not depend on k, the innermost loop: distance = the element bytes of all buffers.
  EXPECT_FLOAT_EQ(c[7], 1);
  EXPECT_FLOAT_EQ(c[11], Slog(12));
}

TEST(FeaturesTest, OneRowPerStoredBufferConstantStoresSkipped) {
  FeatureMatrix m = Extract(R"(
@prim_func
def f(A: Buffer((64,), "float32"), Z: Buffer((64,), "float32"), B: Buffer((64,), "float32")):
    with block("root"):
        T = alloc_buffer((64,), "float32")
        for i in range(64):
            with block("Z"):
                v = axis.spatial(64, i)
                writes(Z[v])
                Z[v] = float32(0.0)
        for i in range(64):
            with block("T"):
                v = axis.spatial(64, i)
                reads(A[v])
                writes(T[v])
                T[v] = A[v] * float32(2.0)
        for i in range(64):
            with block("B"):
                v = axis.spatial(64, i)
                reads(T[v])
                writes(B[v])
                B[v] = T[v] + float32(1.0)
        for i in range(64):
            with block("B2"):
                v = axis.spatial(64, i)
                reads(B[v])
                writes(B[v])
                B[v] = B[v] * B[v]
)");
  ASSERT_EQ(m.rows, 2);  // T, B (Z only gets a constant)
  // Row 0 is T: an allocation at the root, 64 floats.
  EXPECT_FLOAT_EQ(m.row(0)[kAlloc + 0], Slog(256));
  // Row 1 is B, filled by its last store (B2: a multiply, no add).
  EXPECT_FLOAT_EQ(m.row(1)[kFloatMul], Slog(64));
  EXPECT_FLOAT_EQ(m.row(1)[kFloatAddSub], 0);
}

TEST(FeaturesTest, UnrollAndPragma) {
  FeatureMatrix m = Extract(R"(
@prim_func
def f(A: Buffer((64, 4), "float32"), B: Buffer((64, 4), "float32")):
    with block("root"):
        for i in range(64, annotations={"pragma_auto_unroll_max_step": 16}):
            for j in unroll(4):
                with block("B"):
                    vi = axis.spatial(64, i)
                    vj = axis.spatial(4, j)
                    reads(A[vi, vj])
                    writes(B[vi, vj])
                    B[vi, vj] = A[vi, vj] + float32(1.0)
)");
  ASSERT_EQ(m.rows, 1);
  const float* r = m.row(0);
  EXPECT_FLOAT_EQ(r[kUnroll + 0], Slog(1));
  EXPECT_FLOAT_EQ(r[kUnroll + 1], Slog(4));
  EXPECT_FLOAT_EQ(r[kParallel + 0], 0);
  EXPECT_FLOAT_EQ(r[kOuter + 2], Slog(16));
}

TEST(FeaturesTest, GpuBindingExtents) {
  const std::string text = R"(
@prim_func
def f(A: Buffer((1024,), "float32"), B: Buffer((1024,), "float32")):
    with block("root"):
        for bx in thread_binding(8, "blockIdx.x"):
            for tx in thread_binding(128, "threadIdx.x"):
                with block("B"):
                    v = axis.spatial(1024, bx * 128 + tx)
                    reads(A[v])
                    writes(B[v])
                    B[v] = A[v] * float32(2.0)
)";
  FeatureMatrix m = Extract(text, *Target::Parse("cuda -arch=sm_80"));
  ASSERT_EQ(m.rows, 1);
  const float* r = m.row(0);
  EXPECT_FLOAT_EQ(r[kGpu + 0], 1);
  EXPECT_FLOAT_EQ(r[kGpu + 1], Slog(8));    // blockIdx.x
  EXPECT_FLOAT_EQ(r[kGpu + 2], Slog(1));    // blockIdx.y
  EXPECT_FLOAT_EQ(r[kGpu + 4], Slog(128));  // threadIdx.x
  // The binding bx * 128 + tx is index arithmetic: one multiply and one add per access.
  EXPECT_FLOAT_EQ(r[kIntAddSub], Slog(1024));
  EXPECT_FLOAT_EQ(r[kBuf + 17], Slog(1));  // A moves by 1 with tx
}

TEST(FeaturesTest, EveryWorkloadHasFiniteRows) {
  for (const WorkloadInfo& info : ListWorkloads()) {
    for (const char* target : {"cpu", "cuda -arch=sm_80"}) {
      absl::StatusOr<FeatureMatrix> m =
          ExtractFeatures(testing::SmallWorkload(info.name), *Target::Parse(target));
      ASSERT_TRUE(m.ok()) << info.name << ": " << m.status();
      EXPECT_GE(m->rows, 1) << info.name;
      ASSERT_EQ(m->values.size(), static_cast<size_t>(m->rows * kFeatureDim)) << info.name;
      for (float v : m->values) ASSERT_TRUE(std::isfinite(v)) << info.name;
    }
  }
}

// The GPU example schedules (shared and local caches under thread bindings) featurize; in the
// GMM one some cache is allocated under the block loops.
TEST(FeaturesTest, GpuExampleSchedules) {
  const Target cuda = *Target::Parse("cuda -arch=sm_80");
  for (const WorkloadInfo& info : ListWorkloads()) {
    std::string name;
    for (char ch : info.name) name += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/examples/gpu/" + name + ".json");
    if (!in) continue;
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<Trace> trace = Trace::FromJson(text.str());
    ASSERT_TRUE(trace.ok()) << name << ": " << trace.status();
    Schedule sch = Schedule::Create(*MakeWorkload(info.name), /*seed=*/0);
    ASSERT_TRUE(trace->ApplyTo(&sch, /*remove_postproc=*/false).ok()) << name;
    absl::StatusOr<FeatureMatrix> m = ExtractFeatures(sch.func(), cuda);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status();
    ASSERT_GE(m->rows, 1) << name;
    float max_alloc_outer = 0;
    for (int64_t r = 0; r < m->rows; ++r) {
      EXPECT_FLOAT_EQ(m->row(r)[kGpu], 1) << name;
      max_alloc_outer = std::max(max_alloc_outer, m->row(r)[kAlloc + 2]);
      for (int v = 0; v < kFeatureDim; ++v) ASSERT_TRUE(std::isfinite(m->row(r)[v])) << name;
    }
    if (name == "gmm") {
      EXPECT_GE(m->rows, 3) << name;  // the output, its local accumulator, shared copies
      EXPECT_GT(max_alloc_outer, Slog(1)) << name;
    }
  }
}

TEST(FeaturesTest, RejectsFunctionWithoutRootBlock) {
  PrimFunc f = PrimFunc::Make("bad", {}, Evaluate(Expr(0)));
  absl::StatusOr<FeatureMatrix> m = ExtractFeatures(f, Cpu());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("bad"), absl::string_view::npos) << m.status();
}

TEST(FeaturesTest, DeterministicAndSensitiveToTiling) {
  const PrimFunc gmm = testing::GmmFunc(128);
  std::vector<FeatureMatrix> seen;
  for (int64_t seed = 1; seed <= 8; ++seed) {
    absl::StatusOr<testing::TiledGmm> t = testing::RandomTiledGmm(gmm, seed, /*parallel=*/true);
    ASSERT_TRUE(t.ok()) << t.status();
    FeatureMatrix a = *ExtractFeatures(t->schedule.func(), Cpu());
    FeatureMatrix b = *ExtractFeatures(t->schedule.func(), Cpu());
    ASSERT_EQ(a.rows, 1);
    EXPECT_EQ(a.values, b.values);
    seen.push_back(std::move(a));
  }
  int distinct_pairs = 0;
  for (size_t i = 0; i < seen.size(); ++i) {
    for (size_t j = i + 1; j < seen.size(); ++j) distinct_pairs += seen[i].values != seen[j].values;
  }
  EXPECT_EQ(distinct_pairs, 28);
}

TEST(FeaturesTest, ThousandsOfCandidatesPerSecond) {
  const PrimFunc gmm = testing::GmmFunc(512);
  absl::StatusOr<testing::TiledGmm> t = testing::RandomTiledGmm(gmm, 3, /*parallel=*/true);
  ASSERT_TRUE(t.ok()) << t.status();
  const PrimFunc func = t->schedule.func();
  constexpr int kIters = 2000;
  const auto start = std::chrono::steady_clock::now();
  int64_t rows = 0;
  for (int i = 0; i < kIters; ++i) rows += ExtractFeatures(func, Cpu())->rows;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("featurized a tiled GMM schedule %d times: %.0f candidates/s\n", kIters,
              kIters / secs);
  EXPECT_EQ(rows, kIters);
  EXPECT_GT(kIters / secs, 50);  // a sanity bound only; the machine may be busy
}

}  // namespace
}  // namespace tessera
