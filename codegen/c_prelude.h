// The fixed start of every C translation unit the CPU emitter writes: includes and the inline
// helpers generated code calls (floordiv/floormod for signed integers, typed min/max, bfloat16
// conversions, aligned allocation), and the identifiers generated names must avoid.
#ifndef TESSERA_CODEGEN_C_PRELUDE_H_
#define TESSERA_CODEGEN_C_PRELUDE_H_

#include <set>
#include <string>

namespace tessera {

// Every helper's name starts with tessera_ (TESSERA_ for macros).
extern const char kCPrelude[];

// C keywords, the libc functions generated code calls and other names a generated
// identifier must not take (a local `expf` would hide the function).
const std::set<std::string>& CReservedNames();

}  // namespace tessera

#endif  // TESSERA_CODEGEN_C_PRELUDE_H_
