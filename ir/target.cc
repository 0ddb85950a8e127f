#include "ir/target.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/check.h"

namespace tessera {
namespace {

struct KeySpec {
  const char* name;
  bool is_int;
  const char* default_value;
};

// Keys in canonical order. Defaults describe a conservative machine; workers and the host
// probe report real values.
const std::vector<KeySpec>& KeysOf(Target::Kind kind) {
  static const std::vector<KeySpec> cpu = {
      {"cores", true, "1"},
      {"vector_bits", true, "256"},
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

absl::Status ValidateValue(Target::Kind kind, const std::string& key, const std::string& value) {
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
  }
  return absl::OkStatus();
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
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    size_t eq = word.find('=');
    if (word.size() < 2 || word[0] != '-' || eq == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("target option '", word, "' is not of the form -key=value"));
    }
    std::string key = word.substr(word[1] == '-' ? 2 : 1, eq - (word[1] == '-' ? 2 : 1));
    std::string value = word.substr(eq + 1);
    if (absl::Status s = ValidateValue(target.kind_, key, value); !s.ok()) return s;
    target.attrs_[key] = value;
  }
  return target;
}

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

absl::StatusOr<Target> Target::With(const std::string& key, const std::string& value) const {
  if (absl::Status s = ValidateValue(kind_, key, value); !s.ok()) return s;
  Target copy = *this;
  copy.attrs_[key] = value;
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
