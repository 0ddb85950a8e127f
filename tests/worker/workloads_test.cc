// Every workload of the library, in every dtype it supports, at a small shape: built with the
// C builder, run by the CPU runner, and compared with the reference interpreter.
#include "frontend/workloads.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "ir/interpreter.h"
#include "worker/builder.h"
#include "worker/check.h"
#include "worker/runner.h"

namespace tessera {
namespace {

// Shrinks the extents of a workload so that the interpreter stays fast; strides, paddings,
// dilations and group counts keep their defaults. Odd caps exercise ragged edges.
std::map<std::string, int64_t> SmallShape(const WorkloadInfo& info) {
  static const std::set<std::string> extents = {"M", "N", "K", "L", "H", "W", "D", "seq_len"};
  static const std::set<std::string> channels = {"CI", "CO", "C", "n_head", "n_dim"};
  std::map<std::string, int64_t> shape;
  for (const WorkloadParam& p : info.params) {
    int64_t v = p.default_value;
    if (extents.count(p.name)) v = std::min<int64_t>(v, 13);
    if (channels.count(p.name)) v = std::min<int64_t>(v, 8);
    if (p.name == "B" || p.name == "batch") v = std::min<int64_t>(v, 2);
    shape[p.name] = v;
  }
  return shape;
}

TEST(WorkloadsOnCpuTest, EveryWorkloadMatchesTheInterpreter) {
  struct Case {
    std::string label;
    PrimFunc func;
  };
  std::vector<Case> cases;
  std::vector<BuildInput> inputs;
  Target cpu = *Target::Parse("cpu");
  for (const WorkloadInfo& info : ListWorkloads()) {
    for (const std::string& dtype : info.dtypes) {
      absl::StatusOr<PrimFunc> f = MakeWorkload(info.name, SmallShape(info), dtype);
      ASSERT_TRUE(f.ok()) << info.name << " " << dtype << ": " << f.status();
      cases.push_back(Case{info.name + " " + dtype, *f});
      inputs.push_back(BuildInput{*f, cpu});
    }
  }
  ASSERT_GE(cases.size(), ListWorkloads().size());

  std::unique_ptr<Builder> builder = NewCBuilder();
  std::vector<BuildResult> built = builder->Build(inputs);
  RunnerConfig once;
  once.warmup = 0;
  once.repeat = 1;
  for (size_t c = 0; c < cases.size(); ++c) {
    SCOPED_TRACE(cases[c].label);
    ASSERT_TRUE(built[c].ok()) << built[c].error_msg;
    const PrimFunc& f = cases[c].func;
    std::vector<NDArray> actual = RandomArgs(f, /*seed=*/11);
    std::vector<NDArray> expected;
    std::vector<NDArray*> pointers;
    for (const NDArray& a : actual) expected.push_back(a.Clone());
    for (NDArray& e : expected) pointers.push_back(&e);
    absl::Status interpreted = Interpret(f, pointers);
    ASSERT_TRUE(interpreted.ok()) << interpreted;

    absl::StatusOr<RunResult> ran =
        RunCpuKernel(built[c].artifact_path, built[c].symbol, &actual, once);
    ASSERT_TRUE(ran.ok()) << ran.status();
    ASSERT_TRUE(ran->ok()) << ran->error_msg;
    std::vector<int> written = WrittenParamIndices(f);
    ASSERT_FALSE(written.empty());
    for (int index : written) {
      absl::StatusOr<Comparison> cmp = Compare(actual[index], expected[index]);
      ASSERT_TRUE(cmp.ok()) << cmp.status();
      EXPECT_TRUE(cmp->ok()) << "param " << index << ": " << cmp->mismatches
                             << " mismatches, max abs error " << cmp->max_abs_error << ", first at "
                             << cmp->first_mismatch;
    }
  }
}

}  // namespace
}  // namespace tessera
