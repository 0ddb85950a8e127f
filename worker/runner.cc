#include "worker/runner.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/openmp_env.h"
#include "codegen/codegen_c.h"
#include "ir/prepack.h"
#include "worker/runner_internal.h"

namespace tessera {
namespace {

using internal::AlignUp;
using internal::ChildMessage;
using internal::MonotonicSeconds;
using KernelFn = int32_t (*)(void**);

// Written by the child, read by the parent after the child has exited (and `steps` while it
// runs).
struct SharedHeader {
  int64_t steps;         // steps done: the progress counter that restarts the timeout
  int32_t num_results;   // entries of run_secs written: repeat, or 1 for a slow kernel
  ChildMessage message;  // why the child failed, when it exits nonzero
};

int64_t LoadSteps(const SharedHeader* h) { return __atomic_load_n(&h->steps, __ATOMIC_ACQUIRE); }
void BumpSteps(SharedHeader* h) { __atomic_fetch_add(&h->steps, 1, __ATOMIC_RELEASE); }

// Size of the largest CPU cache in bytes (sysfs), or 64 MiB when unknown.
size_t LargestCacheBytes() {
  size_t largest = 0;
  for (int index = 0; index < 8; ++index) {
    std::ifstream in(absl::StrCat("/sys/devices/system/cpu/cpu0/cache/index", index, "/size"));
    std::string text;
    if (!(in >> text) || text.empty()) continue;
    size_t scale = 1;
    if (text.back() == 'K') scale = 1024;
    if (text.back() == 'M') scale = 1024 * 1024;
    size_t value = std::strtoull(text.c_str(), nullptr, 10) * scale;
    largest = std::max(largest, value);
  }
  return largest > 0 ? largest : size_t{64} << 20;
}

// Keeps the flush writes observable, so the compiler cannot drop them.
char* volatile g_flush_sink = nullptr;

void FlushCaches(char* buffer, size_t bytes, int round) {
  std::memset(buffer, round & 0xff, bytes);
  g_flush_sink = buffer;
}

// The child: load, run, time, write into shared memory. Returns the exit code.
// Times the kernel on `args` (the child's private copies).
int TimeKernel(const std::string& path, const std::string& symbol, std::vector<void*> args,
               const RunnerConfig& config, SharedHeader* header, double* run_secs,
               size_t flush_bytes) {
  auto fail = [&](const std::string& message) {
    internal::ExitChildWithMessage(&header->message, message);
  };
  // Before the kernel brings in libgomp, which reads its wait policy when loaded (a no-op
  // where the measuring program loaded libgomp itself: see base/openmp_env.h).
  ApplyOpenMpEnvDefaults(KernelUse::kMeasured);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) fail(absl::StrCat("cannot load ", path, ": ", dlerror()));
  auto fn = reinterpret_cast<KernelFn>(dlsym(handle, symbol.c_str()));
  if (fn == nullptr) fail(absl::StrCat("symbol ", symbol, " not found in ", path));
  auto call = [&]() {
    int32_t rc = fn(args.data());
    if (rc != 0) fail(absl::StrCat("kernel returned ", rc));
  };
  for (int i = 0; i < config.warmup; ++i) {
    double start = MonotonicSeconds();
    call();
    double elapsed = MonotonicSeconds() - start;
    BumpSteps(header);
    if (i == 0 && config.slow_run_secs > 0 && elapsed >= config.slow_run_secs) {
      run_secs[0] = elapsed;  // slow: this run ranks it well enough, skip the repeats
      header->num_results = 1;
      return 0;
    }
  }

