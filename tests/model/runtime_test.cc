// The C++ wrapper (model/runtime.h) over libtessera_runtime.so: the CNN test model compiled by
// the CTest fixture (tests/model/CMakeLists.txt) loaded, run and compared with onnxruntime's
// outputs; errors as tessera::runtime::Error with the C API's code and message.
#include "model/runtime.h"

#include <cmath>
#include <cstring>

#include "frontend/npy.h"
#include "gtest/gtest.h"

namespace tessera {
namespace {

using runtime::Error;
using runtime::Model;

std::string Data(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/" + name;
}

std::vector<float> Floats(const NDArray& a) {
  std::vector<float> v(static_cast<size_t>(a.size()));
  std::memcpy(v.data(), a.data(), static_cast<size_t>(a.nbytes()));
  return v;
}

TEST(RuntimeTest, CompiledModelMatchesOnnxruntime) {
  Model model(TESSERA_RUNTIME_TEST_MODEL, /*num_threads=*/2);
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].name, "x");
  EXPECT_EQ(model.inputs()[0].dtype, TESSERA_FLOAT32);
  ASSERT_EQ(model.outputs().size(), 1u);
  absl::StatusOr<NDArray> input = ReadNpy(Data("cnn.input.npy"));
  absl::StatusOr<NDArray> expected = ReadNpy(Data("cnn.output.npy"));
  ASSERT_TRUE(input.ok() && expected.ok());
  EXPECT_EQ(model.inputs()[0].shape, input->shape());
  EXPECT_EQ(model.outputs()[0].shape, expected->shape());
  const std::vector<std::vector<float>> out = model.Run({Floats(*input)});
  const std::vector<float> want = Floats(*expected);
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(out[0][i], want[i], 1e-4 + 1e-3 * std::fabs(want[i])) << "element " << i;
  }
  // A moved-from model is empty; the moved-to one runs.
  Model moved = std::move(model);
  EXPECT_EQ(moved.Run({Floats(*input)}), out);
}

TEST(RuntimeTest, AMissingDirectoryIsNotFoundNamingIt) {
  try {
    Model model("/nonexistent/model");
    FAIL() << "loaded a missing directory";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), TESSERA_NOT_FOUND);
    EXPECT_STREQ(e.what(), "cannot read /nonexistent/model/plan.json");
  }
}

TEST(RuntimeTest, AnInputOfTheWrongSizeIsNamed) {
  Model model(TESSERA_RUNTIME_TEST_MODEL);
  std::vector<float> short_input(model.inputs()[0].bytes / sizeof(float) - 1);
  try {
    model.Run({short_input});
    FAIL() << "ran on a short input";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), TESSERA_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("input x"), std::string::npos) << e.what();
  }
  // Buffers missing: the C API's own checks.
  std::vector<float> in(model.inputs()[0].bytes / sizeof(float));
  EXPECT_EQ(tessera_model_run(nullptr, nullptr, nullptr, nullptr, nullptr),
            TESSERA_INVALID_ARGUMENT);
  EXPECT_STREQ(tessera_last_error(), "tessera_model_run: model is NULL");
  EXPECT_THROW(model.Run({in.data()}, {}), Error);
}

}  // namespace
}  // namespace tessera
