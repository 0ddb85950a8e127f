// TESSERA_CHECK(cond) << "message": aborts with file, line and message when `cond` is false.
// For programming errors only; recoverable errors are absl::Status values.
#ifndef TESSERA_BASE_CHECK_H_
#define TESSERA_BASE_CHECK_H_

#include <sstream>

namespace tessera {
namespace internal {

// Collects the message and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

// Lets `cond ? (void)0 : Voidify() & stream` type-check.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace internal
}  // namespace tessera

#define TESSERA_CHECK(cond)                  \
  (cond) ? (void)0                           \
         : ::tessera::internal::Voidify() &  \
               ::tessera::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#define TESSERA_CHECK_EQ(a, b) TESSERA_CHECK((a) == (b)) << (a) << " vs " << (b) << ": "
#define TESSERA_CHECK_LT(a, b) TESSERA_CHECK((a) < (b)) << (a) << " vs " << (b) << ": "
#define TESSERA_CHECK_LE(a, b) TESSERA_CHECK((a) <= (b)) << (a) << " vs " << (b) << ": "
#define TESSERA_CHECK_GE(a, b) TESSERA_CHECK((a) >= (b)) << (a) << " vs " << (b) << ": "
#define TESSERA_UNREACHABLE() TESSERA_CHECK(false) << "unreachable: "

#endif  // TESSERA_BASE_CHECK_H_
