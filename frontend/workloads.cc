// The workload table (gathered from the per-family files), lookup, parameter resolution and
// validation common to all workloads, and the shape-override parser.
#include "frontend/workloads.h"

#include <algorithm>
#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "frontend/workloads_internal.h"
#include "ir/functor.h"

namespace tessera {
namespace {

using workloads_internal::ShapeMap;
using workloads_internal::WorkloadDef;

// Wraps both factors of every reduction update C = C + x * y in round_tf32.
class Tf32Rounder : public IRMutator {
 protected:
  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    const auto* sum = op->value.as<BinaryNode>();
    const auto* acc = sum != nullptr ? sum->a.as<BufferLoadNode>() : nullptr;
    const auto* product = sum != nullptr ? sum->b.as<BinaryNode>() : nullptr;
    if (sum == nullptr || sum->op != BinaryOp::kAdd || acc == nullptr ||
        !acc->buffer.same_as(op->buffer) || product == nullptr || product->op != BinaryOp::kMul) {
      return IRMutator::VisitStmt_(op, self);
    }
    return BufferStore(
        op->buffer,
        sum->a + Call(CallOp::kRoundTf32, {product->a}) * Call(CallOp::kRoundTf32, {product->b}),
        op->indices);
  }
};

PrimFunc RoundProductOperandsToTf32(const PrimFunc& func) {
  return func.WithBody(Tf32Rounder().VisitStmt(func.body()));
}

// The paper's operators first, in its order, then the extra ones.
constexpr const char* kOrder[] = {"GMM",        "C1D",        "C2D",      "C3D",
                                  "DEP",        "MAX_POOL",   "DIL",      "GRP",
                                  "T2D",        "CAP",        "NRM",      "SFM",
                                  "CBR",        "TBG",        "GEMV",     "DENSE_BIAS_RELU",
                                  "LINEAR",     "LAYER_NORM", "RMS_NORM", "TRANSPOSE",
                                  "REDUCE_SUM", "ELEMENTWISE"};

const std::vector<WorkloadDef>& Defs() {
  static const std::vector<WorkloadDef>* defs = [] {
    auto* all = new std::vector<WorkloadDef>();
    for (auto family : {workloads_internal::MatmulWorkloads, workloads_internal::ConvWorkloads,
                        workloads_internal::NormWorkloads}) {
      for (WorkloadDef& def : family()) all->push_back(std::move(def));
    }
    auto rank = [](const WorkloadDef& d) {
      return std::find_if(std::begin(kOrder), std::end(kOrder),
                          [&](const char* n) { return d.info.name == n; }) -
             std::begin(kOrder);
    };
    std::stable_sort(all->begin(), all->end(),
                     [&](const WorkloadDef& a, const WorkloadDef& b) { return rank(a) < rank(b); });
    return all;
  }();
  return *defs;
}

absl::StatusOr<const WorkloadDef*> FindDef(const std::string& name) {
  const std::string upper = absl::AsciiStrToUpper(name);
  for (const WorkloadDef& def : Defs()) {
    if (def.info.name == upper) return &def;
  }
  std::vector<std::string> names;
  for (const WorkloadDef& def : Defs()) names.push_back(def.info.name);
  return absl::NotFoundError(
      absl::StrCat("unknown workload '", name, "' (known: ", absl::StrJoin(names, ", "), ")"));
}

// The minimum value of a parameter: padding may be zero, everything else is positive.
int64_t MinimumOf(const std::string& param) { return param == "padding" ? 0 : 1; }

}  // namespace

const std::vector<WorkloadInfo>& ListWorkloads() {
  static const std::vector<WorkloadInfo>* infos = [] {
    auto* out = new std::vector<WorkloadInfo>();
    for (const WorkloadDef& def : Defs()) out->push_back(def.info);
    return out;
  }();
  return *infos;
}

absl::StatusOr<WorkloadInfo> FindWorkload(const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(const WorkloadDef* def, FindDef(name));
  return def->info;
}

