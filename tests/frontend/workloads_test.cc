#include "frontend/workloads.h"

#include <string>

#include "gtest/gtest.h"
#include "ir/flops.h"

namespace tessera {
namespace {

std::string MessageOf(const absl::Status& s) { return std::string(s.message()); }

TEST(WorkloadsTest, ListsEveryWorkloadInPaperOrder) {
  const std::vector<WorkloadInfo>& all = ListWorkloads();
  std::vector<std::string> names;
  for (const WorkloadInfo& w : all) names.push_back(w.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"GMM",        "C1D",        "C2D",      "C3D",
                                      "DEP",        "MAX_POOL",   "DIL",      "GRP",
                                      "T2D",        "CAP",        "NRM",      "SFM",
                                      "CBR",        "TBG",        "GEMV",     "DENSE_BIAS_RELU",
                                      "LINEAR",     "LAYER_NORM", "RMS_NORM", "TRANSPOSE",
                                      "REDUCE_SUM", "ELEMENTWISE"}));
  for (const WorkloadInfo& w : all) {
    EXPECT_FALSE(w.description.empty()) << w.name;
    EXPECT_FALSE(w.params.empty()) << w.name;
    EXPECT_EQ(w.dtypes.front(), "float32") << w.name;
  }
}

TEST(WorkloadsTest, EveryWorkloadBuildsAtDefaultShapeInEveryDtype) {
  for (const WorkloadInfo& w : ListWorkloads()) {
    for (const std::string& dtype : w.dtypes) {
      absl::StatusOr<PrimFunc> f = MakeWorkload(w.name, {}, dtype);
      ASSERT_TRUE(f.ok()) << w.name << " " << dtype << ": " << f.status();
      EXPECT_EQ(f->root_block()->name, "root");
      const double flops = EstimateFlops(*f);
      if (w.name == "TRANSPOSE") {
        EXPECT_EQ(flops, 0) << "pure data movement";
      } else {
        EXPECT_GT(flops, 0) << w.name;
        EXPECT_LE(flops, 0.3e9) << w.name << " default too large for the interpreter";
      }
    }
  }
}

TEST(WorkloadsTest, FlopsCountMultiplyAddAsTwo) {
  absl::StatusOr<PrimFunc> gmm = MakeWorkload("GMM", {{"B", 2}, {"M", 8}, {"N", 4}, {"K", 16}});
  ASSERT_TRUE(gmm.ok());
  EXPECT_EQ(EstimateFlops(*gmm), 2.0 * 2 * 8 * 4 * 16);
  // C2D: 2 * N*OH*OW*CO * K*K*CI; the padding stage (a select) counts nothing.
  absl::StatusOr<PrimFunc> c2d = MakeWorkload(
      "C2D", {{"H", 8}, {"W", 8}, {"CI", 3}, {"CO", 4}, {"K", 3}, {"stride", 2}, {"padding", 1}});
  ASSERT_TRUE(c2d.ok());
  EXPECT_EQ(EstimateFlops(*c2d), 2.0 * 4 * 4 * 4 * 3 * 3 * 3);
  // SFM: max (1/elem), exp (sub + exp = 2/elem), sum (1/elem), divide (1/elem).
  absl::StatusOr<PrimFunc> sfm = MakeWorkload("SFM", {{"M", 4}, {"N", 8}});
  ASSERT_TRUE(sfm.ok());
  EXPECT_EQ(EstimateFlops(*sfm), 5.0 * 4 * 8);
}

TEST(WorkloadsTest, NamesAreCaseInsensitive) {
  absl::StatusOr<WorkloadInfo> info = FindWorkload("gmm");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->name, "GMM");
  EXPECT_TRUE(MakeWorkload("layer_norm", {{"M", 2}, {"N", 4}}).ok());
}

TEST(WorkloadsTest, UnknownWorkloadIsNotFound) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GEMM");
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(MessageOf(f.status()).find("known: GMM, C1D"), std::string::npos) << f.status();
}

TEST(WorkloadsTest, RejectsUnknownParameter) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"L", 4}});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MessageOf(f.status()), "GMM: unknown shape parameter 'L' (parameters: B, M, N, K)");
}

TEST(WorkloadsTest, RejectsNonPositiveParameter) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("GMM", {{"M", 0}});
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MessageOf(f.status()), "GMM: M=0 must be positive");
  f = MakeWorkload("C2D", {{"padding", -1}});
  EXPECT_EQ(MessageOf(f.status()), "C2D: padding=-1 must be non-negative");
  EXPECT_TRUE(MakeWorkload("C2D", {{"H", 8}, {"W", 8}, {"K", 3}, {"padding", 0}}).ok());
}

TEST(WorkloadsTest, RejectsUnsupportedDtype) {
  absl::StatusOr<PrimFunc> f = MakeWorkload("SFM", {}, "float16");
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MessageOf(f.status()), "SFM: dtype 'float16' not supported (supported: float32)");
  EXPECT_FALSE(MakeWorkload("C3D", {}, "int8").ok());
  EXPECT_TRUE(MakeWorkload("C2D", {{"H", 8}, {"W", 8}, {"K", 3}}, "int8").ok());
  EXPECT_TRUE(MakeWorkload("GMM", {{"M", 4}}, "int8").ok());
}

TEST(WorkloadsTest, ParsesShapeOverrides) {
  absl::StatusOr<std::map<std::string, int64_t>> m = ParseShapeOverrides("M=64, N=32,K=-1");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m, (std::map<std::string, int64_t>{{"M", 64}, {"N", 32}, {"K", -1}}));
  EXPECT_TRUE(ParseShapeOverrides("")->empty());
  EXPECT_EQ(ParseShapeOverrides("M").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseShapeOverrides("M=x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseShapeOverrides("=4").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseShapeOverrides("M=1,M=2").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseShapeOverrides("M=1,,N=2").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera
