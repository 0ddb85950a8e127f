#include "cli/job_output.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "proto/tessera.grpc.pb.h"

namespace tessera {
namespace cli {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string FormatDuration(double seconds) {
  int s = static_cast<int>(std::max(0.0, seconds) + 0.5);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

int ErrorCount(const v1::TaskStatus& t) {
  int n = 0;
  for (const auto& [kind, count] : t.errors()) n += count;
  return n;
}

bool IsTerminal(v1::JobState state) {
  return state == v1::JOB_SUCCEEDED || state == v1::JOB_FAILED || state == v1::JOB_CANCELLED;
}

// The line `tessera tune` prints after each batch, for the task the event is about.
std::string ProgressLine(const v1::JobEvent& event) {
  const v1::JobStatus& job = event.status();
  double elapsed = Now() - job.submitted_at();
  double eta =
      job.trials() > 0 ? elapsed * std::max(0, job.max_trials() - job.trials()) / job.trials() : 0;
  std::string head = absl::StrFormat("[%d/%d trials]", job.trials(), job.max_trials());
  std::string tail =
      absl::StrFormat(" | elapsed %s, left ~%s", FormatDuration(elapsed), FormatDuration(eta));
  if (event.task() >= 0 && event.task() < job.tasks_size()) {
    const v1::TaskStatus& t = job.tasks(event.task());
    std::string best = t.has_best()
                           ? absl::StrFormat("best %s %.2f GFLOP/s",
                                             FormatSeconds(t.best_seconds()), t.best_gflops())
                           : "no valid candidate yet";
    // A model job's whole-model figure beside the task's.
    std::string model =
        job.has_estimated_latency_seconds()
            ? absl::StrCat("; model ~", FormatSeconds(job.estimated_latency_seconds()))
            : "";
    return absl::StrFormat("%s %s: %d trials, %s%s%s", head, t.name(), t.trials(), best, model,
                           tail);
  }
  std::string line = absl::StrFormat("%s job %s %s, %d queued, %d in flight", head, job.job_id(),
                                     JobStateName(job.state()), job.queued(), job.in_flight());
  if (!job.waiting_for().empty()) absl::StrAppend(&line, "; waiting for ", job.waiting_for());
  return line + tail;
}

}  // namespace

std::string JobStateName(v1::JobState state) {
  switch (state) {
    case v1::JOB_QUEUED:
      return "queued";
    case v1::JOB_RUNNING:
      return "running";
    case v1::JOB_SUCCEEDED:
      return "succeeded";
    case v1::JOB_FAILED:
      return "failed";
    case v1::JOB_CANCELLED:
      return "cancelled";
    case v1::JOB_CANCELLING:
      return "cancelling";
    default:
      return "unknown";
  }
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(message, &out, options).ok()) return "{}";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string JobStatusText(const v1::JobStatus& job) {
  std::string out = absl::StrFormat(
      "job %s%s: %s, %d/%d trials, priority %d, on %s\n", job.job_id(),
      job.name().empty() ? "" : absl::StrCat(" (", job.name(), ")"), JobStateName(job.state()),
      job.trials(), job.max_trials(), job.priority(), job.target());
  if (job.runoff_records() > 0) {
    absl::StrAppendFormat(&out, "records: %d trials and %d re-measurements by the runoff\n",
                          job.trials(), job.runoff_records());
  }
  if (job.queued() > 0 || job.in_flight() > 0) {
    absl::StrAppendFormat(&out, "candidates: %d queued, %d in flight\n", job.queued(),
                          job.in_flight());
  }
  if (!job.waiting_for().empty()) absl::StrAppend(&out, "waiting for: ", job.waiting_for(), "\n");
  if (!job.error().empty()) absl::StrAppend(&out, "error: ", job.error(), "\n");
  absl::StrAppendFormat(&out, "%-4s %-44s %7s %12s %12s %7s %10s %9s %7s\n", "ID", "task", "trials",
                        "default", "best", "gain", "GFLOP/s", "verified", "errors");
  for (int i = 0; i < job.tasks_size(); ++i) {
    const v1::TaskStatus& t = job.tasks(i);
    absl::StrAppendFormat(&out, "%-4d %-44s %7d %12s %12s %7s %10.2f %9s %7d\n", i, t.name(),
                          t.trials(), t.has_default() ? FormatSeconds(t.default_seconds()) : "-",
                          t.has_best() ? FormatSeconds(t.best_seconds()) : "-",
                          t.gain() > 0 ? absl::StrFormat("%.2fx", t.gain()) : "-",
                          t.has_best() ? t.best_gflops() : 0.0, t.has_best() ? "yes" : "no",
                          ErrorCount(t));
  }
  if (!job.model().empty()) {
    ModelEstimate e;
    e.seconds = job.estimated_latency_seconds();
    for (const v1::TaskStatus& t : job.tasks()) {
      if (!t.has_best()) e.missing.push_back(t.name());
    }
    e.default_seconds = job.default_latency_seconds();
    e.default_missing = job.has_default_latency_seconds() ? 0 : 1;
    absl::StrAppend(&out, ModelEstimateLine(job.model(), e), "\n");
  }
  for (const std::string& w : job.warnings()) absl::StrAppend(&out, "warning: ", w, "\n");
  // What `best` returns per task, and what the runoff did to it.
  for (int i = 0; i < job.tasks_size(); ++i) {
    const v1::TaskStatus& t = job.tasks(i);
    if (t.has_best()) {
      absl::StrAppendFormat(&out, "task %d: best is record %d%s", i, t.best_record_id(),
                            t.best_job_id() == job.job_id() ? ""
                            : t.best_job_id().empty()
                                ? " (a local tune's)"
                                : absl::StrCat(" (of job ", t.best_job_id(), ")"));
      if (t.passed_over_record_id() > 0) {
        absl::StrAppendFormat(&out,
                              ", the default schedule's: record %d was faster by less than 3%%",
                              t.passed_over_record_id());
      }
      absl::StrAppend(&out, "\n");
    }
    if (t.runoff_records() > 0 || !t.runoff().empty()) {
      absl::StrAppendFormat(&out, "task %d: runoff (%d re-measurements):", i, t.runoff_records());
      for (absl::string_view line : absl::StrSplit(t.runoff(), '\n', absl::SkipEmpty())) {
        absl::StrAppend(&out, "\n  ", line);
      }
      absl::StrAppend(&out, "\n");
    }
    if (t.best_changed_by_runoff()) {
      absl::StrAppendFormat(&out,
                            "task %d: the runoff changed the best: record %d before, %s now\n", i,
                            t.best_record_id_before_runoff(),
                            t.has_best() ? absl::StrCat("record ", t.best_record_id()) : "none");
    }
  }
  return out;
}

std::string ModelEstimateLine(const std::string& model, const ModelEstimate& e) {
  if (!e.missing.empty()) {
    return absl::StrFormat("%s: no estimate yet (%d task(s) without a valid candidate: %s)", model,
                           e.missing.size(), absl::StrJoin(e.missing, ", "));
  }
  std::string line =
      absl::StrFormat("%s: estimated latency %s (sum of weight x best over its tasks)", model,
                      FormatSeconds(e.seconds));
  if (!e.default_missing && e.seconds > 0) {
    absl::StrAppendFormat(&line, "; with the default schedules %s: gain %.2fx",
                          FormatSeconds(e.default_seconds), e.default_seconds / e.seconds);
  }
  return line;
}

void PrintJobStatus(const v1::JobStatus& job) { std::printf("%s", JobStatusText(job).c_str()); }

int WatchUntilDone(const Client& client, const std::string& job_id, bool json,
                   double reconnect_sec) {
  auto stub = v1::TuningService::NewStub(client.channel);
  bool tty = isatty(STDERR_FILENO);
  bool printed = false;
  std::string last_line;
  v1::JobStatus last;
  bool have_last = false;
  auto broken_since = std::chrono::steady_clock::now();
  double backoff = 0.5;
  grpc::Status status;
  while (true) {
    grpc::ClientContext context;
    client.Prepare(&context, /*timeout_override=*/0);  // a stream lasts as long as the job
    v1::JobRef ref;
    ref.set_job_id(job_id);
    std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader = stub->WatchJob(&context, ref);
    v1::JobEvent event;
    bool got_event = false;
    while (reader->Read(&event)) {
      got_event = true;
      last = event.status();
      have_last = true;
      std::string line = ProgressLine(event);
      if (tty) {
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
      } else if (line != last_line) {  // one batch can bring several events (done, new best)
        std::fprintf(stderr, "%s\n", line.c_str());
      }
      last_line = line;
      std::fflush(stderr);
      printed = true;
      if (IsTerminal(last.state())) break;
    }
    if (have_last && IsTerminal(last.state())) {
      context.TryCancel();
      break;
    }
    status = reader->Finish();
    // Only a broken connection is worth waiting for; NOT_FOUND, UNAUTHENTICATED... are final.
    bool transient = status.ok() || status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                     status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                     status.error_code() == grpc::StatusCode::CANCELLED;
    if (got_event) {
      broken_since = std::chrono::steady_clock::now();
      backoff = 0.5;
    }
    double broken =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - broken_since).count();
    if (!transient || broken + backoff > reconnect_sec) {
      if (printed && tty) std::fprintf(stderr, "\n");
      if (status.ok()) {
        return ReportError(absl::UnavailableError(
            absl::StrCat("watch ", job_id, ": the stream ended before the job did")));
      }
      return ReportRpcError(status, absl::StrCat("watch ", job_id));
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(backoff));
    backoff = std::min(backoff * 2, 5.0);
  }
  if (printed && tty) std::fprintf(stderr, "\n");
  if (json) {
    std::printf("%s\n", ToJson(last).c_str());
  } else {
    PrintJobStatus(last);
  }
  std::fflush(stdout);
  if (last.state() == v1::JOB_SUCCEEDED) return 0;
  if (last.state() == v1::JOB_CANCELLED) {
    return ReportError(absl::CancelledError(absl::StrCat("job ", job_id, " was cancelled")));
  }
  return ReportError(absl::InternalError(absl::StrCat("job ", job_id, " failed: ", last.error())));
}

}  // namespace cli
}  // namespace tessera
