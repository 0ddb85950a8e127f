// `tessera`'s main function, in the library (cli/tessera_main.cc); cli/main.cc calls it.
#ifndef TESSERA_CLI_TESSERA_MAIN_H_
#define TESSERA_CLI_TESSERA_MAIN_H_

namespace tessera {
namespace cli {

// Parses `argv` (docs/cli.md), runs the subcommand given and returns the process's exit code.
int TesseraMain(int argc, char** argv);

}  // namespace cli
}  // namespace tessera

#endif  // TESSERA_CLI_TESSERA_MAIN_H_
