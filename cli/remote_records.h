// `tessera best|topk|apply --server ADDR`: the same commands answered by a tuning server
// (GetBest, GetTopK, ApplyBest) instead of a database file; the output has the same form.
#ifndef TESSERA_CLI_REMOTE_RECORDS_H_
#define TESSERA_CLI_REMOTE_RECORDS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/common.h"
#include "cli/measure.h"
#include "database/database.h"

namespace tessera {
namespace cli {

struct RemoteRecordsQuery {
  FunctionSource source;
  std::string target;  // as given: a bare kind is resolved by the server
  int k = 10;
  bool topk = false;  // GetTopK instead of GetBest
  bool all = false;   // unverified records too
  bool trace = false;
  bool json = false;
};
int RunRecordsOnServer(const ClientOptions& client, const RemoteRecordsQuery& query);

// The head of a record's line in `best` and `topk`: "#1 record 12", with " (best)" for the
// record `best` returns in a topk list and " (re-measures record 9)" for a runoff's record
// (`retimes` >= 0; 0: a record not in this database).
std::string RecordHead(size_t rank, int64_t id, bool best, int64_t retimes);

// What `best` prints under the record it shows when that is the default schedule's and a record
// measured faster by less than the timings' noise was passed over (tuner/best_record.h).
std::string PassedOverLine(int64_t record_id, double seconds);

// Schedules the functions with the server's ApplyBest and prints them or, with `run`, builds,
// times and (measure.check) checks them here. `no_default`: functions the server scheduled
// with a default rule are left unscheduled.
int RunApplyOnServer(const ClientOptions& client, const FunctionList& functions,
                     const MeasureOptions& measure, bool run, bool no_default);

// Every record of the server (ExportRecords) of these workload hashes (empty: all), in its
// order, in an in-memory database, with the runoffs' links to the records they re-time: what
// `report --server` draws and `compile --server` compiles with. Errors name `command` and the
// line that does not parse, or the call and its gRPC code.
absl::StatusOr<std::unique_ptr<Database>> FetchServerRecords(
    const ClientOptions& options, const std::string& command,
    const std::vector<std::string>& workload_hashes = {});

}  // namespace cli
}  // namespace tessera

#endif  // TESSERA_CLI_REMOTE_RECORDS_H_
