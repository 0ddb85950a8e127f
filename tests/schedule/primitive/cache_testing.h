// Workloads, hand-built functions and checks shared by the caching primitive tests
// (cache_read_write_test.cc, reindex_test.cc, set_scope_test.cc, storage_align_test.cc,
// cache_test.cc).
#ifndef TESSERA_TESTS_SCHEDULE_PRIMITIVE_CACHE_TESTING_H_
#define TESSERA_TESTS_SCHEDULE_PRIMITIVE_CACHE_TESTING_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/arith/int_set.h"
#include "ir/verify.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace cache_testing {

inline PrimFunc Gmm(int64_t m = 16, int64_t n = 8, int64_t k = 8) {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", m}, {"N", n}, {"K", k}});
}

inline PrimFunc SmallC2d() {
  return *MakeWorkload("C2D", {{"N", 1},
                               {"H", 8},
                               {"W", 8},
                               {"CI", 3},
                               {"CO", 4},
                               {"K", 3},
                               {"stride", 1},
                               {"padding", 1}});
}

inline PrimFunc Sfm() { return *MakeWorkload("SFM", {{"M", 8}, {"N", 16}}); }

inline void ExpectCorrect(const Schedule& sch, const PrimFunc& original) {
  absl::Status s = testing::CheckScheduleCorrect(sch, original);
  EXPECT_TRUE(s.ok()) << s;
}

// Builds with the C backend, runs once, and compares with the interpreter on `original`.
inline void ExpectCBackendMatches(const PrimFunc& original, const PrimFunc& scheduled) {
  absl::Status s = testing::CheckCBackendMatches(original, scheduled);
  EXPECT_TRUE(s.ok()) << s;
}

inline Block BlockNamed(const Schedule& sch, const std::string& name) {
  absl::StatusOr<StmtPath> path = FindBlockPath(sch.func(), name);
  EXPECT_TRUE(path.ok()) << path.status();
  return path->back().as<BlockRealizeNode>()->block;
}

inline std::vector<std::string> ReadNames(const Block& block) {
  std::vector<std::string> names;
  for (const BufferRegion& r : block->reads) names.push_back(r.buffer.name());
  return names;
}

inline Buffer RootAlloc(const PrimFunc& f, const std::string& name) {
  for (const Buffer& b : f.root_block()->alloc_buffers) {
    if (b.name() == name) return b;
  }
  ADD_FAILURE() << "no root allocation " << name;
  return Buffer();
}

// Expects `status` to be kInvalidArgument containing `text`, with the schedule untouched.
inline void ExpectRejected(const absl::Status& status, const std::string& text, const Schedule& sch,
                           const PrimFunc& before, size_t trace_size) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(std::string(status.message()).find(text), std::string::npos) << status;
  EXPECT_TRUE(sch.func().same_as(before));
  EXPECT_EQ(sch.trace().size(), trace_size);
}

// for i in range(4): block `name` storing value(v) into out[v], its regions detected.
inline Stmt Elementwise(const std::string& name, const Buffer& out,
                        const std::function<Expr(const Var&)>& value) {
  Var i("i"), v("v");
  BlockNode node;
  node.name = name;
  node.iter_vars = {IterVar{v, Range{Expr(0), Expr(4)}, IterKind::kSpatial}};
  node.body = BufferStore(out, value(v), {v});
  arith::BufferAccessRegions regions = arith::DetectBlockAccessRegions(MakeBlock(node));
  node.reads = regions.reads;
  node.writes = regions.writes;
  return For(i, Expr(4), ForKind::kSerial, BlockRealize({i}, True(), MakeBlock(node)));
}

inline PrimFunc FuncOf(std::vector<Buffer> params, std::vector<Stmt> nests) {
  BlockNode root;
  root.name = "root";
  root.body = SeqStmt(std::move(nests));
  PrimFunc func =
      PrimFunc::Make("main", std::move(params), BlockRealize({}, True(), MakeBlock(root)));
  absl::Status wf = VerifyWellFormed(func);
  EXPECT_TRUE(wf.ok()) << wf;
  return func;
}

}  // namespace cache_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_SCHEDULE_PRIMITIVE_CACHE_TESTING_H_
