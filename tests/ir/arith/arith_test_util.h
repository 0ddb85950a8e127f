// Test helpers for the arithmetic tests: a readable printer (independent of ir/printer.h, so
// failures are legible while that component evolves) and a reference evaluator of integer
// expressions, the oracle of the meaning-preservation tests.
#ifndef TESSERA_TESTS_IR_ARITH_ARITH_TEST_UTIL_H_
#define TESSERA_TESTS_IR_ARITH_ARITH_TEST_UTIL_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "ir/arith/analyzer.h"
#include "ir/expr.h"

namespace tessera {
namespace arith {
namespace testing {

inline std::string Str(const Expr& e) {
  if (!e.defined()) return "<undef>";
  if (const auto* i = e.as<IntImmNode>()) {
    return e.dtype().is_bool() ? (i->value ? "true" : "false") : absl::StrCat(i->value);
  }
  if (const auto* f = e.as<FloatImmNode>()) return absl::StrCat(f->value, "f");
  if (const auto* v = e.as<VarNode>()) return v->name;
  if (const auto* b = e.as<BinaryNode>()) {
    if (BinaryOpIsInfix(b->op)) {
      return absl::StrCat("(", Str(b->a), " ", BinaryOpName(b->op), " ", Str(b->b), ")");
    }
    return absl::StrCat(BinaryOpName(b->op), "(", Str(b->a), ", ", Str(b->b), ")");
  }
  if (const auto* n = e.as<NotNode>()) return absl::StrCat("!", Str(n->a));
  if (const auto* s = e.as<SelectNode>()) {
    return absl::StrCat("select(", Str(s->condition), ", ", Str(s->true_value), ", ",
                        Str(s->false_value), ")");
  }
  if (const auto* c = e.as<CastNode>()) {
    return absl::StrCat(c->dtype.ToString(), "(", Str(c->value), ")");
  }
  if (const auto* l = e.as<BufferLoadNode>()) {
    std::string s = l->buffer.name() + "[";
    for (size_t i = 0; i < l->indices.size(); ++i)
      absl::StrAppend(&s, i ? ", " : "", Str(l->indices[i]));
    return s + "]";
  }
  return "<call>";
}

using Env = std::unordered_map<const VarNode*, int64_t>;

// Evaluates an int64/bool expression with mathematical (non-wrapping) semantics; the tests
// keep values small enough that int64 never overflows.
inline int64_t Eval(const Expr& e, const Env& env) {
  if (const auto* i = e.as<IntImmNode>()) return i->value;
  if (const auto* v = e.as<VarNode>()) return env.at(v);
  if (const auto* n = e.as<NotNode>()) return Eval(n->a, env) == 0;
  if (const auto* s = e.as<SelectNode>()) {
    return Eval(s->condition, env) != 0 ? Eval(s->true_value, env) : Eval(s->false_value, env);
  }
  if (const auto* c = e.as<CastNode>()) {
    int64_t v = Eval(c->value, env);
    return c->dtype.is_bool() ? (v != 0) : v;
  }
  const auto* b = e.as<BinaryNode>();
  if (b == nullptr) return 0;
  int64_t x = Eval(b->a, env);
  int64_t y = Eval(b->b, env);
  switch (b->op) {
    case BinaryOp::kAdd:
      return x + y;
    case BinaryOp::kSub:
      return x - y;
    case BinaryOp::kMul:
      return x * y;
    case BinaryOp::kDiv:
      return x / y;
    case BinaryOp::kFloorDiv:
      return FloorDivInt(x, y);
    case BinaryOp::kFloorMod:
      return FloorModInt(x, y);
    case BinaryOp::kMin:
      return x < y ? x : y;
    case BinaryOp::kMax:
      return x > y ? x : y;
    case BinaryOp::kEQ:
      return x == y;
    case BinaryOp::kNE:
      return x != y;
    case BinaryOp::kLT:
      return x < y;
    case BinaryOp::kLE:
      return x <= y;
    case BinaryOp::kGT:
      return x > y;
    case BinaryOp::kGE:
      return x >= y;
    case BinaryOp::kAnd:
      return x && y;
    case BinaryOp::kOr:
      return x || y;
  }
  return 0;
}

// Random integer expressions over a few bounded variables.
class ExprGenerator {
 public:
  ExprGenerator(Random* rng, std::vector<Var> vars) : rng_(rng), vars_(std::move(vars)) {}

  Expr Gen(int depth) {
    if (depth == 0 || rng_->UniformInt(0, 5) == 0) {
      if (rng_->UniformInt(0, 3) == 0) return Expr(rng_->UniformInt(-9, 17));
      return vars_[rng_->UniformInt(0, vars_.size())];
    }
    static const int64_t kDivisors[] = {1, 2, 3, 4, 8, 16, -4};
    Expr a = Gen(depth - 1);
    switch (rng_->UniformInt(0, 12)) {
      case 0:
      case 1:
        return a + Gen(depth - 1);
      case 2:
        return a - Gen(depth - 1);
      case 3:
        return a * rng_->UniformInt(-3, 9);
      case 4:
        return depth <= 3 ? a * Gen(depth - 1) : a + 1;  // keeps values small
      case 5:
        return FloorDiv(a, kDivisors[rng_->UniformInt(0, 7)]);
      case 6:
        return FloorMod(a, kDivisors[rng_->UniformInt(0, 7)]);
      case 7:
        return Div(a, kDivisors[rng_->UniformInt(0, 7)]);
      case 8:
        return Min(a, Gen(depth - 1));
      case 9:
        return Max(a, Gen(depth - 1));
      case 10:
        return Select(GenCond(depth - 1), a, Gen(depth - 1));
      default:
        return Select(Not(GenCond(depth - 1)), Gen(depth - 1), a);
    }
  }

  Expr GenCond(int depth) {
    Expr a = Gen(depth);
    Expr b = Gen(depth);
    switch (rng_->UniformInt(0, 8)) {
      case 0:
        return LT(a, b);
      case 1:
        return LE(a, b);
      case 2:
        return GT(a, b);
      case 3:
        return GE(a, b);
      case 4:
        return EQ(a, b);
      case 5:
        return NE(a, b);
      case 6:
        return And(LT(a, b), GenCond(0));
      default:
        return Or(GE(a, b), GenCond(0));
    }
  }

 private:
  Random* rng_;
  std::vector<Var> vars_;
};

}  // namespace testing
}  // namespace arith
}  // namespace tessera

#endif  // TESSERA_TESTS_IR_ARITH_ARITH_TEST_UTIL_H_
