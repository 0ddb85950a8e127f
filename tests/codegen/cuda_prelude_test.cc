// Tests of codegen/cuda_prelude.cc that need no GPU and no NVRTC (the prelude is compiled by
// NVRTC in codegen_cuda_test.cc where CUDA is built in): every device helper is named
// tessera_*, the block reductions the lowering calls are defined, and the reserved names hold
// the C++ keywords, CUDA builtins and math functions generated code must not shadow.
#include "codegen/cuda_prelude.h"

#include <regex>
#include <set>
#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace {

TEST(CudaPreludeTest, EveryDeviceHelperIsNamedTesseraUnderscore) {
  for (const std::string& prelude : {std::string(kCudaPrelude), std::string(kCudaWmmaPrelude)}) {
    std::regex helper(R"(__device__ __forceinline__ [A-Za-z_0-9 ]*?([A-Za-z_0-9]+)\()");
    for (std::sregex_iterator it(prelude.begin(), prelude.end(), helper), end; it != end; ++it) {
      EXPECT_EQ((*it)[1].str().rfind("tessera_", 0), 0u) << (*it)[1].str();
    }
  }
}

TEST(CudaPreludeTest, DefinesTheBlockReductionsAndRoundings) {
  const std::string prelude = kCudaPrelude;
  for (const char* name : {"tessera_block_reduce_sum(", "tessera_block_reduce_max(",
                           "tessera_block_reduce_min(", "tessera_block_reduce_prod(",
                           "tessera_round_f16(", "tessera_round_bf16(", "tessera_pack_i8x4("}) {
    EXPECT_NE(prelude.find(name), std::string::npos) << name;
  }
}

TEST(CudaPreludeTest, ReservedNamesHoldKeywordsBuiltinsAndMath) {
  const std::set<std::string>& reserved = CudaReservedNames();
  for (const char* name : {"for", "namespace", "threadIdx", "blockIdx", "half", "expf", "sqrtf"}) {
    EXPECT_EQ(reserved.count(name), 1u) << name;
  }
  EXPECT_EQ(reserved.count("A"), 0u);
}

}  // namespace
}  // namespace tessera
