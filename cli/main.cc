// `tessera`: the command-line front door (see docs/cli.md).
#include <cstdio>
#include <string>
#include <vector>

#include "base/version.h"
#include "cli/commands.h"
#include "worker/openmp_env.h"

namespace {

// "submit " when `app`'s subcommand `submit` was reached, "" otherwise.
std::string SubcommandPath(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return sub->get_name() + " ";
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // libgomp (linked through XGBoost) has read its wait policy already; the kernels this
  // process forks to measure inherit it (worker/openmp_env.h).
  if (absl::Status s = tessera::ReexecWithOpenMpEnvDefaults(argv); !s.ok()) {
    std::fprintf(stderr, "warning: %s\n", std::string(s.message()).c_str());
  }
  using tessera::cli::Command;
  CLI::App app{"Tessera: an auto-tuning service for tensor programs", "tessera"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tessera ") + tessera::kTesseraVersion);
  // One command a line (clang-format would pack them).
  // clang-format off
  std::vector<Command> commands = {
      tessera::cli::RegisterWorkloadsCommand(&app),
      tessera::cli::RegisterShowCommand(&app),
      tessera::cli::RegisterRunCommand(&app),
      tessera::cli::RegisterScheduleCommand(&app),
      tessera::cli::RegisterCodegenCommand(&app),
      tessera::cli::RegisterDevicesCommand(&app),
      tessera::cli::RegisterDefaultCommand(&app),
      tessera::cli::RegisterSpaceCommand(&app),
      tessera::cli::RegisterSampleCommand(&app),
      tessera::cli::RegisterTuneCommand(&app),
      tessera::cli::RegisterBestCommand(&app),
      tessera::cli::RegisterTopKCommand(&app),
      tessera::cli::RegisterApplyCommand(&app),
      tessera::cli::RegisterServeCommand(&app),
      tessera::cli::RegisterTasksCommand(&app),
      tessera::cli::RegisterCompileCommand(&app),
      tessera::cli::RegisterExecCommand(&app),
      tessera::cli::RegisterSubmitCommand(&app),
      tessera::cli::RegisterJobsCommand(&app),
      tessera::cli::RegisterStatusCommand(&app),
      tessera::cli::RegisterWatchCommand(&app),
      tessera::cli::RegisterCancelCommand(&app),
      tessera::cli::RegisterWorkerCommand(&app),
  };
  // clang-format on
  commands.push_back(tessera::cli::RegisterReportCommand(&app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version end parsing with exit code 0: CLI11 prints them.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    // Any other usage error is one line, as every other error of the command is, and exit 1.
    std::fprintf(stderr, "tessera: error: %s (tessera %s--help says more)\n", e.what(),
                 SubcommandPath(app).c_str());
    return 1;
  }
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return 1;
}
