// `tessera space`: generate a function's design spaces for a target with the default schedule
// rules (tuner/space_generator.h, PostOrderApply) and print each space's trace, simplified
// (pure instructions whose results are unused dropped), one instruction per line:
//
//   l1, l2, l3 = GetLoops(b0)
//   v4, v5 = SamplePerfectTile(l1, 2, 64)  # decision [8, 64]
//
// The sampling instructions are the knobs `tessera sample` and the tuner turn. Needs no GPU.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "tuner/space_generator.h"
#include "worker/host.h"

namespace tessera {
namespace cli {
namespace {

struct SpaceOptions {
  FunctionSource source;
  std::string target = "cpu";
  int64_t seed = 0;
  bool json = false;
};

// An input as trace JSON writes it: RV names and "None" bare, string literals already quoted.
std::string InputText(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) return value.dump();
  std::vector<std::string> items;
  for (const nlohmann::json& item : value) items.push_back(InputText(item));
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

// One line per instruction of a trace in JSON form ([[insts], [[index, decision], ...]]).
std::string TraceText(const nlohmann::json& trace) {
  std::map<size_t, nlohmann::json> decisions;
  for (const nlohmann::json& d : trace[1]) decisions[d[0].get<size_t>()] = d[1];
  std::string text;
  for (size_t i = 0; i < trace[0].size(); ++i) {
    const nlohmann::json& inst = trace[0][i];
    std::vector<std::string> args;
    for (const nlohmann::json& in : inst[1]) args.push_back(InputText(in));
    for (const nlohmann::json& a : inst[2]) args.push_back(a.dump());  // attrs: constants
    std::vector<std::string> outputs;
    for (const nlohmann::json& out : inst[3]) outputs.push_back(out.get<std::string>());
    if (!outputs.empty()) absl::StrAppend(&text, absl::StrJoin(outputs, ", "), " = ");
    absl::StrAppend(&text, inst[0].get<std::string>(), "(", absl::StrJoin(args, ", "), ")");
    auto d = decisions.find(i);
    if (d != decisions.end()) absl::StrAppend(&text, "  # decision ", d->second.dump());
    absl::StrAppend(&text, "\n");
  }
  return text;
}

int RunSpace(const SpaceOptions& options) {
  absl::StatusOr<LoadedSpaces> loaded =
      LoadDesignSpaces(options.source, options.target, options.seed);
  if (!loaded.ok()) return ReportError(loaded.status());
  const std::string& label = loaded->label;
  const Target* target = &loaded->target;
  const SpaceConfig* config = &loaded->config;
  const std::vector<Schedule>* spaces = &loaded->spaces;

  std::vector<std::string> rules;
  for (const ScheduleRulePtr& rule : config->rules) rules.push_back(rule->name());
  if (options.json) {
    nlohmann::json out = {{"function", label},
                          {"target", target->ToString()},
                          {"rules", rules},
                          {"spaces", nlohmann::json::array()}};
    for (const Schedule& space : *spaces) {
      out["spaces"].push_back(nlohmann::json::parse(space.trace().Simplified(true).ToJson()));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("# %s on %s: %zu design space%s\n# rules: %s\n", label.c_str(),
              target->ToString().c_str(), spaces->size(), spaces->size() == 1 ? "" : "s",
              absl::StrJoin(rules, ", ").c_str());
  for (size_t i = 0; i < spaces->size(); ++i) {
    Trace simplified = (*spaces)[i].trace().Simplified(true);
    std::printf("\n## design space %zu (%zu instructions)\n%s", i, simplified.size(),
                TraceText(nlohmann::json::parse(simplified.ToJson())).c_str());
  }
  return 0;
}

}  // namespace

Command RegisterSpaceCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "space", "Generate a function's design spaces with the default schedule rules and print "
               "their traces");
  auto options = std::make_shared<SpaceOptions>();
  options->source.AddOptions(app);
  app->add_option("--target", options->target,
                  "Target whose default rules apply: cpu, cuda, or e.g. 'cuda -arch=sm_80' "
                  "(no GPU needed)")
      ->capture_default_str();
  app->add_option("--seed", options->seed,
                  "Seed of the schedules the rules extend (the sampled decisions shown)")
      ->capture_default_str();
  app->add_flag("--json", options->json,
                "Print {function, target, rules, spaces} with each space's trace as trace JSON");
  return {app, [options]() { return RunSpace(*options); }};
}

}  // namespace cli
}  // namespace tessera
