// The runoff after a tuning job (issue #13: a tuned result is never worse than the default).
// The job times each candidate once, in its batch; a schedule timed a few percent faster than
// the default minutes after the default's batch may only have had a quieter minute (two timings
// of one kernel move 1-3% on a quiet machine, far more on a loaded one). So the task's fastest
// record and the default schedule's record are measured again side by side, alternately
// (default, fastest, fastest, default, default, fastest), and each program's run with the median
// time of its three is committed as a record of its own. The best record (tuner/best_record.h)
// times a program by its latest record, so the tuned schedule replaces the default only if it also
// wins this paired comparison by more than the margin.
#ifndef TESSERA_TUNER_RUNOFF_H_
#define TESSERA_TUNER_RUNOFF_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/function.h"
#include "ir/target.h"
#include "worker/measurer.h"

namespace tessera {

struct Runoff {
  int64_t fastest_id = -1;         // the fastest record before the runoff
  int64_t default_id = -1;         // the default schedule's record before it
  double fastest_secs_before = 0;  // their means as the job measured them
  double default_secs_before = 0;
  double fastest_secs = 0;  // their means in the runoff
  double default_secs = 0;
  int64_t fastest_new_id = -1;  // the runoff's records
  int64_t default_new_id = -1;
  bool tuned_kept = false;  // the best record is this tuned schedule afterwards
  // The record `best` returns after the round: this round's tuned or default record, or
  // another one (an earlier round's winner, or a faster verified record the next round runs
  // off). Rounds are minutes apart, so an earlier winner can stay the best.
  int64_t best_id = -1;
};

// Which of the round's records `best` returns after it: "tuned", "default", or "other".
const char* BestAfter(const Runoff& round);

// What the round decided, in words: the tuned schedule stays the best; it won by less than the
// timings' noise or was not faster (the default is the best); or another record is the best
// now (a faster one that the next round runs off, or an earlier round's winner). Saying "not
// the best" of a tuned schedule that beat the default side by side, when a faster record was
// next in line, read as if it had lost.
std::string RunoffVerdict(const Runoff& round);

// Runs the runoff for `func` on `target`: while its fastest record (verified ones only if
// `verified_only`; each program by its latest record) is neither the default schedule's nor
// one a round confirmed, that record runs off against the default's, at most 3 rounds. One
// entry per round; none when there was nothing to compare (no records, the default is the
// fastest, or its record is not among the fastest 64 programs). An error for a database
// failure or a runoff measurement that failed (that round commits nothing). The runoff's
// records are re-measurements (TuningRecord::retimes names the record each times again, so
// they count as no trial) and carry `job_id` when given (the job that ran the runoff), else the
// job id of the record they re-time.
absl::StatusOr<std::vector<Runoff>> RunOff(Database* db, const PrimFunc& func, const Target& target,
                                           bool verified_only, Measurer* measurer,
                                           const std::optional<std::string>& job_id = std::nullopt);

}  // namespace tessera

#endif  // TESSERA_TUNER_RUNOFF_H_
