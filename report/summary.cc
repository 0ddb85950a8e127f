// The numbers of the tuning report (report.h: SummarizeTasks).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
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
                     const std::vector<const TuningRecord*>& all_records) {
  ReportTask t;
  // The search measures a program once; a runoff's record says it re-measures another, and a
  // later record of the same trace (stored before records said so) is one too.
  std::vector<const TuningRecord*> records;
  std::set<std::string> traces;
  for (const TuningRecord* r : all_records) {
    if (!r->is_retiming() && traces.insert(r->trace_json).second) {
      records.push_back(r);
    } else {
      ++t.remeasured;
    }
  }
  t.workload = workload;
  t.label = TaskLabel(workload.func);
  t.target = target;
  t.flops = EstimateFlops(workload.func);
  for (const ArgInfo& a : ArgInfosOf(workload.func)) {
    double elements = 1;
    for (int64_t d : a.shape) elements *= static_cast<double>(std::max<int64_t>(d, 0));
    t.bytes += elements * a.dtype.bytes();
  }
  if (t.flops <= 0) t.unit = "calls/s";
  t.trials = static_cast<int64_t>(records.size());
  if (records.empty()) return t;  // only re-measurements (of records imported without them)
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
    if (r.stage_secs.total() > 0) {
      ++t.timed_records;
      t.stage_secs.build += r.stage_secs.build;
      t.stage_secs.run += r.stage_secs.run;
      t.stage_secs.verify += r.stage_secs.verify;
      t.stage_secs.search += r.stage_secs.search;
    }
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

absl::Status ApplyChosenRecords(
    const std::function<absl::StatusOr<ChosenRecords>(const ReportTask&)>& choose,
    std::vector<ReportTask>* tasks) {
  for (ReportTask& t : *tasks) {
    TESSERA_ASSIGN_OR_RETURN(ChosenRecords chosen, choose(t));
    t.chosen = std::move(chosen.chosen);
    t.passed_over = std::move(chosen.passed_over);
    t.before_runoff = std::move(chosen.before_runoff);
  }
  return absl::OkStatus();
}

absl::StatusOr<Roofline> ParseRoofline(const std::string& text) {
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("--roofline ", text, ": ", why,
                                                   " (want TARGET=GFLOPS,GBPS, e.g. cpu=1200,90)"));
  };
  const size_t eq = text.rfind('=');
  if (eq == std::string::npos || eq == 0) return bad("no TARGET=");
  Roofline r;
  r.target_prefix = text.substr(0, eq);
  std::vector<std::string> numbers = absl::StrSplit(text.substr(eq + 1), ',');
  if (numbers.size() != 2 || !absl::SimpleAtod(numbers[0], &r.peak_gflops) ||
      !absl::SimpleAtod(numbers[1], &r.bandwidth_gbps)) {
    return bad("not two numbers after '='");
  }
  if (!(r.peak_gflops > 0) || !(r.bandwidth_gbps > 0) || !std::isfinite(r.peak_gflops) ||
      !std::isfinite(r.bandwidth_gbps)) {
    return bad("the peaks must be positive");
  }
  return r;
}

void ApplyRooflines(const std::vector<Roofline>& rooflines, std::vector<ReportTask>* tasks) {
  for (ReportTask& t : *tasks) {
    const Roofline* match = nullptr;
    for (const Roofline& r : rooflines) {
      if (t.target.rfind(r.target_prefix, 0) != 0) continue;
      if (match == nullptr || r.target_prefix.size() > match->target_prefix.size()) match = &r;
    }
    if (match == nullptr || t.flops <= 0 || t.bytes <= 0) continue;
    // GFLOP/s the memory allows: FLOP per byte x GB/s.
    const double memory_gflops = t.flops / t.bytes * match->bandwidth_gbps;
    t.memory_bound = memory_gflops < match->peak_gflops;
    t.roofline_gflops = std::min(memory_gflops, match->peak_gflops);
    t.roofline_source =
        absl::StrCat("peak ", match->peak_gflops, " GFLOP/s, ", match->bandwidth_gbps,
                     " GB/s given for ", match->target_prefix);
  }
}

absl::StatusOr<int> ApplyAnchors(Database* db,
                                 const std::vector<std::pair<PrimFunc, Anchor>>& anchors,
                                 std::vector<ReportTask>* tasks) {
  int applied = 0;
  for (const auto& [func, anchor] : anchors) {
    TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> w, db->FindWorkload(func));
    if (!w.has_value()) continue;
    for (ReportTask& t : *tasks) {
      if (t.workload.id != w->id || t.target.rfind(anchor.target_prefix, 0) != 0) continue;
      // The curves' unit: GFLOP/s, or calls per second for a function without arithmetic.
      const double rate = t.flops > 0 ? t.flops / anchor.seconds / 1e9 : 1 / anchor.seconds;
      t.anchors.push_back({anchor.name, rate});
      ++applied;
    }
  }
  return applied;
}

absl::StatusOr<std::vector<ReportModel>> SummarizeModel(Database* db, const std::string& name,
                                                        const std::vector<ModelKernel>& kernels,
                                                        const std::vector<ReportTask>& tasks,
                                                        const std::string& default_target) {
  // Each kernel's workload id (-1: never stored), and the targets any of them has records on.
  std::vector<int64_t> ids;
  std::set<std::string> targets;
  for (const ModelKernel& k : kernels) {
    TESSERA_ASSIGN_OR_RETURN(std::optional<Workload> w, db->FindWorkload(k.func));
    ids.push_back(w.has_value() ? w->id : -1);
    for (const ReportTask& t : tasks) {
      if (w.has_value() && t.workload.id == w->id) targets.insert(t.target);
    }
  }
  if (targets.empty()) targets.insert(default_target);
  std::vector<ReportModel> out;
  for (const std::string& target : targets) {
    ReportModel m;
    m.name = name;
    m.target = target;
    for (size_t i = 0; i < kernels.size(); ++i) {
      ReportKernel k;
      k.name = kernels[i].name;
      k.weight = kernels[i].weight;
      k.flops = EstimateFlops(kernels[i].func);
      for (size_t j = 0; j < tasks.size(); ++j) {
        if (ids[i] < 0 || tasks[j].workload.id != ids[i] || tasks[j].target != target) continue;
        k.task = static_cast<int>(j);
        if (tasks[j].best.has_value()) {
          k.best_secs = tasks[j].best->mean_secs();
          k.verified = tasks[j].best->verified;
        }
      }
      if (k.best_secs > 0) {
        m.tuned_seconds += k.weight * k.best_secs;
      } else {
        ++m.untuned;
      }
      m.kernels.push_back(std::move(k));
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace tessera
