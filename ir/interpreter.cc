// The interpreter compiles the function once into a tree of closures over a frame of integer
// variable slots, then runs it. Buffers live in "cells" (a double for float dtypes, already
// rounded to the dtype; an int64 for integer and bool dtypes), laid out with the buffer's
// strides. Variables are resolved to slots and buffers to storages at compile time, so the
// run loop does no map lookups. Leaf operands (constants, variables) of binary operators are
// read inline rather than through a closure call, which keeps GMM 256^3 well under a second.
//
// Errors during the run (out-of-bounds access, division by zero, an iteration value outside
// its block's domain) set Frame::failed; every loop checks it and unwinds. The first error
// is reported.
#include "ir/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ir/functor.h"

namespace tessera {
namespace {

union Cell {
  double f;
  int64_t i;
};

struct Storage {
  std::string name;
  DataType dtype;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;  // element strides, row-major unless the buffer has its own
  bool compact = true;
  std::vector<Cell> cells;
  // Allocations start poisoned (NaN, or an unlikely integer): compiled code does not clear
  // them either, so a program that reads memory it never wrote must not pass a check here.
  void Poison() {
    Cell poison;
    if (dtype.is_float()) {
      poison.f = std::numeric_limits<double>::quiet_NaN();
    } else {
      poison.i = dtype.is_bool() ? 1 : (dtype.is_uint() ? 107 : -107);
    }
    std::fill(cells.begin(), cells.end(), poison);
  }
};

struct Frame {
  std::vector<int64_t> vars;
  bool failed = false;
  absl::Status error;
  void Fail(absl::Status status) {
    if (!failed) {
      failed = true;
      error = std::move(status);
    }
  }
};

using IntFn = std::function<int64_t(Frame&)>;
using FloatFn = std::function<double(Frame&)>;

// Extern calls (tensor intrinsics) have no reference semantics here.
absl::Status ExternCallError(const CallNode* op) {
  return absl::InvalidArgumentError(
      absl::StrCat("interpret: cannot interpret extern call ", op->name));
}
using StmtFn = std::function<void(Frame&)>;

int64_t WrapInt(DataType t, int64_t v) {
  if (t.is_bool()) return v != 0;
  int bits = t.bits();
  if (bits >= 64) return v;
  uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t x = static_cast<uint64_t>(v) & mask;
  if (t.is_uint()) return static_cast<int64_t>(x);
  uint64_t sign = uint64_t{1} << (bits - 1);
  return static_cast<int64_t>((x ^ sign) - sign);
}

int64_t FloatToInt(DataType t, double v) {
  if (std::isnan(v)) return 0;
  if (t.is_bool()) return v != 0;
  constexpr double kLimit = 9.2e18;
  if (v >= kLimit) return WrapInt(t, std::numeric_limits<int64_t>::max());
  if (v <= -kLimit) return WrapInt(t, std::numeric_limits<int64_t>::min());
  return WrapInt(t, static_cast<int64_t>(v));  // truncates toward zero
}

double RoundFloat(DataType t, double v) {
  if (t.bits() == 64) return v;
  if (t.bits() == 32 && t.code() == DataType::Code::kFloat) return static_cast<float>(v);
  return RoundToDType(t, v);
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorModInt(int64_t a, int64_t b) { return a - FloorDivInt(a, b) * b; }

// An integer operand read inline: an int64 affine form `constant + sum(coeff * var)` of up
// to kMaxTerms variables (constants, variables, and the index arithmetic of splits and
// strided convolutions), or a closure for anything else.
struct IntOperand {
  static constexpr int kMaxTerms = 4;
  enum Kind : uint8_t { kLinear, kFn } kind = kLinear;
  uint8_t num_terms = 0;
  int32_t slots[kMaxTerms] = {};
  int64_t coeffs[kMaxTerms] = {};
  int64_t constant = 0;
  IntFn fn;
  bool is_const() const { return kind == kLinear && num_terms == 0; }
  int64_t Get(Frame& f) const {
    if (kind == kFn) return fn(f);
    uint64_t v = static_cast<uint64_t>(constant);  // wraps like int64 index arithmetic
    for (int t = 0; t < num_terms; ++t) {
      v += static_cast<uint64_t>(coeffs[t]) * static_cast<uint64_t>(f.vars[slots[t]]);
    }
    return static_cast<int64_t>(v);
  }
};

// Computes the cell offset of an access, checking every index against the shape. Returns
// -1 (and fails the frame) when out of bounds.
struct Indexer {
  Storage* storage = nullptr;
  std::vector<IntOperand> indices;
  int64_t Offset(Frame& f) const {
    int64_t offset = 0;
    const int n = static_cast<int>(indices.size());
    const int64_t* shape = storage->shape.data();
    const int64_t* strides = storage->strides.data();
    for (int d = 0; d < n; ++d) {
      const int64_t v = indices[d].Get(f);
      if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(shape[d])) {
        ReportOutOfRange(f);
        return -1;
      }
      offset += v * strides[d];
    }
    return offset;
  }
  void ReportOutOfRange(Frame& f) const {
    std::vector<int64_t> values;
    for (const IntOperand& op : indices) values.push_back(op.Get(f));
    f.Fail(absl::OutOfRangeError(
        absl::StrCat("interpret: access ", storage->name, "[", absl::StrJoin(values, ", "),
                     "] is out of bounds of shape [", absl::StrJoin(storage->shape, ", "), "]")));
  }
};

// A float operand read inline: a constant, a load, or a closure.
struct FloatOperand {
  enum Kind : uint8_t { kConst, kLoad, kFn } kind = kConst;
  double value = 0;
  Indexer load;
  FloatFn fn;
  double Get(Frame& f) const {
    switch (kind) {
      case kConst:
        return value;
      case kLoad: {
        const int64_t offset = load.Offset(f);
        return offset < 0 ? 0.0 : load.storage->cells[offset].f;
      }
      default:
        return fn(f);
    }
  }
};

class Compiler {
 public:
  // Creates the storage of every buffer of `func`: params, block alloc_buffers, Allocate
  // nodes. Fails on a non-constant shape or a buffer used but never declared.
  absl::Status Prepare(const PrimFunc& func);
  absl::StatusOr<StmtFn> CompileStmt(const Stmt& stmt);

