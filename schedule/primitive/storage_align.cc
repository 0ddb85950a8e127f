// StorageAlign: pads the strides of an intermediate buffer so that one dimension starts at
// `offset` modulo `factor` elements (TVM's storage_align, against shared-memory bank conflicts).

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

using primitive::IntermediateWriteBuffer;
using primitive::Invalid;
using primitive::ReplaceBuffer;
using primitive::WithPrimitive;

namespace {

// Strides padded as TVM's storage flattening does: from the innermost dimension out, the
// stride of an aligned dimension is rounded up to the next value with stride % factor == offset.
std::vector<Expr> AlignedStrides(const std::vector<int64_t>& shape,
                                 const std::vector<int64_t>& annotation, int64_t buffer_index) {
  std::vector<Expr> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    for (size_t a = 0; a + 3 < annotation.size(); a += 4) {
      if (annotation[a] != buffer_index || annotation[a + 1] != static_cast<int64_t>(d)) continue;
      const int64_t factor = annotation[a + 2], offset = annotation[a + 3];
      stride += ((factor + offset - stride % factor) % factor);
    }
    strides[d] = Expr(stride);
    stride *= shape[d];
  }
  return strides;
}

}  // namespace

absl::Status Schedule::StorageAlign(BlockRV block, int buffer_index, int axis, int factor,
                                    int offset) {
  constexpr const char* kPrimitive = "storage_align";
  absl::StatusOr<StmtPath> path = GetPath(block);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  const Block target = path->back().as<BlockRealizeNode>()->block;
  TESSERA_ASSIGN_OR_RETURN(Buffer buffer,
                           IntermediateWriteBuffer(func_, target, buffer_index, kPrimitive));
  const int ndim = buffer.ndim();
  if (axis < -ndim || axis >= ndim) {
    return Invalid(kPrimitive,
                   absl::StrCat("axis ", axis, " is out of range for buffer ", buffer.name(),
                                " of block ", target->name, ", which has ", ndim, " dimensions"));
  }
  if (factor <= 0 || offset < 0 || offset >= factor) {
    return Invalid(kPrimitive,
                   absl::StrCat("factor ", factor, " and offset ", offset, " for buffer ",
                                buffer.name(), " of block ", target->name,
                                " must satisfy factor > 0 and 0 <= offset < factor"));
  }
  std::vector<int64_t> shape;
  for (const Expr& e : buffer.shape()) {
    const int64_t* v = AsConstInt(e);
    if (v == nullptr) {
      return Invalid(kPrimitive, absl::StrCat("buffer ", buffer.name(), " of block ", target->name,
                                              " has a non-constant shape"));
    }
    shape.push_back(*v);
  }
  const int64_t dim = axis < 0 ? axis + ndim : axis;
  // buffer_dim_align: flat [buffer_index, axis, factor, offset] quadruples, one per aligned
  // dimension (TVM nests them per buffer; annotations here hold flat int arrays).
  constexpr const char* kKey = "buffer_dim_align";
  std::vector<int64_t> entries;
  auto it = target->annotations.find(kKey);
  if (it != target->annotations.end()) {
    if (const auto* old = std::get_if<std::vector<int64_t>>(&it->second)) {
      for (size_t a = 0; a + 3 < old->size(); a += 4) {
        if ((*old)[a] == buffer_index && (*old)[a + 1] == dim) continue;
        entries.insert(entries.end(), old->begin() + a, old->begin() + a + 4);
      }
    }
  }
  entries.insert(entries.end(), {buffer_index, dim, factor, offset});
  BlockNode node = *target.get();
  node.annotations[kKey] = entries;
  const auto* realize = path->back().as<BlockRealizeNode>();
  func_ = ReplaceStmt(func_, path->back(),
                      BlockRealize(realize->iter_values, realize->predicate, MakeBlock(node)));
  func_ = ReplaceBuffer(func_, buffer,
                        buffer.WithStrides(AlignedStrides(shape, entries, buffer_index)));
  Record(kStorageAlign, {InstValue::Of(block)},
         {InstValue::Int(buffer_index), InstValue::Int(axis), InstValue::Int(factor),
          InstValue::Int(offset)},
         {});
  return absl::OkStatus();
}

}  // namespace tessera
