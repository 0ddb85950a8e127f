// Helpers of the model tests: paths of tests/frontend/data and loading a model with its input
// and onnxruntime's reference output (written by tests/frontend/data/make_models.py).
#ifndef TESSERA_TESTS_FRONTEND_MODEL_TESTING_H_
#define TESSERA_TESTS_FRONTEND_MODEL_TESTING_H_

#include <string>

#include "frontend/model_graph.h"
#include "frontend/npy.h"
#include "frontend/onnx_import.h"
#include "gtest/gtest.h"
#include "ir/ndarray.h"

namespace tessera {
namespace testing {

inline std::string ModelDataPath(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/" + name;
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

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_FRONTEND_MODEL_TESTING_H_
