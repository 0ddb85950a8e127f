// `tessera show`: print a workload's (or a file's) function as IR text or JSON.
#include <cstdio>

#include "cli/commands.h"
#include "ir/printer.h"
#include "ir/serialize.h"
#include "ir/structural_hash.h"

namespace tessera {
namespace cli {

Command RegisterShowCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand("show", "Print the IR of a workload or of a function file");
  struct Options {
    FunctionSource source;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  options->source.AddOptions(app);
  app->add_flag("--json", options->json, "Print the function as versioned IR JSON");
  return {app, [options]() {
            std::string label;
            absl::StatusOr<PrimFunc> func = options->source.Load(&label);
            if (!func.ok()) return ReportError(func.status());
            if (options->json) {
              std::printf("%s\n", SaveJson(*func).c_str());
            } else {
              std::printf("# %s  structural hash %s\n%s", label.c_str(),
                          StructuralHashHex(*func).c_str(), PrintFunc(*func).c_str());
            }
            return 0;
          }};
}

}  // namespace cli
}  // namespace tessera
