// Instructions: the recorded steps of a schedule. An instruction is
// {kind, inputs, attrs, outputs}; inputs hold random variables (RVs) and constants, attrs only
// constants, outputs the RVs the instruction creates. Sampling instructions also carry a
// decision (stored in the Trace).
//
// Instruction kinds are rows of one explicit table (instruction_kinds.cc), looked up by the
// name that appears in trace JSON ("Split", "SamplePerfectTile", ...).
#ifndef TESSERA_SCHEDULE_INSTRUCTION_H_
#define TESSERA_SCHEDULE_INSTRUCTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera {

class Schedule;

enum class RVKind : uint8_t { kBlock, kLoop, kExpr };

// Handles to random variables of a Schedule. `id` is unique within the schedule; RVs are
// numbered in the order instructions create them, so the ids give the trace-JSON names
// b<id>, l<id>, v<id>.
struct BlockRV {
  int64_t id = -1;
};
struct LoopRV {
  int64_t id = -1;
};
struct ExprRV {
  int64_t id = -1;
};

// A value in an instruction's inputs, attrs or decision: None, an integer, a float, a
// string, an RV, or an array of values.
class InstValue {
 public:
  enum class Type : uint8_t { kNone, kInt, kFloat, kString, kRV, kArray };

  InstValue() = default;  // None
  static InstValue Int(int64_t v);
  static InstValue Float(double v);
  static InstValue String(std::string v);
  static InstValue Of(BlockRV rv) { return RV(RVKind::kBlock, rv.id); }
  static InstValue Of(LoopRV rv) { return RV(RVKind::kLoop, rv.id); }
  static InstValue Of(ExprRV rv) { return RV(RVKind::kExpr, rv.id); }
  static InstValue RV(RVKind kind, int64_t id);
  static InstValue Array(std::vector<InstValue> items);
  static InstValue IntArray(const std::vector<int64_t>& items);

  Type type() const { return type_; }
  bool is_none() const { return type_ == Type::kNone; }
  bool is_int() const { return type_ == Type::kInt; }
  bool is_rv() const { return type_ == Type::kRV; }
  bool is_array() const { return type_ == Type::kArray; }
  int64_t as_int() const { return int_; }
  double as_float() const { return type_ == Type::kInt ? static_cast<double>(int_) : float_; }
  const std::string& as_string() const { return string_; }
  RVKind rv_kind() const { return rv_kind_; }
  int64_t rv_id() const { return int_; }
  const std::vector<InstValue>& items() const { return items_; }
  // The integers of an array of ints (empty if not such an array).
  std::vector<int64_t> AsIntArray() const;

  friend bool operator==(const InstValue& a, const InstValue& b);
  friend bool operator!=(const InstValue& a, const InstValue& b) { return !(a == b); }

 private:
  Type type_ = Type::kNone;
  RVKind rv_kind_ = RVKind::kBlock;
  int64_t int_ = 0;
  double float_ = 0;
  std::string string_;
  std::vector<InstValue> items_;
};

struct InstructionKind;

struct Instruction {
  const InstructionKind* kind = nullptr;
  std::vector<InstValue> inputs;
  std::vector<InstValue> attrs;
  std::vector<InstValue> outputs;  // RVs only
};

// Applies an instruction to `sch`: inputs already refer to `sch`'s RVs. `decision` is None
// or the decision to reuse (sampling kinds). Returns the output RVs.
using InstructionApplyFn = absl::StatusOr<std::vector<InstValue>> (*)(
    Schedule* sch, const std::vector<InstValue>& inputs, const std::vector<InstValue>& attrs,
    const InstValue& decision);

struct InstructionKind {
  const char* name;
  bool is_pure;  // no effect on the IR: removable when its outputs are unused
  InstructionApplyFn apply;
};

// The kind with this JSON name, or nullptr.
const InstructionKind* FindInstructionKind(const std::string& name);
// Every registered kind (for documentation and tests).
const std::vector<const InstructionKind*>& AllInstructionKinds();

}  // namespace tessera

#endif  // TESSERA_SCHEDULE_INSTRUCTION_H_
