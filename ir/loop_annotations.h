// Loop annotations that code generation reads (set by schedules with Schedule::Annotate, kept
// in traces like any other annotation).
#ifndef TESSERA_IR_LOOP_ANNOTATIONS_H_
#define TESSERA_IR_LOOP_ANNOTATIONS_H_

namespace tessera {

// Int 1: under this loop, a float sum `acc = acc + select(c, x, 0) * y` becomes
// `if (c) acc = acc + x * y` (codegen/partition_loops.h), so the multiply-adds of the zero terms
// are skipped. Set on a convolution tile whose padding is inlined and whose bounds tests become
// constants in the unrolled tile; elsewhere a test per term costs more than the term.
inline constexpr char kSkipZeroTerms[] = "skip_zero_terms";

// Int 1: the zero padding a convolution reads through selects under this loop is tested once
// per iteration (codegen/unswitch_borders.h): interior iterations run a copy of the body
// without the tests. Set on the tile loop of a convolution whose tiles sit at runtime offsets
// (a depthwise convolution's pixel tiles), where the tests cannot become constants.
inline constexpr char kUnswitchBorders[] = "unswitch_borders";

}  // namespace tessera

#endif  // TESSERA_IR_LOOP_ANNOTATIONS_H_
