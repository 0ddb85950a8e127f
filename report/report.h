// The tuning report: what a records database holds, per task (workload x target), as one
// self-contained HTML page (inline CSS and SVG; no script, no external resource, so it can be
// mailed or attached to a CI run). Per task: tuning curves (best GFLOP/s so far against trials
// and against wall time from the records' timestamps), where the time went as far as records
// tell, failures by error kind, the best schedule's trace and its provenance.
//
// SummarizeTasks does the arithmetic and RenderReportHtml the drawing, so that the numbers are
// tested without parsing HTML and the page is tested in a browser (tests/report/).
#ifndef TESSERA_REPORT_REPORT_H_
#define TESSERA_REPORT_REPORT_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "database/database.h"

namespace tessera {

// One point of a tuning curve: after `trial` records (1-based, commit order) and `seconds`
// since the task's first record, the best successful record ran at `best_gflops`.
struct CurvePoint {
  int64_t trial = 0;
  double seconds = 0;
  double gflops = 0;       // this trial's own GFLOP/s (ReportTask::unit); 0 when it failed
  double best_gflops = 0;  // the best so far; 0 until a trial succeeds
};

struct ErrorCount {
  int64_t count = 0;
  std::string example;  // the first record's message
};

struct ReportTask {
  Workload workload;
  std::string label;  // "gmm(float32[1,16,16], float32[1,16,16] -> ...)": name and arguments
  std::string target;
  double flops = 0;  // of one call (ir/flops.h)
  // What the curves count: "GFLOP/s", or "calls/s" for a function without arithmetic.
  std::string unit = "GFLOP/s";
  int64_t trials = 0;
  int64_t succeeded = 0;
  int64_t verified = 0;
  std::vector<CurvePoint> curve;     // one per record, in commit order
  std::optional<TuningRecord> best;  // the fastest successful record (verified or not)
  // Time, from the records: the span from the first to the last timestamp, the kernel time
  // measured (sum of every run_secs), and the rest (building, checking, searching, waiting:
  // records do not tell these apart).
  double span_seconds = 0;
  double measured_seconds = 0;
  std::map<std::string, ErrorCount> errors;  // by MeasureErrorName
  std::vector<std::string> job_ids;          // distinct, sorted; "" for a local `tune`
  std::vector<std::string> devices;          // distinct provenance devices, sorted
};

// Every task with at least one record, ordered by workload id then target.
absl::StatusOr<std::vector<ReportTask>> SummarizeTasks(Database* db);

struct ReportOptions {
  std::string title = "Tessera tuning report";
  std::string source;        // where the records came from, as the user named it
  std::string generated_at;  // shown in the header; empty: not shown
};

// The page. Each task is a <section class="task"> holding one <svg class="tuning-curve">
// (against trials) and one <svg class="time-curve"> (against wall time).
std::string RenderReportHtml(const std::vector<ReportTask>& tasks, const ReportOptions& options);

}  // namespace tessera

#endif  // TESSERA_REPORT_REPORT_H_
