#include "worker/builder_internal.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace internal {

WorkDir::WorkDir(const std::string& requested, bool keep, const std::string& prefix,
                 const std::string& who)
    : keep_(keep) {
  if (requested.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/", prefix, "-XXXXXX");
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
