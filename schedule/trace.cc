#include "schedule/trace.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "schedule/index_map.h"
#include "schedule/schedule.h"

namespace tessera {
namespace {

constexpr const char* kEnterPostprocName = "EnterPostproc";

char RVPrefix(RVKind kind) {
  switch (kind) {
    case RVKind::kBlock: return 'b';
    case RVKind::kLoop: return 'l';
    case RVKind::kExpr: return 'v';
  }
  return '?';
}

using RVNames = std::map<std::pair<RVKind, int64_t>, std::string>;

nlohmann::json ValueToJson(const InstValue& v, const RVNames& names, bool quote_strings) {
  switch (v.type()) {
    case InstValue::Type::kNone: return "None";
    case InstValue::Type::kInt: return v.as_int();
    case InstValue::Type::kFloat: return v.as_float();
    case InstValue::Type::kString:
      // An IndexMap input is its text form, unquoted ("lambda ...": index_map.h).
      return quote_strings && !IndexMap::IsIndexMapText(v.as_string())
                 ? absl::StrCat("\"", v.as_string(), "\"")
                 : v.as_string();
    case InstValue::Type::kRV: {
      auto it = names.find({v.rv_kind(), v.rv_id()});
      return it == names.end() ? absl::StrCat(std::string(1, RVPrefix(v.rv_kind())), "?", v.rv_id()) : it->second;
    }
    case InstValue::Type::kArray: {
      nlohmann::json arr = nlohmann::json::array();
      for (const InstValue& item : v.items()) arr.push_back(ValueToJson(item, names, quote_strings));
      return arr;
    }
  }
  return nullptr;
}

// Decodes an input (strings are RV names, "None", quoted literals, or IndexMaps: text starting
// with "lambda ", kept as a string) or, with `is_input` false, an attr or decision (strings are
// literals).
absl::StatusOr<InstValue> ValueFromJson(const nlohmann::json& j,
                                        const std::map<std::string, InstValue>& rvs,
                                        bool is_input, const std::string& where) {
  if (j.is_number_integer()) return InstValue::Int(j.get<int64_t>());
  if (j.is_number_float()) return InstValue::Float(j.get<double>());
  if (j.is_boolean()) return InstValue::Int(j.get<bool>() ? 1 : 0);
  if (j.is_null()) return InstValue();
  if (j.is_array()) {
    std::vector<InstValue> items;
    for (const nlohmann::json& item : j) {
      TESSERA_ASSIGN_OR_RETURN(InstValue v, ValueFromJson(item, rvs, is_input, where));
      items.push_back(std::move(v));
    }
    return InstValue::Array(std::move(items));
  }
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (!is_input) return InstValue::String(s);
    if (s == "None") return InstValue();
    if (IndexMap::IsIndexMapText(s)) return InstValue::String(s);
    if (s.size() >= 2 && s.front() == '"' && s.back() == '"') {
      return InstValue::String(s.substr(1, s.size() - 2));
    }
    auto it = rvs.find(s);
    if (it == rvs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": input '", s, "' is not a random variable defined earlier"));
    }
    return it->second;
  }
  return absl::InvalidArgumentError(absl::StrCat(where, ": unsupported value ", j.dump()));
}

// Translates RVs of the recorded trace into RVs of the schedule being replayed.
absl::StatusOr<InstValue> TranslateRVs(const InstValue& v,
                                       const std::map<std::pair<RVKind, int64_t>, InstValue>& map) {
  if (v.is_rv()) {
    auto it = map.find({v.rv_kind(), v.rv_id()});
    if (it == map.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("random variable ", std::string(1, RVPrefix(v.rv_kind())), v.rv_id(), " is not defined"));
    }
    return it->second;
  }
  if (v.is_array()) {
    std::vector<InstValue> items;
    for (const InstValue& item : v.items()) {
      TESSERA_ASSIGN_OR_RETURN(InstValue t, TranslateRVs(item, map));
      items.push_back(std::move(t));
    }
    return InstValue::Array(std::move(items));
  }
  return v;
}

