// The numbers of the tuning report (report.h: SummarizeTasks).
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "ir/analysis.h"
#include "ir/flops.h"
#include "report/report.h"

namespace tessera {
namespace {

// "gmm(float32[1,16,16], float32[1,16,16], float32[1,16,16])".
std::string TaskLabel(const PrimFunc& func) {
  std::vector<std::string> args;
  for (const ArgInfo& a : ArgInfosOf(func)) {
    args.push_back(absl::StrCat(a.dtype.ToString(), "[", absl::StrJoin(a.shape, ","), "]"));
  }
  return absl::StrCat(func.name(), "(", absl::StrJoin(args, ", "), ")");
}

ReportTask Summarize(const Workload& workload, const std::string& target,
                     const std::vector<const TuningRecord*>& records) {
  ReportTask t;
  t.workload = workload;
  t.label = TaskLabel(workload.func);
  t.target = target;
  t.flops = EstimateFlops(workload.func);
  if (t.flops <= 0) t.unit = "calls/s";
  t.trials = static_cast<int64_t>(records.size());
  double first = records.front()->timestamp, last = first;
  for (const TuningRecord* r : records) {
    first = std::min(first, r->timestamp);
    last = std::max(last, r->timestamp);
  }
  t.span_seconds = last - first;
  std::set<std::string> jobs, devices;
  double best_gflops = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const TuningRecord& r = *records[i];
    CurvePoint p;
    p.trial = static_cast<int64_t>(i) + 1;
    p.seconds = r.timestamp - first;
    if (r.ok()) {
      ++t.succeeded;
      // Work per second: GFLOP/s, or calls per second for a function without arithmetic.
      p.gflops = t.flops > 0 ? t.flops / r.mean_secs() / 1e9 : 1 / r.mean_secs();
      best_gflops = std::max(best_gflops, p.gflops);
      if (!t.best.has_value() || r.mean_secs() < t.best->mean_secs()) t.best = r;
    } else {
      ErrorCount& e =
          t.errors[r.error == MeasureError::kNone ? "no_result" : MeasureErrorName(r.error)];
      if (e.count++ == 0) e.example = r.error_msg;
    }
    p.best_gflops = best_gflops;
    t.curve.push_back(p);
    if (r.verified) ++t.verified;
    t.measured_seconds += std::accumulate(r.run_secs.begin(), r.run_secs.end(), 0.0);
    jobs.insert(r.job_id);
    if (!r.provenance.device.empty()) devices.insert(r.provenance.device);
  }
  t.job_ids.assign(jobs.begin(), jobs.end());
  t.devices.assign(devices.begin(), devices.end());
  return t;
}

}  // namespace

absl::StatusOr<std::vector<ReportTask>> SummarizeTasks(Database* db) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<Workload> workloads, db->AllWorkloads());
  TESSERA_ASSIGN_OR_RETURN(std::vector<TuningRecord> records, db->AllRecords());
  std::map<int64_t, const Workload*> by_id;
  for (const Workload& w : workloads) by_id[w.id] = &w;
  std::map<std::pair<int64_t, std::string>, std::vector<const TuningRecord*>> by_task;
  for (const TuningRecord& r : records) {
    if (by_id.count(r.workload_id) == 0) {
      return absl::DataLossError(absl::StrCat("report: record ", r.id, " names workload ",
                                              r.workload_id, ", which is not in the database"));
    }
    by_task[{r.workload_id, r.target}].push_back(&r);
  }
  std::vector<ReportTask> out;
  for (const auto& [key, task_records] : by_task) {
    out.push_back(Summarize(*by_id[key.first], key.second, task_records));
  }
  return out;
}

}  // namespace tessera
