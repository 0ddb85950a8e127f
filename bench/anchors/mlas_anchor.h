// onnxruntime's MLAS as an anchor for bench_shapes (issue #13): runs bench/anchors/ort_anchor.py
// with the Python of the anchors' own virtualenv (bench/anchors/setup_venv.sh) and reads the
// JSON line it prints. Python and onnxruntime are never part of the build or the tests.
#ifndef TESSERA_BENCH_ANCHORS_MLAS_ANCHOR_H_
#define TESSERA_BENCH_ANCHORS_MLAS_ANCHOR_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace tessera {
namespace anchors {

// The --shape argument of ort_anchor.py: NAME:WORKLOAD:K=V,K=V (keys in map order).
std::string OrtShapeArg(const std::string& name, const std::string& workload,
                        const std::map<std::string, int64_t>& params);

// Seconds from one JSON line of ort_anchor.py; the line's "error" (a workload it has no model
// for) or a missing/non-positive "seconds" is an error that says which.
absl::StatusOr<double> ParseOrtLine(const std::string& line);

// Runs `python script --shape ...` for one shape (2 intra-op threads) and parses its output.
absl::StatusOr<double> MlasSeconds(const std::string& python, const std::string& script,
                                   const std::string& name, const std::string& workload,
                                   const std::map<std::string, int64_t>& params);

}  // namespace anchors
}  // namespace tessera

#endif  // TESSERA_BENCH_ANCHORS_MLAS_ANCHOR_H_
