// UnswitchBorders: under a loop annotated kUnswitchBorders (ir/loop_annotations.h), the zero
// padding that a convolution reads through `select(c1 && ... && ck, x, 0)` is tested once per
// iteration of that loop instead of once per term:
//
//   for t in [0, n):  body
// becomes
//   for t in [0, n):  if (interior(t)) body[select -> x] else body
//
// where interior(t) holds when every conjunct of every such select holds for all values of the
// loops nested inside (each of constant extent): a conjunct `e < 0` (or <=, >, >=, any two sides)
// with e linear in those loops' variables with constant coefficients holds everywhere when its
// largest (smallest) value over their ranges does. Selects with a conjunct of another form, or
// using a loop variable of non-constant extent, stay as they are in both copies. The meaning
// does not change (in the first copy the replaced selects would all have taken x); the tile
// in the interior of the image runs free of tests, the border tiles as before.
#ifndef TESSERA_CODEGEN_UNSWITCH_BORDERS_H_
#define TESSERA_CODEGEN_UNSWITCH_BORDERS_H_

#include "ir/function.h"

namespace tessera {

// `f` (lowered by LowerForCodegen) with its annotated loops unswitched as described above.
PrimFunc UnswitchBorders(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_UNSWITCH_BORDERS_H_
