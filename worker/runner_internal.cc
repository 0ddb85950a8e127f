#include "worker/runner_internal.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/random.h"

namespace tessera {
namespace internal {
namespace {

std::string DescribeSignal(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  const char* text = strsignal(sig);
  return absl::StrCat("kernel crashed: SIG", abbrev ? abbrev : std::to_string(sig).c_str(), " (",
                      text ? text : "unknown signal", ")");
}

}  // namespace

double MonotonicSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

size_t AlignUp(size_t n) { return (n + 63) / 64 * 64; }

absl::StatusOr<SharedMemory> SharedMemory::Map(size_t bytes, const std::string& who) {
  bytes = std::max<size_t>(bytes, 1);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return absl::ResourceExhaustedError(absl::StrCat(
        who, ": cannot map ", bytes, " bytes of shared memory: ", std::strerror(errno)));
  }
  return SharedMemory(static_cast<char*>(p), bytes);
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept : data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) munmap(data_, size_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

SharedMemory::~SharedMemory() {
  if (data_ != nullptr) munmap(data_, size_);
}

void ExitChildWithMessage(ChildMessage* slot, const std::string& message) {
  std::snprintf(slot->text, ChildMessage::kBytes, "%s", message.c_str());
  _exit(3);
}

absl::StatusOr<std::string> RunInChildProcess(const std::function<int()>& child_main,
                                              double timeout_sec, ChildMessage* message,
                                              const std::function<int64_t()>& progress) {
  message->text[0] = '\0';
  pid_t pid = fork();
  if (pid < 0) {
    return absl::ResourceExhaustedError(absl::StrCat("fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) _exit(child_main());

  // Poll with a growing sleep: fast for short kernels, cheap for long ones.
  double deadline = MonotonicSeconds() + timeout_sec;
  int64_t last_progress = progress ? progress() : 0;
  int status = 0;
  bool timed_out = false;
  useconds_t nap = 50;
  while (true) {
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) {
      int err = errno;
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return absl::InternalError(absl::StrCat("waitpid failed: ", std::strerror(err)));
    }
    if (progress) {
      int64_t now = progress();
      if (now != last_progress) {
        last_progress = now;
        deadline = MonotonicSeconds() + timeout_sec;
      }
    }
    if (MonotonicSeconds() >= deadline) {
      kill(pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      timed_out = true;
      break;
    }
    usleep(nap);
    nap = std::min<useconds_t>(nap * 2, 5000);
  }

  if (timed_out) return absl::StrCat("timed out after ", timeout_sec, "s");
  if (WIFSIGNALED(status)) return DescribeSignal(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return std::string();
  message->text[ChildMessage::kBytes - 1] = '\0';
  if (message->text[0] != '\0') return std::string(message->text);
  return absl::StrCat("kernel process exited with code ",
                      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

int64_t GrowNumber(double elapsed, int64_t number, int min_repeat_ms) {
  double per_run = elapsed / static_cast<double>(number);
  int64_t estimate =
      per_run > 0 ? static_cast<int64_t>(min_repeat_ms / 1000.0 / per_run) + 1 : number * 10;
  return std::min<int64_t>(std::max<int64_t>(estimate, number * 1618 / 1000 + 1), int64_t{1} << 40);
}

absl::Status ValidateRunnerConfig(const RunnerConfig& config, const std::string& who) {
  if (config.number < 1 || config.repeat < 1 || config.warmup < 0 || config.min_repeat_ms < 0 ||
      !(config.timeout_sec > 0) || !(config.slow_run_secs >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        who, ": invalid config (warmup=", config.warmup, ", number=", config.number,
        ", repeat=", config.repeat, ", min_repeat_ms=", config.min_repeat_ms,
        ", timeout_sec=", config.timeout_sec, ", slow_run_secs=", config.slow_run_secs, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<NDArray>> RandomArguments(const std::vector<ArgInfo>& infos,
                                                     uint64_t seed, const std::string& who) {
  Random rng(static_cast<int64_t>(seed & 0x7fffffffffffffffULL));
  std::vector<NDArray> args;
  for (size_t i = 0; i < infos.size(); ++i) {
    for (int64_t extent : infos[i].shape) {
      if (extent < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(who, ": argument ", i, " has a non-constant or negative shape"));
      }
    }
    args.push_back(NDArray::Empty(infos[i].dtype, infos[i].shape));
    args.back().FillRandom(&rng);
  }
  return args;
}

}  // namespace internal
}  // namespace tessera
