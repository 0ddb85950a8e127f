#include "frontend/npy.h"

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/frontend/model_testing.h"

namespace tessera {
namespace {

TEST(NpyTest, ReadsWhatNumpyWrote) {
  absl::StatusOr<NDArray> a = ReadNpy(testing::ModelDataPath("cnn.input.npy"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->dtype(), DataType::Float32());
  EXPECT_EQ(a->shape(), (std::vector<int64_t>{1, 3, 16, 16}));
}

TEST(NpyTest, RoundTripsEveryDtypeAndRank) {
  const std::string path = ::testing::TempDir() + "/npy_test.npy";
  Random rng(7);
  for (DataType t : {DataType::Float32(), DataType::Float64(), DataType::Int64(), DataType::Int32(),
                     DataType::Bool()}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{}, {5}, {2, 3, 4}}) {
      NDArray a = NDArray::Empty(t, shape);
      a.FillRandom(&rng);
      ASSERT_TRUE(WriteNpy(path, a).ok());
      absl::StatusOr<NDArray> b = ReadNpy(path);
      ASSERT_TRUE(b.ok()) << b.status();
      EXPECT_EQ(b->shape(), shape);
      absl::StatusOr<Comparison> c = Compare(*b, a, 0, 0);
      ASSERT_TRUE(c.ok());
      EXPECT_TRUE(c->ok()) << t.ToString();
    }
  }
  std::remove(path.c_str());
}

TEST(NpyTest, MalformedFilesAreErrorsNamingTheFile) {
  const std::string path = ::testing::TempDir() + "/bad.npy";
  {
    std::ofstream out(path);
    out << "not numpy";
  }
  absl::StatusOr<NDArray> a = ReadNpy(path);
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(a.status().message().find(path), std::string::npos);
  // A real file cut short: the data is missing.
  std::ifstream in(testing::ModelDataPath("cnn.input.npy"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  {
    std::ofstream out(path, std::ios::binary);
    out << bytes.substr(0, bytes.size() / 2);
  }
  EXPECT_EQ(ReadNpy(path).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReadNpy("/nonexistent.npy").status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tessera
