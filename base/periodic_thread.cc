#include "base/periodic_thread.h"

#include <chrono>
#include <utility>

namespace tessera {

PeriodicThread::PeriodicThread(double interval_seconds, std::function<void()> tick) {
  thread_ = std::thread([this, interval_seconds, tick = std::move(tick)] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::duration<double>(interval_seconds));
      if (stopping_) break;
      lock.unlock();
      tick();
      lock.lock();
    }
  });
}

void PeriodicThread::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

}  // namespace tessera
