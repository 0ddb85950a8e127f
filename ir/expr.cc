#include "ir/expr.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "base/check.h"

namespace tessera {

Expr::Expr(int value) : Expr(IntImm(DataType::Index(), value)) {}
Expr::Expr(int64_t value) : Expr(IntImm(DataType::Index(), value)) {}

Var::Var(std::string name, DataType dtype)
    : Expr(std::make_shared<const VarNode>(std::move(name), dtype)) {}

Var Var::Copy(const std::string& new_name) const {
  return Var(new_name.empty() ? name() : new_name, dtype());
}

const char* BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd: return "+";
    case BinaryOp::kSub: return "-";
    case BinaryOp::kMul: return "*";
    case BinaryOp::kDiv: return "/";
    case BinaryOp::kFloorDiv: return "floordiv";
    case BinaryOp::kFloorMod: return "floormod";
    case BinaryOp::kMin: return "min";
    case BinaryOp::kMax: return "max";
    case BinaryOp::kEQ: return "==";
    case BinaryOp::kNE: return "!=";
    case BinaryOp::kLT: return "<";
    case BinaryOp::kLE: return "<=";
    case BinaryOp::kGT: return ">";
    case BinaryOp::kGE: return ">=";
    case BinaryOp::kAnd: return "&&";
    case BinaryOp::kOr: return "||";
  }
  return "?";
}

bool BinaryOpIsInfix(BinaryOp op) {
  return op != BinaryOp::kFloorDiv && op != BinaryOp::kFloorMod && op != BinaryOp::kMin &&
         op != BinaryOp::kMax;
}

bool BinaryOpIsComparison(BinaryOp op) {
  return op == BinaryOp::kEQ || op == BinaryOp::kNE || op == BinaryOp::kLT ||
         op == BinaryOp::kLE || op == BinaryOp::kGT || op == BinaryOp::kGE;
}

bool BinaryOpIsLogical(BinaryOp op) { return op == BinaryOp::kAnd || op == BinaryOp::kOr; }

namespace {

struct CallOpInfo {
  CallOp op;
  const char* name;
  int arity;
};

constexpr CallOpInfo kCallOps[] = {
    {CallOp::kExp, "exp", 1},
    {CallOp::kLog, "log", 1},
    {CallOp::kSqrt, "sqrt", 1},
    {CallOp::kRsqrt, "rsqrt", 1},
    {CallOp::kTanh, "tanh", 1},
    {CallOp::kErf, "erf", 1},
    {CallOp::kPow, "pow", 2},
    {CallOp::kAbs, "abs", 1},
    {CallOp::kSigmoid, "sigmoid", 1},
    {CallOp::kFloor, "floor", 1},
    {CallOp::kCeil, "ceil", 1},
    {CallOp::kRoundTf32, "round_tf32", 1},
    {CallOp::kExtern, "call_extern", -1},
};

const CallOpInfo& InfoOf(CallOp op) {
  for (const CallOpInfo& info : kCallOps) {
    if (info.op == op) return info;
  }
  TESSERA_UNREACHABLE() << "call op " << static_cast<int>(op);
  return kCallOps[0];
}

// Converts an immediate on one side to the other side's dtype.
void MatchTypes(Expr* a, Expr* b) {
  if (a->dtype() == b->dtype()) return;
  auto convert = [](const Expr& imm, DataType to) -> Expr {
    if (const auto* i = imm.as<IntImmNode>()) return MakeConst(to, static_cast<double>(i->value));
    if (const auto* f = imm.as<FloatImmNode>()) {
      if (to.is_float()) return FloatImm(to, f->value);
    }
    return Expr();
  };
  if (Expr converted = convert(*b, a->dtype()); converted.defined()) {
    *b = converted;
    return;
  }
  if (Expr converted = convert(*a, b->dtype()); converted.defined()) {
    *a = converted;
    return;
  }
  TESSERA_CHECK(false) << "binary operands have different types: " << a->dtype().ToString()
                       << " and " << b->dtype().ToString();
}

}  // namespace

const char* CallOpName(CallOp op) { return InfoOf(op).name; }
int CallOpArity(CallOp op) { return InfoOf(op).arity; }

bool ParseCallOp(const std::string& name, CallOp* op) {
  for (const CallOpInfo& info : kCallOps) {
    if (name == info.name && info.op != CallOp::kExtern) {
      *op = info.op;
      return true;
    }
  }
  return false;
}

