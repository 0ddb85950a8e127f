// IR JSON writer and reader (format: docs/formats.md, "IR JSON").
//
// The writer walks a function once, giving every Var and Buffer an index in its function's
// tables the first time it is met; the reader rebuilds the tables first (buffers may refer to
// variables and to earlier buffers in their shapes) and then the body, so every reference to
// index k yields the very same Var or Buffer node. Nodes are rebuilt with their exact dtypes;
// the reader re-checks the invariants that the IR's constructors enforce with TESSERA_CHECK
// (index counts, operand types, thread tags) and reports violations as kInvalidArgument
// instead, so no input can crash it.
#include "ir/serialize.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/serialize_json.h"

namespace tessera {
namespace {

using json = nlohmann::json;

constexpr char kVersionKey[] = "tessera_ir";
// Deeper nesting is rejected (the reader recurses once per level).
constexpr int kMaxDepth = 1000;

constexpr BinaryOp kBinaryOps[] = {
    BinaryOp::kAdd,      BinaryOp::kSub,      BinaryOp::kMul, BinaryOp::kDiv,
    BinaryOp::kFloorDiv, BinaryOp::kFloorMod, BinaryOp::kMin, BinaryOp::kMax,
    BinaryOp::kEQ,       BinaryOp::kNE,       BinaryOp::kLT,  BinaryOp::kLE,
    BinaryOp::kGT,       BinaryOp::kGE,       BinaryOp::kAnd, BinaryOp::kOr,
};

// The dtype a binary node gets from MakeBinary; the writer spells out any other one.
DataType DerivedBinaryType(BinaryOp op, DataType a) {
  return BinaryOpIsComparison(op) || BinaryOpIsLogical(op) ? DataType::Bool() : a;
}

// ---- Writing ----------------------------------------------------------------------------

json EncodeDouble(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

class Writer {
 public:
  json Function(const PrimFunc& f, const std::string& key) {
    json out = json::object();
    out["name"] = f->name;
    if (key != f->name) out["key"] = key;
    json params = json::array();
    for (const Buffer& b : f->params) params.push_back(BufferRef(b));
    out["params"] = std::move(params);
    if (!f->attrs.empty()) out["attrs"] = Annots(f->attrs);
    out["body"] = S(f->body);
    out["vars"] = std::move(vars_);
    out["buffers"] = std::move(buffers_);
    return out;
  }

 private:
  json VarRef(const Var& v) {
    auto it = var_index_.find(v.get());
    if (it != var_index_.end()) return it->second;
    int index = static_cast<int>(vars_.size());
    vars_.push_back(json::array({v->name, v->dtype.ToString()}));
    var_index_.emplace(v.get(), index);
    return index;
  }

  json BufferRef(const Buffer& b) {
    if (!b.defined()) return nullptr;
    auto it = buffer_index_.find(b.get());
    if (it != buffer_index_.end()) return it->second;
    // The shape may introduce variables (and, in principle, other buffers) first.
    json def = json::object();
    def["name"] = b->name;
    def["dtype"] = b->dtype.ToString();
    def["shape"] = Exprs(b->shape);
    def["scope"] = b->scope;
    if (!b->strides.empty()) def["strides"] = Exprs(b->strides);
    int index = static_cast<int>(buffers_.size());
    buffers_.push_back(std::move(def));
    buffer_index_.emplace(b.get(), index);
    return index;
  }

  json Exprs(const std::vector<Expr>& exprs) {
    json out = json::array();
    for (const Expr& e : exprs) out.push_back(E(e));
    return out;
  }

  json E(const Expr& e) {
    if (!e.defined()) return nullptr;
    switch (e.kind()) {
      case ExprKind::kIntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        if (e.dtype() == DataType::Int64()) return v;
        return json::array({"i", e.dtype().ToString(), v});
      }
      case ExprKind::kFloatImm:
        return json::array({"f", e.dtype().ToString(), EncodeDouble(e.as<FloatImmNode>()->value)});
      case ExprKind::kVar:
        return json::array(
            {"v", VarRef(Var(std::static_pointer_cast<const VarNode>(e.node_ptr())))});
      case ExprKind::kBinary: {
        const auto* op = e.as<BinaryNode>();
        json out = json::array({BinaryOpName(op->op), E(op->a), E(op->b)});
        if (!op->a.defined() || e.dtype() != DerivedBinaryType(op->op, op->a.dtype())) {
          out.push_back(e.dtype().ToString());
        }
        return out;
      }
      case ExprKind::kNot:
        return json::array({"!", E(e.as<NotNode>()->a)});
      case ExprKind::kSelect: {
        const auto* op = e.as<SelectNode>();
        return json::array({"select", E(op->condition), E(op->true_value), E(op->false_value)});
      }
      case ExprKind::kCast:
        return json::array({"cast", e.dtype().ToString(), E(e.as<CastNode>()->value)});
      case ExprKind::kBufferLoad: {
        const auto* op = e.as<BufferLoadNode>();
        return json::array({"load", BufferRef(op->buffer), Exprs(op->indices)});
      }
      case ExprKind::kCall: {
        const auto* op = e.as<CallNode>();
        if (op->op == CallOp::kExtern) {
          return json::array({"call_extern", op->name, e.dtype().ToString(), Exprs(op->args)});
        }
        json out = json::array({"call", CallOpName(op->op), Exprs(op->args)});
        if (op->args.empty() || !op->args[0].defined() || e.dtype() != op->args[0].dtype()) {
          out.push_back(e.dtype().ToString());
        }
        return out;
      }
    }
    TESSERA_UNREACHABLE() << "expression kind " << static_cast<int>(e.kind());
    return nullptr;
  }

  json Region(const BufferRegion& r) {
    json ranges = json::array();
    for (const Range& range : r.region)
      ranges.push_back(json::array({E(range.min), E(range.extent)}));
    return json::array({BufferRef(r.buffer), std::move(ranges)});
  }

  json Regions(const std::vector<BufferRegion>& regions) {
    json out = json::array();
    for (const BufferRegion& r : regions) out.push_back(Region(r));
    return out;
  }

  json BlockFields(const BlockNode* b) {
    json out = json::object();
    out["name"] = b->name;
    json iters = json::array();
    for (const IterVar& iv : b->iter_vars) {
      iters.push_back(
          json::array({VarRef(iv.var), E(iv.dom.min), E(iv.dom.extent), IterKindName(iv.kind)}));
    }
    out["iter_vars"] = std::move(iters);
    if (!b->alloc_buffers.empty()) {
      json allocs = json::array();
      for (const Buffer& buf : b->alloc_buffers) allocs.push_back(BufferRef(buf));
      out["alloc_buffers"] = std::move(allocs);
    }
    out["reads"] = Regions(b->reads);
    out["writes"] = Regions(b->writes);
    if (b->init.defined()) out["init"] = S(b->init);
    out["body"] = S(b->body);
    if (!b->annotations.empty()) out["annotations"] = Annots(b->annotations);
    return out;
  }

  json S(const Stmt& s) {
    if (!s.defined()) return nullptr;
    json out = json::object();
    switch (s.kind()) {
      case StmtKind::kBufferStore: {
        const auto* op = s.as<BufferStoreNode>();
        out["op"] = "store";
        out["buffer"] = BufferRef(op->buffer);
        out["indices"] = Exprs(op->indices);
        out["value"] = E(op->value);
        return out;
      }
      case StmtKind::kSeq: {
        json seq = json::array();
        for (const Stmt& child : s.as<SeqStmtNode>()->seq) seq.push_back(S(child));
        out["op"] = "seq";
        out["seq"] = std::move(seq);
        return out;
      }
      case StmtKind::kIfThenElse: {
        const auto* op = s.as<IfThenElseNode>();
        out["op"] = "if";
        out["condition"] = E(op->condition);
        out["then"] = S(op->then_case);
        if (op->else_case.defined()) out["else"] = S(op->else_case);
        return out;
      }
      case StmtKind::kEvaluate:
        out["op"] = "evaluate";
        out["value"] = E(s.as<EvaluateNode>()->value);
        return out;
      case StmtKind::kFor: {
        const auto* op = s.as<ForNode>();
        out["op"] = "for";
        out["var"] = VarRef(op->loop_var);
        out["extent"] = E(op->extent);
        out["kind"] = ForKindName(op->for_kind);
        if (!op->thread_tag.empty()) out["thread_tag"] = op->thread_tag;
        if (!op->annotations.empty()) out["annotations"] = Annots(op->annotations);
        out["body"] = S(op->body);
        return out;
      }
      case StmtKind::kBlock:
        out = BlockFields(s.as<BlockNode>());
        out["op"] = "block";
        return out;
      case StmtKind::kBlockRealize: {
        const auto* op = s.as<BlockRealizeNode>();
        out["op"] = "realize";
        out["iter_values"] = Exprs(op->iter_values);
        out["predicate"] = E(op->predicate);
        out["block"] = op->block.defined() ? BlockFields(op->block.get()) : json(nullptr);
        return out;
      }
      case StmtKind::kAllocate: {
        const auto* op = s.as<AllocateNode>();
        out["op"] = "allocate";
        out["buffer"] = BufferRef(op->buffer);
        out["body"] = S(op->body);
        return out;
      }
    }
    TESSERA_UNREACHABLE() << "statement kind " << static_cast<int>(s.kind());
    return nullptr;
  }

  json AnnotValue(const AnnotationValue& value) {
    if (const auto* v = std::get_if<int64_t>(&value)) return json::array({"int", *v});
    if (const auto* v = std::get_if<double>(&value))
      return json::array({"float", EncodeDouble(*v)});
    if (const auto* v = std::get_if<std::string>(&value)) return json::array({"str", *v});
    if (const auto* v = std::get_if<Expr>(&value)) return json::array({"expr", E(*v)});
    return json::array({"ints", std::get<std::vector<int64_t>>(value)});
  }

  json Annots(const Annotations& annotations) {
    json out = json::object();
    for (const auto& [key, value] : annotations) out[key] = AnnotValue(value);
    return out;
  }

  std::unordered_map<const VarNode*, int> var_index_;
  std::unordered_map<const BufferNode*, int> buffer_index_;
  json vars_ = json::array();
  json buffers_ = json::array();
};

// ---- Reading ----------------------------------------------------------------------------

// A location in the document, as a chain of frames on the reader's stack; rendered only when
// an error is reported.
struct Path {
  const Path* parent = nullptr;
  const char* key = nullptr;  // ".key" when set, else "[index]"
  int64_t index = -1;