  Storage* StorageOf(const Buffer& buffer) { return storages_.at(buffer.get()).get(); }
  int num_slots() const { return num_slots_; }

 private:
  absl::Status AddStorage(const Buffer& buffer);
  absl::StatusOr<Storage*> Lookup(const Buffer& buffer);
  int Bind(const Var& var);
  // The int64 affine form of `e` over bound variables; false if it has none.
  bool Linearize(const Expr& e, IntOperand* out);
  void Unbind(const Var& var) { in_scope_.erase(var.get()); }

  absl::StatusOr<IntOperand> IntOp(const Expr& e);
  absl::StatusOr<FloatOperand> FloatOp(const Expr& e);
  absl::StatusOr<IntFn> CompileInt(const Expr& e);
  absl::StatusOr<FloatFn> CompileFloat(const Expr& e);
  absl::StatusOr<IntFn> CompileIntBinary(const BinaryNode* op);
  absl::StatusOr<IntFn> CompileComparison(const BinaryNode* op);
  absl::StatusOr<FloatFn> CompileFloatBinary(const BinaryNode* op);
  absl::StatusOr<FloatFn> CompileFloatCall(const CallNode* op);
  absl::StatusOr<Indexer> CompileIndexer(const Buffer& buffer, const std::vector<Expr>& indices);
  absl::StatusOr<StmtFn> CompileStore(const BufferStoreNode* op);
  absl::StatusOr<StmtFn> CompileFor(const ForNode* op);
  absl::StatusOr<StmtFn> CompileBlock(const BlockNode* block, const std::vector<Expr>& values,
                                      const Expr& predicate);

  std::unordered_map<const BufferNode*, std::unique_ptr<Storage>> storages_;
  std::unordered_map<const VarNode*, int> slots_;
  std::unordered_set<const VarNode*> in_scope_;
  int num_slots_ = 0;
};

absl::Status Compiler::AddStorage(const Buffer& buffer) {
  if (storages_.count(buffer.get())) return absl::OkStatus();
  auto storage = std::make_unique<Storage>();
  storage->name = buffer.name();
  storage->dtype = buffer.dtype();
  for (const Expr& e : buffer.shape()) {
    const int64_t* v = AsConstInt(e);
    if (v == nullptr || *v < 0) {
      return absl::InvalidArgumentError(absl::StrCat("interpret: buffer ", buffer.name(),
                                                     " has a non-constant or negative shape"));
    }
    storage->shape.push_back(*v);
  }
  const int n = buffer.ndim();
  storage->strides.assign(n, 1);
  int64_t cells = 1;
  for (int64_t d : storage->shape) cells *= d;
  if (!buffer->strides.empty()) {
    if (static_cast<int>(buffer->strides.size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("interpret: buffer ", buffer.name(), " has ",
                                                     buffer->strides.size(), " strides for ", n,
                                                     " dimensions"));
    }
    int64_t last = 0;
    for (int d = 0; d < n; ++d) {
      const int64_t* s = AsConstInt(buffer->strides[d]);
      if (s == nullptr || *s < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("interpret: buffer ", buffer.name(), " has a non-constant stride"));
      }
      storage->strides[d] = *s;
      last += (storage->shape[d] - 1) * *s;
    }
    cells = cells == 0 ? 0 : last + 1;
    int64_t compact_stride = 1;
    for (int d = n - 1; d >= 0; --d) {
      if (storage->strides[d] != compact_stride) storage->compact = false;
      compact_stride *= storage->shape[d];
    }
  } else {
    for (int d = n - 2; d >= 0; --d) {
      storage->strides[d] = storage->strides[d + 1] * storage->shape[d + 1];
    }
  }
  storage->cells.assign(static_cast<size_t>(std::max<int64_t>(cells, 1)), Cell{0.0});
  storages_[buffer.get()] = std::move(storage);
  return absl::OkStatus();
}

absl::Status Compiler::Prepare(const PrimFunc& func) {
  for (const Buffer& b : func->params) TESSERA_RETURN_IF_ERROR(AddStorage(b));
  absl::Status status;
  PostOrderVisitStmts(func.body(), [&](const Stmt& s) {
    if (!status.ok()) return;
    if (const auto* block = s.as<BlockNode>()) {
      for (const Buffer& b : block->alloc_buffers) {
        if (status.ok()) status = AddStorage(b);
      }
    } else if (const auto* alloc = s.as<AllocateNode>()) {
      status = AddStorage(alloc->buffer);
    }
  });
  return status;
}

absl::StatusOr<Storage*> Compiler::Lookup(const Buffer& buffer) {
  auto it = storages_.find(buffer.get());
  if (it == storages_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("interpret: buffer ", buffer.name(), " is neither a parameter nor allocated"));
  }
  return it->second.get();
}

