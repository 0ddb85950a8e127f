// Minimal leveled logging to stderr. The level comes from TESSERA_LOG_LEVEL
// (debug|info|warning|error; default warning) so that command-line output stays clean.
//   TESSERA_LOG(INFO) << "tuned " << n << " candidates";
#ifndef TESSERA_BASE_LOGGING_H_
#define TESSERA_BASE_LOGGING_H_

#include <sstream>

namespace tessera {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// The threshold in force (read once from the environment, then settable).
LogLevel MinLogLevel();
void SetMinLogLevel(LogLevel level);

namespace internal {

class LogMessage {
 public:
  LogMessage(LogLevel level, const char* file, int line);
  ~LogMessage();
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

}  // namespace internal
}  // namespace tessera

#define TESSERA_LOG_LEVEL_DEBUG ::tessera::LogLevel::kDebug
#define TESSERA_LOG_LEVEL_INFO ::tessera::LogLevel::kInfo
#define TESSERA_LOG_LEVEL_WARNING ::tessera::LogLevel::kWarning
#define TESSERA_LOG_LEVEL_ERROR ::tessera::LogLevel::kError

#define TESSERA_LOG(severity)                                             \
  (TESSERA_LOG_LEVEL_##severity < ::tessera::MinLogLevel())               \
      ? (void)0                                                           \
      : ::tessera::internal::Voidify() &                                  \
            ::tessera::internal::LogMessage(TESSERA_LOG_LEVEL_##severity, \
                                            __FILE__, __LINE__)           \
                .stream()

#include "base/check.h"  // Voidify

#endif  // TESSERA_BASE_LOGGING_H_
