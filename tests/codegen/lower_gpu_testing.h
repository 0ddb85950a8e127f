// Helpers of the GPU lowering tests (lower_gpu_test.cc, lower_gpu_reduction_test.cc,
// lower_gpu_sync_test.cc): the target, and what a lowered function contains.
#ifndef TESSERA_TESTS_CODEGEN_LOWER_GPU_TESTING_H_
#define TESSERA_TESTS_CODEGEN_LOWER_GPU_TESTING_H_

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/functor.h"
#include "ir/target.h"

namespace tessera {
namespace lower_gpu_testing {

inline Target Sm80() {
  absl::StatusOr<Target> t = Target::Parse("cuda -arch=sm_80");
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

// The names of the extern calls in `body`, in program order (a name once per call).
inline std::vector<std::string> ExternCalls(const Stmt& body) {
  std::vector<std::string> names;
  PostOrderVisitExprs(body, [&](const Expr& e) {
    const auto* call = e.as<CallNode>();
    if (call != nullptr && call->op == CallOp::kExtern) names.push_back(call->name);
  });
  return names;
}

inline int Count(const std::vector<std::string>& names, const std::string& name) {
  int n = 0;
  for (const std::string& s : names) n += s == name ? 1 : 0;
  return n;
}

}  // namespace lower_gpu_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_CODEGEN_LOWER_GPU_TESTING_H_