int Compiler::Bind(const Var& var) {
  auto it = slots_.find(var.get());
  int slot = it != slots_.end() ? it->second : (slots_[var.get()] = num_slots_++);
  in_scope_.insert(var.get());
  return slot;
}

// ---- Expressions ---------------------------------------------------------------------

bool Compiler::Linearize(const Expr& e, IntOperand* out) {
  if (const int64_t* v = AsConstInt(e)) {
    *out = IntOperand();
    out->constant = WrapInt(e.dtype(), *v);
    return true;
  }
  if (e.dtype() != DataType::Int64()) return false;
  if (const auto* var = e.as<VarNode>()) {
    if (!in_scope_.count(var)) return false;  // reported by CompileInt
    *out = IntOperand();
    out->num_terms = 1;
    out->slots[0] = slots_.at(var);
    out->coeffs[0] = 1;
    return true;
  }
  const auto* bin = e.as<BinaryNode>();
  if (bin == nullptr ||
      (bin->op != BinaryOp::kAdd && bin->op != BinaryOp::kSub && bin->op != BinaryOp::kMul)) {
    return false;
  }
  IntOperand a, b;
  if (!Linearize(bin->a, &a) || !Linearize(bin->b, &b)) return false;
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  if (bin->op == BinaryOp::kMul) {
    if (!a.is_const() && !b.is_const()) return false;
    const int64_t scale = a.is_const() ? a.constant : b.constant;
    *out = a.is_const() ? b : a;
    for (int t = 0; t < out->num_terms; ++t) out->coeffs[t] = int64_t(u(out->coeffs[t]) * u(scale));
    out->constant = int64_t(u(out->constant) * u(scale));
    return true;
  }
  const int64_t sign = bin->op == BinaryOp::kAdd ? 1 : -1;
  *out = a;
  out->constant = int64_t(u(a.constant) + u(sign) * u(b.constant));
  for (int t = 0; t < b.num_terms; ++t) {
    const int64_t c = int64_t(u(sign) * u(b.coeffs[t]));
    int found = -1;
    for (int k = 0; k < out->num_terms; ++k) {
      if (out->slots[k] == b.slots[t]) found = k;
    }
    if (found >= 0) {
      out->coeffs[found] = int64_t(u(out->coeffs[found]) + u(c));
    } else {
      if (out->num_terms == IntOperand::kMaxTerms) return false;
      out->slots[out->num_terms] = b.slots[t];
      out->coeffs[out->num_terms++] = c;
    }
  }
  return true;
}

absl::StatusOr<IntOperand> Compiler::IntOp(const Expr& e) {
  IntOperand op;
  if (Linearize(e, &op)) return op;
  op.kind = IntOperand::kFn;
  TESSERA_ASSIGN_OR_RETURN(op.fn, CompileInt(e));
  return op;
}

absl::StatusOr<FloatOperand> Compiler::FloatOp(const Expr& e) {
  FloatOperand op;
  if (const auto* imm = e.as<FloatImmNode>()) {
    op.kind = FloatOperand::kConst;
    op.value = RoundFloat(e.dtype(), imm->value);
  } else if (const auto* load = e.as<BufferLoadNode>(); load != nullptr && e.dtype().is_float()) {
    op.kind = FloatOperand::kLoad;
    TESSERA_ASSIGN_OR_RETURN(op.load, CompileIndexer(load->buffer, load->indices));
  } else {
    op.kind = FloatOperand::kFn;
    TESSERA_ASSIGN_OR_RETURN(op.fn, CompileFloat(e));
  }
  return op;
}

absl::StatusOr<Indexer> Compiler::CompileIndexer(const Buffer& buffer,
                                                 const std::vector<Expr>& indices) {
  Indexer ix;
  TESSERA_ASSIGN_OR_RETURN(ix.storage, Lookup(buffer));
  if (indices.size() != ix.storage->shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat("interpret: access to ", buffer.name(), " has ",
                                                   indices.size(), " indices for ",
                                                   ix.storage->shape.size(), " dimensions"));
  }
  for (const Expr& index : indices) {
    if (!index.dtype().is_integer()) {
      return absl::InvalidArgumentError(
          absl::StrCat("interpret: non-integer index into ", buffer.name()));
    }
    TESSERA_ASSIGN_OR_RETURN(IntOperand op, IntOp(index));
    ix.indices.push_back(std::move(op));
  }
  return ix;
}

template <typename F>
IntFn MakeIntBinary(IntOperand a, IntOperand b, DataType t, F f) {
  if (t.is_int() && t.bits() == 64) {
    return [a = std::move(a), b = std::move(b), f](Frame& fr) { return f(a.Get(fr), b.Get(fr)); };
  }
  return [a = std::move(a), b = std::move(b), f, t](Frame& fr) {
    return WrapInt(t, f(a.Get(fr), b.Get(fr)));
  };
}

