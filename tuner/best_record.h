// The record a tuned workload is compiled with: what ApplyBest, `tessera best` and the server's
// GetBest return. Issue #13: a tuned result is never worse than the default schedule. The
// default is measured in each task's first batch, so the fastest record is never slower than it
// by the tuner's own timings; but two timings of one kernel differ by 1-3% here, so a schedule
// measured 1% faster than the default is as likely to be 1% slower when timed again. The
// default's record is therefore preferred while it is within `margin` of the fastest: a tuned
// schedule replaces the default only when it wins by more than the timings' noise.
//
// A program measured more than once (the runoff, tuner/runoff.h, times the fastest and the
// default again side by side) is timed by its latest record, by timestamp (then commit order,
// so that history imported later from another database orders by when it was measured): its
// earlier ones are history.
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
// ones only if `verified_only`), fastest first (ties: older first).
absl::StatusOr<std::vector<TuningRecord>> LatestRecordPerProgram(Database* db,
                                                                 const Workload& workload,
                                                                 const std::string& target,
                                                                 bool verified_only);
// The same of `records` (all of one workload and target): the latest of each trace by
// timestamp, then commit order; failed ones (and unverified ones if `verified_only`) left out.
std::vector<TuningRecord> LatestRecordPerProgram(std::vector<TuningRecord> records,
                                                 bool verified_only);

// BestRecordOrDefault's choice among `latest` (LatestRecordPerProgram's answer for `func`).
absl::StatusOr<std::optional<ChosenRecord>> ChooseBestRecord(
    const PrimFunc& func, const Target& target, const std::vector<TuningRecord>& latest,
    double margin = kDefaultScheduleMargin);

// What the best record is, and what it would be without the runoffs' re-measurements (records
// with TuningRecord::retimes set), so that `status`, `best` and the report can say when a
// runoff changed it.
struct BestAndRunoff {
  std::optional<ChosenRecord> best;           // BestRecordOrDefault's answer
  std::optional<ChosenRecord> before_runoff;  // the same without the runoffs' records
  int runoff_records = 0;                     // the runoffs' records left out for that
  // A runoff changed which program is the best (or whether there is one).
  bool changed_by_runoff() const;
};
// `runoff_job`: leave out only that job's re-measurements (its own runoff); nullopt: every
// re-measurement.
absl::StatusOr<BestAndRunoff> BestRecordAndRunoff(
    Database* db, const PrimFunc& func, const Target& target, bool verified_only,
    const std::optional<std::string>& runoff_job = std::nullopt);

// What `topk` lists: the record BestRecordOrDefault returns first, then the latest record of
// every other program, fastest first; at most `k` (> 0) of them. So the first record `topk`
// shows is the one `best` shows, and a program re-measured by a runoff shows its latest time.
struct TopRecords {
  std::vector<TuningRecord> records;
  std::optional<ChosenRecord> best;  // records[0] when set
};
absl::StatusOr<TopRecords> TopRecordsWithBest(Database* db, const PrimFunc& func,
                                              const Target& target, bool verified_only, int k);

// The structural hash of `func` under the first default rule that applies; nullopt if none does.
absl::StatusOr<std::optional<std::string>> DefaultScheduleHash(const PrimFunc& func,
                                                               const Target& target);

// `func` scheduled by `record`'s full trace (postprocessing included, not run again).
absl::StatusOr<PrimFunc> ReplayRecord(const PrimFunc& func, const TuningRecord& record);

// The hash of `func` scheduled by `record`'s trace; nullopt when it does not replay.
std::optional<std::string> RecordHash(const PrimFunc& func, const TuningRecord& record);

}  // namespace tessera

#endif  // TESSERA_TUNER_BEST_RECORD_H_
