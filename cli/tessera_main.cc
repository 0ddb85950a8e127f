// `tessera`'s command line (see docs/cli.md): the parser of every subcommand and the dispatch to
// the one given. In the library rather than in main.cc so that CLI11 is compiled once, with the
// commands (cli/CMakeLists.txt).
#include "cli/tessera_main.h"

#include <cstdio>
#include <string>
#include <vector>

#include "base/openmp_env.h"
#include "base/version.h"
#include "cli/commands.h"

namespace tessera {
namespace cli {
namespace {

// "submit " when `app`'s subcommand `submit` was reached, "" otherwise.
std::string SubcommandPath(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return sub->get_name() + " ";
  return "";
}

// What the subcommand (the first argument that is not an option) does with kernels.
KernelUse KernelUseOf(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] == '-') continue;
    const std::string command = argv[i];
    return command == "exec" || command == "compile" ? KernelUse::kModel : KernelUse::kMeasured;
  }
  return KernelUse::kMeasured;
}

}  // namespace

int TesseraMain(int argc, char** argv) {
  // libgomp (linked through XGBoost) has read its wait policy already; the kernels this
  // process forks to measure inherit it (base/openmp_env.h). `exec` and `compile` (its runoff)
  // run models' plans; the other commands measure kernels one at a time, or run none.
  if (absl::Status s = ReexecWithOpenMpEnvDefaults(argv, KernelUseOf(argc, argv)); !s.ok()) {
    std::fprintf(stderr, "warning: %s\n", std::string(s.message()).c_str());
  }
  CLI::App app{"Tessera: an auto-tuning service for tensor programs", "tessera"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("tessera ") + kTesseraVersion);
  // One command a line (clang-format would pack them).
  // clang-format off
  std::vector<Command> commands = {
      RegisterWorkloadsCommand(&app),
      RegisterShowCommand(&app),
      RegisterRunCommand(&app),
      RegisterScheduleCommand(&app),
      RegisterCodegenCommand(&app),
      RegisterDevicesCommand(&app),
      RegisterTargetCommand(&app),
      RegisterDefaultCommand(&app),
      RegisterSpaceCommand(&app),
      RegisterSampleCommand(&app),
      RegisterTuneCommand(&app),
      RegisterBestCommand(&app),
      RegisterTopKCommand(&app),
      RegisterApplyCommand(&app),
      RegisterServeCommand(&app),
      RegisterTasksCommand(&app),
      RegisterCompileCommand(&app),
      RegisterExecCommand(&app),
      RegisterSubmitCommand(&app),
      RegisterJobsCommand(&app),
      RegisterStatusCommand(&app),
      RegisterWatchCommand(&app),
      RegisterCancelCommand(&app),
      RegisterWorkerCommand(&app),
  };
  // clang-format on
  commands.push_back(RegisterReportCommand(&app));
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

}  // namespace cli
}  // namespace tessera