absl::StatusOr<IntFn> Compiler::CompileIntBinary(const BinaryNode* op) {
  if (BinaryOpIsComparison(op->op) && op->a.dtype().is_float()) return CompileComparison(op);
  TESSERA_ASSIGN_OR_RETURN(IntOperand a, IntOp(op->a));
  TESSERA_ASSIGN_OR_RETURN(IntOperand b, IntOp(op->b));
  // Arithmetic in uint64 wraps without undefined behavior; WrapInt narrows to the dtype.
  auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  DataType t = op->dtype;
  switch (op->op) {
    case BinaryOp::kAdd:
      return MakeIntBinary(a, b, t, [u](int64_t x, int64_t y) { return int64_t(u(x) + u(y)); });
    case BinaryOp::kSub:
      return MakeIntBinary(a, b, t, [u](int64_t x, int64_t y) { return int64_t(u(x) - u(y)); });
    case BinaryOp::kMul:
      return MakeIntBinary(a, b, t, [u](int64_t x, int64_t y) { return int64_t(u(x) * u(y)); });
    case BinaryOp::kMin:
      return MakeIntBinary(a, b, t, [](int64_t x, int64_t y) { return std::min(x, y); });
    case BinaryOp::kMax:
      return MakeIntBinary(a, b, t, [](int64_t x, int64_t y) { return std::max(x, y); });
    case BinaryOp::kDiv:
    case BinaryOp::kFloorDiv:
    case BinaryOp::kFloorMod: {
      BinaryOp kind = op->op;
      return IntFn([a = std::move(a), b = std::move(b), t, kind](Frame& f) -> int64_t {
        int64_t x = a.Get(f), y = b.Get(f);
        if (y == 0) {
          f.Fail(absl::InvalidArgumentError("interpret: integer division by zero"));
          return 0;
        }
        if (y == -1) return WrapInt(t, kind == BinaryOp::kFloorMod ? 0 : int64_t(0 - uint64_t(x)));
        if (kind == BinaryOp::kDiv) return WrapInt(t, x / y);
        if (kind == BinaryOp::kFloorDiv) return WrapInt(t, FloorDivInt(x, y));
        return WrapInt(t, FloorModInt(x, y));
      });
    }
    case BinaryOp::kEQ:
      return MakeIntBinary(a, b, t, [](int64_t x, int64_t y) -> int64_t { return x == y; });
    case BinaryOp::kNE:
      return MakeIntBinary(a, b, t, [](int64_t x, int64_t y) -> int64_t { return x != y; });
    case BinaryOp::kLT:
      return MakeIntBinary(a, b, t, [](int64_t x, int64_t y) -> int64_t { return x < y; });
    case BinaryOp::kLE:
      return MakeIntBinary(a, b, t, [](int64_t x, int64_t y) -> int64_t { return x <= y; });
    case BinaryOp::kGT:
      return MakeIntBinary(a, b, t, [](int64_t x, int64_t y) -> int64_t { return x > y; });
    case BinaryOp::kGE:
      return MakeIntBinary(a, b, t, [](int64_t x, int64_t y) -> int64_t { return x >= y; });
    case BinaryOp::kAnd:  // Short-circuit, as the generated C is.
      return IntFn([a = std::move(a), b = std::move(b)](Frame& f) -> int64_t {
        return a.Get(f) != 0 && b.Get(f) != 0;
      });
    case BinaryOp::kOr:
      return IntFn([a = std::move(a), b = std::move(b)](Frame& f) -> int64_t {
        return a.Get(f) != 0 || b.Get(f) != 0;
      });
  }
  return absl::InternalError("interpret: unknown binary operator");
}

absl::StatusOr<IntFn> Compiler::CompileComparison(const BinaryNode* op) {
  TESSERA_ASSIGN_OR_RETURN(FloatOperand a, FloatOp(op->a));
  TESSERA_ASSIGN_OR_RETURN(FloatOperand b, FloatOp(op->b));
  auto make = [&](auto cmp) -> IntFn {
    return [a, b, cmp](Frame& f) -> int64_t { return cmp(a.Get(f), b.Get(f)); };
  };
  switch (op->op) {
    case BinaryOp::kEQ:
      return make([](double x, double y) { return x == y; });
    case BinaryOp::kNE:
      return make([](double x, double y) { return x != y; });
    case BinaryOp::kLT:
      return make([](double x, double y) { return x < y; });
    case BinaryOp::kLE:
      return make([](double x, double y) { return x <= y; });
    case BinaryOp::kGT:
      return make([](double x, double y) { return x > y; });
    case BinaryOp::kGE:
      return make([](double x, double y) { return x >= y; });
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("interpret: operator ", BinaryOpName(op->op), " on float operands"));
}

