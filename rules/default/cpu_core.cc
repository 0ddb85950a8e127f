#include "rules/default/cpu_core.h"

#include <algorithm>

#include "ir/cpu_intrinsics.h"

namespace tessera {
namespace dlight {

CpuCore CpuCore::Of(const Target& target) {
  CpuCore core;
  if (!target.is_cpu()) return core;
  core.lanes = std::max<int64_t>(1, target.vector_bits() / 32);
  core.registers = target.has_isa("avx512f") ? 32 : 16;
  core.l2_bytes = target.l2_bytes();
  core.dot_bf16 = core.lanes == kCpuDotLanes && target.has_isa("avx512bf16");
  core.dot_int8 =
      core.lanes == kCpuDotLanes && target.has_isa("avx512vnni") && target.has_isa("avx512bw");
  return core;
}

}  // namespace dlight
}  // namespace tessera
