// `tessera`: the command-line front door (see docs/cli.md).
#include <cstdio>
#include <vector>

#include "base/version.h"
#include "cli/commands.h"
#include "worker/openmp_env.h"

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
  CLI11_PARSE(app, argc, argv);
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return 1;
}
