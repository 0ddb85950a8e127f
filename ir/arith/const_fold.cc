// Constant folding of single operations with each dtype's semantics: two's-complement
// wrap-around for integers, round-to-precision for float32, C truncation for `/` on integers,
// floor semantics for floordiv/floormod.
#include "ir/arith/const_fold.h"

#include <cmath>
#include <functional>
#include <optional>

#include "ir/arith/analyzer.h"

namespace tessera {
namespace arith {
namespace {

bool IsUInt64(DataType t) { return t.is_uint() && t.bits() == 64; }
Expr Const(DataType t, int64_t v) { return IntImm(t, WrapToDType(t, v)); }
Expr BoolConst(bool v) { return IntImm(DataType::Bool(), v ? 1 : 0); }

// The comparison `op` of `a` and `b` under the order `less`, or nullopt when `op` is not a
// comparison. <= and >= are "less or equal", so that NaN compares false as in C.
template <typename T, typename Less>
std::optional<bool> Compare(BinaryOp op, T a, T b, Less less) {
  switch (op) {
    case BinaryOp::kEQ:
      return a == b;
    case BinaryOp::kNE:
      return !(a == b);
    case BinaryOp::kLT:
      return less(a, b);
    case BinaryOp::kLE:
      return less(a, b) || a == b;
    case BinaryOp::kGT:
      return less(b, a);
    case BinaryOp::kGE:
      return less(b, a) || a == b;
    default:
      return std::nullopt;
  }
}

// Folds an integer (or bool) binary operation; false where it must not be folded (division by
// zero).
bool FoldInt(BinaryOp op, DataType t, int64_t a, int64_t b, int64_t* out) {
  const bool u64 = IsUInt64(t);
  const uint64_t ua = static_cast<uint64_t>(a);
  const uint64_t ub = static_cast<uint64_t>(b);
  auto less = [&](int64_t x, int64_t y) {
    return u64 ? static_cast<uint64_t>(x) < static_cast<uint64_t>(y) : x < y;
  };
  if (std::optional<bool> compared = Compare(op, a, b, less)) {
    *out = *compared;
    return true;
  }
  switch (op) {
    case BinaryOp::kAdd:
      *out = WrapAdd(t, a, b);
      return true;
    case BinaryOp::kSub:
      *out = WrapAdd(t, a, static_cast<int64_t>(0 - ub));
      return true;
    case BinaryOp::kMul:
      *out = WrapMul(t, a, b);
      return true;
    case BinaryOp::kDiv:
    case BinaryOp::kFloorDiv:
    case BinaryOp::kFloorMod:
      if (b == 0) return false;
      if (u64) {
        *out = static_cast<int64_t>(op == BinaryOp::kFloorMod ? ua % ub : ua / ub);
      } else if (op == BinaryOp::kDiv) {
        *out = (b == -1) ? WrapMul(t, a, -1) : WrapToDType(t, a / b);
      } else {
        *out = WrapToDType(t, op == BinaryOp::kFloorDiv ? FloorDivInt(a, b) : FloorModInt(a, b));
      }
      return true;
    case BinaryOp::kMin:
      *out = less(b, a) ? b : a;
      return true;
    case BinaryOp::kMax:
      *out = less(a, b) ? b : a;
      return true;
    case BinaryOp::kAnd:
      *out = (a != 0) && (b != 0);
      return true;
    case BinaryOp::kOr:
      *out = (a != 0) || (b != 0);
      return true;
    default:  // the comparisons, above
      return false;
  }
}

// Rounds to the precision of `t`; false for 16-bit floats, which are left unfolded.
bool RoundFloat(DataType t, double* v) {
  if (t.bits() == 64) return true;
  if (t.bits() == 32 && t.code() == DataType::Code::kFloat) {
    *v = static_cast<double>(static_cast<float>(*v));
    return true;
  }
  return false;
}

bool FoldFloat(BinaryOp op, DataType t, double a, double b, Expr* out) {
  if (std::optional<bool> compared = Compare(op, a, b, std::less<double>())) {
    *out = BoolConst(*compared);
    return true;
  }
  double r;
  switch (op) {
    case BinaryOp::kAdd:
      r = a + b;
      break;
    case BinaryOp::kSub:
      r = a - b;
      break;
    case BinaryOp::kMul:
      r = a * b;
      break;
    case BinaryOp::kDiv:
      r = a / b;
      break;
    case BinaryOp::kFloorDiv:
      r = std::floor(a / b);
      break;
    case BinaryOp::kFloorMod:
      r = a - std::floor(a / b) * b;
      break;
    case BinaryOp::kMin:
      r = std::fmin(a, b);
      break;
    case BinaryOp::kMax:
      r = std::fmax(a, b);
      break;
    default:
      return false;
  }
  if (!RoundFloat(t, &r)) return false;
  *out = FloatImm(t, r);
  return true;
}

}  // namespace

int64_t WrapToDType(DataType dtype, int64_t value) {
  if (dtype.is_bool()) return value != 0 ? 1 : 0;
  const int bits = dtype.bits();
  if (!dtype.is_integer() || bits >= 64) return value;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t low = static_cast<uint64_t>(value) & mask;
  if (dtype.is_uint()) return static_cast<int64_t>(low);
  const uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((low ^ sign) - sign);  // sign-extend
}

int64_t WrapAdd(DataType t, int64_t a, int64_t b) {
  return WrapToDType(t, static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)));
}
int64_t WrapMul(DataType t, int64_t a, int64_t b) {
  return WrapToDType(t, static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)));
}

