// Set-up shared by the tests of the C builder (builder_test.cc), the CPU runner
// (runner_test.cc) and the CPU backend end to end (cpu_backend_test.cc).
#ifndef TESSERA_TESTS_WORKER_CPU_BACKEND_TESTING_H_
#define TESSERA_TESTS_WORKER_CPU_BACKEND_TESTING_H_

#include <memory>
#include <vector>

#include "ir/analysis.h"
#include "ir/function.h"
#include "ir/target.h"
#include "tests/codegen/test_funcs.h"
#include "worker/builder.h"
#include "worker/runner.h"

namespace tessera {
namespace testing {

inline Target Cpu() { return *Target::Parse("cpu"); }

// Builds every function for the CPU, in one batch.
inline std::vector<BuildResult> BuildAll(Builder* builder, const std::vector<PrimFunc>& funcs) {
  std::vector<BuildInput> inputs;
  for (const PrimFunc& f : funcs) inputs.push_back(BuildInput{f, Cpu()});
  return builder->Build(inputs);
}

// One timed run and no warm-up.
inline RunnerConfig Once() {
  RunnerConfig config;
  config.warmup = 0;
  config.repeat = 1;
  return config;
}

// Matmul(16, 16, 16) built by the C builder, which it keeps: the builder owns the artifact.
struct SmallBuiltMatmul {
  PrimFunc func = testing_funcs::Matmul(16, 16, 16);
  std::unique_ptr<Builder> builder = NewCBuilder();
  BuildResult built = BuildAll(builder.get(), {func})[0];

  RunInput Input() const { return RunInput{built.artifact_path, built.symbol, ArgInfosOf(func)}; }
};

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_WORKER_CPU_BACKEND_TESTING_H_