absl::StatusOr<IntFn> Compiler::CompileInt(const Expr& e) {
  const DataType t = e.dtype();
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kVar: {
      IntOperand op;
      if (!Linearize(e, &op)) {
        if (const auto* var = e.as<VarNode>(); var != nullptr && in_scope_.count(var)) {
          const int slot = slots_.at(var);
          return IntFn([slot, t](Frame& f) { return WrapInt(t, f.vars[slot]); });
        }
        return absl::InvalidArgumentError(absl::StrCat(
            "interpret: variable ", e.as<VarNode>()->name, " is used outside of its binding"));
      }
      return IntFn([op](Frame& f) { return op.Get(f); });
    }
    case ExprKind::kFloatImm:
      break;
    case ExprKind::kBinary:
      return CompileIntBinary(e.as<BinaryNode>());
    case ExprKind::kNot: {
      TESSERA_ASSIGN_OR_RETURN(IntOperand a, IntOp(e.as<NotNode>()->a));
      return IntFn([a](Frame& f) -> int64_t { return a.Get(f) == 0; });
    }
    case ExprKind::kSelect: {
      const auto* op = e.as<SelectNode>();
      TESSERA_ASSIGN_OR_RETURN(IntOperand c, IntOp(op->condition));
      TESSERA_ASSIGN_OR_RETURN(IntOperand x, IntOp(op->true_value));
      TESSERA_ASSIGN_OR_RETURN(IntOperand y, IntOp(op->false_value));
      // Only the chosen branch is evaluated: padding reads out of bounds in the other one.
      return IntFn([c, x, y](Frame& f) { return c.Get(f) != 0 ? x.Get(f) : y.Get(f); });
    }
    case ExprKind::kCast: {
      const Expr& value = e.as<CastNode>()->value;
      if (value.dtype().is_float()) {
        TESSERA_ASSIGN_OR_RETURN(FloatOperand v, FloatOp(value));
        return IntFn([v, t](Frame& f) { return FloatToInt(t, v.Get(f)); });
      }
      TESSERA_ASSIGN_OR_RETURN(IntOperand v, IntOp(value));
      return IntFn([v, t](Frame& f) { return WrapInt(t, v.Get(f)); });
    }
    case ExprKind::kBufferLoad: {
      const auto* op = e.as<BufferLoadNode>();
      TESSERA_ASSIGN_OR_RETURN(Indexer ix, CompileIndexer(op->buffer, op->indices));
      return IntFn([ix](Frame& f) -> int64_t {
        int64_t offset = ix.Offset(f);
        return offset < 0 ? 0 : ix.storage->cells[offset].i;
      });
    }
    case ExprKind::kCall: {
      const auto* op = e.as<CallNode>();
      if (op->op == CallOp::kExtern) return ExternCallError(op);
      if (op->op == CallOp::kAbs) {
        TESSERA_ASSIGN_OR_RETURN(IntOperand a, IntOp(op->args[0]));
        return IntFn([a, t](Frame& f) { return WrapInt(t, std::abs(a.Get(f))); });
      }
      if (op->op == CallOp::kFloor || op->op == CallOp::kCeil) return CompileInt(op->args[0]);
      return absl::InvalidArgumentError(
          absl::StrCat("interpret: call ", CallOpName(op->op), " on integer type ", t.ToString()));
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("interpret: float expression where ", t.ToString(), " is expected"));
}

absl::StatusOr<FloatFn> Compiler::CompileFloatBinary(const BinaryNode* op) {
  TESSERA_ASSIGN_OR_RETURN(FloatOperand a, FloatOp(op->a));
  TESSERA_ASSIGN_OR_RETURN(FloatOperand b, FloatOp(op->b));
  auto make = [&](auto fn) -> FloatFn {
    return [a = std::move(a), b = std::move(b), fn](Frame& f) { return fn(a.Get(f), b.Get(f)); };
  };
  switch (op->op) {
    case BinaryOp::kAdd:
      return make([](double x, double y) { return x + y; });
    case BinaryOp::kSub:
      return make([](double x, double y) { return x - y; });
    case BinaryOp::kMul:
      return make([](double x, double y) { return x * y; });
    case BinaryOp::kDiv:
      return make([](double x, double y) { return x / y; });
    case BinaryOp::kMin:
      return make([](double x, double y) { return std::min(x, y); });
    case BinaryOp::kMax:
      return make([](double x, double y) { return std::max(x, y); });
    case BinaryOp::kFloorDiv:
      return make([](double x, double y) { return std::floor(x / y); });
    case BinaryOp::kFloorMod:
      return make([](double x, double y) { return x - std::floor(x / y) * y; });
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("interpret: operator ", BinaryOpName(op->op), " with float result"));
}

absl::StatusOr<FloatFn> Compiler::CompileFloatCall(const CallNode* op) {
  if (op->op == CallOp::kExtern) return ExternCallError(op);
  TESSERA_ASSIGN_OR_RETURN(FloatOperand a, FloatOp(op->args[0]));
  auto unary = [&](double (*fn)(double)) -> FloatFn {
    return [a, fn](Frame& f) { return fn(a.Get(f)); };
  };
  switch (op->op) {
    case CallOp::kExtern:
      break;  // rejected above
    case CallOp::kExp:
      return unary([](double x) { return std::exp(x); });
    case CallOp::kLog:
      return unary([](double x) { return std::log(x); });
    case CallOp::kSqrt:
      return unary([](double x) { return std::sqrt(x); });
    case CallOp::kRsqrt:
      return unary([](double x) { return 1.0 / std::sqrt(x); });
    case CallOp::kTanh:
      return unary([](double x) { return std::tanh(x); });
    case CallOp::kErf:
      return unary([](double x) { return std::erf(x); });
    case CallOp::kAbs:
      return unary([](double x) { return std::fabs(x); });
    case CallOp::kSigmoid:
      return unary([](double x) { return 1.0 / (1.0 + std::exp(-x)); });
    case CallOp::kFloor:
      return unary([](double x) { return std::floor(x); });
    case CallOp::kCeil:
      return unary([](double x) { return std::ceil(x); });
    case CallOp::kRoundTf32:
      return unary([](double x) { return double{RoundToTf32(static_cast<float>(x))}; });
    case CallOp::kPow: {
      TESSERA_ASSIGN_OR_RETURN(FloatOperand b, FloatOp(op->args[1]));
      return FloatFn([a, b](Frame& f) { return std::pow(a.Get(f), b.Get(f)); });
    }
  }
  return absl::InvalidArgumentError("interpret: unknown call");
}

