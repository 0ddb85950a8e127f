// A Trace is the replayable record of one scheduling run: instructions in order plus the
// decision each sampling instruction took. Traces are data: serialized to JSON in
// MetaSchedule's layout, stored, mutated (by replacing decisions) and replayed.
//
// JSON layout: [[inst, ...], [[index, decision], ...]] with inst = [kind, inputs, attrs,
// outputs]; RVs are named b/l/v + a counter shared by all RV kinds in order of creation;
// None is "None"; string inputs are quoted inside the JSON string ("\"SSRSRS\""), string
// attrs are not. See docs/formats.md.
#ifndef TESSERA_SCHEDULE_TRACE_H_
#define TESSERA_SCHEDULE_TRACE_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "schedule/instruction.h"

namespace tessera {

class Schedule;

class Trace {
 public:
  const std::vector<Instruction>& insts() const { return insts_; }
  // None where the instruction has no decision.
  const InstValue& decision(size_t index) const { return decisions_[index]; }
  size_t size() const { return insts_.size(); }

  void Append(Instruction inst, InstValue decision = InstValue());
  void Pop();

  // Index of the EnterPostproc instruction, or size() if there is none.
  size_t PostprocStart() const;

  // A copy with the decision of instruction `index` replaced, truncated at EnterPostproc if
  // `remove_postproc`.
  Trace WithDecision(size_t index, InstValue decision, bool remove_postproc) const;

  // Dead-code elimination: drops pure instructions none of whose outputs is used later.
  Trace Simplified(bool remove_postproc) const;

  // Chooses the decision used for instruction `index` during replay (given the recorded
  // one, possibly None).
  using DecisionProvider =
      std::function<InstValue(size_t index, const Instruction& inst, const InstValue& decision)>;

  // Replays every instruction on `sch` (normally a fresh schedule of the unscheduled
  // function). Errors name the instruction: "instruction 7 (Split): split: ...".
  absl::Status ApplyTo(Schedule* sch, bool remove_postproc,
                       const DecisionProvider& provider = nullptr) const;

  std::string ToJson(bool remove_postproc = false) const;
  // kInvalidArgument for malformed JSON, an unknown instruction kind, an RV used before it
  // is defined, or a decision index out of range, naming the instruction.
  static absl::StatusOr<Trace> FromJson(const std::string& json);


 private:
  std::vector<Instruction> insts_;
  std::vector<InstValue> decisions_;
};

}  // namespace tessera

#endif  // TESSERA_SCHEDULE_TRACE_H_
