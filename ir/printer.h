// The text printer: renders functions, statements and expressions as readable TensorIR-like
// text (TVMScript-flavoured, Tessera's own stable grammar, documented in docs/ir-text.md).
// The output of PrintFunc / PrintModule is what ir/parser.h reads back: print -> parse gives a
// structurally equal function, and print -> parse -> print gives the same text.
//
// Names: every Var and Buffer of one printed unit gets one name, assigned in print order from
// the node's own name, sanitized into an identifier and made unique (`i`, `i_1`, ...), so
// different variables that share a name stay distinct in the text. Printing is deterministic.
#ifndef TESSERA_IR_PRINTER_H_
#define TESSERA_IR_PRINTER_H_

#include <string>

#include "ir/function.h"

namespace tessera {

// One function: decorator, header with parameter buffers, attributes, body. Ends in "\n".
std::string PrintFunc(const PrimFunc& f);
// All functions of the module, sorted by name, separated by blank lines.
std::string PrintModule(const IRModule& m);
// One expression or statement (for error messages and debugging). A statement ends in "\n".
std::string PrintExpr(const Expr& e);
std::string PrintStmt(const Stmt& s);

// How a double is written in the text: the shortest decimal form that reads back to the same
// bits, always with a '.' or an exponent ("1.0", "0.1", "1e+300"), or "inf", "-inf", "nan".
// Shared with the parser's tests; exposed for other printers that want the same form.
std::string FormatDouble(double value);

}  // namespace tessera

#endif  // TESSERA_IR_PRINTER_H_
