// What the C emitter (codegen/codegen_c.h) and the CUDA emitter (codegen/codegen_cuda.h) share:
// one printer of lowered expressions in C syntax (identifiers, literals, arithmetic, casts,
// buffer loads, math calls), identifiers, lines and the statement dispatch (sequences,
// if-then-else, evaluations). Each emitter derives from CLikePrinter, fills in the dialect
// hooks (type names, spellings of special literals, how float16/bfloat16 values are loaded and
// rounded, the prelude helpers for floordiv/floormod/min/max) and prints stores, loops and
// allocations itself. Internal to codegen/.
//
// Integer floordiv/floormod by a positive constant whose dividend is provably non-negative
// (under the loop ranges the emitter binds with BindLoopVar) print as C's `/` and `%`, which
// compilers vectorize; otherwise the prelude helpers round toward negative infinity.
#ifndef TESSERA_CODEGEN_C_LIKE_PRINTER_H_
#define TESSERA_CODEGEN_C_LIKE_PRINTER_H_

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "ir/arith/analyzer.h"
#include "ir/expr.h"
#include "ir/stmt.h"

namespace tessera {
namespace codegen_internal {

// `s` without one pair of parentheses that encloses all of it.
std::string StripParens(const std::string& s);

// What a printer says in its errors and which names it avoids.
struct CLikeOptions {
  std::string backend;                    // "cpu", "cuda": starts every error message
  const std::set<std::string>* reserved;  // names identifiers never take; outlives the printer
  std::string free_variable_note;         // ends the message for a variable never defined
  std::string blocks_message;             // the message for a statement that is still a block
};

class CLikePrinter {
 public:
  CLikePrinter(const CLikePrinter&) = delete;
  CLikePrinter& operator=(const CLikePrinter&) = delete;
  virtual ~CLikePrinter() = default;

  // The first error recorded while printing (OK if none).
  const absl::Status& status() const { return status_; }

 protected:
  // Lines go to `*out`.
  CLikePrinter(CLikeOptions options, std::string* out);

  // ---- names, errors, loop ranges ------------------------------------------------------

  // A fresh C identifier for `key` made from `hint` (invalid characters become '_'; names
  // that are reserved, used, or start with a digit, '_' or tessera_ are changed).
  std::string Define(const void* key, const std::string& hint);
  // The identifier of `key`; records an error naming `what` if it was never defined.
  std::string NameOf(const void* key, const std::string& what);
  // Records `message` as the error unless one is recorded already.
  void Fail(const std::string& message);
  // kInvalidArgument "<backend> codegen: unsupported dtype T of <where>" unless emittable.
  absl::Status CheckDType(DataType t, const std::string& where) const;
  // The number of elements (at least 1) `buffer` is allocated with; -1 after recording an
  // error for an unsupported dtype or a non-constant size.
  int64_t AllocationElements(const Buffer& buffer);
  // `var` ranges over [0, extent) inside the loop being printed (for the index analysis).
  void BindLoopVar(const Var& var, const Expr& extent);
  arith::Analyzer* analyzer() { return &analyzer_; }

  // ---- lines -----------------------------------------------------------------------------

  // `text` on a line of its own at the current indentation (two spaces a level).
  void Line(const std::string& text);
  void Indent() { ++indent_; }
  void Dedent() { --indent_; }
  // Prints `s` (nothing once an error is recorded): sequences, if-then-else and evaluations
  // here (an extern call without `(void)`), stores, loops and allocations by the hooks below.
  void EmitStmt(const Stmt& s);
  // `s` one level deeper.
  void EmitNested(const Stmt& s);
  virtual void EmitStore(const BufferStoreNode* op) = 0;
  virtual void EmitFor(const ForNode* op) = 0;
  virtual void EmitAllocate(const AllocateNode* op) = 0;

  // ---- expressions -----------------------------------------------------------------------

  std::string PrintExpr(const Expr& e);
  // name[index] of a flattened (one-index) access; an error otherwise.
  std::string PrintAccess(const Buffer& buffer, const std::vector<Expr>& indices);
  // `s`, an int64 value, as a value of `t` (a cast unless t is int64).
  std::string Narrow(DataType t, const std::string& s) const;

  // ---- dialect hooks ---------------------------------------------------------------------

  // The C type of an integer or bool value of `t`.
  virtual std::string IntegerType(DataType t) const = 0;
  // The C type values of `t` are computed in: float for float16/bfloat16/float32, double for
  // float64, IntegerType(t) otherwise.
  std::string ValueType(DataType t) const;
  // The literals of bool.
  virtual std::string BoolLiteral(bool v) const = 0;
  // An integer literal of `t` outside the int32 range, without parentheses around a sign
  // (INT64_MIN must come parenthesized or as a name: it is never wrapped).
  virtual std::string WideIntLiteral(DataType t, int64_t v) const = 0;
  // NaN or an infinity of float type `t`.
  virtual std::string SpecialFloatLiteral(DataType t, double v) const = 0;
  // The prelude function computing `helper` ("floormod" of floats, "min", "max") on `t`.
  virtual std::string HelperName(const std::string& helper, DataType t) const = 0;
  // floordiv / floormod (`op`) of signed integers of `t` through the prelude helpers.
  virtual std::string SignedIntFloorOp(BinaryOp op, DataType t, const std::string& a,
                                       const std::string& b) const = 0;
  // The value of an element of dtype `t` read by `access` (float16/bfloat16: as float).
  virtual std::string LoadValue(DataType t, const std::string& access) const = 0;
  // `v` (a value of `from`) rounded to float16 / bfloat16 `to`, as a float.
  virtual std::string RoundToHalf(DataType to, DataType from, const std::string& v) const = 0;
  // exp(`arg`) of float type `t`; the default is the math library's exp / expf.
  virtual std::string Exp(DataType t, const std::string& arg) const {
    return (t.bits() == 64 ? "exp(" : "expf(") + arg + ")";
  }
  // An extern call; the default records "unsupported extern call".
  virtual std::string PrintExtern(const CallNode* op);
  // A variable; the default is its name.
  virtual std::string PrintVar(const VarNode* v) { return NameOf(v, v->name); }
  // What a load reads; the default is PrintAccess.
  virtual std::string PrintLoadAccess(const BufferLoadNode* load) {
    return PrintAccess(load->buffer, load->indices);
  }

 private:
  std::string IntLiteral(DataType t, int64_t v) const;
  std::string FloatLiteral(DataType t, double v) const;
  std::string PrintBinary(const BinaryNode* op);
  std::string PrintCast(DataType to, const Expr& value);
  std::string PrintCall(const CallNode* op);
  // True if `op` (an integer floordiv/floormod) has a positive constant divisor and a
  // dividend that is provably non-negative, so C's truncating / and % are exact.
  bool IsNonNegativeDivision(const BinaryNode* op);

  CLikeOptions options_;
  std::string* out_;
  int indent_ = 0;
  arith::Analyzer analyzer_;
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> used_;
  absl::Status status_;
};

}  // namespace codegen_internal
}  // namespace tessera

#endif  // TESSERA_CODEGEN_C_LIKE_PRINTER_H_
