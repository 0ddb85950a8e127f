// The subcommands of `tessera`; each Register* adds one to the root parser.
#ifndef TESSERA_CLI_COMMANDS_H_
#define TESSERA_CLI_COMMANDS_H_

#include "cli/common.h"

namespace tessera {
namespace cli {

Command RegisterWorkloadsCommand(CLI::App* root);
Command RegisterShowCommand(CLI::App* root);
Command RegisterRunCommand(CLI::App* root);
Command RegisterScheduleCommand(CLI::App* root);
Command RegisterCodegenCommand(CLI::App* root);
Command RegisterDevicesCommand(CLI::App* root);
Command RegisterTargetCommand(CLI::App* root);  // the host's cpu target (worker/host.h)
Command RegisterDefaultCommand(CLI::App* root);
Command RegisterSpaceCommand(CLI::App* root);
Command RegisterSampleCommand(CLI::App* root);
Command RegisterTuneCommand(CLI::App* root);
Command RegisterBestCommand(CLI::App* root);
Command RegisterTopKCommand(CLI::App* root);
Command RegisterApplyCommand(CLI::App* root);
Command RegisterTasksCommand(CLI::App* root);
Command RegisterCompileCommand(CLI::App* root);
Command RegisterExecCommand(CLI::App* root);
Command RegisterReportCommand(CLI::App* root);  // the HTML tuning report (report/)
Command RegisterServeCommand(CLI::App* root);   // the tuning server (server/server.h)
// The tuning service's clients and worker (cli/client.h).
Command RegisterSubmitCommand(CLI::App* root);
Command RegisterJobsCommand(CLI::App* root);
Command RegisterStatusCommand(CLI::App* root);
Command RegisterWatchCommand(CLI::App* root);
Command RegisterCancelCommand(CLI::App* root);
Command RegisterWorkerCommand(CLI::App* root);

}  // namespace cli
}  // namespace tessera

#endif  // TESSERA_CLI_COMMANDS_H_
