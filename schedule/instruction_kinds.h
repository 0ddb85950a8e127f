// The instruction kinds, one row each in instruction_kinds.cc. Primitives record themselves
// with these; trace replay finds them by name.
#ifndef TESSERA_SCHEDULE_INSTRUCTION_KINDS_H_
#define TESSERA_SCHEDULE_INSTRUCTION_KINDS_H_

#include <vector>

#include "schedule/instruction.h"

namespace tessera {

extern const InstructionKind kGetBlock;
extern const InstructionKind kGetLoops;
extern const InstructionKind kGetChildBlocks;
extern const InstructionKind kGetProducers;
extern const InstructionKind kGetConsumers;
extern const InstructionKind kSampleCategorical;
extern const InstructionKind kSamplePerfectTile;
extern const InstructionKind kSamplePaddedTile;
extern const InstructionKind kParallel;
extern const InstructionKind kVectorize;
extern const InstructionKind kUnroll;
extern const InstructionKind kBind;
extern const InstructionKind kAnnotate;
extern const InstructionKind kUnannotate;
extern const InstructionKind kEnterPostproc;
extern const InstructionKind kSplit;
extern const InstructionKind kFuse;
extern const InstructionKind kReorder;
extern const InstructionKind kAddUnitLoop;

// The kinds each group of primitives defines, in schedule/primitive/<group>.cc.
const std::vector<const InstructionKind*>& LoopTransformInstructionKinds();
const std::vector<const InstructionKind*>& ComputeLocationInstructionKinds();
const std::vector<const InstructionKind*>& CacheInstructionKinds();
const std::vector<const InstructionKind*>& ReductionInstructionKinds();
const std::vector<const InstructionKind*>& LayoutInstructionKinds();
const std::vector<const InstructionKind*>& BlockizeTensorizeInstructionKinds();
const std::vector<const InstructionKind*>& ShiftInt8ProductInstructionKinds();

}  // namespace tessera

#endif  // TESSERA_SCHEDULE_INSTRUCTION_KINDS_H_
