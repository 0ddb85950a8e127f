// Tests of frontend/workload_spec.cc, the workload specs that the command line and the tuning
// server share: "NAME:K=V,..." builds the library's function with a label naming every
// parameter, the shape inline or apart (not both), IR text and IR JSON read as functions, and
// errors that say what did not parse.
#include "frontend/workload_spec.h"

#include <map>
#include <string>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/printer.h"
#include "ir/serialize.h"
#include "ir/structural_equal.h"

namespace tessera {
namespace {

PrimFunc SmallGmm(const std::string& dtype = "float32") {
  return *MakeWorkload("GMM", {{"B", 2}, {"M", 32}, {"N", 16}, {"K", 8}}, dtype);
}

TEST(WorkloadSpecTest, InlineShapeBuildsTheLibrarysFunctionWithAFullLabel) {
  absl::StatusOr<SpecFunction> spec = LoadWorkloadSpec("GMM:B=2,M=32,N=16,K=8");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->label, "GMM(B=2,M=32,N=16,K=8) float32");
  EXPECT_EQ(spec->stem, "gmm");
  EXPECT_TRUE(StructuralEqual(spec->func, SmallGmm()));
}

TEST(WorkloadSpecTest, ShapeApartAndDtypeGiveTheSameFunction) {
  absl::StatusOr<SpecFunction> spec = LoadWorkloadSpec("GMM", "B=2,M=32,N=16,K=8", "float16");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->label, "GMM(B=2,M=32,N=16,K=8) float16");
  EXPECT_TRUE(StructuralEqual(spec->func, SmallGmm("float16")));
  // Parameters not given keep their defaults, and the label says which.
  absl::StatusOr<SpecFunction> partial = LoadWorkloadSpec("GMM:M=64");
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(partial->label, "GMM(B=1,M=64,N=512,K=512) float32");
}

// The form a job's workload takes over RPC carries the dtype and the accumulator in the spec.
TEST(WorkloadSpecTest, ASpecNamesItsDtypeAndAccumulator) {
  absl::StatusOr<SpecFunction> inline_spec =
      LoadWorkloadSpec("GMM:B=2,M=32,N=16,K=8,dtype=float16,acc=float32");
  ASSERT_TRUE(inline_spec.ok()) << inline_spec.status();
  EXPECT_EQ(inline_spec->label, "GMM(B=2,M=32,N=16,K=8) float16->float32");
  const PrimFunc widened =
      *MakeWorkload("GMM", {{"B", 2}, {"M", 32}, {"N", 16}, {"K", 8}}, "float16", "float32");
  EXPECT_TRUE(StructuralEqual(inline_spec->func, widened));
  absl::StatusOr<SpecFunction> flags =
      LoadWorkloadSpec("GMM", "B=2,M=32,N=16,K=8", "float16", "float32");
  ASSERT_TRUE(flags.ok()) << flags.status();
  EXPECT_EQ(flags->label, inline_spec->label);
  EXPECT_TRUE(StructuralEqual(flags->func, widened));
  // Not the same function as the float16 sums: records and hashes keep them apart.
  EXPECT_FALSE(StructuralEqual(widened, SmallGmm("float16")));
  // Given both ways they must agree; naming the dtype's own accumulator changes nothing.
  absl::Status twice = LoadWorkloadSpec("GMM:M=32,dtype=float16", "", "bfloat16").status();
  EXPECT_EQ(twice.message(), "GMM: dtype is given twice ('bfloat16' and 'float16')");
  absl::StatusOr<SpecFunction> same =
      LoadWorkloadSpec("GMM:B=2,M=32,N=16,K=8,acc=float32", "", "float32", "float32");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->label, "GMM(B=2,M=32,N=16,K=8) float32");
  EXPECT_TRUE(StructuralEqual(same->func, SmallGmm()));
}

TEST(WorkloadSpecTest, ErrorsSayWhatIsWrong) {
  absl::Status both = LoadWorkloadSpec("GMM:M=64", "M=32").status();
  EXPECT_EQ(both.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(both.message(), "give the shape of GMM inline or with --shape, not both");
  EXPECT_EQ(LoadWorkloadSpec("NOPE").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LoadWorkloadSpec("GMM:Q=3").status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status empty = ParseWorkloadText(" \n\t").status();
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.message(), "empty workload");
  EXPECT_EQ(ParseWorkloadText("{not json").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(WorkloadSpecTest, TextIsASpecIrTextOrIrJson) {
  absl::StatusOr<SpecFunction> spec = ParseWorkloadText("  GMM:B=2,M=32,N=16,K=8\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->label, "GMM(B=2,M=32,N=16,K=8) float32");

  const PrimFunc gmm = SmallGmm();
  for (const std::string& text : {PrintFunc(gmm), SaveJson(gmm)}) {
    absl::StatusOr<SpecFunction> parsed = ParseWorkloadText(text);
    ASSERT_TRUE(parsed.ok()) << parsed.status() << "\n" << text;
    EXPECT_TRUE(StructuralEqual(parsed->func, gmm));
    EXPECT_EQ(parsed->label, gmm.name());
    EXPECT_EQ(parsed->stem, gmm.name());
  }
  // IR text as `tessera show` prints it, headed by a comment line (submit sent it to the server,
  // which took the comment for a workload name).
  absl::StatusOr<SpecFunction> shown =
      ParseWorkloadText("# GMM(B=1,M=32,N=32,K=32) float32  structural hash 0\n" + PrintFunc(gmm));
  ASSERT_TRUE(shown.ok()) << shown.status();
  EXPECT_TRUE(StructuralEqual(shown->func, gmm));
  EXPECT_EQ(ParseWorkloadText("# only a comment\n  \n").status().message(), "empty workload");
}

}  // namespace
}  // namespace tessera
