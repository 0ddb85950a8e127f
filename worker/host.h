// The host machine as a compilation target.
#ifndef TESSERA_WORKER_HOST_H_
#define TESSERA_WORKER_HOST_H_

#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "ir/target.h"

namespace tessera {

// Parses a target string (ir/target.h). For `cpu`, the keys the text does not give are
// taken from this machine: -cores = online processors, -vector_bits = 512 with AVX-512F,
// 256 with AVX2, else 128. Other kinds are parsed as written. Errors as Target::Parse.
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

// The "model name" of /proc/cpuinfo, or "unknown cpu".
std::string HostCpuName();

// Online processors (at least 1) and the widest vector unit the host has, in bits.
int HostCpuCores();
int HostVectorBits();

}  // namespace tessera

#endif  // TESSERA_WORKER_HOST_H_
