// SetScope: moves an intermediate buffer to another storage scope everywhere it appears.

#include <algorithm>
#include <cctype>
#include <functional>
#include <set>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/int_set.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "ir/structural_equal.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/cache_internal.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {

using primitive::CheckScope;
using primitive::IntermediateWriteBuffer;
using primitive::ReplaceBuffer;
using primitive::WithPrimitive;

absl::Status Schedule::SetScope(BlockRV block, int buffer_index, const std::string& scope) {
  constexpr const char* kPrimitive = "set_scope";
  absl::StatusOr<Block> target = Get(block);
  if (!target.ok()) return WithPrimitive(kPrimitive, target.status());
  TESSERA_ASSIGN_OR_RETURN(Buffer buffer,
                           IntermediateWriteBuffer(func_, *target, buffer_index, kPrimitive));
  TESSERA_RETURN_IF_ERROR(CheckScope(kPrimitive, scope));
  if (buffer.scope() != scope) func_ = ReplaceBuffer(func_, buffer, buffer.WithScope(scope));
  Record(kSetScope, {InstValue::Of(block)},
         {InstValue::Int(buffer_index), InstValue::String(scope)}, {});
  return absl::OkStatus();
}

}  // namespace tessera