  Path Key(const char* k) const { return Path{this, k, -1}; }
  Path At(int64_t i) const { return Path{this, nullptr, i}; }

  std::string ToString() const {
    std::string parent_text = parent ? parent->ToString() : "";
    if (parent == nullptr) return key ? key : "";
    if (key != nullptr) return parent_text.empty() ? key : absl::StrCat(parent_text, ".", key);
    return absl::StrCat(parent_text, "[", index, "]");
  }
};

absl::Status Error(const Path& path, const std::string& message) {
  std::string where = path.ToString();
  return absl::InvalidArgumentError(
      absl::StrCat("ir json: ", where.empty() ? "document" : where, ": ", message));
}

const char* TypeName(const json& j) { return j.type_name(); }

absl::Status ExpectArray(const json& j, const Path& path, size_t min_size, size_t max_size) {
  if (!j.is_array()) return Error(path, absl::StrCat("expected array, got ", TypeName(j)));
  if (j.size() < min_size || j.size() > max_size) {
    return Error(path, min_size == max_size
                           ? absl::StrCat("expected ", min_size, " elements, got ", j.size())
                           : absl::StrCat("expected ", min_size, " to ", max_size,
                                          " elements, got ", j.size()));
  }
  return absl::OkStatus();
}

absl::Status ExpectArray(const json& j, const Path& path) {
  return ExpectArray(j, path, 0, std::numeric_limits<size_t>::max());
}

absl::Status ExpectObject(const json& j, const Path& path) {
  if (!j.is_object()) return Error(path, absl::StrCat("expected object, got ", TypeName(j)));
  return absl::OkStatus();
}

// The member `key` of object `j` (which must be an object), or nullptr if absent.
const json* Find(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() ? nullptr : &*it;
}

absl::StatusOr<const json*> Require(const json& j, const char* key, const Path& path) {
  const json* member = Find(j, key);
  if (member == nullptr) return Error(path, absl::StrCat("missing key \"", key, "\""));
  return member;
}

absl::StatusOr<int64_t> GetInt(const json& j, const Path& path) {
  if (j.is_number_unsigned()) {
    uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Error(path, absl::StrCat("integer ", v, " out of int64 range"));
    }
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer()) return j.get<int64_t>();
  return Error(path, absl::StrCat("expected integer, got ", TypeName(j)));
}

absl::StatusOr<std::string> GetString(const json& j, const Path& path) {
  if (!j.is_string()) return Error(path, absl::StrCat("expected string, got ", TypeName(j)));
  return j.get<std::string>();
}

absl::StatusOr<double> GetDouble(const json& j, const Path& path) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return Error(path, absl::StrCat("expected number, \"inf\", \"-inf\" or \"nan\", got ", j.dump()));
}

