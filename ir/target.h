// A compilation target: a kind ("cpu" or "cuda") and the limits that rules and checks need.
//   cpu -cores=2 -vector_bits=512 -fma_per_cycle=1 -l1d_kb=32 -l2_kb=1024
//       -isa=avx2+fma+avx512f+avx512bw+avx512dq+avx512vl+avx512vnni+avx512bf16
//   cuda -arch=sm_90 -max_threads_per_block=1024 -max_shared_memory_per_block=49152 -warp_size=32
// Parsing fills documented defaults for omitted keys, so ToString() is canonical (all keys,
// fixed order, -isa's flags in CpuIsaFlags() order) and two spellings of the same target compare
// equal. The records of a tuning database are keyed by that canonical string, so a record tuned
// on one core is not found for a target that differs in any key (docs/cpu-backend.md, "Host
// target").
#ifndef TESSERA_IR_TARGET_H_
#define TESSERA_IR_TARGET_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

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

  // cpu: cores, vector_bits, fma_per_cycle (FMA instructions of vector_bits width one core
  // issues per cycle), l1d_kb and l2_kb (per core), isa ("+"-joined CpuIsaFlags(), or "none").
  // cuda: arch ("sm_90"), max_threads_per_block, max_shared_memory_per_block (bytes),
  // warp_size, max_registers_per_block, sm_count.
  int64_t cores() const { return GetInt("cores"); }
  int64_t vector_bits() const { return GetInt("vector_bits"); }
  int64_t fma_per_cycle() const { return GetInt("fma_per_cycle"); }
  int64_t l1d_bytes() const { return GetInt("l1d_kb") * 1024; }
  int64_t l2_bytes() const { return GetInt("l2_kb") * 1024; }
  // Whether -isa lists `flag`, which must be one of CpuIsaFlags() (a misspelt flag in a rule is
  // a bug, not a missing feature).
  bool has_isa(absl::string_view flag) const;
  const std::string& arch() const { return GetString("arch"); }
  // 90 for "sm_90" / "sm_90a".
  int compute_capability() const;
  // "sm_90a": code for exactly that architecture, with the features later ones lack (wgmma).
  bool arch_specific() const;
  int64_t max_threads_per_block() const { return GetInt("max_threads_per_block"); }
  int64_t max_shared_memory_per_block() const { return GetInt("max_shared_memory_per_block"); }
  int64_t warp_size() const { return GetInt("warp_size"); }

  // The -isa flags a cpu target can list, in canonical order: gcc's names for the x86 extensions
  // a micro-kernel chooses by (vector width, FMA, int8 and bf16 dot products, AMX tiles).
  static const std::vector<std::string>& CpuIsaFlags();

  // Returns a copy with `key` set (same validation and normalization as Parse).
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
