#include "worker/nvrtc_builder.h"

#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

#if TESSERA_WITH_CUDA
#include <nvrtc.h>

#include "codegen/codegen_cuda.h"
#include "cuda/module_file.h"
#include "worker/builder_internal.h"
#include "worker/runner_internal.h"
#endif

#ifndef TESSERA_CUDA_INCLUDE_DIR
#define TESSERA_CUDA_INCLUDE_DIR "/usr/local/cuda/include"
#endif

namespace tessera {
namespace {

bool IsDirectory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

#if TESSERA_WITH_CUDA

// The digits of "sm_90" / "sm_90a" (90), or -1 when `arch` does not look like that.
int ArchNumber(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0) return -1;
  size_t end = 3;
  while (end < arch.size() && std::isdigit(static_cast<unsigned char>(arch[end]))) ++end;
  if (end == 3 || end + 1 < arch.size()) return -1;
  if (end + 1 == arch.size() && arch[end] != 'a' && arch[end] != 'f') return -1;
  return std::atoi(arch.substr(3, end - 3).c_str());
}

// NVRTC 13 loads and initializes the CUDA driver in the process that calls it: on an H100
// (driver 580) after one nvrtcCompileProgram, cuInit in every child forked from that process
// failed with CUDA_ERROR_NOT_INITIALIZED. The processes that measure fork their CUDA children
// (docs/cuda-backend.md, "Processes"), so every NVRTC call runs in a forked child of its own and
// sends its answer back through shared memory; the calling process never loads the driver.

// What the NVRTC library here is: its version and the architectures it compiles for.
struct NvrtcInfo {
  std::string version;
  std::vector<int> archs;
};

const NvrtcInfo& QueryNvrtcInfo() {
  static std::once_flag once;
  static NvrtcInfo* info = new NvrtcInfo;
  std::call_once(once, [] {
    struct Reply {
      int major = 0, minor = 0, count = 0;
      int archs[64];
      internal::ChildMessage message;
    };
    absl::StatusOr<internal::SharedMemory> shared =
        internal::SharedMemory::Map(sizeof(Reply), "nvrtc query");
    if (!shared.ok()) return;
    auto* reply = new (shared->data()) Reply;
    absl::StatusOr<std::string> failure = internal::RunInChildProcess(
        [reply]() {
          nvrtcVersion(&reply->major, &reply->minor);
          int count = 0;
          if (nvrtcGetNumSupportedArchs(&count) != NVRTC_SUCCESS || count <= 0) return 0;
          std::vector<int> archs(static_cast<size_t>(count));
          if (nvrtcGetSupportedArchs(archs.data()) != NVRTC_SUCCESS) return 0;
          reply->count = std::min(count, 64);
          std::copy_n(archs.begin(), reply->count, reply->archs);
          return 0;
        },
        /*timeout_sec=*/60, &reply->message);
    if (!failure.ok() || !failure->empty()) return;
    info->version = absl::StrCat(reply->major, ".", reply->minor);
    info->archs.assign(reply->archs, reply->archs + reply->count);
  });
  return *info;
}

std::vector<int> SupportedArchNumbers() { return QueryNvrtcInfo().archs; }

std::string NvrtcVersion() { return QueryNvrtcInfo().version; }

// kInvalidArgument unless NVRTC compiles for `arch`.
absl::Status CheckArch(const std::string& arch) {
  int number = ArchNumber(arch);
  std::vector<int> supported = SupportedArchNumbers();
  if (number >= 0 && std::find(supported.begin(), supported.end(), number) != supported.end()) {
    return absl::OkStatus();
  }
  std::vector<std::string> names;
  for (int a : supported) names.push_back(absl::StrCat("sm_", a));
  return absl::InvalidArgumentError(absl::StrCat(
      "nvrtc: architecture ", arch.empty() ? "(empty)" : arch, " is not supported by NVRTC ",
      NvrtcVersion(), " (supported: ", absl::StrJoin(names, " "), ")"));
}

// The program log, without the trailing NUL and newlines.
std::string ProgramLog(nvrtcProgram program) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(program, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(program, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// A file-name-safe stem for a function name.
std::string FileStemFor(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s.empty() ? "func" : s;
}

absl::Status WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.good()) return absl::InternalError(absl::StrCat("nvrtc builder: cannot write ", path));
  return absl::OkStatus();
}

class NvrtcBuilder final : public Builder {
 public:
  explicit NvrtcBuilder(NvrtcBuilderOptions options)
      : options_(std::move(options)),
        work_dir_(options_.work_dir, options_.keep_work_dir, "tessera-nvrtc", "nvrtc builder") {}

