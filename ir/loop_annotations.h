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

}  // namespace tessera

#endif  // TESSERA_IR_LOOP_ANNOTATIONS_H_
