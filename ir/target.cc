#include "ir/target.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/check.h"
#include "base/status_macros.h"

namespace tessera {
namespace {

struct KeySpec {
  const char* name;
  bool is_int;
  const char* default_value;
};

// Keys in canonical order. Defaults describe a conservative machine; workers and the host
// probe report real values. The cpu keys after vector_bits default to the core the rules'
// constants were measured on (a Zen 4: one 512-bit FMA per cycle, 32 KiB L1d, 1 MiB L2), so a
// target string written before they existed schedules as it did; -isa's default is the ISA its
// -vector_bits implies (IsaImpliedBy).
const std::vector<KeySpec>& KeysOf(Target::Kind kind) {
  static const std::vector<KeySpec> cpu = {
      {"cores", true, "1"},   {"vector_bits", true, "256"}, {"fma_per_cycle", true, "1"},
      {"l1d_kb", true, "32"}, {"l2_kb", true, "1024"},      {"isa", false, "none"},
  };
  static const std::vector<KeySpec> cuda = {
      {"arch", false, "sm_80"},
      {"max_threads_per_block", true, "1024"},
      {"max_shared_memory_per_block", true, "49152"},
      {"warp_size", true, "32"},
      {"max_registers_per_block", true, "65536"},
      {"sm_count", true, "108"},
  };
  return kind == Target::Kind::kCpu ? cpu : cuda;
}

// The ISA that every x86 core of a vector width has: AVX-512F cores all have AVX2 and FMA, and
// AVX2 came with FMA (Haswell, Excavator); the host probe says 256 bits only with AVX2.
std::string IsaImpliedBy(const std::string& vector_bits) {
  if (vector_bits == "512") return "avx2+fma+avx512f";
  if (vector_bits == "256") return "avx2+fma";
  return "none";
}

// An -isa value in canonical form: known flags joined by '+' in CpuIsaFlags() order, each once.
absl::StatusOr<std::string> CanonicalIsa(const std::string& value) {
  if (value == "none") return value;
  const std::vector<std::string>& known = Target::CpuIsaFlags();
  std::vector<bool> listed(known.size(), false);
  for (absl::string_view flag : absl::StrSplit(value, '+')) {
    auto it = std::find(known.begin(), known.end(), flag);
    if (it == known.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("target cpu: -isa: unknown flag '", flag, "' in '", value,
                       "' (known: ", absl::StrJoin(known, ", "), "; or none)"));
    }
    listed[it - known.begin()] = true;
  }
  std::vector<std::string> flags;
  for (size_t i = 0; i < known.size(); ++i) {
    if (listed[i]) flags.push_back(known[i]);
  }
  return absl::StrJoin(flags, "+");
}

// The value `key` is stored with: `value` checked, and in canonical form where it has one.
absl::StatusOr<std::string> NormalizeValue(Target::Kind kind, const std::string& key,
                                           const std::string& value) {
  const KeySpec* spec = nullptr;
  std::vector<std::string> known;
  for (const KeySpec& s : KeysOf(kind)) {
    known.push_back(s.name);
    if (key == s.name) spec = &s;
  }
  const char* kind_name = kind == Target::Kind::kCpu ? "cpu" : "cuda";
  if (spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("target ", kind_name, ": unknown key -", key,
                                                   " (known: -", absl::StrJoin(known, ", -"), ")"));
  }
  if (spec->is_int) {
    int64_t v;
    if (!absl::SimpleAtoi(value, &v) || v <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("target ", kind_name, ": -", key,
                                                     " needs a positive integer, got '", value, "'"));
    }
  } else if (key == "arch") {
    int cc;
    std::string digits = value.size() > 3 ? value.substr(3) : "";
    if (!digits.empty() && digits.back() == 'a') digits.pop_back();
    if (value.rfind("sm_", 0) != 0 || !absl::SimpleAtoi(digits, &cc)) {
      return absl::InvalidArgumentError(
          absl::StrCat("target cuda: -arch must look like sm_90, got '", value, "'"));
    }
  } else if (key == "isa") {
    return CanonicalIsa(value);
  }
  return value;
}

}  // namespace

