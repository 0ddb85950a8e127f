// A compilation target: a kind ("cpu" or "cuda") and the limits that rules and checks need.
//   cpu -cores=2 -vector_bits=256
//   cuda -arch=sm_90 -max_threads_per_block=1024 -max_shared_memory_per_block=49152 -warp_size=32
// Parsing fills documented defaults for omitted keys, so ToString() is canonical (all keys,
// fixed order) and two spellings of the same target compare equal. The records of a tuning
// database are keyed by that canonical string.
#ifndef TESSERA_IR_TARGET_H_
#define TESSERA_IR_TARGET_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace tessera {

class Target {
 public:
  enum class Kind { kCpu, kCuda };

  // kInvalidArgument for an unknown kind, an unknown key (naming the known ones), a key
  // without '=', or a value of the wrong form.
  static absl::StatusOr<Target> Parse(const std::string& text);

  Kind kind() const { return kind_; }
  bool is_cpu() const { return kind_ == Kind::kCpu; }
  bool is_cuda() const { return kind_ == Kind::kCuda; }
  const char* kind_name() const { return is_cpu() ? "cpu" : "cuda"; }

  // Integer attribute; every integer key of the kind has a value after Parse.
  int64_t GetInt(const std::string& key) const;
  const std::string& GetString(const std::string& key) const;
  bool Has(const std::string& key) const { return attrs_.count(key) != 0; }
  const std::map<std::string, std::string>& attrs() const { return attrs_; }

  // cpu: cores, vector_bits. cuda: arch ("sm_90"), max_threads_per_block,
  // max_shared_memory_per_block (bytes), warp_size, max_registers_per_block, sm_count.
  int64_t cores() const { return GetInt("cores"); }
  int64_t vector_bits() const { return GetInt("vector_bits"); }
  const std::string& arch() const { return GetString("arch"); }
  // 90 for "sm_90" / "sm_90a".
  int compute_capability() const;
  int64_t max_threads_per_block() const { return GetInt("max_threads_per_block"); }
  int64_t max_shared_memory_per_block() const { return GetInt("max_shared_memory_per_block"); }
  int64_t warp_size() const { return GetInt("warp_size"); }

  // Returns a copy with `key` set (same validation as Parse).
  absl::StatusOr<Target> With(const std::string& key, const std::string& value) const;

  std::string ToString() const;

  friend bool operator==(const Target& a, const Target& b) {
    return a.kind_ == b.kind_ && a.attrs_ == b.attrs_;
  }
  friend bool operator!=(const Target& a, const Target& b) { return !(a == b); }

 private:
  Kind kind_ = Kind::kCpu;
  std::map<std::string, std::string> attrs_;
};

}  // namespace tessera

#endif  // TESSERA_IR_TARGET_H_
