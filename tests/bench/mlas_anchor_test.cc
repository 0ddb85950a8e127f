// The MLAS anchor's side in C++: the --shape argument it passes to ort_anchor.py and how it
// reads the script's JSON line (onnxruntime itself is never run by the tests).
#include "bench/anchors/mlas_anchor.h"

#include "gtest/gtest.h"

namespace tessera {
namespace anchors {
namespace {

TEST(MlasAnchorTest, ShapeArgumentListsParametersInOrder) {
  EXPECT_EQ(OrtShapeArg("bert_attn_out", "GMM", {{"M", 128}, {"N", 768}, {"K", 64}}),
            "bert_attn_out:GMM:K=64,M=128,N=768");
}

TEST(MlasAnchorTest, ReadsSecondsFromTheScriptsLine) {
  absl::StatusOr<double> secs =
      ParseOrtLine(R"({"anchor": "mlas", "name": "x", "seconds": 0.00125, "gflops": 210.0})");
  ASSERT_TRUE(secs.ok()) << secs.status();
  EXPECT_DOUBLE_EQ(*secs, 0.00125);
}

TEST(MlasAnchorTest, ReportsTheScriptsErrorAndBadLines) {
  absl::StatusOr<double> unmodelled =
      ParseOrtLine(R"({"name": "sm", "error": "no onnxruntime model for workload SFM"})");
  EXPECT_EQ(unmodelled.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(unmodelled.status().message().find("SFM"), std::string::npos);
  EXPECT_FALSE(ParseOrtLine("Traceback (most recent call last):").ok());
  EXPECT_FALSE(ParseOrtLine(R"({"name": "x", "seconds": 0})").ok());
  EXPECT_FALSE(ParseOrtLine("").ok());
}

TEST(MlasAnchorTest, AFailingInterpreterIsAnError) {
  absl::StatusOr<double> secs = MlasSeconds("/nonexistent/python", "/nonexistent/ort_anchor.py",
                                            "x", "GMM", {{"M", 1}, {"N", 1}, {"K", 1}});
  EXPECT_FALSE(secs.ok());
}

}  // namespace
}  // namespace anchors
}  // namespace tessera
