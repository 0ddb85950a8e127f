// Decoding helpers for the apply functions of instruction kinds (replay): check arity and
// unpack RVs and constants, with errors that Trace::ApplyTo prefixes with the instruction.
#ifndef TESSERA_SCHEDULE_PRIMITIVE_APPLY_UTIL_H_
#define TESSERA_SCHEDULE_PRIMITIVE_APPLY_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "schedule/instruction.h"

namespace tessera {
namespace apply_util {

using Values = std::vector<InstValue>;
using Outputs = absl::StatusOr<Values>;

inline absl::Status Arity(const Values& inputs, size_t n_inputs, const Values& attrs,
                          size_t n_attrs) {
  if (inputs.size() != n_inputs || attrs.size() != n_attrs) {
    return absl::InvalidArgumentError(absl::StrCat("expected ", n_inputs, " inputs and ",
                                                   n_attrs, " attrs, got ", inputs.size(),
                                                   " and ", attrs.size()));
  }
  return absl::OkStatus();
}

inline absl::StatusOr<BlockRV> AsBlock(const InstValue& v) {
  if (!v.is_rv() || v.rv_kind() != RVKind::kBlock) {
    return absl::InvalidArgumentError("expected a block random variable");
  }
  return BlockRV{v.rv_id()};
}

inline absl::StatusOr<LoopRV> AsLoop(const InstValue& v) {
  if (!v.is_rv() || v.rv_kind() != RVKind::kLoop) {
    return absl::InvalidArgumentError("expected a loop random variable");
  }
  return LoopRV{v.rv_id()};
}

inline bool IsLoop(const InstValue& v) { return v.is_rv() && v.rv_kind() == RVKind::kLoop; }

inline absl::StatusOr<std::vector<BlockRV>> AsBlocks(const InstValue& v) {
  if (!v.is_array()) return absl::InvalidArgumentError("expected an array of block RVs");
  std::vector<BlockRV> out;
  for (const InstValue& item : v.items()) {
    absl::StatusOr<BlockRV> b = AsBlock(item);
    if (!b.ok()) return b.status();
    out.push_back(*b);
  }
  return out;
}

inline absl::StatusOr<std::vector<LoopRV>> AsLoops(const std::vector<InstValue>& values) {
  std::vector<LoopRV> out;
  for (const InstValue& item : values) {
    absl::StatusOr<LoopRV> l = AsLoop(item);
    if (!l.ok()) return l.status();
    out.push_back(*l);
  }
  return out;
}

inline absl::StatusOr<std::string> AsString(const InstValue& v) {
  if (v.type() != InstValue::Type::kString) return absl::InvalidArgumentError("expected a string");
  return v.as_string();
}

inline absl::StatusOr<int64_t> AsInt(const InstValue& v) {
  if (!v.is_int()) return absl::InvalidArgumentError("expected an integer");
  return v.as_int();
}

template <typename RV>
Values ToValues(const std::vector<RV>& rvs) {
  Values out;
  for (const RV& rv : rvs) out.push_back(InstValue::Of(rv));
  return out;
}

}  // namespace apply_util
}  // namespace tessera

#endif  // TESSERA_SCHEDULE_PRIMITIVE_APPLY_UTIL_H_