absl::StatusOr<PrimFunc> MakeWorkload(const std::string& name,
                                      const std::map<std::string, int64_t>& shape,
                                      const std::string& dtype, const std::string& acc) {
  TESSERA_ASSIGN_OR_RETURN(const WorkloadDef* def, FindDef(name));
  const WorkloadInfo& info = def->info;
  ShapeMap values;
  for (const WorkloadParam& p : info.params) values[p.name] = p.default_value;
  for (const auto& [key, value] : shape) {
    if (!values.count(key)) {
      std::vector<std::string> names;
      for (const WorkloadParam& p : info.params) names.push_back(p.name);
      return absl::InvalidArgumentError(absl::StrCat(info.name, ": unknown shape parameter '", key,
                                                     "' (parameters: ", absl::StrJoin(names, ", "),
                                                     ")"));
    }
    if (value < MinimumOf(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat(info.name, ": ", key, "=", value, " must be ",
                       MinimumOf(key) == 0 ? "non-negative" : "positive"));
    }
    values[key] = value;
  }
  const std::string dtype_name = dtype.empty() ? info.dtypes.front() : dtype;
  if (std::find(info.dtypes.begin(), info.dtypes.end(), dtype_name) == info.dtypes.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat(info.name, ": dtype '", dtype_name,
                     "' not supported (supported: ", absl::StrJoin(info.dtypes, ", "), ")"));
  }
  TESSERA_ASSIGN_OR_RETURN(DataType parsed, DataType::Parse(dtype_name));
  DataType accumulator = parsed.is_int() ? DataType::Int32() : parsed;
  const bool listed =
      std::find(info.accumulators.begin(), info.accumulators.end(), acc) != info.accumulators.end();
  if (acc == kTf32) {
    if (!listed || parsed != DataType::Float32()) {
      return absl::InvalidArgumentError(absl::StrCat(
          info.name, ": cannot multiply ", dtype_name, " at tf32 (",
          listed ? "tf32 rounds float32 operands" : "only products and convolutions take tf32",
          ")"));
    }
    TESSERA_ASSIGN_OR_RETURN(PrimFunc func, def->build(values, parsed, accumulator));
    return RoundProductOperandsToTf32(func);
  }
  if (!acc.empty() && acc != dtype_name) {
    const bool narrow_float = parsed.is_float() && parsed.bits() == 16;
    if (!narrow_float || !listed) {
      return absl::InvalidArgumentError(
          absl::StrCat(info.name, ": cannot accumulate ", dtype_name, " in '", acc, "' (",
                       info.accumulators.empty() || !narrow_float
                           ? absl::StrCat(dtype_name, " accumulates in its own dtype")
                           : "float16 and bfloat16 may accumulate in float32",
                       ")"));
    }
    TESSERA_ASSIGN_OR_RETURN(accumulator, DataType::Parse(acc));
  }
  return def->build(values, parsed, accumulator);
}

std::string PrecisionName(const std::string& dtype, const std::string& acc) {
  if (acc == kTf32) return kTf32;
  return acc.empty() || acc == dtype ? dtype : absl::StrCat(dtype, "->", acc);
}

namespace workloads_internal {

Expr Widened(const Expr& x, DataType acc) { return x.dtype() == acc ? x : Cast(acc, x); }

}  // namespace workloads_internal

absl::StatusOr<std::map<std::string, int64_t>> ParseShapeOverrides(const std::string& text) {
  std::map<std::string, int64_t> out;
  if (absl::StripAsciiWhitespace(text).empty()) return out;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    std::vector<absl::string_view> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape override '", std::string(item), "' is not of the form NAME=VALUE"));
    }
    std::string key(absl::StripAsciiWhitespace(kv[0]));
    absl::string_view value_text = absl::StripAsciiWhitespace(kv[1]);
    int64_t value = 0;
    if (key.empty() || !absl::SimpleAtoi(value_text, &value)) {
      return absl::InvalidArgumentError(absl::StrCat("shape override '", std::string(item),
                                                     "' needs a name and an integer value"));
    }
    if (!out.emplace(key, value).second) {
      return absl::InvalidArgumentError(absl::StrCat("shape override '", key, "' is given twice"));
    }
  }
  return out;
}

}  // namespace tessera
