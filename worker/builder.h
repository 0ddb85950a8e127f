// Builders turn scheduled functions into loadable artifacts. The C builder (NewCBuilder)
// emits C with codegen/codegen_c.h and compiles every candidate with the host C compiler
// into its own shared object; with the default options:
//
//   cc -O3 -march=native -fno-tree-loop-if-convert -fsimd-cost-model=dynamic -freciprocal-math
//      -fopenmp -shared -fPIC -std=gnu11 <extra flags> -o <unique>.so <src>.c -lm
//
// Every .so gets a unique path (dlopen caches by path, docs/deps.md T6), the compiler is started
// with posix_spawnp (no shell, no fork of this possibly threaded process), and the inputs of
// one Build call are compiled in parallel threads (optionally several per compiler call,
// CBuilderOptions::batch_size). A candidate that fails to generate or to compile is a
// BuildResult with error_msg set, never a crash.
#ifndef TESSERA_WORKER_BUILDER_H_
#define TESSERA_WORKER_BUILDER_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "ir/target.h"

namespace tessera {

struct BuildInput {
  BuildInput(PrimFunc func, Target target,
             std::shared_ptr<const std::atomic<bool>> cancel = nullptr)
      : func(std::move(func)), target(std::move(target)), cancel(std::move(cancel)) {}

  PrimFunc func;
  Target target;
  // Stops a build before it starts: once the flag is true, an input a builder has not started
  // on is not built and its result is the error kBuildCancelled. LocalMeasurer sets it when a
  // worker's lease is revoked, so that the rest of the batch is not compiled for nothing.
  std::shared_ptr<const std::atomic<bool>> cancel;
  bool cancelled() const { return cancel != nullptr && cancel->load(); }
};

inline constexpr char kBuildCancelled[] = "build: cancelled";

struct BuildResult {
  std::string artifact_path;   // the shared object, when ok()
  std::string symbol;          // the kernel's C symbol in it (ABI in codegen/codegen_c.h)
  std::string error_msg;       // codegen or compiler error (the compiler's stderr, trimmed)
  double compile_seconds = 0;  // wall time of code generation and compilation
  bool ok() const { return error_msg.empty(); }
};

class Builder {
 public:
  virtual ~Builder() = default;
  // One result per input, in order. Thread-compatible: one Build call at a time.
  virtual std::vector<BuildResult> Build(const std::vector<BuildInput>& inputs) = 0;
  // Builds like Build, but hands each result to `on_built(i, result)` as soon as it is ready,
  // from the builder's threads (possibly several at once), so that a caller can use the first
  // results while later inputs still compile (LocalMeasurer's pipeline, worker/measurer.h).
  // Returns when every result has been handed over. The default builds everything with Build,
  // then hands the results over in order.
  using BuildDone = std::function<void(size_t index, BuildResult result)>;
  virtual void BuildEach(const std::vector<BuildInput>& inputs, const BuildDone& on_built);
};

struct CBuilderOptions {
  std::string compiler = "cc";  // looked up in PATH
  // Replaceable optimization flags; {"-O0"} gives the naive reference build of `run --check`.
  // -fno-tree-loop-if-convert: GCC 12.2 at -O3 with AVX2/AVX-512 vectorizes some guarded
  // loads into wrong code (a padding loop `P[..] = (i >= 3 && i < 15 && ...) ? in[.. - 1413]
  // : 0` wrote zeros inside the window; docs/cpu-backend.md), and this pass is where it goes
  // wrong.
  // -fsimd-cost-model=dynamic: GCC vectorizes `#pragma omp simd` loops whatever its cost model
  // says ("unlimited"); after its unroll-and-jam, a simd loop over a strided access (a GEMV
  // candidate reading A[i * 4096 + k]) became 16,000 permutes that took cc1 40 s to over a
  // minute. With the cost model such loops stay scalar; of 193 candidates of three tuned shapes
  // only those 4 compiled differently (docs/cpu-backend.md).
  // -freciprocal-math: a division by a loop-invariant value (softmax's row sum, a norm's
  // deviation) becomes one reciprocal and a multiplication per element, where a vector
  // division costs several multiplications; at most one more rounding, as the check allows.
  std::vector<std::string> optimization_flags = {"-O3", "-march=native",
                                                 "-fno-tree-loop-if-convert",
                                                 "-fsimd-cost-model=dynamic", "-freciprocal-math"};
  bool openmp = true;                    // -fopenmp; without it the omp pragmas are ignored
  std::vector<std::string> extra_flags;  // appended after all other flags
  // Where sources and shared objects go. Empty: a fresh directory under $TMPDIR (or /tmp),
  // removed with the builder unless keep_work_dir. A given directory is created if missing
  // and never removed. Artifacts stay valid while the builder lives.
  std::string work_dir;
  bool keep_work_dir = false;
  int parallelism = 0;      // concurrent compilations; <= 0: hardware threads
  double timeout_sec = 60;  // per compilation; the compiler is killed after it
  // Candidates per compiler call. Above 1, the inputs of one Build call are compiled in
  // batches: one translation unit (GenerateCModule) and one shared object per batch, each
  // input with its own symbol in it, so the compiler starts once per batch instead of once
  // per candidate (tens of times faster for many small kernels at -O0). A batch that fails to
  // compile is compiled again one input at a time, so every error names its own input.
  int batch_size = 1;
};

std::unique_ptr<Builder> NewCBuilder(CBuilderOptions options = {});

// Builds one function; a failed build is an error (kInternal "build failed: <log>").
absl::StatusOr<BuildResult> BuildOne(Builder* builder, const PrimFunc& func, const Target& target);

}  // namespace tessera

#endif  // TESSERA_WORKER_BUILDER_H_