  std::vector<BuildResult> Build(const std::vector<BuildInput>& inputs) override {
    std::vector<BuildResult> results(inputs.size());
    internal::ParallelFor(inputs.size(), options_.parallelism,
                          [&](size_t i) { results[i] = BuildOne(inputs[i]); });
    return results;
  }

 private:
  BuildResult BuildOne(const BuildInput& input) {
    auto start = std::chrono::steady_clock::now();
    BuildResult result;
    if (input.cancelled()) {
      result.error_msg = kBuildCancelled;
      return result;
    }
    absl::Status status = BuildInto(input, &result);
    if (!status.ok()) {
      result.error_msg = std::string(status.message());
      result.artifact_path.clear();
      result.symbol.clear();
    }
    result.compile_seconds = internal::SecondsSince(start);
    return result;
  }

  absl::Status BuildInto(const BuildInput& input, BuildResult* result) {
    TESSERA_RETURN_IF_ERROR(work_dir_.status());
    if (!input.func.defined()) return absl::InvalidArgumentError("nvrtc builder: no function");
    if (!input.target.is_cuda()) {
      return absl::InvalidArgumentError(
          absl::StrCat("nvrtc builder: target ", input.target.ToString(), " is not a cuda target"));
    }
    std::string arch = options_.arch.empty() ? input.target.arch() : options_.arch;
    TESSERA_RETURN_IF_ERROR(CheckArch(arch));
    absl::StatusOr<CudaModule> module = GenerateCuda(input.func, input.target);
    if (!module.ok()) {
      return absl::Status(module.status().code(),
                          absl::StrCat("cuda codegen: ", module.status().message()));
    }
    if (module->kernels.empty()) {
      return absl::InternalError("cuda codegen: the module has no kernels");
    }
    std::string stem =
        absl::StrCat(work_dir_.path(), "/", FileStemFor(input.func.name()), "_", next_id_++);
    TESSERA_RETURN_IF_ERROR(WriteFile(stem + ".cu", module->source));
    TESSERA_ASSIGN_OR_RETURN(std::string cubin,
                             CompileCudaSource(module->source, arch, options_.compile));
    result->artifact_path = stem + ".cubin";
    TESSERA_RETURN_IF_ERROR(WriteFile(result->artifact_path, cubin));
    TESSERA_RETURN_IF_ERROR(
        WriteCudaManifest(result->artifact_path, CudaModuleFile{arch, module->kernels}));
    result->symbol = module->kernels.front().name;
    return absl::OkStatus();
  }

  NvrtcBuilderOptions options_;
  internal::WorkDir work_dir_;
  std::atomic<int64_t> next_id_{0};
};

#endif  // TESSERA_WITH_CUDA

}  // namespace

std::string DefaultCudaIncludeDir() {
  const char* env = std::getenv("TESSERA_CUDA_INCLUDE_DIR");
  if (env != nullptr && *env != '\0') return env;
  if (IsDirectory(TESSERA_CUDA_INCLUDE_DIR)) return TESSERA_CUDA_INCLUDE_DIR;
  return "/usr/local/cuda/include";
}

#if TESSERA_WITH_CUDA

std::vector<std::string> NvrtcSupportedArchs() {
  std::vector<std::string> archs;
  for (int a : SupportedArchNumbers()) archs.push_back(absl::StrCat("sm_", a));
  return archs;
}