void CollectRVs(const InstValue& v, std::set<std::pair<RVKind, int64_t>>* used) {
  if (v.is_rv()) used->insert({v.rv_kind(), v.rv_id()});
  if (v.is_array()) {
    for (const InstValue& item : v.items()) CollectRVs(item, used);
  }
}

}  // namespace

void Trace::Append(Instruction inst, InstValue decision) {
  insts_.push_back(std::move(inst));
  decisions_.push_back(std::move(decision));
}

void Trace::Pop() {
  if (insts_.empty()) return;
  insts_.pop_back();
  decisions_.pop_back();
}

size_t Trace::PostprocStart() const {
  for (size_t i = 0; i < insts_.size(); ++i) {
    if (std::string(insts_[i].kind->name) == kEnterPostprocName) return i;
  }
  return insts_.size();
}

Trace Trace::WithDecision(size_t index, InstValue decision, bool remove_postproc) const {
  Trace out = *this;
  if (remove_postproc) {
    size_t end = PostprocStart();
    out.insts_.resize(end);
    out.decisions_.resize(end);
  }
  if (index < out.decisions_.size()) out.decisions_[index] = std::move(decision);
  return out;
}

Trace Trace::Simplified(bool remove_postproc) const {
  size_t end = remove_postproc ? PostprocStart() : insts_.size();
  std::set<std::pair<RVKind, int64_t>> used;
  std::vector<bool> keep(end, false);
  for (size_t i = end; i-- > 0;) {
    const Instruction& inst = insts_[i];
    bool outputs_used = false;
    for (const InstValue& out : inst.outputs) {
      if (used.count({out.rv_kind(), out.rv_id()})) outputs_used = true;
    }
    if (inst.kind->is_pure && !outputs_used) continue;
    keep[i] = true;
    for (const InstValue& in : inst.inputs) CollectRVs(in, &used);
  }
  Trace out;
  for (size_t i = 0; i < end; ++i) {
    if (keep[i]) out.Append(insts_[i], decisions_[i]);
  }
  return out;
}

absl::Status Trace::ApplyTo(Schedule* sch, bool remove_postproc,
                            const DecisionProvider& provider) const {
  size_t end = remove_postproc ? PostprocStart() : insts_.size();
  std::map<std::pair<RVKind, int64_t>, InstValue> map;
  for (size_t i = 0; i < end; ++i) {
    const Instruction& inst = insts_[i];
    auto fail = [&](const absl::Status& s) {
      return absl::Status(s.code(), absl::StrCat("instruction ", i, " (", inst.kind->name, "): ",
                                                 s.message()));
    };
    std::vector<InstValue> inputs;
    for (const InstValue& in : inst.inputs) {
      absl::StatusOr<InstValue> t = TranslateRVs(in, map);
      if (!t.ok()) return fail(t.status());
      inputs.push_back(std::move(*t));
    }
    InstValue decision = provider ? provider(i, inst, decisions_[i]) : decisions_[i];
    absl::StatusOr<std::vector<InstValue>> outputs =
        inst.kind->apply(sch, inputs, inst.attrs, decision);
    if (!outputs.ok()) return fail(outputs.status());
    if (outputs->size() != inst.outputs.size()) {
      return fail(absl::InvalidArgumentError(absl::StrCat(
          "produced ", outputs->size(), " outputs where the trace records ", inst.outputs.size())));
    }
    for (size_t k = 0; k < outputs->size(); ++k) {
      map[{inst.outputs[k].rv_kind(), inst.outputs[k].rv_id()}] = (*outputs)[k];
    }
  }
  return absl::OkStatus();
}

