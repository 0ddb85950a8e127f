// Expressions of the tensor IR: immutable nodes held by value handles (`Expr`, `Var`,
// `Buffer`) over std::shared_ptr<const Node>. Handles compare by identity (`same_as`);
// structural comparison lives in ir/structural_equal.h.
//
// Index arithmetic (loop variables, iteration variables, buffer indices and shapes) is
// int64 throughout (DataType::Index()); `Expr(5)` is an int64 immediate.
#ifndef TESSERA_IR_EXPR_H_
#define TESSERA_IR_EXPR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace tessera {

enum class ExprKind : uint8_t {
  kIntImm,
  kFloatImm,
  kVar,
  kBinary,
  kNot,
  kSelect,
  kCast,
  kBufferLoad,
  kCall,
};

struct ExprNode {
  ExprNode(ExprKind kind, DataType dtype) : kind(kind), dtype(dtype) {}
  virtual ~ExprNode() = default;
  const ExprKind kind;
  const DataType dtype;
};

// Nullable handle to an immutable expression node.
class Expr {
 public:
  Expr() = default;
  Expr(int value);      // NOLINT: int64 immediate, for readable index arithmetic.
  Expr(int64_t value);  // NOLINT
  explicit Expr(std::shared_ptr<const ExprNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  ExprKind kind() const { return node_->kind; }
  DataType dtype() const { return node_->dtype; }
  bool same_as(const Expr& other) const { return node_ == other.node_; }
  const std::shared_ptr<const ExprNode>& node_ptr() const { return node_; }

  // The node as T if it is one (T::kKind matches), else nullptr.
  template <typename T>
  const T* as() const {
    return node_ && node_->kind == T::kKind ? static_cast<const T*>(node_.get()) : nullptr;
  }

 private:
  std::shared_ptr<const ExprNode> node_;
};

struct IntImmNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kIntImm;
  IntImmNode(DataType dtype, int64_t value) : ExprNode(kKind, dtype), value(value) {}
  const int64_t value;
};

struct FloatImmNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kFloatImm;
  FloatImmNode(DataType dtype, double value) : ExprNode(kKind, dtype), value(value) {}
  const double value;
};

// A variable. Identity is the node: two Vars with the same name are different variables.
struct VarNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kVar;
  VarNode(std::string name, DataType dtype) : ExprNode(kKind, dtype), name(std::move(name)) {}
  const std::string name;
};

class Var : public Expr {
 public:
  Var() = default;
  explicit Var(std::string name, DataType dtype = DataType::Index());
  explicit Var(std::shared_ptr<const VarNode> node) : Expr(std::move(node)) {}
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
  // A fresh variable with the same dtype and the given name (or the same name).
  Var Copy(const std::string& new_name = "") const;
};

// Hash/equality functors for using Vars (by identity) as unordered-container keys.
struct VarIdentityHash {
  size_t operator()(const Var& v) const { return std::hash<const void*>()(v.get()); }
};
struct VarIdentityEqual {
  bool operator()(const Var& a, const Var& b) const { return a.same_as(b); }
};

enum class BinaryOp : uint8_t {
  kAdd,
  kSub,
  kMul,
  kDiv,  // Float division, or C (truncating) division for integers.
  kFloorDiv,
  kFloorMod,
  kMin,
  kMax,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,
  kOr,
};
// "+", "floordiv", "<", "&&", ... as the printer writes them; true for infix operators.
const char* BinaryOpName(BinaryOp op);
bool BinaryOpIsInfix(BinaryOp op);
bool BinaryOpIsComparison(BinaryOp op);
bool BinaryOpIsLogical(BinaryOp op);

struct BinaryNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBinary;
  BinaryNode(DataType dtype, BinaryOp op, Expr a, Expr b)
      : ExprNode(kKind, dtype), op(op), a(std::move(a)), b(std::move(b)) {}
  const BinaryOp op;
  const Expr a;
  const Expr b;
};

struct NotNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kNot;
  explicit NotNode(Expr a) : ExprNode(kKind, DataType::Bool()), a(std::move(a)) {}
  const Expr a;
};

struct SelectNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kSelect;
  SelectNode(Expr condition, Expr true_value, Expr false_value)
      : ExprNode(kKind, true_value.dtype()),
        condition(std::move(condition)),
        true_value(std::move(true_value)),
        false_value(std::move(false_value)) {}
  const Expr condition;
  const Expr true_value;
  const Expr false_value;
};

struct CastNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCast;
  CastNode(DataType dtype, Expr value) : ExprNode(kKind, dtype), value(std::move(value)) {}
  const Expr value;
};

// ---- Buffers ------------------------------------------------------------------------

