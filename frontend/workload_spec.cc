#include "frontend/workload_spec.h"

#include <cctype>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "frontend/workloads.h"
#include "ir/parser.h"
#include "ir/serialize.h"

namespace tessera {
namespace {

std::string Stem(const std::string& name) {
  std::string out;
  for (char c : name) {
    out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '_';
  }
  return out;
}

// Takes the items "dtype=..." and "acc=..." out of `shape` ("K=V,...") into `dtype` and `acc`,
// which may already hold the same value (from flags), not another.
absl::Status TakePrecision(const std::string& workload, std::string* shape, std::string* dtype,
                           std::string* acc) {
  std::vector<std::string> rest;
  for (absl::string_view item : absl::StrSplit(*shape, ',', absl::SkipWhitespace())) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    std::string key(absl::StripAsciiWhitespace(kv[0]));
    std::string* into = key == "dtype" ? dtype : key == "acc" ? acc : nullptr;
    if (into == nullptr || kv.size() != 2) {
      rest.emplace_back(item);
      continue;
    }
    const std::string value(absl::StripAsciiWhitespace(kv[1]));
    if (!into->empty() && *into != value) {
      return absl::InvalidArgumentError(
          absl::StrCat(workload, ": ", key, " is given twice ('", *into, "' and '", value, "')"));
    }
    *into = value;
  }
  *shape = absl::StrJoin(rest, ",");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SpecFunction> LoadWorkloadSpec(const std::string& spec, const std::string& shape,
                                              const std::string& dtype_flag,
                                              const std::string& acc_flag) {
  std::string name = spec, inline_shape;
  if (size_t colon = spec.find(':'); colon != std::string::npos) {
    name = spec.substr(0, colon);
    inline_shape = spec.substr(colon + 1);
    if (!shape.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("give the shape of ", name, " inline or with --shape, not both"));
    }
  }
  TESSERA_ASSIGN_OR_RETURN(WorkloadInfo info, FindWorkload(name));
  std::string shape_text = inline_shape.empty() ? shape : inline_shape;
  std::string dtype = dtype_flag, acc = acc_flag;
  TESSERA_RETURN_IF_ERROR(TakePrecision(info.name, &shape_text, &dtype, &acc));
  TESSERA_ASSIGN_OR_RETURN(auto overrides, ParseShapeOverrides(shape_text));
  SpecFunction out;
  TESSERA_ASSIGN_OR_RETURN(out.func, MakeWorkload(info.name, overrides, dtype, acc));
  std::vector<std::string> params;
  for (const WorkloadParam& p : info.params) {
    auto it = overrides.find(p.name);
    params.push_back(
        absl::StrCat(p.name, "=", it == overrides.end() ? p.default_value : it->second));
  }
  out.label = absl::StrCat(info.name, "(", absl::StrJoin(params, ","), ") ",
                           PrecisionName(dtype.empty() ? info.dtypes.front() : dtype, acc));
  out.stem = Stem(name);
  return out;
}

absl::StatusOr<SpecFunction> ParseWorkloadText(const std::string& text) {
  // Comment lines first ('#': `tessera show` heads its IR text with one) decide nothing.
  size_t start = text.find_first_not_of(" \t\r\n");
  while (start != std::string::npos && text[start] == '#') {
    const size_t end_of_line = text.find('\n', start);
    start = end_of_line == std::string::npos ? std::string::npos
                                             : text.find_first_not_of(" \t\r\n", end_of_line);
  }
  if (start == std::string::npos) return absl::InvalidArgumentError("empty workload");
  SpecFunction out;
  if (text[start] == '{') {
    TESSERA_ASSIGN_OR_RETURN(out.func, LoadPrimFuncJson(text));
  } else if (text[start] == '@' || text.compare(start, 4, "def ") == 0) {
    TESSERA_ASSIGN_OR_RETURN(out.func, ParseFunc(text));
  } else {
    return LoadWorkloadSpec(text.substr(start, text.find_last_not_of(" \t\r\n") - start + 1));
  }
  out.label = out.func.name();
  out.stem = out.func.name();
  return out;
}

}  // namespace tessera
