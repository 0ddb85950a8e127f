// Structural equality: the lockstep walker of ir/structural_internal.h with a reducer that
// pairs variables and buffers bijectively and records the path of the first difference.
#include "ir/structural_equal.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/structural_internal.h"

namespace tessera {
namespace {

using structural_internal::PairResult;
using structural_internal::Walker;

const char* StmtKindName(const Stmt& s) {
  switch (s.kind()) {
    case StmtKind::kBufferStore:
      return "store";
    case StmtKind::kSeq:
      return "seq";
    case StmtKind::kIfThenElse:
      return "if";
    case StmtKind::kEvaluate:
      return "evaluate";
    case StmtKind::kFor:
      return "for";
    case StmtKind::kBlock:
      return "block";
    case StmtKind::kBlockRealize:
      return "block_realize";
    case StmtKind::kAllocate:
      return "allocate";
  }
  return "?";
}

std::string FormatDouble(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", v);
  return text;
}

// A short description of an expression's head, for diffs.
std::string Describe(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return absl::StrCat(e.as<IntImmNode>()->value);
    case ExprKind::kFloatImm:
      return FormatDouble(e.as<FloatImmNode>()->value);
    case ExprKind::kVar:
      return absl::StrCat("var ", e.as<VarNode>()->name);
    case ExprKind::kBinary:
      return absl::StrCat("binary ", BinaryOpName(e.as<BinaryNode>()->op));
    case ExprKind::kNot:
      return "not";
    case ExprKind::kSelect:
      return "select";
    case ExprKind::kCast:
      return absl::StrCat("cast to ", e.dtype().ToString());
    case ExprKind::kBufferLoad:
      return absl::StrCat("load of ", e.as<BufferLoadNode>()->buffer.name());
    case ExprKind::kCall:
      return e.as<CallNode>()->op == CallOp::kExtern
                 ? absl::StrCat("call_extern ", e.as<CallNode>()->name)
                 : absl::StrCat("call ", CallOpName(e.as<CallNode>()->op));
  }
  return "?";
}

// Normalized bit patterns: -0.0 equals 0.0, every NaN equals every NaN.
bool SameDouble(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b;
}

class EqualReducer {
 public:
  EqualReducer(bool map_free_vars, bool want_diff)
      : map_free_vars_(map_free_vars), want_diff_(want_diff) {}

  const std::string& diff() const { return diff_; }

  void Push(const char* field) {
    if (want_diff_) path_.push_back(absl::StrCat(".", field));
  }
  void PushIndex(int64_t i) {
    if (want_diff_) path_.push_back(absl::StrCat("[", i, "]"));
  }
  void PushKey(const std::string& key) {
    if (want_diff_) path_.push_back(absl::StrCat("[\"", key, "\"]"));
  }
  void Pop() {
    if (want_diff_) path_.pop_back();
  }

  bool Defined(bool a, bool b) {
    return a == b || Fail(a ? "defined" : "null", b ? "defined" : "null");
  }
  bool ExprHead(const Expr& a, const Expr& b) {
    return a.kind() == b.kind() || Fail(Describe(a), Describe(b));
  }
  bool StmtHead(const Stmt& a, const Stmt& b) {
    return a.kind() == b.kind() || Fail(StmtKindName(a), StmtKindName(b));
  }
  bool Count(size_t a, size_t b) {
    return a == b || Fail(absl::StrCat(a, " elements"), absl::StrCat(b, " elements"));
  }
  bool Int(int64_t a, int64_t b) { return a == b || Fail(absl::StrCat(a), absl::StrCat(b)); }
  bool Double(double a, double b) {
    return SameDouble(a, b) || Fail(FormatDouble(a), FormatDouble(b));
  }
  bool Str(const std::string& a, const std::string& b) {
    return a == b || Fail(absl::StrCat("\"", a, "\""), absl::StrCat("\"", b, "\""));
  }
  bool DType(DataType a, DataType b) { return a == b || Fail(a.ToString(), b.ToString()); }

  PairResult PairVar(const Var& a, const Var& b, bool define) {
    return Pair(a.get(), b.get(), define, &vars_, &vars_back_, "var ", a.name(), b.name());
  }
  PairResult PairBuffer(const Buffer& a, const Buffer& b, bool define) {
    return Pair(a.get(), b.get(), define, &buffers_, &buffers_back_, "buffer ", a.name(), b.name());
  }

