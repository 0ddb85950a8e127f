// Helpers of the model tests: paths of tests/frontend/data and loading a model with its input
// and onnxruntime's reference output (written by tests/frontend/data/make_models.py).
#ifndef TESSERA_TESTS_FRONTEND_MODEL_TESTING_H_
#define TESSERA_TESTS_FRONTEND_MODEL_TESTING_H_

#include <cstdlib>
#include <string>

#include "frontend/fuse_ops.h"
#include "frontend/model_graph.h"
#include "frontend/npy.h"
#include "frontend/onnx_import.h"
#include "gtest/gtest.h"
#include "ir/ndarray.h"
#include "model/reference.h"

namespace tessera {
namespace testing {

// Under the repository the test was built from, or under $TESSERA_SOURCE_DIR where set (a
// device bundle's tests run from a copy of the tree at another path, scripts/device-bundle.sh).
inline std::string ModelDataPath(const std::string& name) {
  const char* root = std::getenv("TESSERA_SOURCE_DIR");
  return std::string(root != nullptr && *root != '\0' ? root : TESSERA_SOURCE_DIR) +
         "/tests/frontend/data/" + name;
}

struct TestModel {
  Graph graph;
  NDArray input;     // NAME.input.npy
  NDArray expected;  // NAME.output.npy (onnxruntime)
};

// Imports NAME.onnx and reads its .npy files; fails the test (ADD_FAILURE) and returns an
// empty graph on error. (Header-only: TESSERA_SOURCE_DIR is defined for test targets.)
inline TestModel LoadTestModel(const std::string& name) {
  TestModel m;
  absl::StatusOr<Graph> graph = ImportOnnxFile(ModelDataPath(name + ".onnx"));
  absl::StatusOr<NDArray> input = ReadNpy(ModelDataPath(name + ".input.npy"));
  absl::StatusOr<NDArray> expected = ReadNpy(ModelDataPath(name + ".output.npy"));
  if (!graph.ok() || !input.ok() || !expected.ok()) {
    ADD_FAILURE() << name << ": " << graph.status() << " " << input.status() << " "
                  << expected.status();
    return m;
  }
  m.graph = std::move(*graph);
  m.input = std::move(*input);
  m.expected = std::move(*expected);
  return m;
}

// Imports NAME.onnx, runs it unfused (one function per node) through the interpreter and
// compares with onnxruntime's output stored next to it.
inline void ExpectMatchesOnnxRuntime(const std::string& name, double tolerance = 1e-4) {
  TestModel m = LoadTestModel(name);
  absl::StatusOr<FusedGraph> unfused = FuseGraph(m.graph, {/*fuse=*/false});
  ASSERT_TRUE(unfused.ok()) << unfused.status();
  EXPECT_EQ(unfused->functions.size(), m.graph.nodes.size());
  absl::StatusOr<std::vector<NDArray>> out = InterpretModel(m.graph, *unfused, {m.input});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  absl::StatusOr<Comparison> cmp = Compare((*out)[0], m.expected, tolerance, tolerance);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << name << ": max abs error " << cmp->max_abs_error << " at "
                         << cmp->first_mismatch;
}

// `graph` (the test model `m`'s graph, rewritten), fused as a compiled model is, computes on
// m.input what onnxruntime computed, to 1e-4.
inline void ExpectFusedMatchesOnnxRuntime(const Graph& graph, const TestModel& m) {
  absl::StatusOr<FusedGraph> fused = FuseGraph(graph);
  ASSERT_TRUE(fused.ok()) << fused.status();
  absl::StatusOr<std::vector<NDArray>> out = InterpretModel(graph, *fused, {m.input});
  ASSERT_TRUE(out.ok()) << out.status();
  absl::StatusOr<Comparison> cmp = Compare((*out)[0], m.expected, 1e-4, 1e-4);
  ASSERT_TRUE(cmp.ok()) << cmp.status();
  EXPECT_TRUE(cmp->ok()) << "max abs error " << cmp->max_abs_error;
}

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_FRONTEND_MODEL_TESTING_H_
