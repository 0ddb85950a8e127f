// A bounded wait for tests whose condition is reached by another thread or process (a lease that
// expires, a worker that registers, a job that finishes).
#ifndef TESSERA_TESTS_TESTING_WAIT_UNTIL_H_
#define TESSERA_TESTS_TESTING_WAIT_UNTIL_H_

#include <chrono>
#include <functional>
#include <thread>

namespace tessera {
namespace testing {

// Polls `done` every 20 ms until it holds or `seconds` have passed; returns whether it held. The
// bound only limits how long a failing test waits: a passing one returns as soon as `done` holds.
inline bool WaitUntil(const std::function<bool()>& done, double seconds = 120) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TESTING_WAIT_UNTIL_H_
