// Versioned JSON (de)serialization of PrimFuncs and IRModules, the format in which the
// database stores workloads and in which functions travel between processes. The format is
// documented in docs/formats.md ("IR JSON"): a top-level object
// {"tessera_ir": 1, "functions": [...]}, with each function's variables and buffers defined
// once in tables and referenced by index, so that sharing (one Var used in many places) is
// preserved exactly and a round trip yields a structurally equal function.
//
// Readers never crash and never throw: malformed text, missing keys, wrong types,
// out-of-range indices, index counts that do not match a buffer's rank, or an unsupported
// version give kInvalidArgument naming a JSON path, e.g.
// "functions[0].body.seq[2].value: expected array".
#ifndef TESSERA_IR_SERIALIZE_H_
#define TESSERA_IR_SERIALIZE_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

// The version written by this build. Readers accept versions 1..kIrJsonVersion.
inline constexpr int kIrJsonVersion = 1;

// A document holding exactly `f` (compact, one line). Requires f.defined().
std::string SaveJson(const PrimFunc& f);
// A document holding every function of `m`, in the module's (sorted) order.
std::string SaveJson(const IRModule& m);

// Parses a document written by SaveJson(PrimFunc): kInvalidArgument if it is malformed or
// does not hold exactly one function.
absl::StatusOr<PrimFunc> LoadPrimFuncJson(const std::string& text);
// Parses a document with any number of functions. kInvalidArgument if malformed or if two
// functions share a module name.
absl::StatusOr<IRModule> LoadModuleJson(const std::string& text);

}  // namespace tessera

#endif  // TESSERA_IR_SERIALIZE_H_
