// Layout-free weights and their packing outside the timed call (docs/cpu-backend.md "Pre-packed
// weights").
//
// A function may name parameters whose contents are constant between calls (a model's weights)
// in its attribute kLayoutFreeBuffers. A schedule may then copy such a weight into another
// layout in a block annotated kLayoutRewritePreproc: a loop nest directly under the root that
// reads only layout-free parameters (or what earlier such nests wrote, or what it writes itself,
// a sum over a weight) and writes buffers the root allocates. SplitPrepack cuts the function in
// two: the packing, which a deployment runs once per weight, and the kernel on the packed weights,
// which is what a call costs. As with MLAS's pre-packed initializers, oneDNN's weight reorder and
// MetaSchedule's RewriteLayout, measurements time the second part only; the whole function is still
// their composition, so checks and callers that pass the plain weights get the same outputs.
#ifndef TESSERA_IR_PREPACK_H_
#define TESSERA_IR_PREPACK_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

// Function attribute: the indices (into params()) of the layout-free parameters.
inline constexpr char kLayoutFreeBuffers[] = "layout_free_buffers";
// Block annotation (int 1): the block packs layout-free parameters.
inline constexpr char kLayoutRewritePreproc[] = "layout_rewrite_preproc";

// Sorted indices of the parameters `f` declares layout-free (kLayoutFreeBuffers), without
// duplicates or indices out of range.
std::vector<int> LayoutFreeParamIndices(const PrimFunc& f);
bool IsLayoutFreeParam(const PrimFunc& f, const Buffer& buffer);

// Where an argument of a split function comes from: a parameter of the whole function
// (params()[index]) or a packed buffer (PrepackSplit::packed[index]).
struct PrepackArg {
  bool packed = false;
  int index = 0;
};

struct PrepackSplit {
  // The packing: parameters the layout-free weights it reads, then the packed buffers.
  PrimFunc prepack;
  // The kernel: the whole function's parameters that its other nests use, in order, with the
  // packed buffers in the place of the first weight it no longer reads (X, W, Y packed as
  // X, W_packed, Y).
  PrimFunc prepacked;
  std::vector<Buffer> packed;
  std::vector<PrepackArg> prepack_args;
  std::vector<PrepackArg> prepacked_args;
};

// The split of `f` at its kLayoutRewritePreproc nests; nullopt when it has none.
// kInvalidArgument, naming the block, for an annotated block that shares its top-level nest
// with other blocks, reads a buffer that is neither a layout-free parameter nor written by an
// earlier packing nest, or writes a parameter.
absl::StatusOr<std::optional<PrepackSplit>> SplitPrepack(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_IR_PREPACK_H_