std::string Trace::ToJson(bool remove_postproc) const {
  size_t end = remove_postproc ? PostprocStart() : insts_.size();
  RVNames names;
  int64_t counter = 0;
  nlohmann::json insts = nlohmann::json::array();
  nlohmann::json decisions = nlohmann::json::array();
  for (size_t i = 0; i < end; ++i) {
    const Instruction& inst = insts_[i];
    nlohmann::json inputs = nlohmann::json::array();
    for (const InstValue& in : inst.inputs) inputs.push_back(ValueToJson(in, names, true));
    nlohmann::json attrs = nlohmann::json::array();
    for (const InstValue& a : inst.attrs) attrs.push_back(ValueToJson(a, names, false));
    nlohmann::json outputs = nlohmann::json::array();
    for (const InstValue& out : inst.outputs) {
      std::string name = absl::StrCat(std::string(1, RVPrefix(out.rv_kind())), counter++);
      names[{out.rv_kind(), out.rv_id()}] = name;
      outputs.push_back(name);
    }
    insts.push_back({inst.kind->name, inputs, attrs, outputs});
    if (!decisions_[i].is_none()) {
      decisions.push_back({static_cast<int64_t>(i), ValueToJson(decisions_[i], names, false)});
    }
  }
  return nlohmann::json::array({insts, decisions}).dump();
}

absl::StatusOr<Trace> Trace::FromJson(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("trace: not valid JSON");
  if (!j.is_array() || j.size() != 2 || !j[0].is_array() || !j[1].is_array()) {
    return absl::InvalidArgumentError("trace: expected [[instructions...], [decisions...]]");
  }
  Trace trace;
  std::map<std::string, InstValue> rvs;
  int64_t next_id = 0;
  for (size_t i = 0; i < j[0].size(); ++i) {
    const nlohmann::json& ij = j[0][i];
    std::string where = absl::StrCat("trace instruction ", i);
    if (!ij.is_array() || ij.size() != 4 || !ij[0].is_string() || !ij[1].is_array() ||
        !ij[2].is_array() || !ij[3].is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": expected [kind, [inputs], [attrs], [outputs]]"));
    }
    Instruction inst;
    inst.kind = FindInstructionKind(ij[0].get<std::string>());
    if (inst.kind == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": unknown instruction kind '", ij[0].get<std::string>(), "'"));
    }
    absl::StrAppend(&where, " (", inst.kind->name, ")");
    for (const nlohmann::json& in : ij[1]) {
      TESSERA_ASSIGN_OR_RETURN(InstValue v, ValueFromJson(in, rvs, /*is_input=*/true, where));
      inst.inputs.push_back(std::move(v));
    }
    for (const nlohmann::json& a : ij[2]) {
      TESSERA_ASSIGN_OR_RETURN(InstValue v, ValueFromJson(a, rvs, /*is_input=*/false, where));
      inst.attrs.push_back(std::move(v));
    }
    for (const nlohmann::json& out : ij[3]) {
      if (!out.is_string() || out.get<std::string>().empty()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": output names must be strings"));
      }
      std::string name = out.get<std::string>();
      RVKind kind;
      switch (name[0]) {
        case 'b': kind = RVKind::kBlock; break;
        case 'l': kind = RVKind::kLoop; break;
        case 'v': kind = RVKind::kExpr; break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": output '", name, "' must start with b, l or v"));
      }
      if (rvs.count(name)) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": output '", name, "' redefined"));
      }
      InstValue rv = InstValue::RV(kind, next_id++);
      rvs[name] = rv;
      inst.outputs.push_back(rv);
    }
    trace.Append(std::move(inst));
  }
  for (const nlohmann::json& d : j[1]) {
    if (!d.is_array() || d.size() != 2 || !d[0].is_number_integer()) {
      return absl::InvalidArgumentError("trace decisions: expected [instruction index, decision]");
    }
    int64_t index = d[0].get<int64_t>();
    if (index < 0 || index >= static_cast<int64_t>(trace.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("trace decisions: instruction index ", index, " out of range"));
    }
    TESSERA_ASSIGN_OR_RETURN(
        InstValue v, ValueFromJson(d[1], rvs, /*is_input=*/false,
                                   absl::StrCat("decision of instruction ", index)));
    trace.decisions_[index] = std::move(v);
  }
  return trace;
}

}  // namespace tessera