absl::StatusOr<DataType> GetDataType(const json& j, const Path& path) {
  TESSERA_ASSIGN_OR_RETURN(std::string name, GetString(j, path));
  absl::StatusOr<DataType> dtype = DataType::Parse(name);
  if (!dtype.ok()) return Error(path, std::string(dtype.status().message()));
  return *dtype;
}

class Reader {
 public:
  absl::StatusOr<PrimFunc> Function(const json& j, const Path& path, std::string* key) {
    TESSERA_RETURN_IF_ERROR(ExpectObject(j, path));
    TESSERA_ASSIGN_OR_RETURN(const json* name_json, Require(j, "name", path));
    TESSERA_ASSIGN_OR_RETURN(std::string name, GetString(*name_json, path.Key("name")));
    *key = name;
    if (const json* k = Find(j, "key")) {
      TESSERA_ASSIGN_OR_RETURN(*key, GetString(*k, path.Key("key")));
    }
    TESSERA_RETURN_IF_ERROR(ReadVarTable(j, path));
    TESSERA_RETURN_IF_ERROR(ReadBufferTable(j, path));

    TESSERA_ASSIGN_OR_RETURN(const json* params_json, Require(j, "params", path));
    Path params_path = path.Key("params");
    TESSERA_RETURN_IF_ERROR(ExpectArray(*params_json, params_path));
    std::vector<Buffer> params;
    for (size_t i = 0; i < params_json->size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(Buffer b, BufferAt((*params_json)[i], params_path.At(i)));
      params.push_back(std::move(b));
    }
    Annotations attrs;
    if (const json* a = Find(j, "attrs")) {
      TESSERA_ASSIGN_OR_RETURN(attrs, ReadAnnotations(*a, path.Key("attrs")));
    }
    TESSERA_ASSIGN_OR_RETURN(const json* body_json, Require(j, "body", path));
    TESSERA_ASSIGN_OR_RETURN(Stmt body, ReadStmt(*body_json, path.Key("body"), 0));
    return PrimFunc::Make(std::move(name), std::move(params), std::move(body), std::move(attrs));
  }

 private:
  absl::Status ReadVarTable(const json& j, const Path& path) {
    TESSERA_ASSIGN_OR_RETURN(const json* table, Require(j, "vars", path));
    Path table_path = path.Key("vars");
    TESSERA_RETURN_IF_ERROR(ExpectArray(*table, table_path));
    for (size_t i = 0; i < table->size(); ++i) {
      const json& entry = (*table)[i];
      Path entry_path = table_path.At(i);
      TESSERA_RETURN_IF_ERROR(ExpectArray(entry, entry_path, 2, 2));
      TESSERA_ASSIGN_OR_RETURN(std::string name, GetString(entry[0], entry_path.At(0)));
      TESSERA_ASSIGN_OR_RETURN(DataType dtype, GetDataType(entry[1], entry_path.At(1)));
      vars_.emplace_back(std::move(name), dtype);
    }
    return absl::OkStatus();
  }

