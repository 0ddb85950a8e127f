// How the threads of generated CPU kernels wait at OpenMP barriers when the user has not said.
//
// Tessera's kernels run their parallel loops on libgomp, which by default spins for 300,000
// iterations at every barrier before it sleeps. On a machine with more runnable processes than
// cores a spinning thread holds its core while the thread it waits for has none, and kernels
// ran 6-10x slower (docs/tuning.md); sleeping at once (OMP_WAIT_POLICY=passive) fixed that but
// made short kernels up to 8x slower on a quiet machine (a sleeping thread takes tens of
// microseconds to wake). Kernels that short now run on one thread (codegen_c.cc). What is left
// depends on who runs the kernels (KernelUse): a process that times kernels one by one while
// builds share the cores spins 1,000 times; a process that runs a model's plan spins 30,000 times,
// because a plan's kernels follow each other closely and a team that slept between two of them
// wakes late (the small bench CNN: 1.9 ms at 1,000 against 0.67 ms at 30,000 on an Intel VM),
// while its executor fits the team to the cores other processes leave it (model/cpu_share.h),
// so that a thread does not spin waiting for one that lost its core. The measurements are in
// docs/cpu-backend.md, "OpenMP wait policy".
//
// libgomp reads its environment once, when it is loaded. The CPU runner's child loads it with
// the kernel, after ApplyOpenMpEnvDefaults; but a program that links libgomp itself (tessera,
// through XGBoost) loaded it at start-up, and forked children inherit those settings: such a
// program calls ReexecWithOpenMpEnvDefaults first thing in main().
#ifndef TESSERA_BASE_OPENMP_ENV_H_
#define TESSERA_BASE_OPENMP_ENV_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tessera {

struct EnvVar {
  std::string name;
  std::string value;
};

// Who runs a process's kernels, which decides how long its idle OpenMP threads spin.
enum class KernelUse {
  // Timed one at a time (the CPU runner, `tune`, the service, the benchmarks), while builds and
  // other jobs may hold the cores: GOMP_SPINCOUNT=1000.
  kMeasured,
  // A model's plan, kernel after kernel, by an executor that fits its team to the cores (`tessera
  // exec`, `compile`'s runoff, the runtime library): GOMP_SPINCOUNT=30000.
  kModel,
};

// The variables to set given the environment `lookup` reads (nullptr: unset) and the use:
// {GOMP_SPINCOUNT=...}, or nothing when OMP_WAIT_POLICY or GOMP_SPINCOUNT is set to a non-empty
// value (the user's choice wins).
std::vector<EnvVar> OpenMpEnvDefaults(const std::function<const char*(const char*)>& lookup,
                                      KernelUse use);

// Sets OpenMpEnvDefaults(getenv, use) in this process's environment, so that a libgomp loaded
// later (and in children started later) uses them.
// Returns whether libgomp is already loaded in this process: then it has read its settings and
// this changes nothing for it.
bool ApplyOpenMpEnvDefaults(KernelUse use);

// For main(): ApplyOpenMpEnvDefaults, and when that set something while libgomp was already
// loaded, executes this program again (/proc/self/exe, same argv, the new environment) so that
// libgomp starts with it. Returns only when no re-execution was needed, or with why it failed
// (the program then goes on with libgomp's settings as they are).
absl::Status ReexecWithOpenMpEnvDefaults(char** argv, KernelUse use);

}  // namespace tessera

#endif  // TESSERA_BASE_OPENMP_ENV_H_
