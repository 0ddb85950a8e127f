#include "worker/builder.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/codegen_c.h"
#include "worker/builder_internal.h"

extern char** environ;

namespace tessera {
namespace {

constexpr size_t kMaxCapturedOutput = 64 * 1024;
constexpr size_t kMaxErrorMessage = 4000;

using internal::SecondsSince;

// Runs `argv` (argv[0] looked up in PATH) with stdin from /dev/null and stdout + stderr
// captured into `*output`. The process runs in its own process group, all of which is killed
// after `timeout_sec`. Returns the exit status as a description: "" for exit code 0.
absl::StatusOr<std::string> RunProcess(const std::vector<std::string>& argv, double timeout_sec,
                                       std::string* output) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(absl::StrCat("c builder: pipe failed: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return absl::FailedPreconditionError(
        absl::StrCat("c builder: cannot start compiler '", argv[0], "': ", std::strerror(rc)));
  }

  auto start = std::chrono::steady_clock::now();
  bool timed_out = false;
  char buf[4096];
  while (true) {
    double left = timeout_sec - SecondsSince(start);
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    int ready = poll(&p, 1, static_cast<int>(std::min(left * 1000 + 1, 1000.0)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the compiler and its subprocesses closed the pipe
    if (output->size() < kMaxCapturedOutput) output->append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(-pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) return absl::StrCat("timed out after ", timeout_sec, "s");
  if (WIFEXITED(status)) {
    int code = WEXITSTATUS(status);
    return code == 0 ? std::string() : absl::StrCat("exit code ", code);
  }
  if (WIFSIGNALED(status)) return absl::StrCat("killed by signal ", WTERMSIG(status));
  return std::string("unknown exit status");
}

std::string Trim(std::string text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
  if (text.size() > kMaxErrorMessage) {
    text = text.substr(0, kMaxErrorMessage) + "\n... (truncated)";
  }
  return text;
}

// The C symbol of a function: its name made an identifier, plus "_kernel".
std::string SymbolFor(const std::string& name) {
  std::string s;
  for (char c : name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s.rfind("tessera_", 0) == 0) {
    s = "k_" + s;
  }
  return s + "_kernel";
}

class CBuilder final : public Builder {
 public:
  explicit CBuilder(CBuilderOptions options)
      : options_(std::move(options)),
        work_dir_(options_.work_dir, options_.keep_work_dir, "tessera-build", "c builder") {}

  std::vector<BuildResult> Build(const std::vector<BuildInput>& inputs) override {
    std::vector<BuildResult> results(inputs.size());
    BuildEach(inputs, [&](size_t i, BuildResult r) { results[i] = std::move(r); });
    return results;
  }

  // Each batch of inputs (one input with the default batch_size) is handed over when its
  // compilation ends; the threads take batches in input order. Input i's files and symbols are
  // numbered first + i whichever thread builds it, so the same calls give the same names (a
  // compiled model's plan names its kernels' files).
  void BuildEach(const std::vector<BuildInput>& inputs, const BuildDone& on_built) override {
    std::vector<BuildResult> results(inputs.size());
    const int64_t first_id = next_id_.fetch_add(static_cast<int64_t>(inputs.size()));
    const size_t batch = static_cast<size_t>(std::max(1, options_.batch_size));
    internal::ParallelFor((inputs.size() + batch - 1) / batch, options_.parallelism, [&](size_t b) {
      const size_t first = b * batch;
      const size_t last = std::min(first + batch, inputs.size());
      BuildBatch(inputs, first, last, first_id, &results);
      for (size_t i = first; i < last; ++i) {
        on_built(i, std::move(results[i]));
      }
    });
  }

 private:
  // Builds inputs[first, last) into one shared object, each with its own symbol; if that
  // fails, builds each on its own so that every error is attributed to its input.
  void BuildBatch(const std::vector<BuildInput>& inputs, size_t first, size_t last,
                  int64_t first_id, std::vector<BuildResult>* results) {
    if (inputs[first].cancelled()) {
      for (size_t i = first; i < last; ++i) (*results)[i].error_msg = kBuildCancelled;
      return;
    }
    if (last - first > 1) {
      auto start = std::chrono::steady_clock::now();
      std::vector<CFunction> functions;
      for (size_t i = first; i < last; ++i) {
        if (!Usable(inputs[i]).empty()) break;
        functions.push_back(
            {inputs[i].func, SymbolFor(absl::StrCat(inputs[i].func.name(), "_",
                                                    first_id + static_cast<int64_t>(i)))});
      }
      if (functions.size() == last - first) {
        absl::StatusOr<std::string> source = GenerateCModule(functions);
        std::string artifact;
        if (source.ok() &&
            Compile(*source, "batch", first_id + static_cast<int64_t>(first), &artifact).empty()) {
          double seconds = SecondsSince(start) / static_cast<double>(functions.size());
          for (size_t i = first; i < last; ++i) {
            BuildResult& r = (*results)[i];
            r.artifact_path = artifact;
            r.symbol = functions[i - first].symbol;
            r.compile_seconds = seconds;
          }
          return;
        }
      }
    }
    for (size_t i = first; i < last; ++i) {
      (*results)[i] = BuildOne(inputs[i], first_id + static_cast<int64_t>(i));
    }
  }

  BuildResult BuildOne(const BuildInput& input, int64_t id) {
    auto start = std::chrono::steady_clock::now();
    BuildResult result;
    result.error_msg = BuildInto(input, id, &result);
    result.compile_seconds = SecondsSince(start);
    if (!result.ok()) result.artifact_path.clear();
    return result;
  }

  // "" when the C builder can build `input`, else why not.
  std::string Usable(const BuildInput& input) const {
    if (!work_dir_.status().ok()) return std::string(work_dir_.status().message());
    if (!input.func.defined()) return "c builder: input has no function";
    if (!input.target.is_cpu()) {
      return absl::StrCat("c builder: target ", input.target.ToString(), " is not a cpu target");
    }
    return "";
  }

  // Fills `result` and returns "" on success, else the error message.
  std::string BuildInto(const BuildInput& input, int64_t id, BuildResult* result) {
    std::string unusable = Usable(input);
    if (!unusable.empty()) return unusable;
    result->symbol = SymbolFor(input.func.name());
    absl::StatusOr<std::string> source = GenerateC(input.func, result->symbol);
    if (!source.ok()) return std::string(source.status().message());
    return Compile(*source, result->symbol, id, &result->artifact_path);
  }

  // Writes `source` to <work dir>/<stem>_<id>.c and compiles it into `*artifact`
  // (<stem>_<id>.so); returns "" on success, else the error message.
  std::string Compile(const std::string& source, const std::string& stem, int64_t id,
                      std::string* artifact) {
    std::string path_stem = absl::StrCat(work_dir_.path(), "/", stem, "_", id);
    std::string src_path = path_stem + ".c";
    *artifact = path_stem + ".so";
    {
      std::ofstream out(src_path, std::ios::binary);
      out << source;
      if (!out.good()) return absl::StrCat("c builder: cannot write ", src_path);
    }
    std::vector<std::string> argv = {options_.compiler};
    argv.insert(argv.end(), options_.optimization_flags.begin(), options_.optimization_flags.end());
    if (options_.openmp) argv.push_back("-fopenmp");
    for (const char* flag : {"-shared", "-fPIC", "-std=gnu11"}) argv.push_back(flag);
    argv.insert(argv.end(), options_.extra_flags.begin(), options_.extra_flags.end());
    for (const std::string& a : {std::string("-o"), *artifact, src_path, std::string("-lm")}) {
      argv.push_back(a);
    }
    std::string output;
    absl::StatusOr<std::string> exit = RunProcess(argv, options_.timeout_sec, &output);
    if (!exit.ok()) return std::string(exit.status().message());
    if (!exit->empty()) {
      return Trim(absl::StrCat("c builder: ", options_.compiler, " failed (", *exit, ") on ",
                               src_path, ":\n", output));
    }
    return "";
  }

  CBuilderOptions options_;
  internal::WorkDir work_dir_;
  std::atomic<int64_t> next_id_{0};
};

}  // namespace

void Builder::BuildEach(const std::vector<BuildInput>& inputs, const BuildDone& on_built) {
  std::vector<BuildResult> results = Build(inputs);
  for (size_t i = 0; i < results.size(); ++i) on_built(i, std::move(results[i]));
}

std::unique_ptr<Builder> NewCBuilder(CBuilderOptions options) {
  return std::make_unique<CBuilder>(std::move(options));
}

absl::StatusOr<BuildResult> BuildOne(Builder* builder, const PrimFunc& func, const Target& target) {
  std::vector<BuildResult> results = builder->Build({BuildInput{func, target}});
  if (results.size() != 1) return absl::InternalError("builder returned no result");
  if (!results[0].ok()) {
    return absl::InternalError(absl::StrCat("build failed: ", results[0].error_msg));
  }
  return results[0];
}

}  // namespace tessera
