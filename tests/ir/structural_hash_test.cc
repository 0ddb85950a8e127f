// Tests of ir/structural_hash.cc: invariance to names, sensitivity to every other change,
// normalised floats, module hashes, and a golden hash value that pins the hash function (it
// identifies workloads in users' databases).
#include "ir/structural_hash.h"

#include <cmath>
#include <limits>
#include <string>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/structural_equal.h"
#include "tests/ir/ir_test_funcs.h"

namespace tessera {
namespace {

using testing::TiledOptions;

TEST(StructuralHashTest, IgnoresNamesOfVariablesBuffersAndFunctions) {
  EXPECT_EQ(StructuralHash(testing::Matmul()), StructuralHash(testing::Matmul("other_")));
  EXPECT_EQ(StructuralHash(testing::Elementwise()), StructuralHash(testing::Elementwise("x")));
  TiledOptions renamed;
  renamed.prefix = "renamed_";
  EXPECT_EQ(StructuralHash(testing::Tiled()), StructuralHash(testing::Tiled(renamed)));
  EXPECT_TRUE(StructuralEqual(testing::Tiled(), testing::Tiled(renamed)));
  EXPECT_EQ(StructuralDiff(testing::Matmul(), testing::Matmul("q")), "");
}

TEST(StructuralHashTest, RebuiltWorkloadsHashEqually) {
  for (const WorkloadInfo& info : ListWorkloads()) {
    absl::StatusOr<PrimFunc> a = MakeWorkload(info.name);
    absl::StatusOr<PrimFunc> b = MakeWorkload(info.name);
    ASSERT_TRUE(a.ok() && b.ok()) << info.name;
    EXPECT_FALSE(a->same_as(*b));
    EXPECT_EQ(StructuralDiff(*a, *b), "") << info.name;
    EXPECT_EQ(StructuralHash(*a), StructuralHash(*b)) << info.name;
  }
}

// One knob of the tiled function changed, and where the diff should point.
struct Change {
  const char* what;
  void (*apply)(TiledOptions* o);
  const char* diff_fragment;
};

const Change kChanges[] = {
    {"shape", [](TiledOptions* o) { o->n = 99; }, "params[0].shape[0]: 100 vs 99"},
    {"dtype", [](TiledOptions* o) { o->dtype = DataType::Float16(); },
     "params[0].dtype: float32 vs float16"},
    {"scope", [](TiledOptions* o) { o->scope = "local"; },
     "alloc_buffers[0].scope: \"shared\" vs \"local\""},
    {"loop extent", [](TiledOptions* o) { o->inner = 64; }, ".extent: 32 vs 64"},
    {"index", [](TiledOptions* o) { o->offset = 1; }, "reads[0].region[0].min"},
    {"thread tag", [](TiledOptions* o) { o->tag = "threadIdx.y"; },
     "thread_tag: \"threadIdx.x\" vs \"threadIdx.y\""},
    {"annotation", [](TiledOptions* o) { o->unroll = 64; },
     "annotations[\"pragma_auto_unroll_max_step\"]: 16 vs 64"},
    {"block name", [](TiledOptions* o) { o->block_name = "Z"; }, "name: \"Y\" vs \"Z\""},
    {"float immediate", [](TiledOptions* o) { o->scale = 0.25; }, "0.5 vs 0.25"},
};

TEST(StructuralHashTest, ChangesWithEveryStructuralChange) {
  PrimFunc base = testing::Tiled();
  for (const Change& c : kChanges) {
    TiledOptions o;
    c.apply(&o);
    PrimFunc changed = testing::Tiled(o);
    EXPECT_NE(StructuralHash(base), StructuralHash(changed)) << c.what;
    EXPECT_FALSE(StructuralEqual(base, changed)) << c.what;
    std::string diff = StructuralDiff(base, changed);
    EXPECT_NE(diff.find(c.diff_fragment), std::string::npos) << c.what << ": " << diff;
  }
}

TEST(StructuralHashTest, ChangesWithAttributesButNotGlobalSymbol) {
  PrimFunc f = testing::Matmul();
  EXPECT_EQ(StructuralHash(f), StructuralHash(f.WithAttr("global_symbol", std::string("x"))));
  PrimFunc g = f.WithAttr("tessera.scheduled", int64_t{1});
  EXPECT_NE(StructuralHash(f), StructuralHash(g));
  EXPECT_NE(StructuralDiff(f, g), "");
  EXPECT_NE(StructuralHash(g), StructuralHash(f.WithAttr("tessera.scheduled", int64_t{2})));
  EXPECT_NE(StructuralHash(g), StructuralHash(f.WithAttr("tessera.scheduled", 1.0)));
}

TEST(StructuralHashTest, ExternCallNamesCount) {
  Expr f = CallExtern(DataType::Int32(), "f", {Expr(1)});
  Expr g = CallExtern(DataType::Int32(), "g", {Expr(1)});
  EXPECT_NE(StructuralHash(f), StructuralHash(g));
  EXPECT_EQ(StructuralDiff(f, g), "name: \"f\" vs \"g\"");
  EXPECT_EQ(StructuralHash(f), StructuralHash(CallExtern(DataType::Int32(), "f", {Expr(1)})));
}

TEST(StructuralHashTest, NormalizesNegativeZeroAndNan) {
  DataType f32 = DataType::Float32();
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(StructuralHash(FloatImm(f32, 0.0)), StructuralHash(FloatImm(f32, -0.0)));
  EXPECT_TRUE(StructuralEqual(FloatImm(f32, 0.0), FloatImm(f32, -0.0)));
  EXPECT_EQ(StructuralHash(FloatImm(f32, nan)), StructuralHash(FloatImm(f32, -nan)));
  EXPECT_TRUE(StructuralEqual(FloatImm(f32, nan), FloatImm(f32, nan)));
  EXPECT_NE(StructuralHash(FloatImm(f32, 1.0)), StructuralHash(FloatImm(f32, 1.0 + 1e-15)));
  EXPECT_NE(StructuralHash(FloatImm(f32, 1.0)), StructuralHash(FloatImm(DataType::Float16(), 1.0)));
}

TEST(StructuralHashTest, ModuleHashIgnoresFunctionNames) {
  IRModule a, b;
  a.Update(testing::Matmul());
  a.Update(testing::Elementwise());
  b.Update(testing::Matmul("zz_"));
  b.Update(testing::Elementwise("aa_"));
  EXPECT_EQ(StructuralHash(a), StructuralHash(b));
  b.Update(testing::Tiled());
  EXPECT_NE(StructuralHash(a), StructuralHash(b));
}

TEST(StructuralHashTest, HexHasSixteenDigits) {
  std::string hex = StructuralHashHex(testing::Matmul());
  EXPECT_EQ(hex.size(), 16u);
  EXPECT_EQ(hex.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(std::stoull(hex, nullptr, 16), StructuralHash(testing::Matmul()));
}

// The hash of a small fixed function. If this fails, the hash function changed: every
// workload stored in existing databases would no longer be found. Change the value only
// together with a database migration.
TEST(StructuralHashTest, GoldenValueIsStable) {
  EXPECT_EQ(StructuralHashHex(testing::Matmul("", 16, 8, 4)), "c92cade559ca96d1");
  EXPECT_EQ(StructuralHashHex(testing::Tiled()), "8afdf39b6bb9624a");
}

}  // namespace
}  // namespace tessera
