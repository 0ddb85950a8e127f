// `tessera target [TARGET]`: the target string a cpu target resolves to on this machine, and
// where each of its values came from (given, detected, measured), so that a worker's target can
// be read before it serves and copied into a worker token file (docs/service.md, "Tokens").
#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "worker/host.h"

namespace tessera {
namespace cli {
namespace {

// Where the value of cpu key `key` of the resolved target came from.
std::string SourceOf(const std::string& key, const std::set<std::string>& given,
                     const HostCpuInfo& host, const FmaProbe& probe) {
  if (given.count(key) != 0) return "given";
  if (key == "cores") return "online processors";
  if (key == "vector_bits") return "widest vector unit";
  if (key == "isa") return "cpuid";
  if (key == "l1d_kb" || key == "l2_kb") {
    return host.cache_source == "unknown" ? "default: not reported" : host.cache_source;
  }
  if (!probe.measured) return absl::StrFormat("default: no %d-bit FMA here", probe.vector_bits);
  return absl::StrFormat(
      "measured at %d bits: 12 chains %.1f GFLOP/s per core, 4 chains %.1f (ratio %.2f)%s",
      probe.vector_bits, probe.peak_gflops, probe.latency_gflops,
      probe.peak_gflops / probe.latency_gflops,
      probe.cached_in.empty() ? "" : absl::StrCat(", earlier, kept in ", probe.cached_in));
}

int RunTarget(const std::string& text, bool json) {
  absl::StatusOr<Target> target = ResolveTarget(text);
  if (!target.ok()) return ReportError(target.status());
  if (!target->is_cpu()) {
    // Only cpu targets are completed from this machine; `tessera devices` lists GPU targets.
    if (json) {
      std::printf("%s\n", nlohmann::json({{"target", target->ToString()}}).dump(2).c_str());
    } else {
      std::printf("target: %s\n", target->ToString().c_str());
    }
    return 0;
  }
  const std::set<std::string> given = GivenTargetKeys(text);
  const HostCpuInfo& host = HostCpu();
  const FmaProbe probe = HostFmaProbe(static_cast<int>(target->vector_bits()));
  const char* keys[] = {"cores", "vector_bits", "fma_per_cycle", "l1d_kb", "l2_kb", "isa"};
  if (json) {
    nlohmann::json out = {{"target", target->ToString()},
                          {"keys", nlohmann::json::object()},
                          {"host",
                           {{"name", host.name},
                            {"cores", host.cores},
                            {"vector_bits", host.vector_bits},
                            {"l1d_kb", host.l1d_kb},
                            {"l2_kb", host.l2_kb},
                            {"cache_source", host.cache_source},
                            {"isa", host.isa}}},
                          {"fma_probe",
                           {{"vector_bits", probe.vector_bits},
                            {"measured", probe.measured},
                            {"fma_per_cycle", probe.fma_per_cycle},
                            {"peak_gflops_per_core", probe.peak_gflops},
                            {"latency_bound_gflops_per_core", probe.latency_gflops}}}};
    for (const char* key : keys) {
      out["keys"][key] = {{"value", target->GetString(key)},
                          {"source", SourceOf(key, given, host, probe)}};
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("host: %s, %d cores\ntarget: %s\n", host.name.c_str(), host.cores,
              target->ToString().c_str());
  for (const char* key : keys) {
    std::printf("  %-14s %-8s %s\n", key, target->GetString(key).c_str(),
                SourceOf(key, given, host, probe).c_str());
  }
  return 0;
}

}  // namespace

Command RegisterTargetCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "target", "Print the target a cpu target string resolves to on this machine");
  auto text = std::make_shared<std::string>("cpu");
  auto json = std::make_shared<bool>(false);
  app->add_option("TARGET", *text,
                  "Target string; keys it gives are kept, the rest come from this machine")
      ->capture_default_str();
  app->add_flag("--json", *json, "Print machine-readable JSON");
  return {app, [text, json]() { return RunTarget(*text, *json); }};
}

}  // namespace cli
}  // namespace tessera
