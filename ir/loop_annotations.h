// Loop annotations that code generation reads (set by schedules with Schedule::Annotate, kept
// in traces like any other annotation).
#ifndef TESSERA_IR_LOOP_ANNOTATIONS_H_
#define TESSERA_IR_LOOP_ANNOTATIONS_H_

#include <cstdint>
#include <variant>

#include "ir/stmt.h"

namespace tessera {

// The integer value of `loop`'s annotation `key`; 0 where it has none or another kind of value.
inline int64_t IntAnnotation(const ForNode* loop, const char* key) {
  auto it = loop->annotations.find(key);
  if (it == loop->annotations.end()) return 0;
  const int64_t* value = std::get_if<int64_t>(&it->second);
  return value != nullptr ? *value : 0;
}

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

// Int 1, on the reduction loop of a tile that reads a packed panel (a convolution's packed
// weights): each iteration first prefetches what the same iteration of the next panel reads
// (codegen/panel_prefetch.h), so that the next tile's panel arrives from memory while this one
// computes. The interpreter runs the loop as written.
inline constexpr char kPrefetchNextPanel[] = "prefetch_next_panel";

// Int D >= 1, on the reduction loop of a tile that reads vectors along it from memory (a GEMM's
// packed strips, a cache line per iteration each): each iteration first prefetches into L1 what
// iteration k + D reads (codegen/panel_prefetch.h). 0 or absent: none. The interpreter runs the
// loop as written.
inline constexpr char kPrefetchAhead[] = "prefetch_ahead";

// Int S >= 2, on a serial loop of a cuda kernel whose body fills shared buffers and then reads
// them (a GEMM's k step): the fills of iteration k + S - 1 are issued while iteration k computes,
// from S copies of each buffer (codegen/software_pipeline.h), asynchronously (cp.async) on
// sm_80 and later. The interpreter and the CPU backend run the loop as written.
inline constexpr char kSoftwarePipelineStages[] = "software_pipeline_stages";

// Int 1, set by the software pipelining pass (not by schedules): this loop copies contiguous
// elements from global into shared memory; CUDA code generation issues it as one cp.async where
// it moves 4, 8 or 16 aligned bytes, and as the plain loop otherwise.
inline constexpr char kAsyncCopy[] = "tessera.async_copy";

}  // namespace tessera

#endif  // TESSERA_IR_LOOP_ANNOTATIONS_H_
