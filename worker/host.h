// The host machine as a compilation target.
#ifndef TESSERA_WORKER_HOST_H_
#define TESSERA_WORKER_HOST_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target.h"

namespace tessera {

// Parses a target string (ir/target.h). For `cpu`, the keys the text does not give are
// taken from this machine (HostCpu()): -cores, -vector_bits, -l1d_kb and -l2_kb (where the
// host reports them), -isa, and -fma_per_cycle measured at the target's vector width
// (HostFmaProbe; kept at its default when the host has no FMA of that width). Other kinds are
// parsed as written. Errors as Target::Parse.
absl::StatusOr<Target> ResolveTarget(const std::string& text);

// The keys a target string gives explicitly: {"arch", "sm_count"} for
// "cuda -arch=sm_90 --sm_count=132" (leading dashes dropped; the kind word is not a key).
std::set<std::string> GivenTargetKeys(const std::string& text);

// Whether `text` gives every key of its kind, so that it is used as written; a partial target
// ("cpu", "cpu -cores=2", "cuda -arch=sm_90") is completed from a worker's target by the
// server (TargetDescribes), from this machine by ResolveTarget. False when it does not parse.
bool IsCompleteTarget(const std::string& text);

// Whether the target string `target` is one that `wanted` describes: the same kind and, for
// every key `wanted` gives, the same value. False when either does not parse.
bool TargetDescribes(const std::string& wanted, const std::string& target);

// The first of `targets` (target strings, in the caller's order of preference) that `wanted`
// describes (TargetDescribes), or nullopt.
std::optional<std::string> FirstTargetDescribed(const std::string& wanted,
                                                const std::vector<std::string>& targets);

// The complete target strings a partial target may be completed from, in order of preference;
// asked only for a partial target.
using KnownTargets = std::function<absl::StatusOr<std::vector<std::string>>()>;

// The one rule by which the server turns a job's or a query's target string into the target
// it measures on and stores records under:
//  - a complete string (IsCompleteTarget) is taken as written, in canonical form
//    (Target::ToString), and `known` is not asked;
//  - a partial one ("cpu", "cpu -cores=2", "cuda -arch=sm_90") becomes the first of `known()`
//    it describes (FirstTargetDescribed): the defaults of the keys it leaves out are no
//    machine's, so it is never completed from Target::Parse's defaults here;
//  - nullopt when none of them is described.
// Errors: kInvalidArgument "target: <Target::Parse's message>" when `text` does not parse,
// and `known`'s error.
// The callers differ on purpose in what they pass as `known` and do on nullopt:
//  - a job (JobManager) passes only *verified* workers' targets (Dispatcher::VerifiedTargets:
//    those a worker token names, server/auth.h), so that an unverified worker never captures a
//    job, and waits on nullopt until such a worker registers;
//  - a query (GetBest, GetTopK, ApplyBest: QueryTarget in server/tuning_service.cc) passes the
//    targets of its workloads' records, newest first, then the verified workers' targets, and on
//    nullopt completes from the server's own machine (ResolveTarget);
//  - on a single machine (`tessera` commands, `cli/measure.h` ResolveRunnableTarget, and a
//    worker daemon, which measures on its own machine) a target string is completed from that
//    machine (ResolveTarget, worker/devices.h ResolveCudaTarget), never from other targets.
absl::StatusOr<std::optional<std::string>> CompleteTarget(const std::string& text,
                                                          const KnownTargets& known);

// The "model name" of /proc/cpuinfo, or "unknown cpu".
std::string HostCpuName();

// Online processors (at least 1) and the widest vector unit the host has, in bits.
int HostCpuCores();
int HostVectorBits();

// What a cpu target reads from this machine, detected once per process.
struct HostCpuInfo {
  std::string name;  // HostCpuName()
  int cores = 1;     // HostCpuCores()
  // 512 with AVX-512F, 256 with AVX2, else 128 (an extension counts only when the OS saves its
  // registers, XCR0).
  int vector_bits = 128;
  // cpu0's L1 data and L2 caches in KiB (an L2 shared by a cluster of cores at its whole size);
  // 0 where neither sysfs nor CPUID says.
  int64_t l1d_kb = 0;
  int64_t l2_kb = 0;
  std::string cache_source;  // "sysfs", "cpuid" or "unknown"
  // The Target::CpuIsaFlags() that CPUID reports and the OS has enabled, in that order.
  std::vector<std::string> isa;
};
const HostCpuInfo& HostCpu();

// FMA throughput at one vector width. No CPUID bit says how many FMA pipes a core has (Intel
// sells one and two 512-bit pipes under the same model number), so it is measured: 12
// independent chains of FMAs (the peak) against 4 (bound by the FMA latency), best of 7 rounds
// each, about 5 ms. The ratio of their rates is pipes x latency / 4, and the latency is 4
// cycles on every AVX-512 core and 4 or 5 on AVX2 ones: 1-1.25 with one pipe, 2-2.5 with two.
struct FmaProbe {
  int vector_bits = 0;
  // False when the host has no FMA of this width (or is not x86): nothing ran, and
  // fma_per_cycle is the target default 1.
  bool measured = false;
  int fma_per_cycle = 1;      // 2 when the ratio is at least 1.6, else 1
  double peak_gflops = 0;     // float32 GFLOP/s of one core, 12 chains
  double latency_gflops = 0;  // 4 chains
  std::string cached_in;      // the file it was read from; empty when measured by this process
};
// The probe at this width, measured now (128, 256 or 512; others are not measured).
FmaProbe MeasureFmaProbe(int vector_bits);
// The probe for targets: once per process and width, and once per machine where it can be
// cached. fma_per_cycle is part of every cpu target string, which keys the records, so each
// process on a machine must read the same value: in one of two CI runs on an Intel VM, one process
// measured a ratio below 1.6 on a two-pipe core, named another target, and did not find the
// records another process had stored. So the first clear measurement (ratio >= 1.8 or <= 1.4)
// is kept in FmaProbeCachePath(vector_bits) with the CPU's identity, and later processes read it;
// an unclear one is used by its process only. Thread-safe.
FmaProbe HostFmaProbe(int vector_bits);
// $TESSERA_CACHE_DIR, else $XDG_CACHE_HOME/tessera, else $HOME/.cache/tessera, then
// "fma-probe-<bits>.txt"; empty when none of them is set.
std::string FmaProbeCachePath(int vector_bits);
// One line for the cache: identity (the CPU's name and ISA), fma_per_cycle, peak and latency
// GFLOP/s, tab-separated; and its reading, nullopt unless the identity and width match.
std::string FmaProbeCacheLine(const std::string& identity, const FmaProbe& probe);
std::optional<FmaProbe> ParseFmaProbeCacheLine(const std::string& line, const std::string& identity,
                                               int vector_bits);

}  // namespace tessera

#endif  // TESSERA_WORKER_HOST_H_
