// A thread that calls a function every `interval` seconds until Stop() (or destruction): the
// dispatchers' lease and worker sweeps. Declare it last in its owner, so that it starts after
// and stops before the members the function uses.
#ifndef TESSERA_BASE_PERIODIC_THREAD_H_
#define TESSERA_BASE_PERIODIC_THREAD_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace tessera {

class PeriodicThread {
 public:
  PeriodicThread(double interval_seconds, std::function<void()> tick);
  ~PeriodicThread() { Stop(); }
  PeriodicThread(const PeriodicThread&) = delete;
  PeriodicThread& operator=(const PeriodicThread&) = delete;

  // Waits for a running call to end; no call starts after it. Idempotent.
  void Stop();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tessera

#endif  // TESSERA_BASE_PERIODIC_THREAD_H_
