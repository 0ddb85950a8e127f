// The record a tuned workload is compiled with: what ApplyBest, `tessera best` and the server's
// GetBest return. Issue #13: a tuned result is never worse than the default schedule. The
// default is measured in each task's first batch, so the fastest record is never slower than it
// by the tuner's own timings; but two timings of one kernel differ by 1-3% here, so a schedule
// measured 1% faster than the default is as likely to be 1% slower when timed again. The
// default's record is therefore preferred while it is within `margin` of the fastest: a tuned
// schedule replaces the default only when it wins by more than the timings' noise.
//
// A program measured more than once (the runoff, tuner/runoff.h, times the fastest and the
// default again side by side) is timed by its latest record: its earlier ones are history.
#ifndef TESSERA_TUNER_BEST_RECORD_H_
#define TESSERA_TUNER_BEST_RECORD_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/function.h"
#include "ir/target.h"

namespace tessera {

// The default schedule's record wins ties within this fraction of the fastest record's time.
inline constexpr double kDefaultScheduleMargin = 0.03;

struct ChosenRecord {
  TuningRecord record;
  // Set when `record` is the default schedule's and a faster record within the margin was
  // passed over: that record, for callers that say so.
  std::optional<TuningRecord> passed_over;
};

// The fastest record of `func` on `target` (verified ones only if `verified_only`), or the
// default schedule's record (verified too if `verified_only`; never one with an error) when
// that is at most `margin` slower; nullopt without records. Each program counts with its latest
// record only.
absl::StatusOr<std::optional<ChosenRecord>> BestRecordOrDefault(
    Database* db, const PrimFunc& func, const Target& target, bool verified_only,
    double margin = kDefaultScheduleMargin);

// The latest successful record of each program (trace) of `workload` on `target` (verified
// ones only if `verified_only`), fastest first.
absl::StatusOr<std::vector<TuningRecord>> LatestRecordPerProgram(Database* db,
                                                                 const Workload& workload,
                                                                 const std::string& target,
                                                                 bool verified_only);

// The structural hash of `func` under the first default rule that applies; nullopt if none does.
absl::StatusOr<std::optional<std::string>> DefaultScheduleHash(const PrimFunc& func,
                                                               const Target& target);

// `func` scheduled by `record`'s full trace (postprocessing included, not run again).
absl::StatusOr<PrimFunc> ReplayRecord(const PrimFunc& func, const TuningRecord& record);

// The hash of `func` scheduled by `record`'s trace; nullopt when it does not replay.
std::optional<std::string> RecordHash(const PrimFunc& func, const TuningRecord& record);

}  // namespace tessera

#endif  // TESSERA_TUNER_BEST_RECORD_H_
