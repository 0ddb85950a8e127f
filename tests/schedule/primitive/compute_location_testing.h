// Workloads and checks shared by the compute-location primitive tests (compute_at_test.cc,
// compute_inline_test.cc, sample_compute_location_test.cc, compute_location_test.cc).
#ifndef TESSERA_TESTS_SCHEDULE_PRIMITIVE_COMPUTE_LOCATION_TESTING_H_
#define TESSERA_TESTS_SCHEDULE_PRIMITIVE_COMPUTE_LOCATION_TESTING_H_

#include <map>
#include <string>

#include "base/check.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "schedule/schedule.h"
#include "tests/testing/schedule_testing.h"

namespace tessera {
namespace compute_location_testing {

inline PrimFunc Workload(const std::string& name, const std::map<std::string, int64_t>& shape) {
  absl::StatusOr<PrimFunc> f = MakeWorkload(name, shape);
  TESSERA_CHECK(f.ok()) << f.status();
  return *f;
}

inline PrimFunc SmallC2d() {
  return Workload("C2D", {{"N", 1},
                          {"H", 10},
                          {"W", 10},
                          {"CI", 3},
                          {"CO", 4},
                          {"K", 3},
                          {"stride", 2},
                          {"padding", 1}});
}
inline PrimFunc SmallDense() {
  return Workload("DENSE_BIAS_RELU", {{"M", 8}, {"N", 12}, {"K", 6}});
}
inline PrimFunc SmallSoftmax() { return Workload("SFM", {{"M", 6}, {"N", 8}}); }
inline PrimFunc SmallLayerNorm() { return Workload("LAYER_NORM", {{"M", 6}, {"N", 8}}); }
inline PrimFunc SmallCbr() {
  return Workload("CBR", {{"N", 1},
                          {"H", 8},
                          {"W", 8},
                          {"CI", 3},
                          {"CO", 4},
                          {"K", 3},
                          {"stride", 1},
                          {"padding", 1}});
}

inline void ExpectCorrect(const Schedule& sch, const PrimFunc& original) {
  absl::Status s = testing::CheckScheduleCorrect(sch, original);
  EXPECT_TRUE(s.ok()) << s;
}

// Fails with kInvalidArgument naming `what`, recording nothing and changing nothing.
inline void ExpectRejected(const Schedule& sch, const PrimFunc& before, size_t trace_size,
                           const absl::Status& status, const std::string& what) {
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(std::string(status.message()).find(what), std::string::npos) << status;
  EXPECT_EQ(sch.trace().size(), trace_size);
  EXPECT_TRUE(sch.func().same_as(before));
}

inline bool HasBlock(const PrimFunc& f, const std::string& name) {
  for (const std::string& n : AllBlockNames(f)) {
    if (n == name) return true;
  }
  return false;
}

inline size_t NumAllocs(const PrimFunc& f) { return f.root_block()->alloc_buffers.size(); }

inline LoopRV Loop(Schedule* sch, const std::string& block, size_t index) {
  return (*sch->GetLoops(*sch->GetBlock(block)))[index];
}

// Builds with the C backend, runs once, and compares with the interpreter on `original`.
inline void ExpectCBackendMatches(const PrimFunc& original, const PrimFunc& scheduled) {
  absl::Status s = testing::CheckCBackendMatches(original, scheduled);
  EXPECT_TRUE(s.ok()) << s;
}

}  // namespace compute_location_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_SCHEDULE_PRIMITIVE_COMPUTE_LOCATION_TESTING_H_
