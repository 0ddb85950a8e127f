// What the benchmarks share to time schedules the way they compare them: the measure config,
// the default schedule of a function and the mean seconds of scheduled functions, checked.
#ifndef TESSERA_BENCH_BENCH_MEASURE_H_
#define TESSERA_BENCH_BENCH_MEASURE_H_

#include <optional>
#include <string>
#include <vector>

#include "ir/function.h"
#include "ir/target.h"
#include "worker/measurer.h"

namespace tessera {

// 5 repeats of at least 50 ms each; `timeout_sec` also bounds the reference of the first check.
MeasureConfig BenchMeasureConfig(double timeout_sec = 30);

// The default schedule of `func` (the first default rule that applies), or nullopt.
std::optional<PrimFunc> DefaultFunc(const PrimFunc& func, const Target& target);

// The mean seconds of each of `scheduled` (checked against the reference), 0 for a failure,
// whose reason goes to stderr after `who`.
std::vector<double> MeasureSeconds(const PrimFunc& func, const std::vector<PrimFunc>& scheduled,
                                   const Target& target, LocalMeasurer* measurer,
                                   const std::string& who);

}  // namespace tessera

#endif  // TESSERA_BENCH_BENCH_MEASURE_H_
