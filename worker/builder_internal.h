// Pieces the C builder (worker/builder.cc) and the NVRTC builder (worker/nvrtc_builder.cc)
// share: the directory artifacts go into, and compiling the inputs of one Build call in
// parallel threads. Internal to worker/.
#ifndef TESSERA_WORKER_BUILDER_INTERNAL_H_
#define TESSERA_WORKER_BUILDER_INTERNAL_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"

namespace tessera {
namespace internal {

// The directory a builder writes sources and artifacts into. With an empty `requested` path, a
// fresh directory under $TMPDIR (or /tmp), removed on destruction unless `keep`; otherwise
// `requested`, created if missing and never removed. A directory that cannot be made is
// reported by status() ("<who>: cannot create ...") rather than at construction.
// A fresh directory is named <prefix>-<pid>-XXXXXX (<prefix>-XXXXXX when kept), so that one
// left behind by a process that was killed, or that _exit()ed after abandoning a measurement,
// can be recognized: making a fresh directory first removes those of its prefix whose process
// is gone and which have not changed for kAbandonedWorkDirAge.
inline constexpr std::chrono::minutes kAbandonedWorkDirAge{60};

class WorkDir {
 public:
  WorkDir(const std::string& requested, bool keep, const std::string& prefix,
          const std::string& who);
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  ~WorkDir();

  const absl::Status& status() const { return status_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_ = false;
  bool keep_ = false;
  absl::Status status_;
};

// Calls body(i) for i in [0, n) on min(n, threads) threads (the caller's included); `threads`
// <= 0 means the hardware's. Returns when all calls have.
void ParallelFor(size_t n, int threads, const std::function<void(size_t)>& body);

// Wall time since `start` in seconds.
double SecondsSince(std::chrono::steady_clock::time_point start);

}  // namespace internal
}  // namespace tessera

#endif  // TESSERA_WORKER_BUILDER_INTERNAL_H_
