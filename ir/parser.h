// The text parser: reads the TensorIR-like text that ir/printer.h writes (grammar in
// docs/ir-text.md), so users can hand Tessera their own functions as text. A hand-written
// tokenizer (tracking line and column) feeds a recursive-descent parser.
//
// The parser checks the well-formedness it can see: names are defined before use and not
// redefined while in scope, buffers are declared (parameters, alloc_buffer, allocate), index
// counts match buffer ranks, operand types agree (an immediate on one side adopts the other
// side's type, as in the IR builders), and each iteration variable has a binding. Every error
// is kInvalidArgument "line L, column C: <what was expected>, found <what>"; no input crashes
// or aborts the parser.
#ifndef TESSERA_IR_PARSER_H_
#define TESSERA_IR_PARSER_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

// Exactly one function. kInvalidArgument on any error (see above).
absl::StatusOr<PrimFunc> ParseFunc(const std::string& text);
// One or more functions; kInvalidArgument also when two functions share a name.
absl::StatusOr<IRModule> ParseModule(const std::string& text);

}  // namespace tessera

#endif  // TESSERA_IR_PARSER_H_
