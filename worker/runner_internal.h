// Pieces the CPU runner (worker/runner.cc) and the CUDA runner (worker/cuda_runner.cc) share:
// running work in a forked child process under a deadline, anonymous shared memory that the
// child writes its results into, TVM's growth of `number` for min_repeat_ms, and validation of
// configs and arguments. Internal to worker/.
#ifndef TESSERA_WORKER_RUNNER_INTERNAL_H_
#define TESSERA_WORKER_RUNNER_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/ndarray.h"
#include "worker/runner.h"

namespace tessera {
namespace internal {

// CLOCK_MONOTONIC in seconds.
double MonotonicSeconds();

// `n` rounded up to a multiple of 64 (the alignment of every shared-memory slot).
size_t AlignUp(size_t n);

// An anonymous MAP_SHARED mapping, zero-filled: what a forked child writes into it, the parent
// sees. Unmapped on destruction. Move-only.
class SharedMemory {
 public:
  // kResourceExhausted "<who>: cannot map N bytes of shared memory: <reason>".
  static absl::StatusOr<SharedMemory> Map(size_t bytes, const std::string& who);

  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory();

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  SharedMemory(char* data, size_t size) : data_(data), size_(size) {}
  char* data_ = nullptr;
  size_t size_ = 0;
};

// Where a child leaves the reason it failed. Place it in shared memory.
struct ChildMessage {
  static constexpr size_t kBytes = 1024;
  char text[kBytes];
};

// In the child: writes `message` (truncated) into `*slot` and exits with code 3. Never returns.
[[noreturn]] void ExitChildWithMessage(ChildMessage* slot, const std::string& message);

// Forks. The child runs `child_main` and _exits with its return value; it must not return
// into the caller's code any other way (no exceptions). The parent polls until the child
// exits or `timeout_sec` pass without progress, then SIGKILLs it. Progress: when `progress` is
// given, a change of its value restarts the timeout (the CUDA runner's child counts finished
// measurements); without it the timeout covers the whole child.
//
// Returns what went wrong in the child as one line: "" for exit code 0, "timed out after 2s",
// "kernel crashed: SIGSEGV (Segmentation fault)", the message the child left in `*message`, or
// "kernel process exited with code N". Errors: kResourceExhausted when fork fails, kInternal
// when waitpid fails.
absl::StatusOr<std::string> RunInChildProcess(const std::function<int()>& child_main,
                                              double timeout_sec, ChildMessage* message,
                                              const std::function<int64_t()>& progress = nullptr);

// The next `number` after a repeat of `number` runs lasted `elapsed` seconds, shorter than
// min_repeat_ms: as TVM, jump to the estimated count, growing at least by the golden ratio.
int64_t GrowNumber(double elapsed, int64_t number, int min_repeat_ms);

// kInvalidArgument "<who>: invalid config (warmup=.., ...)" unless number >= 1, repeat >= 1,
// warmup >= 0, min_repeat_ms >= 0, timeout_sec > 0 and slow_run_secs >= 0.
absl::Status ValidateRunnerConfig(const RunnerConfig& config, const std::string& who);

// One array per ArgInfo, filled with NDArray::FillRandom(Random(seed)) in order (the data every
// runner gives every candidate). kInvalidArgument "<who>: argument 2 has a non-constant or
// negative shape".
absl::StatusOr<std::vector<NDArray>> RandomArguments(const std::vector<ArgInfo>& infos,
                                                     uint64_t seed, const std::string& who);

}  // namespace internal
}  // namespace tessera

#endif  // TESSERA_WORKER_RUNNER_INTERNAL_H_