Expr FoldBinary(BinaryOp op, const Expr& a, const Expr& b) {
  const int64_t* ca = AsConstInt(a);
  const int64_t* cb = AsConstInt(b);
  if (ca != nullptr && cb != nullptr) {
    int64_t r;
    if (!FoldInt(op, a.dtype(), *ca, *cb, &r)) return Expr();
    bool to_bool = BinaryOpIsComparison(op) || BinaryOpIsLogical(op);
    return to_bool ? BoolConst(r != 0) : Const(a.dtype(), r);
  }
  const auto* fa = a.as<FloatImmNode>();
  const auto* fb = b.as<FloatImmNode>();
  Expr folded;
  if (fa != nullptr && fb != nullptr && FoldFloat(op, a.dtype(), fa->value, fb->value, &folded)) {
    return folded;
  }
  return Expr();
}

Expr FoldCast(DataType to, const Expr& v) {
  if (const int64_t* c = AsConstInt(v)) {
    if (!to.is_float()) return to.is_bool() ? BoolConst(*c != 0) : Const(to, *c);
    double d = IsUInt64(v.dtype()) ? static_cast<double>(static_cast<uint64_t>(*c))
                                   : static_cast<double>(*c);
    return RoundFloat(to, &d) ? FloatImm(to, d) : Expr();
  }
  const auto* f = v.as<FloatImmNode>();
  if (f == nullptr) return Expr();
  double d = f->value;
  if (to.is_bool()) return BoolConst(d != 0.0);
  if (to.is_float()) return RoundFloat(to, &d) ? FloatImm(to, d) : Expr();
  // Float to integer truncates; out-of-range values are undefined behaviour, so leave them.
  if (!std::isfinite(d) || std::fabs(d) >= 9.0e15) return Expr();
  double truncated = std::trunc(d);
  ConstIntBound range = DTypeBound(to);
  if (truncated < static_cast<double>(range.min) || truncated > static_cast<double>(range.max)) {
    return Expr();
  }
  return Const(to, static_cast<int64_t>(truncated));
}

Expr FoldCall(CallOp op, DataType dtype, const std::vector<Expr>& args) {
  if (op == CallOp::kExtern || args.empty()) return Expr();  // opaque
  if (op == CallOp::kAbs) {
    if (const int64_t* c = AsConstInt(args[0])) return Const(dtype, *c < 0 ? -*c : *c);
  }
  for (const Expr& arg : args) {
    if (arg.as<FloatImmNode>() == nullptr) return Expr();
  }
  double x = args[0].as<FloatImmNode>()->value;
  double r = 0.0;
  switch (op) {
    case CallOp::kExp:
      r = std::exp(x);
      break;
    case CallOp::kLog:
      r = std::log(x);
      break;
    case CallOp::kSqrt:
      r = std::sqrt(x);
      break;
    case CallOp::kRsqrt:
      r = 1.0 / std::sqrt(x);
      break;
    case CallOp::kTanh:
      r = std::tanh(x);
      break;
    case CallOp::kErf:
      r = std::erf(x);
      break;
    case CallOp::kPow:
      r = std::pow(x, args[1].as<FloatImmNode>()->value);
      break;
    case CallOp::kAbs:
      r = std::fabs(x);
      break;
    case CallOp::kSigmoid:
      r = 1.0 / (1.0 + std::exp(-x));
      break;
    case CallOp::kFloor:
      r = std::floor(x);
      break;
    case CallOp::kCeil:
      r = std::ceil(x);
      break;
    case CallOp::kRoundTf32:
      r = RoundToTf32(static_cast<float>(x));
      break;
    case CallOp::kExtern:
      return Expr();
  }
  return RoundFloat(dtype, &r) ? FloatImm(dtype, r) : Expr();
}

}  // namespace arith
}  // namespace tessera
