#include "worker/builder_internal.h"

#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tessera {
namespace internal {

namespace {

// Removes the <prefix>-<pid>-XXXXXX directories under `parent` whose process no longer exists
// (kill(pid, 0) says ESRCH) and which have not changed for kAbandonedWorkDirAge. The age
// spares a live builder of another PID namespace that shares the directory (its files change
// on every build); errors are ignored: sweeping is best effort.
void RemoveAbandonedWorkDirs(const std::string& parent, const std::string& prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto now = fs::file_time_type::clock::now();
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size() + 1, prefix + "-") != 0) {
      continue;
    }
    const std::string rest = name.substr(prefix.size() + 1);  // <pid>-XXXXXX
    const size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.size() - dash - 1 != 6) continue;
    pid_t pid = 0;
    if (!absl::SimpleAtoi(rest.substr(0, dash), &pid) || pid <= 0) continue;
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask about
    std::error_code time_ec;
    const fs::file_time_type changed = fs::last_write_time(it->path(), time_ec);
    if (time_ec || now - changed < kAbandonedWorkDirAge) continue;
    std::error_code remove_ec;
    fs::remove_all(it->path(), remove_ec);
  }
}

}  // namespace

WorkDir::WorkDir(const std::string& requested, bool keep, const std::string& prefix,
                 const std::string& who)
    : keep_(keep) {
  if (requested.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string parent = tmp && *tmp ? tmp : "/tmp";
    RemoveAbandonedWorkDirs(parent, prefix);
    std::string pattern =
        keep ? absl::StrCat(parent, "/", prefix, "-XXXXXX")
             : absl::StrCat(parent, "/", prefix, "-", static_cast<int64_t>(getpid()), "-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      status_ = absl::InternalError(
          absl::StrCat(who, ": cannot create a directory ", pattern, ": ", std::strerror(errno)));
    } else {
      path_ = pattern;
      owned_ = true;
    }
    return;
  }
  path_ = requested;
  std::error_code ec;
  std::filesystem::create_directories(path_, ec);
  if (ec) {
    status_ = absl::InternalError(
        absl::StrCat(who, ": cannot create work dir ", path_, ": ", ec.message()));
  }
}

WorkDir::~WorkDir() {
  if (owned_ && !keep_) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
}

void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& body) {
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  threads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), n));
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next++; i < n; i = next++) body(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace internal
}  // namespace tessera