float RoundToTf32(float x) {
  if (!std::isfinite(x)) return x;
  uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  bits = (bits + 0x1000u) & 0xFFFFE000u;
  float rounded;
  std::memcpy(&rounded, &bits, sizeof rounded);
  return rounded;
}

Buffer Buffer::Make(std::string name, DataType dtype, std::vector<Expr> shape,
                    std::string scope) {
  auto node = std::make_shared<BufferNode>();
  node->name = std::move(name);
  node->dtype = dtype;
  node->shape = std::move(shape);
  node->scope = std::move(scope);
  return Buffer(std::move(node));
}

Buffer Buffer::WithScope(std::string scope) const {
  auto node = std::make_shared<BufferNode>(*node_);
  node->scope = std::move(scope);
  return Buffer(std::move(node));
}

Buffer Buffer::WithName(std::string name) const {
  auto node = std::make_shared<BufferNode>(*node_);
  node->name = std::move(name);
  return Buffer(std::move(node));
}

Buffer Buffer::WithShape(std::vector<Expr> shape) const {
  auto node = std::make_shared<BufferNode>(*node_);
  node->shape = std::move(shape);
  return Buffer(std::move(node));
}

Buffer Buffer::WithStrides(std::vector<Expr> strides) const {
  auto node = std::make_shared<BufferNode>(*node_);
  node->strides = std::move(strides);
  return Buffer(std::move(node));
}

int64_t Buffer::NumElements() const {
  int64_t n = 1;
  for (const Expr& e : node_->shape) {
    const int64_t* v = AsConstInt(e);
    if (v == nullptr) return -1;
    n *= *v;
  }
  return n;
}

Expr Buffer::Load(std::vector<Expr> indices) const {
  TESSERA_CHECK_EQ(static_cast<int>(indices.size()), ndim()) << "load of " << name();
  return Expr(std::make_shared<const BufferLoadNode>(*this, std::move(indices)));
}

Expr IntImm(DataType dtype, int64_t value) {
  TESSERA_CHECK(dtype.is_integer() || dtype.is_bool()) << dtype.ToString();
  return Expr(std::make_shared<const IntImmNode>(dtype, value));
}

Expr FloatImm(DataType dtype, double value) {
  TESSERA_CHECK(dtype.is_float()) << dtype.ToString();
  return Expr(std::make_shared<const FloatImmNode>(dtype, value));
}

Expr MakeConst(DataType dtype, double value) {
  if (dtype.is_float()) return FloatImm(dtype, value);
  if (dtype.is_bool()) return IntImm(dtype, value != 0 ? 1 : 0);
  return IntImm(dtype, static_cast<int64_t>(value));
}

Expr MakeBinary(BinaryOp op, Expr a, Expr b) {
  TESSERA_CHECK(a.defined() && b.defined()) << "binary " << BinaryOpName(op) << " of null";
  MatchTypes(&a, &b);
  DataType dtype = a.dtype();
  if (BinaryOpIsComparison(op) || BinaryOpIsLogical(op)) dtype = DataType::Bool();
  return Expr(std::make_shared<const BinaryNode>(dtype, op, std::move(a), std::move(b)));
}

