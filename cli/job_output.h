// Printing and following jobs of a tuning server, shared by `submit --watch`, `watch`,
// `status`, `jobs` and `cancel`.
#ifndef TESSERA_CLI_JOB_OUTPUT_H_
#define TESSERA_CLI_JOB_OUTPUT_H_

#include <string>

#include "cli/client.h"
#include "google/protobuf/message.h"
#include "proto/tessera.pb.h"
#include "tuner/tune.h"

namespace tessera {
namespace cli {

// "queued", "running", "succeeded", "failed", "cancelled".
std::string JobStateName(v1::JobState state);

// A message as JSON (proto field names, every field printed).
std::string ToJson(const google::protobuf::Message& message);

// The job's header line and a table of its tasks (as `tessera tune` prints them), then per task
// its best record (the one `best` returns: its id and job, the record passed over for the
// default schedule's), its runoff's re-measurements and what the runoff did, and whether it
// changed the best.
std::string JobStatusText(const v1::JobStatus& job);
// A model's estimate as `tune MODEL` and a model job's status print it: "cnn.onnx: estimated
// latency 15.5 us (sum of weight x best over its tasks); with the default schedules 24.0 us:
// gain 1.55x", or "cnn.onnx: no estimate yet (1 task(s) without a valid candidate: NAME)".
std::string ModelEstimateLine(const std::string& model, const ModelEstimate& e);

// Prints JobStatusText to stdout.
void PrintJobStatus(const v1::JobStatus& job);

// Follows `job_id` with WatchJob until it ends, printing a progress line per event to stderr
// (rewritten in place on a terminal), then the final status to stdout (JSON with `json`).
// A stream that breaks (server restart) is opened again for up to `reconnect_sec`. Returns the
// exit code: 0 when the job succeeded, 1 (with a one-line error) when it failed, was cancelled,
// or the server could not be reached.
int WatchUntilDone(const Client& client, const std::string& job_id, bool json,
                   double reconnect_sec);

}  // namespace cli
}  // namespace tessera

#endif  // TESSERA_CLI_JOB_OUTPUT_H_
