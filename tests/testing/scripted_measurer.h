// A measurer without a compiler, for tests of the tuning loop (tests/tuner/*): every candidate
// gets a latency derived from its structural hash, so a search can be replayed exactly, and
// every seventh or so fails to "build". Stage times are scripted too (kBuildSecs per build,
// kRunStepsPerLatency x the latency per run, kVerifySecs per check). It counts how often each
// program was measured.
//
// With Latencies::kModelled the latency is instead ModelledLatency(program): a toy machine's
// time for the scheduled program, a function of its loops that a cost model can learn, so that
// a test of learning quality does not depend on the load of the machine it runs on.
#ifndef TESSERA_TESTS_TESTING_SCRIPTED_MEASURER_H_
#define TESSERA_TESTS_TESTING_SCRIPTED_MEASURER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "ir/function.h"
#include "ir/structural_hash.h"
#include "worker/measurer.h"

namespace tessera {
namespace testing {

// The time (seconds) of `program` on a toy machine: for every store, the trip count of its
// loops times its operations (loads, arithmetic, the store), divided by the lanes of a
// vectorized innermost loop (at most 16) and the workers of its parallel loops (at most 8),
// times 0.75 when the innermost loop is unrolled and 1 + 0.5 per access whose last index does
// not follow the innermost loop while another index does (a strided access); 1 ns per
// operation, plus 1 us. Deterministic, and never a failure.
double ModelledLatency(const PrimFunc& program);

class ScriptedMeasurer : public Measurer {
 public:
  enum class Latencies {
    kByHash,    // Latency(hash): scripted, unrelated to the program; some "build" failures
    kModelled,  // ModelledLatency(program)
  };

  // `verified`: whether a candidate the request asks to verify passes its check.
  explicit ScriptedMeasurer(bool verified = true, Latencies latencies = Latencies::kByHash)
      : verified_(verified), latencies_(latencies) {}

  static constexpr double kBuildSecs = 0.25;
  static constexpr double kRunStepsPerLatency = 4;
  static constexpr double kVerifySecs = 0.125;

  // The scripted latency of the program whose StructuralHashHex is `hash` (seconds, between 1
  // and 11 ms); nullopt for a scripted build failure.
  static std::optional<double> Latency(const std::string& hash) {
    const uint64_t h = std::hash<std::string>()(hash);
    if (h % 7 == 0) return std::nullopt;
    return 1e-3 * (1 + static_cast<double>(h % 1000) / 100);
  }

  absl::StatusOr<MeasuredBatch> Measure(const MeasureRequest& request) override {
    MeasuredBatch batch;
    batch.provenance.device = "scripted";
    for (const PrimFunc& f : request.candidates) {
      const std::string hash = StructuralHashHex(f);
      MeasureOutcome o;
      o.build_secs = kBuildSecs;
      const std::optional<double> secs =
          latencies_ == Latencies::kModelled ? ModelledLatency(f) : Latency(hash);
      if (secs) {
        o.run_secs = {*secs};
        o.run_wall_secs = kRunStepsPerLatency * *secs;
        o.verified = verified_ && request.verify;
        if (request.verify) o.verify_secs = kVerifySecs;
      } else {
        o.error = MeasureError::kBuild;
        o.error_msg = "build: scripted failure";
      }
      batch.outcomes.push_back(o);
      ++measured_[hash];
    }
    return batch;
  }

  // Structural hash -> number of times measured.
  const std::map<std::string, int>& measured() const { return measured_; }

 private:
  bool verified_;
  Latencies latencies_;
  std::map<std::string, int> measured_;
};

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TESTING_SCRIPTED_MEASURER_H_
