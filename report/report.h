// The tuning report: what a records database holds, per task (workload x target), as one
// self-contained HTML page (inline CSS and SVG; no script, no external resource, so it can be
// mailed or attached to a CI run). Per task: tuning curves (best GFLOP/s so far against trials
// and against wall time from the records' timestamps), where the time went (build, run,
// verify and search, from the records' stage times), failures by error kind, the best schedule's
// trace and its provenance; the roofline where the user gave the target's peaks; for a model, its
// per-kernel table.
//
// SummarizeTasks does the arithmetic and RenderReportHtml the drawing, so that the numbers are
// tested without parsing HTML and the page is tested in a browser (tests/report/).
#ifndef TESSERA_REPORT_REPORT_H_
#define TESSERA_REPORT_REPORT_H_

#include <cstdint>
#include <functional>
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
  // Compulsory memory traffic of one call: every argument read or written once, bytes.
  double bytes = 0;
  // What the curves count: "GFLOP/s", or "calls/s" for a function without arithmetic.
  std::string unit = "GFLOP/s";
  int64_t trials = 0;  // programs measured: records of a program measured before do not count
  int64_t succeeded = 0;
  int64_t verified = 0;
  // Records of programs measured before (the runoff, tuner/runoff.h, times the fastest and the
  // default again; its records say so, TuningRecord::retimes): counted here only, not in the
  // trials or the curve.
  int64_t remeasured = 0;
  std::vector<CurvePoint> curve;     // one per trial, in commit order
  std::optional<TuningRecord> best;  // the fastest successful trial (verified or not)
  // The record `tessera best` returns (the default schedule's within 3% of the fastest, each
  // program timed by its latest record, a runoff's included), which the page shows as the best
  // schedule in place of `best` when set. Set by the caller (ApplyChosenRecords), which can
  // replay records: report/ stays below tuner/.
  std::optional<TuningRecord> chosen;
  std::optional<TuningRecord> passed_over;    // the faster record `chosen` was preferred to
  std::optional<TuningRecord> before_runoff;  // the best before a runoff changed it
  // Time, from the records: the span from the first to the last timestamp, and the kernel time
  // measured (sum of every run_secs).
  double span_seconds = 0;
  double measured_seconds = 0;
  // Where the time went: the records' stage times (build, run steps, checks, search share)
  // summed; `timed_records` of the `trials` carry any (records stored before schema 3 do not).
  StageSeconds stage_secs;
  int64_t timed_records = 0;
  std::map<std::string, ErrorCount> errors;  // by MeasureErrorName
  std::vector<std::string> job_ids;          // distinct, sorted; "" for a local `tune`
  std::vector<std::string> devices;          // distinct provenance devices, sorted
  // The roofline bound, GFLOP/s, when a Roofline matched the target (ApplyRooflines): the
  // lesser of the peak and intensity (flops / bytes) x bandwidth. 0: none.
  double roofline_gflops = 0;
  bool memory_bound = false;    // the bandwidth term is the lesser
  std::string roofline_source;  // the Roofline's description, for the page
  // Latencies measured outside Tessera for this workload on this target (ApplyAnchors), in the
  // curves' unit.
  struct Anchor {
    std::string name;  // "OpenBLAS 0.3.21 cblas_sgemm"
    double gflops = 0;
  };
  std::vector<Anchor> anchors;
};

// A latency of one workload measured outside Tessera (a library: OpenBLAS, oneDNN, cuBLAS, or
// anything the user timed) on the targets whose string starts with `target_prefix`.
struct Anchor {
  std::string name;
  std::string target_prefix;
  double seconds = 0;
};
// Adds each anchor to the tasks whose workload is structurally equal to its function and whose
// target matches; returns how many tasks got one. Anchors of workloads without records are
// skipped (there is no curve to compare with).
absl::StatusOr<int> ApplyAnchors(Database* db,
                                 const std::vector<std::pair<PrimFunc, Anchor>>& anchors,
                                 std::vector<ReportTask>* tasks);

