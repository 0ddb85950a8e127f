// `tessera workloads`: the workload library with default shapes and FLOPs.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "frontend/workloads.h"
#include "ir/flops.h"

namespace tessera {
namespace cli {

Command RegisterWorkloadsCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand("workloads",
                                       "List the workload library (names, default "
                                       "shapes, dtypes and wider accumulators, FLOPs)");
  auto json = std::make_shared<bool>(false);
  app->add_flag("--json", *json, "Print machine-readable JSON");
  return {app, [json]() {
            nlohmann::json out = nlohmann::json::array();
            if (!*json)
              std::printf("%-16s %-29s %-7s %8s  %s\n", "NAME", "DTYPES", "ACC", "GFLOP",
                          "DEFAULT SHAPE");
            for (const WorkloadInfo& info : ListWorkloads()) {
              absl::StatusOr<PrimFunc> func = MakeWorkload(info.name);
              if (!func.ok()) return ReportError(func.status());
              double flops = EstimateFlops(*func);
              std::vector<std::string> params;
              nlohmann::json shape = nlohmann::json::object();
              for (const WorkloadParam& p : info.params) {
                params.push_back(absl::StrCat(p.name, "=", p.default_value));
                shape[p.name] = p.default_value;
              }
              if (*json) {
                out.push_back({{"name", info.name},
                               {"description", info.description},
                               {"dtypes", info.dtypes},
                               {"accumulators", info.accumulators},
                               {"default_shape", shape},
                               {"flops", flops}});
              } else {
                const std::string acc =
                    info.accumulators.empty() ? "-" : absl::StrJoin(info.accumulators, ",");
                std::printf("%-16s %-29s %-7s %8.4f  %s\n", info.name.c_str(),
                            absl::StrJoin(info.dtypes, ",").c_str(), acc.c_str(), flops / 1e9,
                            absl::StrJoin(params, ",").c_str());
              }
            }
            if (*json) std::printf("%s\n", out.dump(2).c_str());
            return 0;
          }};
}

}  // namespace cli
}  // namespace tessera
