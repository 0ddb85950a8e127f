// Pieces every `tessera` subcommand shares: loading a function from a workload name or a
// file, resolving targets, printing errors, and output formatting.
#ifndef TESSERA_CLI_COMMON_H_
#define TESSERA_CLI_COMMON_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/function.h"
#include "schedule/schedule.h"
#include "schedule/trace.h"
#include "tuner/space_generator.h"

namespace tessera {
namespace cli {

// A subcommand: its parser node and the function that runs it (returns the exit code).
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

// Where a function comes from: a workload name with optional shape/dtype/accumulator, or a file.
struct FunctionSource {
  std::string workload;  // workload name, or path to a .ir (text) / .json file
  std::string shape;     // "M=64,N=32"
  std::string dtype;
  std::string acc;  // what 16-bit floats accumulate in ("float32"); empty: their own dtype

  // Adds the positional WORKLOAD argument and --shape/--dtype/--acc options to `app`.
  void AddOptions(CLI::App* app);
  // The function, and a human-readable label such as "GMM(B=1,M=512,N=512,K=512) float32".
  absl::StatusOr<PrimFunc> Load(std::string* label) const;
};

// Several functions, for commands over a job (`tune`, `apply`): each WORKLOAD argument is a
// workload name with optional shape parameters after a colon ("GMM:M=128,N=128,K=128") or a
// file. --dtype and --acc apply to every workload.
struct FunctionList {
  std::vector<std::string> specs;
  std::string dtype;
  std::string acc;
  void AddOptions(CLI::App* app);
  struct Entry {
    std::string label;  // "GMM(B=1,M=128,N=128,K=128) float32"
    std::string name;   // a function name unique in the list: "gmm", "c2d_1", ...
    PrimFunc func;
  };
  absl::StatusOr<std::vector<Entry>> Load() const;
};

// A function's design spaces on a target under the target's default rules (`space`, `sample`).
struct LoadedSpaces {
  std::string label;
  PrimFunc func;
  Target target;
  SpaceConfig config;
  std::vector<Schedule> spaces;
};
absl::StatusOr<LoadedSpaces> LoadDesignSpaces(const FunctionSource& source,
                                              const std::string& target, int64_t seed);

// Opens the tuning database: a SQLite FILE or a postgresql:// URL (database.h: OpenDatabase);
// errors name the file or the URL (without its password).
absl::StatusOr<std::unique_ptr<Database>> OpenDatabase(const std::string& path);

// Reads and parses a trace file (JSON, docs/formats.md); errors name the file.
absl::StatusOr<Trace> LoadTrace(const std::string& path);

// Replays `trace` on a fresh schedule of `func` (seeding sampling instructions that have no
// decision); errors name the file `path` and the instruction.
absl::StatusOr<Schedule> Replay(const PrimFunc& func, const Trace& trace, const std::string& path,
                                int64_t seed);

// Prints "tessera: error: <message>" to stderr; returns the exit code 1.
int ReportError(const absl::Status& status);

// An error of TuningSettings::Validate (tuner/tune_options.h) with the field it names spelled as
// the flag of `tune` and `submit` that sets it: "--trials: the trial budget must be > 0".
absl::Status WithFlagName(const absl::Status& status);

// "12.3 us", "4.56 ms", "1.23 s".
std::string FormatSeconds(double seconds);

// Whether `path` names an existing regular file (a workload argument is a file before it is a
// workload name or a spec).
bool IsRegularFile(const std::string& path);

}  // namespace cli
}  // namespace tessera

#endif  // TESSERA_CLI_COMMON_H_
