// C source emitter for the CPU target.
//
// Generated kernels have the C ABI
//
//     int32_t <symbol>(void** args);
//
// where args[i] points to the first element of parameter i (func.params()[i]) stored densely
// in row-major order (or at the buffer's strides when it has them), with the element types
// float (float32), double (float64), _Float16 (float16), uint16_t holding the bfloat16 bits
// (bfloat16), intN_t / uintN_t, and uint8_t holding 0/1 (bool). Parameters never alias
// (they are declared `restrict`). The kernel returns 0 on success and -1 when a heap
// allocation for an intermediate buffer fails outside a parallel region (inside one, it traps).
//
// Loop kinds map to: parallel -> an `#pragma omp parallel` region around `#pragma omp for
// nowait` on the outermost parallel loop (directly nested parallel loops join it with
// collapse(n), deeper ones run serially); the function and each thread of a region flush
// denormal floats to zero while they run (TESSERA_FLUSH_DENORMALS, codegen/c_prelude.cc);
// vectorized -> `#pragma omp simd` when every store in the loop depends on the loop variable,
// otherwise left to the compiler's auto-vectorizer; unroll -> `#pragma GCC unroll <extent>`;
// the loop annotation `pragma_auto_unroll_max_step` = S unrolls every loop below it whose
// iteration count times that of its inner loops is at most S. Thread-bound loops are errors.
// float16 and bfloat16 values are computed in float and rounded to nearest even on stores
// and casts. Intermediate buffers up to 32 KiB live on the stack (64-byte aligned), larger ones
// on the heap and are freed at the end of their scope; inside a parallel loop every thread
// gets its own.
//
// A function that packs layout-free weights (ir/prepack.h SplitPrepack) gets two more entries
// with the same ABI: `<symbol>_prepack` (the weights it reads, then the packed buffers it
// fills, in PrepackSplit::prepack's order) and `<symbol>_prepacked` (the kernel: the
// parameters it uses, then the packed buffers). A deployment calls the first once per weight
// and the second per call; measurements time the second. `<symbol>` itself stays the whole
// function: it allocates the packed buffers, calls both and frees them.
#ifndef TESSERA_CODEGEN_CODEGEN_C_H_
#define TESSERA_CODEGEN_CODEGEN_C_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

// One function of a translation unit and the C symbol it gets.
struct CFunction {
  PrimFunc func;
  std::string symbol;
};

// A complete C translation unit holding `f` (scheduled TensorIR; lowered here with
// LowerForCodegen) as `int32_t <symbol>(void** args)`. kInvalidArgument for what the CPU
// cannot run, naming it: a thread-bound loop ("cpu codegen: loop i bound to threadIdx.x"),
// an unsupported dtype, a free variable, an allocation of non-constant size, a symbol that
// is not a C identifier.
absl::StatusOr<std::string> GenerateC(const PrimFunc& f, const std::string& symbol);

// The symbols of a split function's halves (see above).
std::string PrepackSymbol(const std::string& symbol);
std::string PrepackedSymbol(const std::string& symbol);

// Several functions in one translation unit (one compiler start for many kernels).
// kInvalidArgument also for a repeated symbol.
absl::StatusOr<std::string> GenerateCModule(const std::vector<CFunction>& functions);

}  // namespace tessera

#endif  // TESSERA_CODEGEN_CODEGEN_C_H_
