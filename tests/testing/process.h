// Child processes for end-to-end tests and benchmarks that run the `tessera` binary as users
// do (`tessera serve`, `tessera worker`, clients). Each child gets its own process group, its
// stdout and stderr go to files, every wait is bounded, and the destructor kills the whole
// group (SIGKILL) and reaps it, so nothing outlives a test.
#ifndef TESSERA_TESTS_TESTING_PROCESS_H_
#define TESSERA_TESTS_TESTING_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera {
namespace testing {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with argv, stdout to `stdout_path`, stderr to `stderr_path`.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Start(const std::vector<std::string>& argv,
                                                             const std::string& stdout_path,
                                                             const std::string& stderr_path);
  ~ChildProcess();  // Kill()

  pid_t pid() const { return pid_; }
  // Waits up to `timeout_sec` for a line of stdout starting with `prefix`; returns the rest of
  // that line. kDeadlineExceeded (with the output so far) on time-out, kAborted if it exits.
  absl::StatusOr<std::string> WaitForLine(const std::string& prefix, double timeout_sec);
  // Sends `sig` to the process (not its group).
  void Signal(int sig);
  // Waits up to `timeout_sec` for the exit; returns the exit code (128 + signal when killed by
  // one). kDeadlineExceeded when it is still running (it is left running).
  absl::StatusOr<int> Wait(double timeout_sec);
  bool Running();
  // SIGKILL to the whole process group, then reaps the process.
  void Kill();
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int exit_code_ = -1;
  std::string stdout_path_, stderr_path_;
};

// A command run to its end: exit code (-1 on time-out, when it was killed), stdout, stderr.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  bool timed_out = false;
};
// Runs argv with a time-out; the output files go to `scratch_dir`.
CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_sec,
                         const std::string& scratch_dir);

std::string ReadFileOrEmpty(const std::string& path);

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TESTING_PROCESS_H_
