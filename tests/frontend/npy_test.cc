#include "frontend/npy.h"

#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/frontend/model_testing.h"
#include "tests/testing/scoped_temp_dir.h"

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

// named.npz and named_compressed.npz are written as np.savez and np.savez_compressed write
// (tests/frontend/data/make_npz.py): zip64 local headers, stored or deflated members.
TEST(NpzTest, ReadsStoredAndDeflatedArchivesAsNumpyWritesThem) {
  for (const char* file : {"named.npz", "named_compressed.npz"}) {
    absl::StatusOr<NamedArrays> arrays = ReadNpz(testing::ModelDataPath(file));
    ASSERT_TRUE(arrays.ok()) << arrays.status();
    ASSERT_EQ(arrays->size(), 2u) << file;
    EXPECT_EQ((*arrays)[0].first, "a");
    EXPECT_EQ((*arrays)[0].second.shape(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ((*arrays)[0].second.GetFlat(5), 5.0);
    EXPECT_EQ((*arrays)[1].first, "b");
    EXPECT_EQ((*arrays)[1].second.dtype(), DataType::Int64());
    EXPECT_EQ((*arrays)[1].second.GetFlat(1), -1.0);
  }
}

TEST(NpzTest, RoundTripsNamedArrays) {
  const std::string path = testing::ScratchDirUntilTestEnds("npz") + "/arrays.npz";
  Random rng(3);
  NDArray a = NDArray::Empty(DataType::Float32(), {4, 5});
  NDArray b = NDArray::Empty(DataType::Int32(), {});
  a.FillRandom(&rng);
  b.FillRandom(&rng);
  ASSERT_TRUE(WriteNpz(path, {{"input:0", a}, {"b", b}}).ok());
  absl::StatusOr<NamedArrays> back = ReadNpz(path);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].first, "input:0");
  EXPECT_TRUE(Compare((*back)[0].second, a, 0, 0)->ok());
  EXPECT_EQ((*back)[1].second.shape(), std::vector<int64_t>{});
}

TEST(NpzTest, WhatIsNotAnNpzIsNamed) {
  absl::StatusOr<NamedArrays> npy = ReadNpz(testing::ModelDataPath("cnn.input.npy"));
  EXPECT_EQ(npy.status().message(), testing::ModelDataPath("cnn.input.npy") +
                                        ": not a supported .npz file: not a zip archive");
  EXPECT_EQ(ReadNpz("/nonexistent.npz").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tessera