Expr operator+(Expr a, Expr b) { return MakeBinary(BinaryOp::kAdd, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return MakeBinary(BinaryOp::kSub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return MakeBinary(BinaryOp::kMul, std::move(a), std::move(b)); }
Expr operator-(Expr a) {
  DataType dtype = a.dtype();
  return MakeBinary(BinaryOp::kSub, MakeConst(dtype, 0), std::move(a));
}
Expr Div(Expr a, Expr b) { return MakeBinary(BinaryOp::kDiv, std::move(a), std::move(b)); }
Expr FloorDiv(Expr a, Expr b) {
  return MakeBinary(BinaryOp::kFloorDiv, std::move(a), std::move(b));
}
Expr FloorMod(Expr a, Expr b) {
  return MakeBinary(BinaryOp::kFloorMod, std::move(a), std::move(b));
}
Expr Min(Expr a, Expr b) { return MakeBinary(BinaryOp::kMin, std::move(a), std::move(b)); }
Expr Max(Expr a, Expr b) { return MakeBinary(BinaryOp::kMax, std::move(a), std::move(b)); }
Expr EQ(Expr a, Expr b) { return MakeBinary(BinaryOp::kEQ, std::move(a), std::move(b)); }
Expr NE(Expr a, Expr b) { return MakeBinary(BinaryOp::kNE, std::move(a), std::move(b)); }
Expr LT(Expr a, Expr b) { return MakeBinary(BinaryOp::kLT, std::move(a), std::move(b)); }
Expr LE(Expr a, Expr b) { return MakeBinary(BinaryOp::kLE, std::move(a), std::move(b)); }
Expr GT(Expr a, Expr b) { return MakeBinary(BinaryOp::kGT, std::move(a), std::move(b)); }
Expr GE(Expr a, Expr b) { return MakeBinary(BinaryOp::kGE, std::move(a), std::move(b)); }
Expr And(Expr a, Expr b) { return MakeBinary(BinaryOp::kAnd, std::move(a), std::move(b)); }
Expr Or(Expr a, Expr b) { return MakeBinary(BinaryOp::kOr, std::move(a), std::move(b)); }
Expr Not(Expr a) {
  TESSERA_CHECK(a.dtype().is_bool()) << "not of " << a.dtype().ToString();
  return Expr(std::make_shared<const NotNode>(std::move(a)));
}

Expr Select(Expr condition, Expr true_value, Expr false_value) {
  TESSERA_CHECK(condition.dtype().is_bool()) << "select condition";
  MatchTypes(&true_value, &false_value);
  return Expr(std::make_shared<const SelectNode>(std::move(condition), std::move(true_value),
                                                 std::move(false_value)));
}

Expr Cast(DataType dtype, Expr value) {
  return Expr(std::make_shared<const CastNode>(dtype, std::move(value)));
}

Expr Call(CallOp op, std::vector<Expr> args) {
  TESSERA_CHECK(op != CallOp::kExtern) << "use CallExtern for extern calls";
  TESSERA_CHECK_EQ(static_cast<int>(args.size()), CallOpArity(op)) << CallOpName(op);
  if (args.size() == 2) MatchTypes(&args[0], &args[1]);
  DataType dtype = args[0].dtype();
  return Expr(std::make_shared<const CallNode>(dtype, op, std::move(args)));
}

Expr CallExtern(DataType dtype, std::string name, std::vector<Expr> args) {
  TESSERA_CHECK(!name.empty()) << "extern call without a name";
  return Expr(
      std::make_shared<const CallNode>(dtype, CallOp::kExtern, std::move(args), std::move(name)));
}

const int64_t* AsConstInt(const Expr& e) {
  const auto* imm = e.as<IntImmNode>();
  return imm ? &imm->value : nullptr;
}

bool IsConstInt(const Expr& e, int64_t value) {
  const int64_t* v = AsConstInt(e);
  return v != nullptr && *v == value;
}

Expr MaxValue(DataType dtype) {
  if (dtype.is_float()) {
    if (dtype.bits() == 16 && dtype.code() == DataType::Code::kFloat) return FloatImm(dtype, 65504.0);
    if (dtype.bits() == 16) return FloatImm(dtype, 3.38953139e38);  // bfloat16
    if (dtype.bits() == 32) return FloatImm(dtype, std::numeric_limits<float>::max());
    return FloatImm(dtype, std::numeric_limits<double>::max());
  }
  if (dtype.is_bool()) return IntImm(dtype, 1);
  if (dtype.is_uint()) {
    return IntImm(dtype, dtype.bits() >= 64 ? std::numeric_limits<int64_t>::max()
                                            : (int64_t{1} << dtype.bits()) - 1);
  }
  return IntImm(dtype, dtype.bits() >= 64 ? std::numeric_limits<int64_t>::max()
                                          : (int64_t{1} << (dtype.bits() - 1)) - 1);
}

Expr MinValue(DataType dtype) {
  if (dtype.is_float()) {
    Expr max = MaxValue(dtype);  // keep the node alive while reading it
    return FloatImm(dtype, -max.as<FloatImmNode>()->value);
  }
  if (dtype.is_bool() || dtype.is_uint()) return IntImm(dtype, 0);
  return IntImm(dtype, dtype.bits() >= 64 ? std::numeric_limits<int64_t>::min()
                                          : -(int64_t{1} << (dtype.bits() - 1)));
}

}  // namespace tessera