  // Buffers are read in order; a shape may refer to variables and to earlier buffers only.
  absl::Status ReadBufferTable(const json& j, const Path& path) {
    TESSERA_ASSIGN_OR_RETURN(const json* table, Require(j, "buffers", path));
    Path table_path = path.Key("buffers");
    TESSERA_RETURN_IF_ERROR(ExpectArray(*table, table_path));
    for (size_t i = 0; i < table->size(); ++i) {
      const json& entry = (*table)[i];
      Path entry_path = table_path.At(i);
      TESSERA_RETURN_IF_ERROR(ExpectObject(entry, entry_path));
      auto node = std::make_shared<BufferNode>();
      TESSERA_ASSIGN_OR_RETURN(const json* name, Require(entry, "name", entry_path));
      TESSERA_ASSIGN_OR_RETURN(node->name, GetString(*name, entry_path.Key("name")));
      TESSERA_ASSIGN_OR_RETURN(const json* dtype, Require(entry, "dtype", entry_path));
      TESSERA_ASSIGN_OR_RETURN(node->dtype, GetDataType(*dtype, entry_path.Key("dtype")));
      TESSERA_ASSIGN_OR_RETURN(const json* shape, Require(entry, "shape", entry_path));
      TESSERA_ASSIGN_OR_RETURN(node->shape, ReadExprs(*shape, entry_path.Key("shape"), 0));
      if (const json* scope = Find(entry, "scope")) {
        TESSERA_ASSIGN_OR_RETURN(node->scope, GetString(*scope, entry_path.Key("scope")));
      }
      if (const json* strides = Find(entry, "strides")) {
        Path strides_path = entry_path.Key("strides");
        TESSERA_ASSIGN_OR_RETURN(node->strides, ReadExprs(*strides, strides_path, 0));
        if (node->strides.size() != node->shape.size()) {
          return Error(strides_path, absl::StrCat(node->strides.size(), " strides for ",
                                                  node->shape.size(), " dimensions"));
        }
      }
      buffers_.emplace_back(std::move(node));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<Var> VarAt(const json& j, const Path& path) {
    TESSERA_ASSIGN_OR_RETURN(int64_t index, GetInt(j, path));
    if (index < 0 || index >= static_cast<int64_t>(vars_.size())) {
      return Error(path, absl::StrCat("variable index ", index, " out of range (", vars_.size(),
                                      " variables)"));
    }
    return vars_[index];
  }

  absl::StatusOr<Buffer> BufferAt(const json& j, const Path& path) {
    TESSERA_ASSIGN_OR_RETURN(int64_t index, GetInt(j, path));
    if (index < 0 || index >= static_cast<int64_t>(buffers_.size())) {
      return Error(path, absl::StrCat("buffer index ", index, " out of range (", buffers_.size(),
                                      " buffers defined before this point)"));
    }
    return buffers_[index];
  }

  absl::StatusOr<std::vector<Expr>> ReadExprs(const json& j, const Path& path, int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path));
    std::vector<Expr> out;
    out.reserve(j.size());
    for (size_t i = 0; i < j.size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(Expr e, ReadExpr(j[i], path.At(i), depth + 1));
      out.push_back(std::move(e));
    }
    return out;
  }