 private:
  template <typename Node>
  using PairMap = std::unordered_map<const Node*, const Node*>;

  template <typename Node>
  PairResult Pair(const Node* a, const Node* b, bool define, PairMap<Node>* forward,
                  PairMap<Node>* backward, const char* what, const std::string& a_name,
                  const std::string& b_name) {
    auto fa = forward->find(a);
    auto fb = backward->find(b);
    if (fa != forward->end() && fa->second == b) return PairResult::kPaired;
    if (fa != forward->end() || fb != backward->end()) {
      Fail(absl::StrCat(what, a_name, fa != forward->end() ? " (bound elsewhere)" : " (unbound)"),
           absl::StrCat(what, b_name, fb != backward->end() ? " (bound elsewhere)" : " (unbound)"));
      return PairResult::kMismatch;
    }
    if (!define && !map_free_vars_ && a != b) {
      Fail(absl::StrCat("free ", what, a_name), absl::StrCat("free ", what, b_name));
      return PairResult::kMismatch;
    }
    forward->emplace(a, b);
    backward->emplace(b, a);
    return PairResult::kNew;
  }

  bool Fail(const std::string& a, const std::string& b) {
    if (want_diff_ && diff_.empty()) {
      std::string path;
      for (const std::string& seg : path_) path += seg;
      if (!path.empty() && path[0] == '.') path.erase(0, 1);
      diff_ = absl::StrCat(path.empty() ? "(root)" : path, ": ", a, " vs ", b);
    }
    return false;
  }

  const bool map_free_vars_;
  const bool want_diff_;
  std::vector<std::string> path_;
  std::string diff_;
  PairMap<VarNode> vars_, vars_back_;
  PairMap<BufferNode> buffers_, buffers_back_;
};

// Runs `fn(walker)` and returns the diff ("" if equal).
template <typename Fn>
std::string Diff(bool map_free_vars, Fn fn) {
  EqualReducer reducer(map_free_vars, /*want_diff=*/true);
  Walker<EqualReducer> walker(&reducer);
  if (fn(walker)) return "";
  return reducer.diff().empty() ? "(root): differ" : reducer.diff();
}

template <typename Fn>
bool Equal(bool map_free_vars, Fn fn) {
  EqualReducer reducer(map_free_vars, /*want_diff=*/false);
  Walker<EqualReducer> walker(&reducer);
  return fn(walker);
}

bool FuncEqual(Walker<EqualReducer>& w, const PrimFunc& a, const PrimFunc& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return w.Func(*a.get(), *b.get());
}

}  // namespace

bool StructuralEqual(const PrimFunc& a, const PrimFunc& b) {
  return Equal(true, [&](Walker<EqualReducer>& w) { return FuncEqual(w, a, b); });
}

bool StructuralEqual(const IRModule& a, const IRModule& b) {
  if (a.size() != b.size()) return false;
  for (auto x = a.functions().begin(), y = b.functions().begin(); x != a.functions().end();
       ++x, ++y) {
    if (x->first != y->first || !StructuralEqual(x->second, y->second)) return false;
  }
  return true;
}

bool StructuralEqual(const Expr& a, const Expr& b, StructuralEqualOptions options) {
  return Equal(options.map_free_vars, [&](Walker<EqualReducer>& w) { return w.E(a, b); });
}

bool StructuralEqual(const Stmt& a, const Stmt& b, StructuralEqualOptions options) {
  return Equal(options.map_free_vars, [&](Walker<EqualReducer>& w) { return w.S(a, b); });
}

std::string StructuralDiff(const PrimFunc& a, const PrimFunc& b) {
  return Diff(true, [&](Walker<EqualReducer>& w) { return FuncEqual(w, a, b); });
}

std::string StructuralDiff(const Expr& a, const Expr& b, StructuralEqualOptions options) {
  return Diff(options.map_free_vars, [&](Walker<EqualReducer>& w) { return w.E(a, b); });
}

std::string StructuralDiff(const Stmt& a, const Stmt& b, StructuralEqualOptions options) {
  return Diff(options.map_free_vars, [&](Walker<EqualReducer>& w) { return w.S(a, b); });
}

}  // namespace tessera