absl::StatusOr<FloatFn> Compiler::CompileFloat(const Expr& e) {
  const DataType t = e.dtype();
  if (!t.is_float()) {
    // An integer expression in a float context (only through casts or float comparisons).
    TESSERA_ASSIGN_OR_RETURN(IntOperand v, IntOp(e));
    if (t.is_uint() && t.bits() == 64) {
      return FloatFn(
          [v](Frame& f) { return static_cast<double>(static_cast<uint64_t>(v.Get(f))); });
    }
    return FloatFn([v](Frame& f) { return static_cast<double>(v.Get(f)); });
  }
  switch (e.kind()) {
    case ExprKind::kFloatImm: {
      double value = RoundFloat(t, e.as<FloatImmNode>()->value);
      return FloatFn([value](Frame&) { return value; });
    }
    case ExprKind::kBinary:
      return CompileFloatBinary(e.as<BinaryNode>());
    case ExprKind::kSelect: {
      const auto* op = e.as<SelectNode>();
      TESSERA_ASSIGN_OR_RETURN(IntOperand c, IntOp(op->condition));
      TESSERA_ASSIGN_OR_RETURN(FloatOperand x, FloatOp(op->true_value));
      TESSERA_ASSIGN_OR_RETURN(FloatOperand y, FloatOp(op->false_value));
      return FloatFn([c, x, y](Frame& f) { return c.Get(f) != 0 ? x.Get(f) : y.Get(f); });
    }
    case ExprKind::kCast: {
      TESSERA_ASSIGN_OR_RETURN(FloatFn v, CompileFloat(e.as<CastNode>()->value));
      if (t.bits() == 64) return v;
      return FloatFn([v, t](Frame& f) { return RoundFloat(t, v(f)); });
    }
    case ExprKind::kBufferLoad: {
      const auto* op = e.as<BufferLoadNode>();
      TESSERA_ASSIGN_OR_RETURN(Indexer ix, CompileIndexer(op->buffer, op->indices));
      return FloatFn([ix](Frame& f) {
        int64_t offset = ix.Offset(f);
        return offset < 0 ? 0.0 : ix.storage->cells[offset].f;
      });
    }
    case ExprKind::kCall:
      return CompileFloatCall(e.as<CallNode>());
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("interpret: malformed expression of type ", t.ToString()));
}

// ---- Statements ----------------------------------------------------------------------

absl::StatusOr<StmtFn> Compiler::CompileStore(const BufferStoreNode* op) {
  TESSERA_ASSIGN_OR_RETURN(Indexer ix, CompileIndexer(op->buffer, op->indices));
  const DataType t = ix.storage->dtype;
  if (op->value.dtype() != t) {
    return absl::InvalidArgumentError(absl::StrCat("interpret: store of ",
                                                   op->value.dtype().ToString(), " into ",
                                                   t.ToString(), " buffer ", op->buffer.name()));
  }
  if (t.is_float()) {
    TESSERA_ASSIGN_OR_RETURN(FloatFn value, CompileFloat(op->value));
    return StmtFn([ix, value, t](Frame& f) {
      double v = RoundFloat(t, value(f));
      int64_t offset = ix.Offset(f);
      if (offset >= 0) ix.storage->cells[offset].f = v;
    });
  }
  TESSERA_ASSIGN_OR_RETURN(IntFn value, CompileInt(op->value));
  return StmtFn([ix, value, t](Frame& f) {
    int64_t v = WrapInt(t, value(f));
    int64_t offset = ix.Offset(f);
    if (offset >= 0) ix.storage->cells[offset].i = v;
  });
}

absl::StatusOr<StmtFn> Compiler::CompileFor(const ForNode* op) {
  TESSERA_ASSIGN_OR_RETURN(IntOperand extent, IntOp(op->extent));
  const int slot = Bind(op->loop_var);
  TESSERA_ASSIGN_OR_RETURN(StmtFn body, CompileStmt(op->body));
  Unbind(op->loop_var);
  // Every loop kind runs serially: parallel and thread-bound iterations are independent in a
  // well-formed program, and vectorized/unrolled loops have serial semantics.
  return StmtFn([extent, slot, body](Frame& f) {
    const int64_t n = extent.Get(f);
    for (int64_t i = 0; i < n; ++i) {
      f.vars[slot] = i;
      body(f);
      if (f.failed) return;
    }
  });
}

