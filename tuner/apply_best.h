// ApplyBest: an IRModule -> IRModule pass that schedules each function with the best verified
// record the database holds for it on the target (workload found by structural hash and
// equality; target by its canonical string). The record's full trace is replayed as stored
// (postprocessors are not run again). Functions without a record are left unchanged for
// ApplyDefaultSchedule; functions already marked tessera.scheduled are left alone.
#ifndef TESSERA_TUNER_APPLY_BEST_H_
#define TESSERA_TUNER_APPLY_BEST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"
#include "ir/function.h"
#include "ir/target.h"

namespace tessera {

struct ApplyBestEntry {
  std::string function;
  bool hit = false;         // scheduled from a record
  int64_t record_id = -1;
  double record_secs = 0;   // the record's mean latency
  std::string note;         // why it missed: "no workload", "no verified record", ...
};

// `report` (if given) gets one entry per function, in name order. Errors: database failures;
// a stored trace that no longer replays on its workload (names the record).
absl::StatusOr<IRModule> ApplyBest(const IRModule& mod, const Target& target, Database* db,
                                   std::vector<ApplyBestEntry>* report = nullptr);

}  // namespace tessera

#endif  // TESSERA_TUNER_APPLY_BEST_H_