namespace {

// The compilation itself; runs in the child of CompileCudaSource.
absl::StatusOr<std::string> CompileInThisProcess(const std::string& source, const std::string& arch,
                                                 const NvrtcCompileOptions& options) {
  nvrtcProgram program;
  nvrtcResult rc = nvrtcCreateProgram(&program, source.c_str(), "tessera.cu", 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    return absl::InternalError(
        absl::StrCat("nvrtc: cannot create a program: ", nvrtcGetErrorString(rc)));
  }
  std::vector<std::string> flags = {
      absl::StrCat("--gpu-architecture=", arch), "-std=c++17",
      absl::StrCat("-I",
                   options.include_dir.empty() ? DefaultCudaIncludeDir() : options.include_dir)};
  if (options.fast_math) flags.push_back("--use_fast_math");
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  std::vector<const char*> argv;
  for (const std::string& f : flags) argv.push_back(f.c_str());

  rc = nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  absl::StatusOr<std::string> out;
  if (rc == NVRTC_ERROR_COMPILATION) {
    out = absl::InvalidArgumentError(
        absl::StrCat("nvrtc: compilation for ", arch, " failed:\n", ProgramLog(program)));
  } else if (rc != NVRTC_SUCCESS) {
    out = absl::InternalError(absl::StrCat("nvrtc: ", nvrtcGetErrorString(rc), " (options: ",
                                           absl::StrJoin(flags, " "), ")\n", ProgramLog(program)));
  } else {
    size_t size = 0;
    rc = nvrtcGetCUBINSize(program, &size);
    std::string cubin(size, '\0');
    if (rc == NVRTC_SUCCESS) rc = nvrtcGetCUBIN(program, cubin.data());
    if (rc != NVRTC_SUCCESS || size == 0) {
      out = absl::InternalError(
          absl::StrCat("nvrtc: no cubin for ", arch, ": ", nvrtcGetErrorString(rc)));
    } else {
      out = std::move(cubin);
    }
  }
  nvrtcDestroyProgram(&program);
  return out;
}

// What the compiling child leaves in shared memory: a status code and the cubin or the error
// message. The mapping is reserved at its full size but only the pages written are backed.
struct CompileReply {
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  int code = 0;  // absl::StatusCode
  size_t bytes = 0;
  internal::ChildMessage message;  // why the child failed outside NVRTC
  char data[1];                    // kMaxBytes follow
};

}  // namespace

absl::StatusOr<std::string> CompileCudaSource(const std::string& source, const std::string& arch,
                                              const NvrtcCompileOptions& options) {
  TESSERA_RETURN_IF_ERROR(CheckArch(arch));
  TESSERA_ASSIGN_OR_RETURN(
      internal::SharedMemory shared,
      internal::SharedMemory::Map(sizeof(CompileReply) + CompileReply::kMaxBytes, "nvrtc compile"));
  auto* reply = new (shared.data()) CompileReply;
  absl::StatusOr<std::string> failure = internal::RunInChildProcess(
      [&]() {
        absl::StatusOr<std::string> compiled = CompileInThisProcess(source, arch, options);
        const absl::string_view bytes =
            compiled.ok() ? absl::string_view(*compiled) : compiled.status().message();
        reply->code = static_cast<int>(compiled.status().code());
        if (bytes.size() > CompileReply::kMaxBytes) {
          internal::ExitChildWithMessage(
              &reply->message, absl::StrCat("its output of ", bytes.size(),
                                            " bytes is larger than ", CompileReply::kMaxBytes));
        }
        std::memcpy(reply->data, bytes.data(), bytes.size());
        reply->bytes = bytes.size();
        return 0;
      },
      options.timeout_sec, &reply->message);
  if (!failure.ok()) return failure.status();
  if (!failure->empty()) {
    return absl::InternalError(absl::StrCat("nvrtc: the compiling process failed: ", *failure));
  }
  std::string data(reply->data, reply->bytes);
  if (reply->code != 0) return absl::Status(static_cast<absl::StatusCode>(reply->code), data);
  return data;
}

std::unique_ptr<Builder> NewNvrtcBuilder(NvrtcBuilderOptions options) {
  return std::make_unique<NvrtcBuilder>(std::move(options));
}

#else  // !TESSERA_WITH_CUDA

namespace {

constexpr char kNoCuda[] = "nvrtc builder: tessera was built without CUDA";

class NoCudaBuilder final : public Builder {
 public:
  std::vector<BuildResult> Build(const std::vector<BuildInput>& inputs) override {
    std::vector<BuildResult> results(inputs.size());
    for (BuildResult& r : results) r.error_msg = kNoCuda;
    return results;
  }
};

}  // namespace

std::vector<std::string> NvrtcSupportedArchs() { return {}; }

absl::StatusOr<std::string> CompileCudaSource(const std::string& /*source*/,
                                              const std::string& /*arch*/,
                                              const NvrtcCompileOptions& /*options*/) {
  return absl::FailedPreconditionError(kNoCuda);
}

std::unique_ptr<Builder> NewNvrtcBuilder(NvrtcBuilderOptions /*options*/) {
  return std::make_unique<NoCudaBuilder>();
}

#endif  // TESSERA_WITH_CUDA

}  // namespace tessera
