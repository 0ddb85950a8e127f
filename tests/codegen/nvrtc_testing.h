// NVRTC for the CUDA codegen tests, which must not depend on worker/: compiles generated CUDA
// to a cubin (no GPU needed). Without TESSERA_WITH_CUDA there is no NVRTC and nothing is
// compiled.
#ifndef TESSERA_TESTS_CODEGEN_NVRTC_TESTING_H_
#define TESSERA_TESTS_CODEGEN_NVRTC_TESTING_H_

#include <string>

#include "absl/status/status.h"

#if TESSERA_WITH_CUDA
#include <nvrtc.h>
#endif

namespace tessera {
namespace nvrtc_testing {

// Compiles `source` to a cubin for `arch` with NVRTC; the error holds the compile log.
inline absl::Status CompileWithNvrtc(const std::string& source, const std::string& arch) {
#if TESSERA_WITH_CUDA
  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, source.c_str(), "tessera.cu", 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    return absl::InternalError("nvrtcCreateProgram failed");
  }
  std::string arch_flag = "--gpu-architecture=" + arch;
  std::string include = std::string("-I") + TESSERA_CUDA_INCLUDE_DIR;
  const char* options[] = {arch_flag.c_str(), include.c_str(), "--std=c++17"};
  nvrtcResult result = nvrtcCompileProgram(program, 3, options);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(program, log.data());
  size_t cubin_size = 0;
  if (result == NVRTC_SUCCESS) nvrtcGetCUBINSize(program, &cubin_size);
  nvrtcDestroyProgram(&program);
  if (result != NVRTC_SUCCESS) {
    return absl::InvalidArgumentError(std::string(nvrtcGetErrorString(result)) + ":\n" + log);
  }
  if (cubin_size == 0) return absl::InternalError("nvrtc produced an empty cubin");
  return absl::OkStatus();
#else
  (void)source;
  (void)arch;
  return absl::OkStatus();
#endif
}

}  // namespace nvrtc_testing
}  // namespace tessera

#endif  // TESSERA_TESTS_CODEGEN_NVRTC_TESTING_H_
