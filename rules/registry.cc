#include "rules/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "rules/postproc.h"
#include "rules/schedule_rule.h"

namespace tessera {
namespace {

using RuleFactory = absl::StatusOr<ScheduleRulePtr> (*)(const Target&, const nlohmann::json&);
using PostprocFactory = absl::StatusOr<PostprocPtr> (*)(const Target&, const nlohmann::json&);

struct RuleEntry {
  const char* name;
  RuleFactory make;
};
struct PostprocEntry {
  const char* name;
  PostprocFactory make;
};

const std::vector<RuleEntry>& RuleTable() {
  static const std::vector<RuleEntry> table = {
      {"AddRFactor", NewAddRFactor},
      {"AutoBind", NewAutoBind},
      {"AutoInline", NewAutoInline},
      {"CrossThreadReduction", NewCrossThreadReduction},
      {"InlineConstantScalars", NewInlineConstantScalars},
      {"MultiLevelTiling", NewMultiLevelTiling},
      {"MultiLevelTilingTensorCore", NewMultiLevelTilingTensorCore},
      {"MultiLevelTilingWgmma", NewMultiLevelTilingWgmma},
      {"PackedPanelGemm", NewPackedPanelGemm},
      {"ParallelizeVectorizeUnroll", NewParallelizeVectorizeUnroll},
      {"PixelTiledConv", NewPixelTiledConv},
      {"RandomComputeLocation", NewRandomComputeLocation},
  };
  return table;
}

const std::vector<PostprocEntry>& PostprocTable() {
  static const std::vector<PostprocEntry> table = {
      {"DisallowDynamicLoop", NewDisallowDynamicLoop},
      {"RewriteCooperativeFetch", NewRewriteCooperativeFetch},
      {"RewriteParallelVectorizeUnroll", NewRewriteParallelVectorizeUnroll},
      {"RewriteReductionBlock", NewRewriteReductionBlock},
      {"RewriteTensorize", NewRewriteTensorize},
      {"RewriteUnboundBlock", NewRewriteUnboundBlock},
      {"VerifyGPUCode", NewVerifyGPUCode},
  };
  return table;
}

template <typename Entry>
std::vector<std::string> NamesOf(const std::vector<Entry>& table) {
  std::vector<std::string> names;
  for (const Entry& e : table) names.push_back(e.name);
  return names;
}

}  // namespace

absl::StatusOr<ScheduleRulePtr> NewScheduleRule(const std::string& name, const Target& target,
                                                const nlohmann::json& params) {
  for (const RuleEntry& e : RuleTable()) {
    if (name == e.name) return e.make(target, params);
  }
  return absl::NotFoundError(absl::StrCat("unknown schedule rule '", name, "' (known: ",
                                          absl::StrJoin(ScheduleRuleNames(), ", "), ")"));
}

absl::StatusOr<PostprocPtr> NewPostproc(const std::string& name, const Target& target,
                                        const nlohmann::json& params) {
  for (const PostprocEntry& e : PostprocTable()) {
    if (name == e.name) return e.make(target, params);
  }
  return absl::NotFoundError(absl::StrCat("unknown postprocessor '", name,
                                          "' (known: ", absl::StrJoin(PostprocNames(), ", "), ")"));
}

std::vector<std::string> ScheduleRuleNames() { return NamesOf(RuleTable()); }
std::vector<std::string> PostprocNames() { return NamesOf(PostprocTable()); }

absl::StatusOr<std::vector<ScheduleRulePtr>> DefaultScheduleRules(
    const Target& target, const nlohmann::json& rule_params) {
  // MetaSchedule's DefaultLLVM / DefaultCUDA / DefaultCUDATensorCore orders
  // (docs/reference/metaschedule.md §4.2).
  std::vector<std::string> names;
  if (target.is_cpu()) {
    // PackedPanelGemm and PixelTiledConv (ours): the default's GEMM and convolution nests with
    // sampled tiles, before MultiLevelTiling, which tiles the branch they leave untouched.
    names = {"InlineConstantScalars",
             "AutoInline",
             "AddRFactor",
             "PackedPanelGemm",
             "PixelTiledConv",
             "MultiLevelTiling",
             "ParallelizeVectorizeUnroll",
             "RandomComputeLocation"};
  } else {
    names = {"MultiLevelTilingWgmma",
             "MultiLevelTilingTensorCore",
             "MultiLevelTiling",
             "InlineConstantScalars",
             "AutoInline",
             "CrossThreadReduction",
             "ParallelizeVectorizeUnroll",
             "AutoBind"};
  }
  if (!rule_params.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rule params: expected an object of rule names, got ", rule_params.dump()));
  }
  for (const auto& [name, params] : rule_params.items()) {
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rule params: '", name, "' is not a default rule on ", target.kind_name(),
                       " (", absl::StrJoin(names, ", "), ")"));
    }
  }
  std::vector<ScheduleRulePtr> rules;
  for (const std::string& name : names) {
    auto given = rule_params.find(name);
    TESSERA_ASSIGN_OR_RETURN(
        ScheduleRulePtr rule,
        NewScheduleRule(name, target,
                        given == rule_params.end() ? nlohmann::json::object() : *given));
    rules.push_back(std::move(rule));
  }
  return rules;
}

absl::StatusOr<std::vector<PostprocPtr>> DefaultPostprocs(const Target& target) {
  std::vector<std::string> names;
  if (target.is_cpu()) {
    names = {"DisallowDynamicLoop", "RewriteParallelVectorizeUnroll", "RewriteReductionBlock"};
  } else {
    names = {"DisallowDynamicLoop",   "RewriteCooperativeFetch",
             "RewriteUnboundBlock",   "RewriteParallelVectorizeUnroll",
             "RewriteReductionBlock", "RewriteTensorize",
             "VerifyGPUCode"};
  }
  std::vector<PostprocPtr> postprocs;
  for (const std::string& name : names) {
    TESSERA_ASSIGN_OR_RETURN(PostprocPtr p, NewPostproc(name, target));
    postprocs.push_back(std::move(p));
  }
  return postprocs;
}

}  // namespace tessera
