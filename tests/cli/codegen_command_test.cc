// Tests of cli/codegen_command.cc: `tessera codegen` prints C for the cpu and a global kernel for
// cuda (no GPU needed); an unbound GPU schedule is a one-line error.
#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::CountLines;
using cli_testing::kGmmGpuTrace;
using cli_testing::Output;
using cli_testing::RunTessera;
using cli_testing::WriteTempFile;

TEST(CodegenCommandTest, CodegenPrintsCForCpu) {
  Output out = RunTessera("codegen GMM --shape B=1,M=16,N=16,K=16 --target cpu");
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("Tessera's C emitter"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("_kernel(void** args)"), std::string::npos) << out.stdout_text;
  EXPECT_EQ(out.stdout_text.find("__global__"), std::string::npos);
}

TEST(CodegenCommandTest, CodegenPrintsAGlobalKernelForCuda) {
  std::string trace = WriteTempFile("gmm_gpu_codegen.json", kGmmGpuTrace);
  Output out = RunTessera(
      "codegen GMM --shape B=1,M=64,N=64,K=32 --target 'cuda -arch=sm_90' "
      "--trace " +
      trace);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_EQ(out.stdout_text.rfind("// cuda -arch=sm_90 ", 0), 0u) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("grid (32, 1, 1), block (128, 1, 1)"), std::string::npos)
      << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("extern \"C\" __global__"), std::string::npos) << out.stdout_text;

  Output unbound = RunTessera("codegen GMM --shape B=1,M=16,N=16,K=16 --target cuda");
  EXPECT_EQ(unbound.exit_code, 1);
  EXPECT_EQ(CountLines(unbound.stdout_text), 1) << unbound.stdout_text;
  EXPECT_NE(unbound.stdout_text.find("not bound"), std::string::npos) << unbound.stdout_text;
}

}  // namespace
}  // namespace tessera
