#include "base/utf8.h"

#include <cstdint>

namespace tessera {

bool IsUtf8(absl::string_view s, bool printable) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if (printable && (c < 0x20 || c == 0x7f)) return false;
      ++i;
      continue;
    }
    // Continuation bytes after the lead byte.
    const size_t n = c >= 0xc2 && c <= 0xdf   ? 1
                     : c >= 0xe0 && c <= 0xef ? 2
                     : c >= 0xf0 && c <= 0xf4 ? 3
                                              : 0;
    if (n == 0 || i + n >= s.size()) return false;
    uint32_t cp = c & (0x3f >> n);
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10ffff))) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace tessera
