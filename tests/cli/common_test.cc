// Tests of cli/common.cc, what every subcommand shares, called in process: times formatted by
// magnitude, regular files told from names, functions loaded from workload specs or files
// (errors name the file), unique function names in a list, traces read and replayed.
#include "cli/common.h"

#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/printer.h"

namespace tessera {
namespace cli {
namespace {

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CliCommonTest, FormatSecondsPicksTheUnit) {
  EXPECT_EQ(FormatSeconds(12.3e-6), "12.30 us");
  EXPECT_EQ(FormatSeconds(4.56e-3), "4.560 ms");
  EXPECT_EQ(FormatSeconds(1.23), "1.230 s");
}

TEST(CliCommonTest, IsRegularFileOnlyForFiles) {
  EXPECT_TRUE(IsRegularFile(WriteFile("regular.txt", "x")));
  EXPECT_FALSE(IsRegularFile(::testing::TempDir()));
  EXPECT_FALSE(IsRegularFile("GMM"));
}

TEST(CliCommonTest, FunctionSourceLoadsAWorkloadWithItsShape) {
  FunctionSource source;
  source.workload = "GMM:M=16,N=8,K=4";
  std::string label;
  absl::StatusOr<PrimFunc> func = source.Load(&label);
  ASSERT_TRUE(func.ok()) << func.status();
  EXPECT_EQ(label, "GMM(B=1,M=16,N=8,K=4) float32");
}

TEST(CliCommonTest, FunctionSourceLoadsAFileAndRefusesShapeOptionsForIt) {
  FunctionSource gmm;
  gmm.workload = "GMM:M=8,N=8,K=8";
  std::string label;
  const std::string path = WriteFile("gmm.ir", PrintFunc(*gmm.Load(&label)));
  FunctionSource file;
  file.workload = path;
  absl::StatusOr<PrimFunc> loaded = file.Load(&label);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(label, path);
  file.dtype = "float16";
  EXPECT_EQ(file.Load(&label).status().message(),
            "--shape, --dtype and --acc apply to workloads, not to files");
  file.dtype = "";
  file.acc = "float32";
  EXPECT_EQ(file.Load(&label).status().message(),
            "--shape, --dtype and --acc apply to workloads, not to files");
}

TEST(CliCommonTest, FunctionSourceWidensTheAccumulatorWhenAsked) {
  FunctionSource gmm;
  gmm.workload = "GMM:M=16,N=8,K=4";
  gmm.dtype = "bfloat16";
  gmm.acc = "float32";
  std::string label;
  absl::StatusOr<PrimFunc> func = gmm.Load(&label);
  ASSERT_TRUE(func.ok()) << func.status();
  EXPECT_EQ(label, "GMM(B=1,M=16,N=8,K=4) bfloat16->float32");
  EXPECT_EQ(func->params().back().dtype(), DataType::Float32());
}

TEST(CliCommonTest, AnUnparsableFileIsAnErrorNamingIt) {
  FunctionSource file;
  file.workload = WriteFile("broken.ir", "this is not a function");
  std::string label;
  absl::StatusOr<PrimFunc> loaded = file.Load(&label);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(std::string(loaded.status().message()).rfind(file.workload + ": ", 0), 0u)
      << loaded.status();
}

TEST(CliCommonTest, FunctionListNamesRepeatedWorkloadsApart) {
  FunctionList list;
  list.specs = {"GMM:M=8,N=8,K=8", "GMM:M=16,N=16,K=16", "C2D"};
  absl::StatusOr<std::vector<FunctionList::Entry>> entries = list.Load();
  ASSERT_TRUE(entries.ok()) << entries.status();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[0].name, "gmm");
  EXPECT_EQ((*entries)[1].name, "gmm_1");
  EXPECT_EQ((*entries)[2].name, "c2d");
  EXPECT_EQ((*entries)[1].func.name(), "gmm_1");
}

TEST(CliCommonTest, LoadTraceNamesAMissingOrMalformedFile) {
  absl::StatusOr<Trace> missing = LoadTrace("/nonexistent/trace.json");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "cannot read trace file /nonexistent/trace.json");
  const std::string path = WriteFile("bad_trace.json", "[[");
  absl::StatusOr<Trace> malformed = LoadTrace(path);
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(std::string(malformed.status().message()).rfind(path + ": ", 0), 0u)
      << malformed.status();
}

TEST(CliCommonTest, ReplayAppliesATraceToTheFunction) {
  FunctionSource gmm;
  gmm.workload = "GMM:M=8,N=8,K=8";
  std::string label;
  PrimFunc func = *gmm.Load(&label);
  const std::string path = WriteFile("split.json", R"([[["GetBlock", [], ["C", "main"], ["b0"]],
  ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4"]],
  ["Split", ["l2", "None", 4], [1], ["l5", "l6"]]], []])");
  absl::StatusOr<Trace> trace = LoadTrace(path);
  ASSERT_TRUE(trace.ok()) << trace.status();
  absl::StatusOr<Schedule> sch = Replay(func, *trace, path, 0);
  ASSERT_TRUE(sch.ok()) << sch.status();
  EXPECT_EQ(sch->GetLoops(*sch->GetBlock("C"))->size(), 5u);
  // The same trace as `tessera default --json` prints it, under "trace" beside other keys.
  const std::string wrapped = WriteFile("default.json", R"({"rule": "Matmul", "trace": [[
  ["GetBlock", [], ["C", "main"], ["b0"]],
  ["GetLoops", ["b0"], [], ["l1", "l2", "l3", "l4"]],
  ["Split", ["l2", "None", 4], [1], ["l5", "l6"]]], []]})");
  absl::StatusOr<Trace> unwrapped = LoadTrace(wrapped);
  ASSERT_TRUE(unwrapped.ok()) << unwrapped.status();
  EXPECT_EQ(unwrapped->ToJson(), trace->ToJson());
}

}  // namespace
}  // namespace cli
}  // namespace tessera
