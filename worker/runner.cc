#include "worker/runner.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "base/random.h"

namespace tessera {
namespace {

using KernelFn = int32_t (*)(void**);

constexpr size_t kAlign = 64;
constexpr size_t kMessageBytes = 1024;

// Written by the child, read by the parent after the child has exited.
struct SharedHeader {
  int32_t num_results;
  char message[kMessageBytes];  // why the child failed, when it exits nonzero
};

size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

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

// The child: load, run, time, write into shared memory, _exit. Never returns.
[[noreturn]] void ChildMain(const std::string& path, const std::string& symbol,
                            std::vector<void*> args, const RunnerConfig& config,
                            SharedHeader* header, double* run_secs, size_t flush_bytes) {
  auto fail = [&](const std::string& message) {
    std::snprintf(header->message, kMessageBytes, "%s", message.c_str());
    _exit(3);
  };
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) fail(absl::StrCat("cannot load ", path, ": ", dlerror()));
  auto fn = reinterpret_cast<KernelFn>(dlsym(handle, symbol.c_str()));
  if (fn == nullptr) fail(absl::StrCat("symbol ", symbol, " not found in ", path));
  auto call = [&]() {
    int32_t rc = fn(args.data());
    if (rc != 0) fail(absl::StrCat("kernel returned ", rc));
  };
  for (int i = 0; i < config.warmup; ++i) call();

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
      double start = Now();
      for (int64_t i = 0; i < number; ++i) call();
      elapsed = Now() - start;
      if (config.min_repeat_ms <= 0 || elapsed * 1000 >= config.min_repeat_ms) break;
      // As TVM: jump to the estimated count, growing at least by the golden ratio.
      double per_run = elapsed / static_cast<double>(number);
      int64_t estimate = per_run > 0
                             ? static_cast<int64_t>(config.min_repeat_ms / 1000.0 / per_run) + 1
                             : number * 10;
      number = std::min<int64_t>(std::max<int64_t>(estimate, number * 1618 / 1000 + 1),
                                 int64_t{1} << 40);
    }
    run_secs[r] = elapsed / static_cast<double>(number);
  }
  header->num_results = config.repeat;
  _exit(0);
}

std::string DescribeSignal(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* text = strsignal(sig);
  return absl::StrCat("kernel crashed: SIG", abbrev ? abbrev : std::to_string(sig).c_str(), " (",
                      text ? text : "unknown signal", ")");
}

}  // namespace