absl::StatusOr<Target> Target::Parse(const std::string& text) {
  std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipWhitespace());
  if (words.empty()) return absl::InvalidArgumentError("empty target string");
  Target target;
  if (words[0] == "cpu" || words[0] == "llvm" || words[0] == "c") {
    target.kind_ = Kind::kCpu;
  } else if (words[0] == "cuda") {
    target.kind_ = Kind::kCuda;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown target kind '", words[0], "' (expected cpu or cuda)"));
  }
  for (const KeySpec& spec : KeysOf(target.kind_)) target.attrs_[spec.name] = spec.default_value;
  bool isa_given = false, shared_given = false;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    size_t eq = word.find('=');
    if (word.size() < 2 || word[0] != '-' || eq == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("target option '", word, "' is not of the form -key=value"));
    }
    std::string key = word.substr(word[1] == '-' ? 2 : 1, eq - (word[1] == '-' ? 2 : 1));
    TESSERA_ASSIGN_OR_RETURN(target.attrs_[key],
                             NormalizeValue(target.kind_, key, word.substr(eq + 1)));
    isa_given |= key == "isa";
    shared_given |= key == "max_shared_memory_per_block";
  }
  if (target.is_cpu() && !isa_given)
    target.attrs_["isa"] = IsaImpliedBy(target.attrs_["vector_bits"]);
  // Every Hopper part (H100 PCIe and SXM, H200, GH200) lets a block opt in to 227 KiB, which
  // its tensor-core pipelines need; earlier architectures differ within a family, so they keep
  // the conservative 48 KiB every CUDA GPU has.
  if (target.is_cuda() && !shared_given && target.compute_capability() >= 90) {
    target.attrs_["max_shared_memory_per_block"] = "232448";
  }
  return target;
}

bool Target::arch_specific() const { return is_cuda() && !arch().empty() && arch().back() == 'a'; }

int64_t Target::GetInt(const std::string& key) const {
  auto it = attrs_.find(key);
  TESSERA_CHECK(it != attrs_.end()) << "target " << kind_name() << " has no key " << key;
  int64_t v = 0;
  TESSERA_CHECK(absl::SimpleAtoi(it->second, &v)) << key << "=" << it->second;
  return v;
}

const std::string& Target::GetString(const std::string& key) const {
  auto it = attrs_.find(key);
  TESSERA_CHECK(it != attrs_.end()) << "target " << kind_name() << " has no key " << key;
  return it->second;
}

int Target::compute_capability() const {
  std::string digits = arch().substr(3);
  if (!digits.empty() && digits.back() == 'a') digits.pop_back();
  int cc = 0;
  TESSERA_CHECK(absl::SimpleAtoi(digits, &cc)) << arch();
  return cc;
}

bool Target::has_isa(absl::string_view flag) const {
  const std::vector<std::string>& known = CpuIsaFlags();
  TESSERA_CHECK(std::find(known.begin(), known.end(), flag) != known.end())
      << "has_isa: unknown flag " << flag;
  if (!is_cpu()) return false;
  for (absl::string_view listed : absl::StrSplit(GetString("isa"), '+')) {
    if (listed == flag) return true;
  }
  return false;
}

const std::vector<std::string>& Target::CpuIsaFlags() {
  static const std::vector<std::string> flags = {
      "avx2",       "fma",        "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512vnni",
      "avx512bf16", "avx512fp16", "avxvnni", "amx-tile", "amx-bf16", "amx-int8"};
  return flags;
}

absl::StatusOr<Target> Target::With(const std::string& key, const std::string& value) const {
  Target copy = *this;
  TESSERA_ASSIGN_OR_RETURN(copy.attrs_[key], NormalizeValue(kind_, key, value));
  return copy;
}

std::string Target::ToString() const {
  std::string out = kind_name();
  for (const KeySpec& spec : KeysOf(kind_)) {
    absl::StrAppend(&out, " -", spec.name, "=", attrs_.at(spec.name));
  }
  return out;
}

}  // namespace tessera