  char* flush = nullptr;
  if (config.enable_cpu_cache_flush) {
    flush = static_cast<char*>(std::malloc(flush_bytes));
    if (flush == nullptr) fail("cannot allocate the cache flush buffer");
  }
  int64_t number = std::max(1, config.number);
  for (int r = 0; r < config.repeat; ++r) {
    double elapsed = 0;
    while (true) {
      if (flush != nullptr) FlushCaches(flush, flush_bytes, r);
      double start = MonotonicSeconds();
      for (int64_t i = 0; i < number; ++i) call();
      elapsed = MonotonicSeconds() - start;
      if (config.min_repeat_ms <= 0 || elapsed * 1000 >= config.min_repeat_ms) break;
      number = internal::GrowNumber(elapsed, number, config.min_repeat_ms);
    }
    run_secs[r] = elapsed / static_cast<double>(number);
    BumpSteps(header);
  }
  header->num_results = config.repeat;
  return 0;
}

// The child's part: the kernel runs on private copies of the arguments in `shared` (sizes
// `bytes`), which get what it wrote back at the end. Private memory is what a caller's process
// and the libraries timed beside Tessera have; the parent's shared mapping is shmem, paged
// otherwise (never transparent huge pages), and the pages' kind alone moved kernels: a tuned
// LLaMA GEMM 32x4096x4096 ran 3.6 ms on shared arguments against 4.5 ms on private ones, its
// default schedule and OpenBLAS the same on both (docs/cpu-backend.md, "Runner").
int ChildMain(const std::string& path, const std::string& symbol, const std::vector<void*>& shared,
              const std::vector<size_t>& bytes, const RunnerConfig& config, SharedHeader* header,
              double* run_secs, size_t flush_bytes) {
  std::vector<void*> args;
  for (size_t i = 0; i < shared.size(); ++i) {
    void* copy = std::aligned_alloc(64, AlignUp(std::max<size_t>(bytes[i], 1)));
    if (copy == nullptr) {
      internal::ExitChildWithMessage(
          &header->message, absl::StrCat("cannot allocate ", bytes[i], " bytes for argument ", i));
    }
    std::memcpy(copy, shared[i], bytes[i]);
    args.push_back(copy);
  }
  const int rc = TimeKernel(path, symbol, args, config, header, run_secs, flush_bytes);
  for (size_t i = 0; i < shared.size(); ++i) std::memcpy(shared[i], args[i], bytes[i]);
  return rc;
}

// Runs the kernel on copies of `args` in shared memory; when `outputs` is given, copies the
// arguments after the run back into it (it may be `args` itself).
absl::StatusOr<RunResult> RunOnCopies(const std::string& artifact_path, const std::string& symbol,
                                      const std::vector<NDArray>& args,
                                      std::vector<NDArray>* outputs, const RunnerConfig& config) {
  absl::Status valid = internal::ValidateRunnerConfig(config, "cpu runner");
  if (!valid.ok()) return valid;
  // Shared layout: header | run_secs[repeat] | arg 0 | arg 1 | ... (each 64-byte aligned).
  size_t secs_offset = AlignUp(sizeof(SharedHeader));
  size_t total = AlignUp(secs_offset + sizeof(double) * static_cast<size_t>(config.repeat));
  std::vector<size_t> offsets;
  for (const NDArray& a : args) {
    offsets.push_back(total);
    total += AlignUp(std::max<size_t>(static_cast<size_t>(a.nbytes()), 1));
  }
  absl::StatusOr<internal::SharedMemory> shared = internal::SharedMemory::Map(total, "cpu runner");
  if (!shared.ok()) return shared.status();
  char* base = shared->data();
  auto* header = reinterpret_cast<SharedHeader*>(base);
  auto* run_secs = reinterpret_cast<double*>(base + secs_offset);
  std::vector<void*> pointers;
  std::vector<size_t> bytes;
  for (size_t i = 0; i < args.size(); ++i) {
    bytes.push_back(static_cast<size_t>(args[i].nbytes()));
    std::memcpy(base + offsets[i], args[i].data(), bytes.back());
    pointers.push_back(base + offsets[i]);
  }
  size_t flush_bytes = config.enable_cpu_cache_flush ? 2 * LargestCacheBytes() : 0;

  absl::StatusOr<std::string> failure = internal::RunInChildProcess(
      [&]() {
        return ChildMain(artifact_path, symbol, pointers, bytes, config, header, run_secs,
                         flush_bytes);
      },
      config.timeout_sec, &header->message, [header]() { return LoadSteps(header); });
  if (!failure.ok()) {
    return absl::Status(failure.status().code(),
                        absl::StrCat("cpu runner: ", failure.status().message()));
  }
  RunResult result;
  if (!failure->empty()) {
    result.error_msg = *failure;
  } else if (header->num_results != config.repeat && header->num_results != 1) {
    result.error_msg = "kernel process exited without results";
  } else {
    result.run_secs.assign(run_secs, run_secs + header->num_results);
    for (size_t i = 0; outputs != nullptr && i < outputs->size(); ++i) {
      std::memcpy((*outputs)[i].data(), base + offsets[i],
                  static_cast<size_t>((*outputs)[i].nbytes()));
    }
  }
  return result;
}

bool SameArgs(const std::vector<ArgInfo>& a, const std::vector<ArgInfo>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!(a[i].dtype == b[i].dtype) || a[i].shape != b[i].shape) return false;
  }
  return true;
}

class CpuRunner final : public Runner {
 public:
  std::vector<RunResult> Run(const std::vector<RunInput>& inputs,
                             const RunnerConfig& config) override {
    std::vector<RunResult> results;
    for (const RunInput& input : inputs) results.push_back(RunOne(input, config));
    return results;
  }

 private:
  RunResult RunOne(const RunInput& input, const RunnerConfig& config) {
    RunResult result;
    // The candidates of a task share their argument list: generate the data once. Kernels run
    // on copies, so the cached inputs stay as generated.
    if (!cached_ || cached_seed_ != config.seed || !SameArgs(cached_infos_, input.args)) {
      cached_ = false;
      absl::StatusOr<std::vector<NDArray>> args =
          internal::RandomArguments(input.args, config.seed, "cpu runner");
      if (!args.ok()) {
        result.error_msg = std::string(args.status().message());
        return result;
      }
      cached_args_ = *std::move(args);
      cached_infos_ = input.args;
      cached_seed_ = config.seed;
      cached_ = true;
    }
    absl::StatusOr<RunResult> ran =
        RunOnCopies(input.artifact_path, input.symbol, cached_args_, nullptr, config);
    if (!ran.ok()) {
      result.error_msg = std::string(ran.status().message());
      return result;
    }
    return *std::move(ran);
  }

  bool cached_ = false;
  std::vector<ArgInfo> cached_infos_;
  uint64_t cached_seed_ = 0;
  std::vector<NDArray> cached_args_;
};

}  // namespace

absl::StatusOr<RunResult> RunCpuKernel(const std::string& artifact_path, const std::string& symbol,
                                       std::vector<NDArray>* args, const RunnerConfig& config) {
  if (args == nullptr) return absl::InvalidArgumentError("cpu runner: no argument list");
  return RunOnCopies(artifact_path, symbol, *args, args, config);
}

std::unique_ptr<Runner> NewCpuRunner() { return std::make_unique<CpuRunner>(); }

RunInput TimedRunInput(const std::string& artifact_path, const std::string& symbol,
                       const PrimFunc& func, const Target& target) {
  if (target.is_cpu()) {
    // A function that does not split was built whole; one that fails to split did not build.
    absl::StatusOr<std::optional<PrepackSplit>> split = SplitPrepack(func);
    if (split.ok() && split->has_value()) {
      return RunInput{artifact_path, PrepackedSymbol(symbol), ArgInfosOf((*split)->prepacked)};
    }
  }
  return RunInput{artifact_path, symbol, ArgInfosOf(func)};
}

}  // namespace tessera
