// The NVRTC builder compiles scheduled functions for CUDA GPUs without a GPU: it generates
// CUDA C++ with codegen/codegen_cuda.h (GenerateCuda), compiles it with NVRTC to a cubin for
// one architecture, and writes, per candidate, into its work directory:
//
//   <name>_<n>.cu             the generated source (kept for debugging)
//   <name>_<n>.cubin          BuildResult::artifact_path
//   <name>_<n>.kernels.json   the launch manifest (cuda/module_file.h)
//
// BuildResult::symbol is the first kernel's name. The inputs of one Build call compile in
// parallel threads (NVRTC is thread-safe for distinct programs). A candidate that fails to
// generate or compile is a BuildResult whose error_msg holds the reason (for NVRTC errors, the
// program log), never a crash. NVRTC options:
//
//   --gpu-architecture=sm_XX -std=c++17 -I<include_dir> [--use_fast_math] <extra flags>
//
// In a build without CUDA (-DTESSERA_WITH_CUDA=OFF) every result and CompileCudaSource say
// "tessera was built without CUDA".
#ifndef TESSERA_WORKER_NVRTC_BUILDER_H_
#define TESSERA_WORKER_NVRTC_BUILDER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "worker/builder.h"

namespace tessera {

struct NvrtcCompileOptions {
  // Where cuda_fp16.h / cuda_bf16.h are (NVRTC needs them on its include path, docs/deps.md T3).
  // Empty: DefaultCudaIncludeDir().
  std::string include_dir;
  bool fast_math = false;                // --use_fast_math
  std::vector<std::string> extra_flags;  // appended after all other options
  // The compiler runs in a child process (worker/nvrtc_builder.cc says why), killed after this.
  double timeout_sec = 300;
};

// $TESSERA_CUDA_INCLUDE_DIR if set, else the toolkit include directory found at configure
// time if it exists, else /usr/local/cuda/include.
std::string DefaultCudaIncludeDir();

// The architectures this NVRTC compiles for, as "sm_75", "sm_80", ... (empty without CUDA).
std::vector<std::string> NvrtcSupportedArchs();

// Compiles one CUDA C++ translation unit to a cubin for `arch` ("sm_90", "sm_90a"). Errors:
// kInvalidArgument "nvrtc: architecture sm_52 is not supported by NVRTC 13.0 (supported: ...)"
// for a malformed or unknown arch; kInvalidArgument "nvrtc: compilation for sm_90 failed:\n<the
// full program log>" when the source does not compile; kInternal for other NVRTC failures;
// kFailedPrecondition in a build without CUDA.
absl::StatusOr<std::string> CompileCudaSource(const std::string& source, const std::string& arch,
                                              const NvrtcCompileOptions& options = {});

struct NvrtcBuilderOptions {
  std::string arch;  // empty: each input target's -arch
  NvrtcCompileOptions compile;
  // Where sources and artifacts go. Empty: a fresh directory under $TMPDIR (or /tmp), removed
  // with the builder unless keep_work_dir. A given directory is created if missing and never
  // removed. Artifacts stay valid while the builder lives.
  std::string work_dir;
  bool keep_work_dir = false;
  int parallelism = 0;  // concurrent compilations; <= 0: hardware threads
};

std::unique_ptr<Builder> NewNvrtcBuilder(NvrtcBuilderOptions options = {});

}  // namespace tessera

#endif  // TESSERA_WORKER_NVRTC_BUILDER_H_
