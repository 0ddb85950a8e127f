// Tests of the instruction kind table (schedule/instruction_kinds.h): every kind is found by its
// trace name, and unknown names are not.
#include "schedule/instruction_kinds.h"

#include "gtest/gtest.h"
#include "schedule/instruction.h"

namespace tessera {
namespace {

TEST(InstructionKindsTest, EveryKindIsFoundByName) {
  for (const InstructionKind* kind : AllInstructionKinds()) {
    EXPECT_EQ(FindInstructionKind(kind->name), kind);
  }
  EXPECT_EQ(FindInstructionKind("Nope"), nullptr);
}

}  // namespace
}  // namespace tessera