  absl::Status CheckIndexCount(const Buffer& buffer, size_t count, const Path& path) {
    if (static_cast<int>(count) == buffer.ndim()) return absl::OkStatus();
    return Error(path, absl::StrCat("buffer ", buffer.name(), " has ", buffer.ndim(),
                                    " dimensions, got ", count, " indices"));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadIntImm(const json& j, const Path& path,
                                                          int /*depth*/) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 3, 3));
    TESSERA_ASSIGN_OR_RETURN(DataType dtype, GetDataType(j[1], path.At(1)));
    if (!dtype.is_integer() && !dtype.is_bool()) {
      return Error(path.At(1), "integer immediate of non-integer type " + dtype.ToString());
    }
    TESSERA_ASSIGN_OR_RETURN(int64_t v, GetInt(j[2], path.At(2)));
    return IntImm(dtype, v);
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadFloatImm(const json& j, const Path& path,
                                                            int /*depth*/) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 3, 3));
    TESSERA_ASSIGN_OR_RETURN(DataType dtype, GetDataType(j[1], path.At(1)));
    if (!dtype.is_float()) {
      return Error(path.At(1), "float immediate of non-float type " + dtype.ToString());
    }
    TESSERA_ASSIGN_OR_RETURN(double v, GetDouble(j[2], path.At(2)));
    return FloatImm(dtype, v);
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadVarExpr(const json& j, const Path& path,
                                                           int /*depth*/) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 2, 2));
    TESSERA_ASSIGN_OR_RETURN(Var v, VarAt(j[1], path.At(1)));
    return Expr(v);
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadNot(const json& j, const Path& path, int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 2, 2));
    TESSERA_ASSIGN_OR_RETURN(Expr a, ReadExpr(j[1], path.At(1), depth + 1));
    if (!a.dtype().is_bool()) return Error(path.At(1), "operand of ! is " + a.dtype().ToString());
    return Expr(std::make_shared<const NotNode>(std::move(a)));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadSelect(const json& j, const Path& path,
                                                          int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 4, 4));
    TESSERA_ASSIGN_OR_RETURN(Expr c, ReadExpr(j[1], path.At(1), depth + 1));
    TESSERA_ASSIGN_OR_RETURN(Expr t, ReadExpr(j[2], path.At(2), depth + 1));
    TESSERA_ASSIGN_OR_RETURN(Expr f, ReadExpr(j[3], path.At(3), depth + 1));
    if (!c.dtype().is_bool()) {
      return Error(path.At(1), "select condition is " + c.dtype().ToString());
    }
    if (t.dtype() != f.dtype()) {
      return Error(path, absl::StrCat("select branches differ in type: ", t.dtype().ToString(),
                                      " vs ", f.dtype().ToString()));
    }
    return Expr(std::make_shared<const SelectNode>(std::move(c), std::move(t), std::move(f)));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadCast(const json& j, const Path& path,
                                                        int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 3, 3));
    TESSERA_ASSIGN_OR_RETURN(DataType dtype, GetDataType(j[1], path.At(1)));
    TESSERA_ASSIGN_OR_RETURN(Expr v, ReadExpr(j[2], path.At(2), depth + 1));
    return Cast(dtype, std::move(v));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadLoad(const json& j, const Path& path,
                                                        int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 3, 3));
    TESSERA_ASSIGN_OR_RETURN(Buffer buffer, BufferAt(j[1], path.At(1)));
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> indices, ReadExprs(j[2], path.At(2), depth));
    TESSERA_RETURN_IF_ERROR(CheckIndexCount(buffer, indices.size(), path.At(2)));
    return Expr(std::make_shared<const BufferLoadNode>(std::move(buffer), std::move(indices)));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadCall(const json& j, const Path& path,
                                                        int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 3, 4));
    TESSERA_ASSIGN_OR_RETURN(std::string name, GetString(j[1], path.At(1)));
    CallOp call_op;
    if (!ParseCallOp(name, &call_op)) {
      return Error(path.At(1), absl::StrCat("unknown intrinsic \"", name, "\""));
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> args, ReadExprs(j[2], path.At(2), depth));
    if (static_cast<int>(args.size()) != CallOpArity(call_op)) {
      return Error(path.At(2), absl::StrCat(name, " takes ", CallOpArity(call_op),
                                            " arguments, got ", args.size()));
    }
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i].dtype() != args[0].dtype()) {
        return Error(path.At(2), absl::StrCat("arguments of ", name, " differ in type"));
      }
    }
    DataType dtype = args[0].dtype();
    if (j.size() == 4) {
      TESSERA_ASSIGN_OR_RETURN(dtype, GetDataType(j[3], path.At(3)));
    }
    return Expr(std::make_shared<const CallNode>(dtype, call_op, std::move(args)));
  }

  // ["call_extern", name, dtype, [args...]]
  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadCallExtern(const json& j, const Path& path,
                                                              int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 4, 4));
    TESSERA_ASSIGN_OR_RETURN(std::string name, GetString(j[1], path.At(1)));
    if (name.empty()) return Error(path.At(1), "extern call without a name");
    TESSERA_ASSIGN_OR_RETURN(DataType dtype, GetDataType(j[2], path.At(2)));
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> args, ReadExprs(j[3], path.At(3), depth));
    return CallExtern(dtype, std::move(name), std::move(args));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Expr> ReadBinary(const json& j, const Path& path,
                                                          int depth, BinaryOp bop,
                                                          const std::string& op) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 3, 4));
    TESSERA_ASSIGN_OR_RETURN(Expr a, ReadExpr(j[1], path.At(1), depth + 1));
    TESSERA_ASSIGN_OR_RETURN(Expr b, ReadExpr(j[2], path.At(2), depth + 1));
    if (a.dtype() != b.dtype()) {
      return Error(path, absl::StrCat("operands of ", op, " differ in type: ", a.dtype().ToString(),
                                      " vs ", b.dtype().ToString()));
    }
    DataType dtype = DerivedBinaryType(bop, a.dtype());
    if (j.size() == 4) {
      TESSERA_ASSIGN_OR_RETURN(dtype, GetDataType(j[3], path.At(3)));
    }
    return Expr(std::make_shared<const BinaryNode>(dtype, bop, std::move(a), std::move(b)));
  }

  // Expressions (and statements below) recurse; each operator is read by a function of its
  // own, kept out of line so that the recursive frames stay small.
  absl::StatusOr<Expr> ReadExpr(const json& j, const Path& path, int depth) {
    if (depth > kMaxDepth) return Error(path, "nesting too deep");
    if (j.is_number_integer()) {
      TESSERA_ASSIGN_OR_RETURN(int64_t v, GetInt(j, path));
      return IntImm(DataType::Int64(), v);
    }
    if (!j.is_array()) {
      return Error(path, absl::StrCat("expected integer or array expression, got ", TypeName(j)));
    }
    if (j.empty()) return Error(path, "empty expression array");
    if (!j[0].is_string()) {
      return Error(path.At(0), absl::StrCat("expected operator string, got ", TypeName(j[0])));
    }
    const std::string& op = j[0].get_ref<const std::string&>();
    if (op == "i") return ReadIntImm(j, path, depth);
    if (op == "f") return ReadFloatImm(j, path, depth);
    if (op == "v") return ReadVarExpr(j, path, depth);
    if (op == "!") return ReadNot(j, path, depth);
    if (op == "select") return ReadSelect(j, path, depth);
    if (op == "cast") return ReadCast(j, path, depth);
    if (op == "load") return ReadLoad(j, path, depth);
    if (op == "call") return ReadCall(j, path, depth);
    if (op == "call_extern") return ReadCallExtern(j, path, depth);
    for (BinaryOp bop : kBinaryOps) {
      if (op == BinaryOpName(bop)) return ReadBinary(j, path, depth, bop, op);
    }
    return Error(path.At(0), absl::StrCat("unknown expression operator \"", op, "\""));
  }

  absl::StatusOr<Expr> ReadMember(const json& obj, const char* key, const Path& path, int depth) {
    TESSERA_ASSIGN_OR_RETURN(const json* member, Require(obj, key, path));
    return ReadExpr(*member, path.Key(key), depth + 1);
  }

  absl::StatusOr<Stmt> ReadStmtMember(const json& obj, const char* key, const Path& path,
                                      int depth) {
    TESSERA_ASSIGN_OR_RETURN(const json* member, Require(obj, key, path));
    return ReadStmt(*member, path.Key(key), depth + 1);
  }

  absl::StatusOr<std::vector<BufferRegion>> ReadRegions(const json& j, const Path& path,
                                                        int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path));
    std::vector<BufferRegion> out;
    for (size_t i = 0; i < j.size(); ++i) {
      Path rpath = path.At(i);
      TESSERA_RETURN_IF_ERROR(ExpectArray(j[i], rpath, 2, 2));
      BufferRegion region;
      TESSERA_ASSIGN_OR_RETURN(region.buffer, BufferAt(j[i][0], rpath.At(0)));
      const json& ranges = j[i][1];
      Path ranges_path = rpath.At(1);
      TESSERA_RETURN_IF_ERROR(ExpectArray(ranges, ranges_path));
      TESSERA_RETURN_IF_ERROR(CheckIndexCount(region.buffer, ranges.size(), ranges_path));
      for (size_t d = 0; d < ranges.size(); ++d) {
        Path dpath = ranges_path.At(d);
        TESSERA_RETURN_IF_ERROR(ExpectArray(ranges[d], dpath, 2, 2));
        Range range;
        TESSERA_ASSIGN_OR_RETURN(range.min, ReadExpr(ranges[d][0], dpath.At(0), depth + 1));
        TESSERA_ASSIGN_OR_RETURN(range.extent, ReadExpr(ranges[d][1], dpath.At(1), depth + 1));
        region.region.push_back(std::move(range));
      }
      out.push_back(std::move(region));
    }
    return out;
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Block> ReadBlock(const json& j, const Path& path,
                                                          int depth) {
    TESSERA_RETURN_IF_ERROR(ExpectObject(j, path));
    BlockNode node;
    TESSERA_ASSIGN_OR_RETURN(const json* name, Require(j, "name", path));
    TESSERA_ASSIGN_OR_RETURN(node.name, GetString(*name, path.Key("name")));

    TESSERA_ASSIGN_OR_RETURN(const json* iters, Require(j, "iter_vars", path));
    Path iters_path = path.Key("iter_vars");
    TESSERA_RETURN_IF_ERROR(ExpectArray(*iters, iters_path));
    for (size_t i = 0; i < iters->size(); ++i) {
      const json& entry = (*iters)[i];
      Path ipath = iters_path.At(i);
      TESSERA_RETURN_IF_ERROR(ExpectArray(entry, ipath, 4, 4));
      IterVar iv;
      TESSERA_ASSIGN_OR_RETURN(iv.var, VarAt(entry[0], ipath.At(0)));
      TESSERA_ASSIGN_OR_RETURN(iv.dom.min, ReadExpr(entry[1], ipath.At(1), depth + 1));
      TESSERA_ASSIGN_OR_RETURN(iv.dom.extent, ReadExpr(entry[2], ipath.At(2), depth + 1));
      TESSERA_ASSIGN_OR_RETURN(std::string kind, GetString(entry[3], ipath.At(3)));
      if (kind == "S") {
        iv.kind = IterKind::kSpatial;
      } else if (kind == "R") {
        iv.kind = IterKind::kReduction;
      } else {
        return Error(ipath.At(3),
                     absl::StrCat("iteration kind must be \"S\" or \"R\", got \"", kind, "\""));
      }
      node.iter_vars.push_back(std::move(iv));
    }
    if (const json* allocs = Find(j, "alloc_buffers")) {
      Path apath = path.Key("alloc_buffers");
      TESSERA_RETURN_IF_ERROR(ExpectArray(*allocs, apath));
      for (size_t i = 0; i < allocs->size(); ++i) {
        TESSERA_ASSIGN_OR_RETURN(Buffer b, BufferAt((*allocs)[i], apath.At(i)));
        node.alloc_buffers.push_back(std::move(b));
      }
    }
    TESSERA_ASSIGN_OR_RETURN(const json* reads, Require(j, "reads", path));
    TESSERA_ASSIGN_OR_RETURN(node.reads, ReadRegions(*reads, path.Key("reads"), depth));
    TESSERA_ASSIGN_OR_RETURN(const json* writes, Require(j, "writes", path));
    TESSERA_ASSIGN_OR_RETURN(node.writes, ReadRegions(*writes, path.Key("writes"), depth));
    if (const json* init = Find(j, "init")) {
      TESSERA_ASSIGN_OR_RETURN(node.init, ReadStmt(*init, path.Key("init"), depth + 1));
    }
    TESSERA_ASSIGN_OR_RETURN(node.body, ReadStmtMember(j, "body", path, depth));
    if (const json* a = Find(j, "annotations")) {
      TESSERA_ASSIGN_OR_RETURN(node.annotations, ReadAnnotations(*a, path.Key("annotations")));
    }
    return MakeBlock(node);
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Stmt> ReadStore(const json& j, const Path& path,
                                                         int depth) {
    TESSERA_ASSIGN_OR_RETURN(const json* b, Require(j, "buffer", path));
    TESSERA_ASSIGN_OR_RETURN(Buffer buffer, BufferAt(*b, path.Key("buffer")));
    TESSERA_ASSIGN_OR_RETURN(const json* idx, Require(j, "indices", path));
    Path ipath = path.Key("indices");
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> indices, ReadExprs(*idx, ipath, depth));
    TESSERA_RETURN_IF_ERROR(CheckIndexCount(buffer, indices.size(), ipath));
    TESSERA_ASSIGN_OR_RETURN(Expr value, ReadMember(j, "value", path, depth));
    if (value.dtype() != buffer.dtype()) {
      return Error(path.Key("value"),
                   absl::StrCat("store of ", value.dtype().ToString(), " into ",
                                buffer.dtype().ToString(), " buffer ", buffer.name()));
    }
    return Stmt(std::make_shared<const BufferStoreNode>(std::move(buffer), std::move(value),
                                                        std::move(indices)));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Stmt> ReadSeq(const json& j, const Path& path, int depth) {
    TESSERA_ASSIGN_OR_RETURN(const json* seq_json, Require(j, "seq", path));
    Path spath = path.Key("seq");
    TESSERA_RETURN_IF_ERROR(ExpectArray(*seq_json, spath));
    std::vector<Stmt> seq;
    for (size_t i = 0; i < seq_json->size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(Stmt s, ReadStmt((*seq_json)[i], spath.At(i), depth + 1));
      seq.push_back(std::move(s));
    }
    return Stmt(std::make_shared<const SeqStmtNode>(std::move(seq)));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Stmt> ReadIf(const json& j, const Path& path, int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr cond, ReadMember(j, "condition", path, depth));
    TESSERA_ASSIGN_OR_RETURN(Stmt then_case, ReadStmtMember(j, "then", path, depth));
    Stmt else_case;
    if (const json* e = Find(j, "else")) {
      TESSERA_ASSIGN_OR_RETURN(else_case, ReadStmt(*e, path.Key("else"), depth + 1));
    }
    return IfThenElse(std::move(cond), std::move(then_case), std::move(else_case));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Stmt> ReadEvaluate(const json& j, const Path& path,
                                                            int depth) {
    TESSERA_ASSIGN_OR_RETURN(Expr value, ReadMember(j, "value", path, depth));
    return Evaluate(std::move(value));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Stmt> ReadFor(const json& j, const Path& path, int depth) {
    TESSERA_ASSIGN_OR_RETURN(const json* v, Require(j, "var", path));
    TESSERA_ASSIGN_OR_RETURN(Var loop_var, VarAt(*v, path.Key("var")));
    TESSERA_ASSIGN_OR_RETURN(Expr extent, ReadMember(j, "extent", path, depth));
    TESSERA_ASSIGN_OR_RETURN(const json* k, Require(j, "kind", path));
    TESSERA_ASSIGN_OR_RETURN(std::string kind_name, GetString(*k, path.Key("kind")));
    ForKind kind;
    if (!ParseForKind(kind_name, &kind)) {
      return Error(path.Key("kind"), absl::StrCat("unknown loop kind \"", kind_name, "\""));
    }
    std::string tag;
    if (const json* t = Find(j, "thread_tag")) {
      TESSERA_ASSIGN_OR_RETURN(tag, GetString(*t, path.Key("thread_tag")));
    }
    if ((kind == ForKind::kThreadBinding) == tag.empty()) {
      return Error(path, "thread_tag must be set exactly for thread_binding loops");
    }
    Annotations annotations;
    if (const json* a = Find(j, "annotations")) {
      TESSERA_ASSIGN_OR_RETURN(annotations, ReadAnnotations(*a, path.Key("annotations")));
    }
    TESSERA_ASSIGN_OR_RETURN(Stmt body, ReadStmtMember(j, "body", path, depth));
    return For(std::move(loop_var), std::move(extent), kind, std::move(body), std::move(tag),
               std::move(annotations));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Stmt> ReadRealize(const json& j, const Path& path,
                                                           int depth) {
    TESSERA_ASSIGN_OR_RETURN(const json* values_json, Require(j, "iter_values", path));
    Path vpath = path.Key("iter_values");
    TESSERA_ASSIGN_OR_RETURN(std::vector<Expr> values, ReadExprs(*values_json, vpath, depth));
    TESSERA_ASSIGN_OR_RETURN(Expr predicate, ReadMember(j, "predicate", path, depth));
    TESSERA_ASSIGN_OR_RETURN(const json* block_json, Require(j, "block", path));
    TESSERA_ASSIGN_OR_RETURN(Block block, ReadBlock(*block_json, path.Key("block"), depth + 1));
    if (values.size() != block->iter_vars.size()) {
      return Error(vpath, absl::StrCat(values.size(), " iter_values for ", block->iter_vars.size(),
                                       " iteration variables of block ", block->name));
    }
    return BlockRealize(std::move(values), std::move(predicate), std::move(block));
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Stmt> ReadAllocate(const json& j, const Path& path,
                                                            int depth) {
    TESSERA_ASSIGN_OR_RETURN(const json* b, Require(j, "buffer", path));
    TESSERA_ASSIGN_OR_RETURN(Buffer buffer, BufferAt(*b, path.Key("buffer")));
    TESSERA_ASSIGN_OR_RETURN(Stmt body, ReadStmtMember(j, "body", path, depth));
    return Allocate(std::move(buffer), std::move(body));
  }

  absl::StatusOr<Stmt> ReadStmt(const json& j, const Path& path, int depth) {
    if (depth > kMaxDepth) return Error(path, "nesting too deep");
    TESSERA_RETURN_IF_ERROR(ExpectObject(j, path));
    TESSERA_ASSIGN_OR_RETURN(const json* op_json, Require(j, "op", path));
    if (!op_json->is_string()) {
      return Error(path.Key("op"), absl::StrCat("expected string, got ", TypeName(*op_json)));
    }
    const std::string& op = op_json->get_ref<const std::string&>();
    if (op == "store") return ReadStore(j, path, depth);
    if (op == "seq") return ReadSeq(j, path, depth);
    if (op == "if") return ReadIf(j, path, depth);
    if (op == "evaluate") return ReadEvaluate(j, path, depth);
    if (op == "for") return ReadFor(j, path, depth);
    if (op == "realize") return ReadRealize(j, path, depth);
    if (op == "allocate") return ReadAllocate(j, path, depth);
    if (op == "block") return ReadBlock(j, path, depth);
    return Error(path.Key("op"), absl::StrCat("unknown statement op \"", op, "\""));
  }

  absl::StatusOr<AnnotationValue> ReadAnnotationValue(const json& j, const Path& path) {
    TESSERA_RETURN_IF_ERROR(ExpectArray(j, path, 2, 2));
    TESSERA_ASSIGN_OR_RETURN(std::string tag, GetString(j[0], path.At(0)));
    Path vpath = path.At(1);
    if (tag == "int") {
      TESSERA_ASSIGN_OR_RETURN(int64_t v, GetInt(j[1], vpath));
      return AnnotationValue(v);
    }
    if (tag == "float") {
      TESSERA_ASSIGN_OR_RETURN(double v, GetDouble(j[1], vpath));
      return AnnotationValue(v);
    }
    if (tag == "str") {
      TESSERA_ASSIGN_OR_RETURN(std::string v, GetString(j[1], vpath));
      return AnnotationValue(std::move(v));
    }
    if (tag == "expr") {
      TESSERA_ASSIGN_OR_RETURN(Expr v, ReadExpr(j[1], vpath, 0));
      return AnnotationValue(std::move(v));
    }
    if (tag == "ints") {
      TESSERA_RETURN_IF_ERROR(ExpectArray(j[1], vpath));
      std::vector<int64_t> values;
      for (size_t i = 0; i < j[1].size(); ++i) {
        TESSERA_ASSIGN_OR_RETURN(int64_t v, GetInt(j[1][i], vpath.At(i)));
        values.push_back(v);
      }
      return AnnotationValue(std::move(values));
    }
    return Error(path.At(0), absl::StrCat("unknown annotation type \"", tag,
                                          "\" (expected int, float, str, expr or ints)"));
  }

  absl::StatusOr<Annotations> ReadAnnotations(const json& j, const Path& path) {
    TESSERA_RETURN_IF_ERROR(ExpectObject(j, path));
    Annotations out;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string& key = it.key();
      TESSERA_ASSIGN_OR_RETURN(AnnotationValue value,
                               ReadAnnotationValue(it.value(), path.Key(key.c_str())));
      out.emplace(key, std::move(value));
    }
    return out;
  }

  std::vector<Var> vars_;
  std::vector<Buffer> buffers_;
};

// ---- Documents --------------------------------------------------------------------------

json Document(json functions) {
  json doc = json::object();
  doc[kVersionKey] = kIrJsonVersion;
  doc["functions"] = std::move(functions);
  return doc;
}

// Checks the version and returns the function array.
absl::StatusOr<const json*> OpenDocument(const json& doc) {
  Path root;
  TESSERA_RETURN_IF_ERROR(ExpectObject(doc, root));
  TESSERA_ASSIGN_OR_RETURN(const json* version_json, Require(doc, kVersionKey, root));
  TESSERA_ASSIGN_OR_RETURN(int64_t version, GetInt(*version_json, root.Key(kVersionKey)));
  if (version < 1 || version > kIrJsonVersion) {
    return Error(root.Key(kVersionKey),
                 absl::StrCat("unsupported version ", version, " (this reader supports 1 to ",
                              kIrJsonVersion, ")"));
  }
  TESSERA_ASSIGN_OR_RETURN(const json* functions, Require(doc, "functions", root));
  TESSERA_RETURN_IF_ERROR(ExpectArray(*functions, root.Key("functions")));
  return functions;
}

absl::StatusOr<IRModule> ModuleFromJsonImpl(const json& doc) {
  TESSERA_ASSIGN_OR_RETURN(const json* functions, OpenDocument(doc));
  Path root;
  Path fpath = root.Key("functions");
  std::map<std::string, PrimFunc> out;
  for (size_t i = 0; i < functions->size(); ++i) {
    std::string key;
    TESSERA_ASSIGN_OR_RETURN(PrimFunc f, Reader().Function((*functions)[i], fpath.At(i), &key));
    if (!out.emplace(key, std::move(f)).second) {
      return Error(fpath.At(i), absl::StrCat("duplicate function \"", key, "\""));
    }
  }
  return IRModule(std::move(out));
}

absl::StatusOr<PrimFunc> PrimFuncFromJsonImpl(const json& doc) {
  TESSERA_ASSIGN_OR_RETURN(const json* functions, OpenDocument(doc));
  Path root;
  if (functions->size() != 1) {
    return Error(root.Key("functions"),
                 absl::StrCat("expected exactly one function, got ", functions->size()));
  }
  std::string key;
  return Reader().Function((*functions)[0], root.Key("functions").At(0), &key);
}

absl::StatusOr<json> Parse(const std::string& text) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("ir json: ", e.what()));
  }
}

