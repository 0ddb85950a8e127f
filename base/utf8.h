// Validating text that must be UTF-8: protobuf string fields (a request's workload, a record's
// provenance) hold only well-formed UTF-8.
#ifndef TESSERA_BASE_UTF8_H_
#define TESSERA_BASE_UTF8_H_

#include "absl/strings/string_view.h"

namespace tessera {

// True if `text` is well-formed UTF-8 (no overlong forms, surrogates or code points above
// U+10FFFF); `printable` also refuses ASCII control characters.
bool IsUtf8(absl::string_view text, bool printable = false);

}  // namespace tessera

#endif  // TESSERA_BASE_UTF8_H_
