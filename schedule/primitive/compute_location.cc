// Placeholder until this group of primitives lands: contributes no instruction kinds yet.
#include "schedule/instruction_kinds.h"

namespace tessera {

const std::vector<const InstructionKind*>& ComputeLocationInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds;
  return kinds;
}

}  // namespace tessera
