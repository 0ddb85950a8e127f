// Building, timing and checking one function, shared by `tessera run` and `tessera schedule
// --run`. On a cpu target the C builder compiles it and the CPU runner times it; on a cuda
// target the NVRTC builder compiles it and the CUDA runner times it on GPU 0. With --check its
// outputs on seeded random inputs are compared against a reference function (the same
// function for `run`, the unscheduled one for `schedule` and `run --trace`) computed on the
// host by the interpreter, or above an interpreter budget by a naive C compilation of the
// reference (-O2 strict, outer data-parallel loops in parallel).
#ifndef TESSERA_CLI_MEASURE_H_
#define TESSERA_CLI_MEASURE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/function.h"
#include "ir/target.h"
#include "worker/check.h"

namespace tessera {
namespace cli {

struct MeasureOptions {
  std::string target = "cpu";
  bool check = false;
  int64_t seed = 0;
  int number = 1;
  int repeat = 5;
  int min_repeat_ms = 50;
  bool cache_flush = false;  // CPU caches, or the GPU's L2 on cuda
  double timeout = 60;

  // Adds --target, --check, --seed, --number, --repeat, --min-repeat-ms, --cache-flush and
  // --timeout to `app`. `check_help` and `seed_help` describe those two for the subcommand.
  void AddOptions(CLI::App* app, const std::string& check_help, const std::string& seed_help);
};

struct Measurement {
  std::string target;            // the resolved target string
  double latency_seconds = 0;    // median of run_secs
  std::vector<double> run_secs;  // per repeat
  double flops = 0;              // EstimateFlops of the measured function
  double gflops_per_second = 0;
  // The kernel alone was timed, on its weights packed beforehand (ir/prepack.h); --check ran
  // the whole function, packing included.
  bool prepacked_weights = false;
  bool checked = false;       // --check was given
  absl::Status check_status;  // the check could not run (build or run of the reference)
  CheckOutcome check;         // valid when checked && check_status.ok()

  // The JSON fields of `tessera run --json` (without "function"): latency_seconds, run_secs,
  // flops, gflops_per_second, target, prepacked_weights and, when checked, "check".
  nlohmann::json ToJson() const;
  // "latency: 1.234 ms (median of 5 repeats), 12.34 GFLOP/s" and, when checked, the check line.
  std::string ToText() const;
  // 0; 1 when the check could not run (and why is reported on stderr); 2 when it ran and
  // failed.
  int ExitCode() const;
};

// Resolves `text`: cpu targets with worker/host.h ResolveTarget, cuda targets with
// worker/devices.h ResolveCudaTarget (keys not given come from GPU 0). Without a GPU:
// kFailedPrecondition "target cuda: no CUDA driver: libcuda.so.1: cannot open ...".
absl::StatusOr<Target> ResolveRunnableTarget(const std::string& text);

// Builds `func` for `target` (C or NVRTC builder), times it (CPU or CUDA runner) and, if
// options.check, compares its outputs with `reference`'s on the same random inputs
// (`reference` must have the same parameters). Errors: build or timed-run failures (kInternal,
// with the compiler's or the runner's message). A failing check is part of the Measurement, not
// an error.
absl::StatusOr<Measurement> BuildAndMeasure(const PrimFunc& func, const PrimFunc& reference,
                                            const Target& target, const MeasureOptions& options);

}  // namespace cli
}  // namespace tessera

#endif  // TESSERA_CLI_MEASURE_H_