std::vector<ArgInfo> ArgInfosOf(const PrimFunc& f) {
  std::vector<ArgInfo> infos;
  for (const Buffer& param : f.params()) {
    ArgInfo info;
    info.dtype = param.dtype();
    for (const Expr& extent : param.shape()) {
      const int64_t* v = AsConstInt(extent);
      info.shape.push_back(v ? *v : -1);
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

absl::StatusOr<RunResult> RunCpuKernel(const std::string& artifact_path, const std::string& symbol,
                                       std::vector<NDArray>* args, const RunnerConfig& config) {
  if (args == nullptr) return absl::InvalidArgumentError("cpu runner: no argument list");
  if (config.number < 1 || config.repeat < 1 || config.warmup < 0 || config.min_repeat_ms < 0 ||
      !(config.timeout_sec > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cpu runner: invalid config (warmup=", config.warmup, ", number=", config.number,
        ", repeat=", config.repeat, ", min_repeat_ms=", config.min_repeat_ms,
        ", timeout_sec=", config.timeout_sec, ")"));
  }
  // Shared layout: header | run_secs[repeat] | arg 0 | arg 1 | ... (each 64-byte aligned).
  size_t secs_offset = AlignUp(sizeof(SharedHeader));
  size_t total = AlignUp(secs_offset + sizeof(double) * static_cast<size_t>(config.repeat));
  std::vector<size_t> offsets;
  for (const NDArray& a : *args) {
    offsets.push_back(total);
    total += AlignUp(std::max<size_t>(static_cast<size_t>(a.nbytes()), 1));
  }
  void* shared = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cpu runner: cannot map ", total, " bytes of shared memory: ", std::strerror(errno)));
  }
  char* base = static_cast<char*>(shared);
  auto* header = reinterpret_cast<SharedHeader*>(base);
  auto* run_secs = reinterpret_cast<double*>(base + secs_offset);
  std::vector<void*> pointers;
  for (size_t i = 0; i < args->size(); ++i) {
    std::memcpy(base + offsets[i], (*args)[i].data(), static_cast<size_t>((*args)[i].nbytes()));
    pointers.push_back(base + offsets[i]);
  }
  size_t flush_bytes = config.enable_cpu_cache_flush ? 2 * LargestCacheBytes() : 0;

  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    munmap(shared, total);
    return absl::ResourceExhaustedError(
        absl::StrCat("cpu runner: fork failed: ", std::strerror(err)));
  }
  if (pid == 0) ChildMain(artifact_path, symbol, pointers, config, header, run_secs, flush_bytes);

  // Poll with a growing sleep: fast for short kernels, cheap for long ones.
  double deadline = Now() + config.timeout_sec;
  int status = 0;
  bool timed_out = false;
  useconds_t nap = 50;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      munmap(shared, total);
      return absl::InternalError(
          absl::StrCat("cpu runner: waitpid failed: ", std::strerror(errno)));
    }
    if (Now() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      timed_out = true;
      break;
    }
    usleep(nap);
    nap = std::min<useconds_t>(nap * 2, 5000);
  }

  RunResult result;
  if (timed_out) {
    result.error_msg = absl::StrCat("timed out after ", config.timeout_sec, "s");
  } else if (WIFSIGNALED(status)) {
    result.error_msg = DescribeSignal(WTERMSIG(status));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    header->message[kMessageBytes - 1] = '\0';
    result.error_msg = header->message[0] != '\0'
                           ? std::string(header->message)
                           : absl::StrCat("kernel process exited with code ",
                                          WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  } else if (header->num_results != config.repeat) {
    result.error_msg = "kernel process exited without results";
  } else {
    result.run_secs.assign(run_secs, run_secs + config.repeat);
    for (size_t i = 0; i < args->size(); ++i) {
      std::memcpy((*args)[i].data(), base + offsets[i], static_cast<size_t>((*args)[i].nbytes()));
    }
  }
  munmap(shared, total);
  return result;
}

namespace {

class CpuRunner final : public Runner {
 public:
  std::vector<RunResult> Run(const std::vector<RunInput>& inputs,
                             const RunnerConfig& config) override {
    std::vector<RunResult> results;
    for (const RunInput& input : inputs) results.push_back(RunOne(input, config));
    return results;
  }

 private:
  static RunResult RunOne(const RunInput& input, const RunnerConfig& config) {
    RunResult result;
    Random rng(static_cast<int64_t>(config.seed & 0x7fffffffffffffffULL));
    std::vector<NDArray> args;
    for (size_t i = 0; i < input.args.size(); ++i) {
      const ArgInfo& info = input.args[i];
      for (int64_t extent : info.shape) {
        if (extent < 0) {
          result.error_msg =
              absl::StrCat("cpu runner: argument ", i, " has a non-constant or negative shape");
          return result;
        }
      }
      args.push_back(NDArray::Empty(info.dtype, info.shape));
      args.back().FillRandom(&rng);
    }
    absl::StatusOr<RunResult> ran = RunCpuKernel(input.artifact_path, input.symbol, &args, config);
    if (!ran.ok()) {
      result.error_msg = std::string(ran.status().message());
      return result;
    }
    return *std::move(ran);
  }
};

}  // namespace

std::unique_ptr<Runner> NewCpuRunner() { return std::make_unique<CpuRunner>(); }

}  // namespace tessera