// nlohmann reports misuse by exceptions; none may cross the API.
template <typename T, typename Fn>
absl::StatusOr<T> Guarded(Fn fn) {
  try {
    return fn();
  } catch (const json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("ir json: ", e.what()));
  }
}

}  // namespace

json ToJson(const PrimFunc& f) {
  TESSERA_CHECK(f.defined()) << "ToJson of an undefined function";
  json functions = json::array();
  functions.push_back(Writer().Function(f, f.name()));
  return Document(std::move(functions));
}

json ToJson(const IRModule& m) {
  json functions = json::array();
  for (const auto& [key, f] : m.functions()) functions.push_back(Writer().Function(f, key));
  return Document(std::move(functions));
}

std::string SaveJson(const PrimFunc& f) { return ToJson(f).dump(); }
std::string SaveJson(const IRModule& m) { return ToJson(m).dump(); }

absl::StatusOr<PrimFunc> PrimFuncFromJson(const json& j) {
  return Guarded<PrimFunc>([&] { return PrimFuncFromJsonImpl(j); });
}

absl::StatusOr<IRModule> ModuleFromJson(const json& j) {
  return Guarded<IRModule>([&] { return ModuleFromJsonImpl(j); });
}

absl::StatusOr<PrimFunc> LoadPrimFuncJson(const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(json doc, Parse(text));
  return PrimFuncFromJson(doc);
}

absl::StatusOr<IRModule> LoadModuleJson(const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(json doc, Parse(text));
  return ModuleFromJson(doc);
}

}  // namespace tessera