// The run-time plan of a block realize, in flat arrays: binding i writes slot[i]; it is a
// plain copy of slot copy_from[i] when >= 0 (loops bound 1:1), else values[i]. Domains are
// [lo, hi) when constant (the usual case), else evaluated from mins/extents.
struct BlockPlan {
  std::string name;
  std::vector<std::string> iter_names;
  std::vector<int32_t> slot, copy_from;
  std::vector<IntOperand> values, mins, extents;
  std::vector<int64_t> lo, hi;
  std::vector<uint8_t> reduction;
  bool constant_domains = true;
  bool has_predicate = false;
  IntOperand predicate;
  std::vector<Storage*> allocs;
  StmtFn init, body;

  void Run(Frame& f) const {
    const int n = static_cast<int>(slot.size());
    int64_t* vars = f.vars.data();
    for (int i = 0; i < n; ++i)
      vars[slot[i]] = copy_from[i] >= 0 ? vars[copy_from[i]] : values[i].Get(f);
    if (has_predicate && predicate.Get(f) == 0) return;
    bool first_step = true;
    for (int i = 0; i < n; ++i) {
      const int64_t v = vars[slot[i]];
      const int64_t l = constant_domains ? lo[i] : mins[i].Get(f);
      const int64_t h = constant_domains ? hi[i] : l + extents[i].Get(f);
      if (v < l || v >= h) {
        f.Fail(absl::OutOfRangeError(absl::StrCat("interpret: block ", name, ": ", iter_names[i],
                                                  " = ", v, " is outside its domain [", l, ", ", h,
                                                  ")")));
        return;
      }
      if (reduction[i] && v != l) first_step = false;
    }
    for (Storage* s : allocs) s->Poison();
    if (init && first_step) {
      init(f);
      if (f.failed) return;
    }
    body(f);
  }
};

absl::StatusOr<StmtFn> Compiler::CompileBlock(const BlockNode* block,
                                              const std::vector<Expr>& values,
                                              const Expr& predicate) {
  if (values.size() != block->iter_vars.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("interpret: block ", block->name, " binds ", values.size(), " values to ",
                     block->iter_vars.size(), " iteration variables"));
  }
  auto plan = std::make_shared<BlockPlan>();
  plan->name = block->name;
  for (size_t i = 0; i < values.size(); ++i) {
    const IterVar& iv = block->iter_vars[i];
    TESSERA_ASSIGN_OR_RETURN(IntOperand value, IntOp(values[i]));
    TESSERA_ASSIGN_OR_RETURN(IntOperand min, IntOp(iv.dom.min));
    TESSERA_ASSIGN_OR_RETURN(IntOperand extent, IntOp(iv.dom.extent));
    const bool plain_copy = value.kind == IntOperand::kLinear && value.num_terms == 1 &&
                            value.coeffs[0] == 1 && value.constant == 0;
    plan->copy_from.push_back(plain_copy ? value.slots[0] : -1);
    plan->constant_domains = plan->constant_domains && min.is_const() && extent.is_const();
    plan->lo.push_back(min.constant);
    plan->hi.push_back(min.constant + extent.constant);
    plan->values.push_back(std::move(value));
    plan->mins.push_back(std::move(min));
    plan->extents.push_back(std::move(extent));
    plan->reduction.push_back(iv.kind == IterKind::kReduction);
    plan->iter_names.push_back(iv.var.name());
  }
  // Iteration variables come into scope after their bindings were compiled.
  for (const IterVar& iv : block->iter_vars) plan->slot.push_back(Bind(iv.var));
  plan->has_predicate = predicate.defined() && !IsConstInt(predicate, 1);
  if (plan->has_predicate) {
    TESSERA_ASSIGN_OR_RETURN(plan->predicate, IntOp(predicate));
  }
  for (const Buffer& b : block->alloc_buffers) {
    TESSERA_ASSIGN_OR_RETURN(Storage * s, Lookup(b));
    plan->allocs.push_back(s);
  }
  if (block->init.defined()) {
    TESSERA_ASSIGN_OR_RETURN(plan->init, CompileStmt(block->init));
  }
  TESSERA_ASSIGN_OR_RETURN(plan->body, CompileStmt(block->body));
  for (const IterVar& iv : block->iter_vars) Unbind(iv.var);
  return StmtFn([plan](Frame& f) { plan->Run(f); });
}