// The peaks of the targets whose string starts with `target_prefix` ("cpu", "cuda",
// "cuda -arch=sm_80"), as the user measured or looked them up: Tessera does not guess them.
struct Roofline {
  std::string target_prefix;
  double peak_gflops = 0;     // arithmetic peak, GFLOP/s
  double bandwidth_gbps = 0;  // memory bandwidth, GB/s
};
// "cpu=1200,90": PREFIX=GFLOPS,GBPS. kInvalidArgument naming the text.
absl::StatusOr<Roofline> ParseRoofline(const std::string& text);
// Sets the roofline fields of every task whose target matches one (the longest prefix wins);
// tasks without arithmetic get none.
void ApplyRooflines(const std::vector<Roofline>& rooflines, std::vector<ReportTask>* tasks);

// A model's kernels (its extracted tasks) and what the records say about each on one target.
struct ModelKernel {
  std::string name;  // "fused_conv_add_relu_0"
  PrimFunc func;
  int weight = 1;  // calls per inference
};
struct ReportKernel {
  std::string name;
  int weight = 1;
  double flops = 0;  // of one call
  int task = -1;     // index into the tasks given to SummarizeModel; -1: no record
  // The best successful record's mean, seconds; 0: none (the kernel runs with a default rule,
  // whose latency the records do not hold).
  double best_secs = 0;
  bool verified = false;
};
struct ReportModel {
  std::string name;  // as the user named the model file
  std::string target;
  std::vector<ReportKernel> kernels;  // in the model's order
  double tuned_seconds = 0;           // sum over tuned kernels of weight x best_secs
  int untuned = 0;                    // kernels without a record
};
// One ReportModel per target on which any kernel of the model has a record (none: one with
// `default_target`, every kernel untuned). Kernels are matched to `tasks` (SummarizeTasks)
// by their structurally equal workload.
absl::StatusOr<std::vector<ReportModel>> SummarizeModel(Database* db, const std::string& name,
                                                        const std::vector<ModelKernel>& kernels,
                                                        const std::vector<ReportTask>& tasks,
                                                        const std::string& default_target);

// What `tessera best` returns for a task: the chosen record, the one passed over for it, and
// the best before a runoff when a runoff changed it.
struct ChosenRecords {
  std::optional<TuningRecord> chosen;
  std::optional<TuningRecord> passed_over;
  std::optional<TuningRecord> before_runoff;
};
// Sets each task's chosen records to what `choose(task)` says (cli/report_command.cc passes
// tuner/best_record.h's BestRecordAndRunoff), so that the page's best is `best`'s.
absl::Status ApplyChosenRecords(
    const std::function<absl::StatusOr<ChosenRecords>(const ReportTask&)>& choose,
    std::vector<ReportTask>* tasks);

// Every task with at least one record, ordered by workload id then target.
absl::StatusOr<std::vector<ReportTask>> SummarizeTasks(Database* db);

struct ReportOptions {
  std::string title = "Tessera tuning report";
  std::string source;        // where the records came from, as the user named it
  std::string generated_at;  // shown in the header; empty: not shown
};

// The page. Each task is a <section class="task"> holding one <svg class="tuning-curve">
// (against trials) and one <svg class="time-curve"> (against wall time); a task with a roofline
// draws it as a <line class="roofline"> in both when it fits (at most 4x the best, else the
// chart says so) and gives it a row "roofline"; each anchor likewise, <line class="anchor">
// and a row "anchor". "Where the time went" is a <div class="bar stages"> with one
// <div class="stage-NAME"> per stage (build, run, verify, search; widths in proportion) and a
// <table class="stages"> with a row per stage, when any record has stage times. Each model is a
// <section class="model"> with a <table class="kernels">, before the tasks.
std::string RenderReportHtml(const std::vector<ReportTask>& tasks, const ReportOptions& options,
                             const std::vector<ReportModel>& models = {});

}  // namespace tessera

#endif  // TESSERA_REPORT_REPORT_H_