// A multi-dimensional array: a function parameter or an allocation of a block.
// Identity is the node (like Var). `scope` is "global", "shared", "local" (or a
// tensor-core fragment scope such as "wmma.accumulator").
struct BufferNode {
  std::string name;
  DataType dtype;
  std::vector<Expr> shape;
  std::string scope = "global";
  // Element strides per dimension; empty means compact row-major.
  std::vector<Expr> strides;
};

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::shared_ptr<const BufferNode> node) : node_(std::move(node)) {}
  static Buffer Make(std::string name, DataType dtype, std::vector<Expr> shape,
                     std::string scope = "global");

  bool defined() const { return node_ != nullptr; }
  const BufferNode* get() const { return node_.get(); }
  const BufferNode* operator->() const { return node_.get(); }
  bool same_as(const Buffer& other) const { return node_ == other.node_; }

  const std::string& name() const { return node_->name; }
  DataType dtype() const { return node_->dtype; }
  const std::vector<Expr>& shape() const { return node_->shape; }
  const std::string& scope() const { return node_->scope; }
  int ndim() const { return static_cast<int>(node_->shape.size()); }

  // A new buffer (new identity) equal to this one except for the given fields.
  Buffer WithScope(std::string scope) const;
  Buffer WithName(std::string name) const;
  Buffer WithShape(std::vector<Expr> shape) const;
  Buffer WithStrides(std::vector<Expr> strides) const;

  // Product of a constant shape; -1 if some extent is not a constant.
  int64_t NumElements() const;

  // Load expression `this[indices...]`.
  Expr Load(std::vector<Expr> indices) const;

 private:
  std::shared_ptr<const BufferNode> node_;
};

struct BufferIdentityHash {
  size_t operator()(const Buffer& b) const { return std::hash<const void*>()(b.get()); }
};
struct BufferIdentityEqual {
  bool operator()(const Buffer& a, const Buffer& b) const { return a.same_as(b); }
};

struct BufferLoadNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kBufferLoad;
  BufferLoadNode(Buffer buffer, std::vector<Expr> indices)
      : ExprNode(kKind, buffer.dtype()), buffer(std::move(buffer)), indices(std::move(indices)) {}
  const Buffer buffer;
  const std::vector<Expr> indices;
};

// Math intrinsics and other calls.
enum class CallOp : uint8_t {
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kTanh,
  kErf,
  kPow,
  kAbs,
  kSigmoid,
  kFloor,
  kCeil,
  // A float32 rounded to TF32, the tensor cores' 19-bit float32 (RoundToTf32).
  kRoundTf32,
  // An opaque call of the external function CallNode::name (a tensor intrinsic such as
  // "wmma::mma_sync" or "__dp4a"), any number of arguments, result type CallNode::dtype. A
  // BufferLoad argument stands for the address of that element. Never folded or simplified
  // away; only backends that know the name can run it.
  kExtern,
};
// Name as printed ("exp"; "call_extern" for kExtern) and arity (-1 for kExtern: any).
const char* CallOpName(CallOp op);
int CallOpArity(CallOp op);
// Parses a name produced by CallOpName for a math op; false if unknown (and for
// "call_extern", whose syntax differs).
bool ParseCallOp(const std::string& name, CallOp* op);
// `x` with its mantissa rounded to TF32's 10 bits, to nearest with ties away from zero (as PTX's
// cvt.rna.tf32.f32): the low 13 bits of the float32 cleared after adding half of their range.
// Infinities and NaNs are returned as they are; a value that rounds past the largest float32
// becomes infinity.
float RoundToTf32(float x);

struct CallNode final : ExprNode {
  static constexpr ExprKind kKind = ExprKind::kCall;
  CallNode(DataType dtype, CallOp op, std::vector<Expr> args, std::string name = "")
      : ExprNode(kKind, dtype), op(op), args(std::move(args)), name(std::move(name)) {}
  const CallOp op;
  const std::vector<Expr> args;
  const std::string name;  // The external function of a kExtern call; empty otherwise.
};

// ---- Construction ---------------------------------------------------------------------
// These build nodes without simplifying. Binary builders accept an immediate of another
// type on one side and convert it to the other side's type (so `x * 2` works for float x);
// other type mismatches are programming errors (TESSERA_CHECK).

Expr IntImm(DataType dtype, int64_t value);
Expr FloatImm(DataType dtype, double value);
// An immediate of `dtype` (integer, float or bool) holding `value`.
Expr MakeConst(DataType dtype, double value);
Expr MakeBinary(BinaryOp op, Expr a, Expr b);

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator-(Expr a);
Expr Div(Expr a, Expr b);
Expr FloorDiv(Expr a, Expr b);
Expr FloorMod(Expr a, Expr b);
Expr Min(Expr a, Expr b);
Expr Max(Expr a, Expr b);
Expr EQ(Expr a, Expr b);
Expr NE(Expr a, Expr b);
Expr LT(Expr a, Expr b);
Expr LE(Expr a, Expr b);
Expr GT(Expr a, Expr b);
Expr GE(Expr a, Expr b);
Expr And(Expr a, Expr b);
Expr Or(Expr a, Expr b);
Expr Not(Expr a);
Expr Select(Expr condition, Expr true_value, Expr false_value);
Expr Cast(DataType dtype, Expr value);
Expr Call(CallOp op, std::vector<Expr> args);  // dtype = first argument's dtype; not kExtern
// An opaque call of the external function `name` (non-empty) returning `dtype`.
Expr CallExtern(DataType dtype, std::string name, std::vector<Expr> args);

// Constant value queries.
const int64_t* AsConstInt(const Expr& e);  // nullptr unless an IntImm
bool IsConstInt(const Expr& e, int64_t value);

// The largest / smallest finite value of a type, as an immediate (for max/min reductions).
Expr MaxValue(DataType dtype);
Expr MinValue(DataType dtype);

}  // namespace tessera

#endif  // TESSERA_IR_EXPR_H_
