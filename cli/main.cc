// `tessera`: the command-line front door (see docs/cli.md). Everything is in cli/tessera_main.cc,
// which is compiled with the commands (a file of its own would compile CLI11 once more).
#include "cli/tessera_main.h"

int main(int argc, char** argv) { return tessera::cli::TesseraMain(argc, argv); }
