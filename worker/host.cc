#include "worker/host.h"

#include <unistd.h>

#include <fstream>
#include <vector>

#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace tessera {

std::string HostCpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start == std::string::npos) break;
    return line.substr(start);
  }
  return "unknown cpu";
}

int HostCpuCores() {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

int HostVectorBits() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return 512;
  if (__builtin_cpu_supports("avx2")) return 256;
#endif
  return 128;
}

std::set<std::string> GivenTargetKeys(const std::string& text) {
  std::set<std::string> keys;
  std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipWhitespace());
  for (size_t i = 1; i < words.size(); ++i) {
    std::string key = words[i].substr(0, words[i].find('='));
    while (!key.empty() && key[0] == '-') key.erase(0, 1);
    keys.insert(key);
  }
  return keys;
}

bool IsCompleteTarget(const std::string& text) {
  absl::StatusOr<Target> parsed = Target::Parse(text);
  if (!parsed.ok()) return false;
  const std::set<std::string> given = GivenTargetKeys(text);
  for (const auto& [key, value] : parsed->attrs()) {
    if (given.count(key) == 0) return false;
  }
  return true;
}

bool TargetDescribes(const std::string& wanted, const std::string& target) {
  absl::StatusOr<Target> w = Target::Parse(wanted);
  absl::StatusOr<Target> t = Target::Parse(target);
  if (!w.ok() || !t.ok() || w->kind() != t->kind()) return false;
  for (const std::string& key : GivenTargetKeys(wanted)) {
    if (!t->Has(key) || w->attrs().at(key) != t->attrs().at(key)) return false;
  }
  return true;
}

absl::StatusOr<Target> ResolveTarget(const std::string& text) {
  TESSERA_ASSIGN_OR_RETURN(Target target, Target::Parse(text));
  if (!target.is_cpu()) return target;
  // Parse filled defaults for the keys the text left out; find which those were.
  std::set<std::string> given = GivenTargetKeys(text);
  bool has_cores = given.count("cores") != 0, has_vector_bits = given.count("vector_bits") != 0;
  if (!has_cores) {
    TESSERA_ASSIGN_OR_RETURN(target, target.With("cores", std::to_string(HostCpuCores())));
  }
  if (!has_vector_bits) {
    TESSERA_ASSIGN_OR_RETURN(target, target.With("vector_bits", std::to_string(HostVectorBits())));
  }
  return target;
}

}  // namespace tessera
