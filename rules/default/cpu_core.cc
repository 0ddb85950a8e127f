#include "rules/default/cpu_core.h"

#include <algorithm>

namespace tessera {
namespace dlight {

CpuCore CpuCore::Of(const Target& target) {
  CpuCore core;
  if (!target.is_cpu()) return core;
  core.lanes = std::max<int64_t>(1, target.vector_bits() / 32);
  core.registers = target.has_isa("avx512f") ? 32 : 16;
  core.l2_bytes = target.l2_bytes();
  return core;
}

}  // namespace dlight
}  // namespace tessera
