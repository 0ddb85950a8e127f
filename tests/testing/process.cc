#include "tests/testing/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace testing {
namespace {

int DecodeStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Start(
    const std::vector<std::string>& argv, const std::string& stdout_path,
    const std::string& stderr_path) {
  if (argv.empty()) return absl::InvalidArgumentError("no command");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int out = open(stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  int err = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0 || err < 0) {
    if (out >= 0) close(out);
    if (err >= 0) close(err);
    return absl::InternalError(absl::StrCat("cannot open ", stdout_path, " or ", stderr_path));
  }
  pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    // Handlers are reset by exec, but a blocked mask would be inherited.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so that Kill() never races the child's own setpgid
  close(out);
  close(err);
  std::unique_ptr<ChildProcess> child(new ChildProcess());
  child->pid_ = pid;
  child->stdout_path_ = stdout_path;
  child->stderr_path_ = stderr_path;
  return child;
}

ChildProcess::~ChildProcess() { Kill(); }

absl::StatusOr<std::string> ChildProcess::WaitForLine(const std::string& prefix,
                                                      double timeout_sec) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_sec);
  while (true) {
    std::istringstream lines(Stdout());
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(prefix, 0) == 0 && !lines.eof()) return line.substr(prefix.size());
    }
    if (!Running()) {
      return absl::AbortedError(absl::StrCat("exited with ", exit_code_, " before printing '",
                                             prefix, "'; stderr: ", Stderr()));
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("no line '", prefix, "' within ", timeout_sec, " s; stderr: ", Stderr()));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void ChildProcess::Signal(int sig) {
  if (!reaped_) kill(pid_, sig);
}

bool ChildProcess::Running() {
  if (reaped_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    exit_code_ = DecodeStatus(status);
    return false;
  }
  return r == 0;
}

absl::StatusOr<int> ChildProcess::Wait(double timeout_sec) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_sec);
  while (Running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("pid ", pid_, " still running after ", timeout_sec, " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_code_;
}

void ChildProcess::Kill() {
  if (pid_ <= 0) return;
  // The group: the process and what it started (compilers, kernel runs), even after the
  // process itself exited.
  kill(-pid_, SIGKILL);
  if (!reaped_) {
    kill(pid_, SIGKILL);
    int status = 0;
    if (waitpid(pid_, &status, 0) == pid_) exit_code_ = DecodeStatus(status);
    reaped_ = true;
  }
}

std::string ChildProcess::Stdout() const { return ReadFileOrEmpty(stdout_path_); }
std::string ChildProcess::Stderr() const { return ReadFileOrEmpty(stderr_path_); }

CommandResult RunCommand(const std::vector<std::string>& argv, double timeout_sec,
                         const std::string& scratch_dir) {
  static std::atomic<int> counter{0};
  int n = counter++;
  std::string out_path = absl::StrCat(scratch_dir, "/cmd", getpid(), "_", n, ".out");
  std::string err_path = absl::StrCat(scratch_dir, "/cmd", getpid(), "_", n, ".err");
  CommandResult result;
  absl::StatusOr<std::unique_ptr<ChildProcess>> child =
      ChildProcess::Start(argv, out_path, err_path);
  if (!child.ok()) {
    result.err = std::string(child.status().message());
    return result;
  }
  absl::StatusOr<int> code = (*child)->Wait(timeout_sec);
  if (code.ok()) {
    result.exit_code = *code;
  } else {
    result.timed_out = true;
    (*child)->Kill();
  }
  result.out = (*child)->Stdout();
  result.err = (*child)->Stderr();
  return result;
}

}  // namespace testing
}  // namespace tessera