absl::StatusOr<StmtFn> Compiler::CompileStmt(const Stmt& stmt) {
  switch (stmt.kind()) {
    case StmtKind::kBufferStore:
      return CompileStore(stmt.as<BufferStoreNode>());
    case StmtKind::kSeq: {
      std::vector<StmtFn> seq;
      for (const Stmt& s : stmt.as<SeqStmtNode>()->seq) {
        TESSERA_ASSIGN_OR_RETURN(StmtFn fn, CompileStmt(s));
        seq.push_back(std::move(fn));
      }
      return StmtFn([seq = std::move(seq)](Frame& f) {
        for (const StmtFn& fn : seq) {
          fn(f);
          if (f.failed) return;
        }
      });
    }
    case StmtKind::kIfThenElse: {
      const auto* op = stmt.as<IfThenElseNode>();
      TESSERA_ASSIGN_OR_RETURN(IntOperand cond, IntOp(op->condition));
      TESSERA_ASSIGN_OR_RETURN(StmtFn then_case, CompileStmt(op->then_case));
      StmtFn else_case;
      if (op->else_case.defined()) {
        TESSERA_ASSIGN_OR_RETURN(else_case, CompileStmt(op->else_case));
      }
      return StmtFn([cond, then_case, else_case](Frame& f) {
        if (cond.Get(f) != 0) {
          then_case(f);
        } else if (else_case) {
          else_case(f);
        }
      });
    }
    case StmtKind::kEvaluate: {
      const Expr& value = stmt.as<EvaluateNode>()->value;
      if (value.dtype().is_float()) {
        TESSERA_ASSIGN_OR_RETURN(FloatFn fn, CompileFloat(value));
        return StmtFn([fn](Frame& f) { fn(f); });
      }
      TESSERA_ASSIGN_OR_RETURN(IntFn fn, CompileInt(value));
      return StmtFn([fn](Frame& f) { fn(f); });
    }
    case StmtKind::kFor:
      return CompileFor(stmt.as<ForNode>());
    case StmtKind::kBlock:
      return CompileBlock(stmt.as<BlockNode>(), {}, Expr());
    case StmtKind::kBlockRealize: {
      const auto* op = stmt.as<BlockRealizeNode>();
      return CompileBlock(op->block.get(), op->iter_values, op->predicate);
    }
    case StmtKind::kAllocate: {
      const auto* op = stmt.as<AllocateNode>();
      TESSERA_ASSIGN_OR_RETURN(Storage * s, Lookup(op->buffer));
      TESSERA_ASSIGN_OR_RETURN(StmtFn body, CompileStmt(op->body));
      return StmtFn([s, body](Frame& f) {
        s->Poison();
        body(f);
      });
    }
  }
  return absl::InternalError("interpret: unknown statement");
}

// ---- Arguments -----------------------------------------------------------------------

// Visits the row-major logical index of every element with its cell offset.
template <typename F>
void ForEachElement(const Storage& s, F fn) {
  const int n = static_cast<int>(s.shape.size());
  int64_t total = 1;
  for (int64_t d : s.shape) total *= d;
  if (s.compact) {
    for (int64_t i = 0; i < total; ++i) fn(i, i);
    return;
  }
  std::vector<int64_t> index(n, 0);
  for (int64_t i = 0; i < total; ++i) {
    int64_t offset = 0;
    for (int d = 0; d < n; ++d) offset += index[d] * s.strides[d];
    fn(i, offset);
    for (int d = n - 1; d >= 0; --d) {
      if (++index[d] < s.shape[d]) break;
      index[d] = 0;
    }
  }
}

bool Is64BitInt(DataType t) { return t.is_integer() && t.bits() == 64; }

void CopyIn(const NDArray& array, Storage* s) {
  const DataType t = s->dtype;
  ForEachElement(*s, [&](int64_t i, int64_t offset) {
    if (t.is_float()) {
      s->cells[offset].f = array.GetFlat(i);
    } else if (Is64BitInt(t)) {
      s->cells[offset].i = static_cast<const int64_t*>(array.data())[i];
    } else {
      s->cells[offset].i = static_cast<int64_t>(array.GetFlat(i));
    }
  });
}

void CopyOut(const Storage& s, NDArray* array) {
  const DataType t = s.dtype;
  ForEachElement(s, [&](int64_t i, int64_t offset) {
    if (t.is_float()) {
      array->SetFlat(i, s.cells[offset].f);
    } else if (Is64BitInt(t)) {
      static_cast<int64_t*>(array->data())[i] = s.cells[offset].i;
    } else {
      array->SetFlat(i, static_cast<double>(s.cells[offset].i));
    }
  });
}

}  // namespace

absl::Status Interpret(const PrimFunc& func, const std::vector<NDArray*>& args) {
  if (!func.defined() || !func.body().defined()) {
    return absl::InvalidArgumentError("interpret: undefined function");
  }
  const std::vector<Buffer>& params = func.params();
  if (args.size() != params.size()) {
    return absl::InvalidArgumentError(absl::StrCat("interpret ", func.name(), ": expected ",
                                                   params.size(), " arguments, got ", args.size()));
  }
  Compiler compiler;
  TESSERA_RETURN_IF_ERROR(compiler.Prepare(func));
  for (size_t i = 0; i < args.size(); ++i) {
    const Buffer& p = params[i];
    if (args[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("interpret ", func.name(), ": argument ", i, " (", p.name(), ") is null"));
    }
    if (args[i]->dtype() != p.dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat("interpret ", func.name(), ": argument ", i, " (", p.name(), ") has dtype ",
                       args[i]->dtype().ToString(), ", expected ", p.dtype().ToString()));
    }
    const Storage* s = compiler.StorageOf(p);
    if (args[i]->shape() != s->shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("interpret ", func.name(), ": argument ", i, " (", p.name(), ") has shape ",
                       args[i]->ShapeString(), ", expected [", absl::StrJoin(s->shape, ", "), "]"));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(StmtFn program, compiler.CompileStmt(func.body()));
  for (size_t i = 0; i < args.size(); ++i) CopyIn(*args[i], compiler.StorageOf(params[i]));
  Frame frame;
  frame.vars.assign(static_cast<size_t>(compiler.num_slots()) + 1, 0);
  program(frame);
  // Arguments are written back even on failure: a partial result helps debugging, and the
  // caller sees the error either way.
  for (size_t i = 0; i < args.size(); ++i) CopyOut(*compiler.StorageOf(params[i]), args[i]);
  return frame.error;
}

}  // namespace tessera
