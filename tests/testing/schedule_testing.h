// Test helpers for schedules: the unscheduled program is the oracle (design principle P3).
#ifndef TESSERA_TESTS_TESTING_SCHEDULE_TESTING_H_
#define TESSERA_TESTS_TESTING_SCHEDULE_TESTING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "ir/function.h"
#include "schedule/schedule.h"

namespace tessera {
namespace testing {

// Runs both functions in the reference interpreter on the same seeded random inputs and
// compares every output; the error says which output differs and by how much.
absl::Status CheckSameOutputs(const PrimFunc& reference, const PrimFunc& candidate,
                              int64_t seed = 0);

// Serializes `sch`'s trace to JSON, parses it back, replays it on a fresh schedule of
// `original` and checks the result is structurally equal to `sch.func()`.
absl::Status CheckReplay(const Schedule& sch, const PrimFunc& original);

// The checks every positive schedule test makes, first failure returned (with the scheduled
// IR in the message): the result is well formed (VerifyWellFormed), computes what `original`
// computes (CheckSameOutputs) and its trace replays to it (CheckReplay).
absl::Status CheckScheduleCorrect(const Schedule& sch, const PrimFunc& original, int64_t seed = 0);

// CheckScheduleCorrect for schedules with Tensorize instructions, whose extern calls the
// interpreter cannot run: the result is well formed and its trace replays to it; then the trace
// is replayed once more with every intrinsic NAME replaced by the registered twin
// "NAME.reference" (impl = desc, so the instantiated body is the description bound to the
// same regions) and that function must compute what `original` computes. This checks every
// binding and region of the tensorization; that each impl implements its desc is the
// compile / device tests' part.
absl::Status CheckTensorizedScheduleCorrect(const Schedule& sch, const PrimFunc& original,
                                            int64_t seed = 0);

// Builds `scheduled` with the C backend, runs it once on seeded random inputs, and compares
// every argument with the interpreter running `original` on the same inputs.
absl::Status CheckCBackendMatches(const PrimFunc& original, const PrimFunc& scheduled,
                                  int64_t seed = 0);

// The select expressions under `s` (the code generation passes that fold or unswitch them).
int CountSelects(const Stmt& s);

// The workload at a small shape, quick to interpret (every workload of the library has one).
PrimFunc SmallWorkload(const std::string& name, const std::string& dtype = "");

// The name of the first block that has a reduction iteration variable ("" if none).
std::string FirstReductionBlock(const PrimFunc& func);

// LINEAR (M x K times a weight W[K, N], N a multiple of 16) with W copied into strips
// W_global[N / 16, K, 16] by a root-level block, annotated as packing (ir/prepack.h) unless
// `annotate` is false: what TiledMatmul's prepacked layout does, without its tiling.
PrimFunc LinearWithPackedWeight(const PrimFunc& linear, bool annotate = true);

// The assembly `cc` makes of the C `code` with the builder's vectorization flags
// (worker/builder.h) for `march` (e.g. "x86-64-v3"; only compiled, never run), through
// DIR/NAME.c and DIR/NAME.s.
absl::StatusOr<std::string> CAssembly(const std::string& dir, const std::string& name,
                                      const std::string& code, const std::string& march);

// The vector stores (`vmov.. %?mm, (mem)` lines) of each innermost loop of `assembly` (a loop
// closed by a backward jump to its label, no such loop inside it) whose body has an instruction
// starting with `mnemonic` (e.g. "vfmadd"): one string per such loop, "" where it stores no
// vector (its accumulators stay in registers).
std::vector<std::string> VectorStoresOfInnermostLoopsWith(const std::string& assembly,
                                                          const std::string& mnemonic);

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TESTING_SCHEDULE_TESTING_H_
