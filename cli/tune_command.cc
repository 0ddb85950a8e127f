// `tessera tune`: tunes one or more workloads on a target with the in-process loop
// (tuner/tune.h), storing every measured candidate in the database. Prints a live progress
// line, then a table per task (trials, the default schedule's latency, the best, the gain), the
// job's warnings (a budget too small for every task, tasks without a valid candidate) and a
// model's latency estimate; a per-task log goes to the work dir. Running it again on the same
// database continues where it stopped.
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/commands.h"
#include "cli/job_output.h"
#include "cli/measure.h"
#include "model/load.h"
#include "tuner/tune.h"
#include "worker/host.h"

namespace tessera {
namespace cli {
namespace {

struct TuneCommandOptions {
  FunctionList functions;
  std::string target = "cpu";
  std::string db_path;
  std::string work_dir;
  TuningSettings settings;  // the flags set all but runoff, verify and rule_params directly
  int num_threads = 0;
  int repeat = 3;
  int min_repeat_ms = 20;
  double timeout = 30;
  bool no_verify = false;
  bool no_runoff = false;
  bool json = false;
  std::vector<std::string> input_shapes;  // for .onnx models: NAME=D0,D1,...
  bool no_winograd = false;               // for .onnx models
  std::string rule_params = "{}";         // JSON: default rule name -> its parameters
  std::string overlap_builds = "auto";    // MeasureConfig::overlap_builds: auto, on, off
  int build_threads = 0;                  // MeasureConfig::build_parallelism
};

std::string FormatMinutes(double seconds) {
  int s = static_cast<int>(seconds + 0.5);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

void PrintProgress(const TuneProgress& p, bool tty) {
  const TaskSummary& t = *p.summary;
  std::string best =
      t.best_secs ? absl::StrFormat("best %s %.2f GFLOP/s", FormatSeconds(*t.best_secs), t.gflops())
                  : "no valid candidate yet";
  std::string line = absl::StrFormat("[%d/%d trials] %s: %d trials, %s | elapsed %s, left ~%s",
                                     p.trials_done, p.trials_budget, t.name, t.trials, best,
                                     FormatMinutes(p.elapsed), FormatMinutes(p.eta));
  if (tty) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

int RunTune(const TuneCommandOptions& o) {
  // A model (.onnx) contributes its tasks with their weights (docs/models.md); the other
  // arguments are workloads.
  FunctionList workloads = o.functions;
  workloads.specs.clear();
  std::vector<TuneTaskSpec> model_tasks;
  struct ModelRange {
    std::string path;
    size_t begin, end;  // its tasks in model_tasks
  };
  std::vector<ModelRange> models;
  for (const std::string& spec : o.functions.specs) {
    if (!IsModelPath(spec)) {
      workloads.specs.push_back(spec);
      continue;
    }
    absl::StatusOr<InputShapes> shapes = ParseInputShapes(o.input_shapes);
    if (!shapes.ok()) return ReportError(shapes.status());
    absl::StatusOr<LoadedModel> model = LoadModel(spec, /*fuse=*/true, *shapes, !o.no_winograd);
    if (!model.ok()) return ReportError(model.status());
    models.push_back({spec, model_tasks.size(), model_tasks.size() + model->tasks.size()});
    for (const ExtractedTask& t : model->tasks) {
      model_tasks.push_back({t.name, t.func.WithName(t.name), static_cast<double>(t.weight)});
    }
  }
  absl::StatusOr<std::vector<FunctionList::Entry>> entries =
      workloads.specs.empty() ? std::vector<FunctionList::Entry>{} : workloads.Load();
  if (!entries.ok()) return ReportError(entries.status());
  BuildOverlap overlap = BuildOverlap::kAuto;
  if (o.overlap_builds == "on") {
    overlap = BuildOverlap::kOn;
  } else if (o.overlap_builds == "off") {
    overlap = BuildOverlap::kOff;
  } else if (o.overlap_builds != "auto") {
    return ReportError(absl::InvalidArgumentError(absl::StrCat(
        "tune: --overlap-builds: expected auto, on or off, got '", o.overlap_builds, "'")));
  }
  absl::StatusOr<Target> target = ResolveRunnableTarget(o.target);
  if (!target.ok()) return ReportError(target.status());
  TuneOptions options(o.settings);
  options.verify = !o.no_verify;
  options.runoff = !o.no_runoff;
  options.rule_params = RuleParamsFromText(o.rule_params);
  // Checked before anything is opened, as `submit` and the server check them.
  if (absl::Status valid = options.Validate(*target); !valid.ok()) {
    return ReportError(
        absl::InvalidArgumentError(absl::StrCat("tune: ", WithFlagName(valid).message())));
  }
  absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(o.db_path);
  if (!db.ok()) return ReportError(db.status());

  options.target = *target;
  options.num_threads = o.num_threads;
  options.work_dir = o.work_dir;
  options.measure.runner.repeat = o.repeat;
  options.measure.runner.min_repeat_ms = o.min_repeat_ms;
  options.measure.runner.timeout_sec = o.timeout;
  options.measure.runner.seed = static_cast<uint64_t>(options.seed);
  options.measure.overlap_builds = overlap;
  options.measure.build_parallelism = o.build_threads;

  std::vector<TuneTaskSpec> tasks;
  for (const FunctionList::Entry& e : *entries) tasks.push_back({e.label, e.func, 1.0});
  tasks.insert(tasks.end(), model_tasks.begin(), model_tasks.end());
  bool tty = isatty(STDERR_FILENO);
  std::fprintf(stderr, "tuning %zu task(s) on %s, %d trials, database %s\n", tasks.size(),
               target->ToString().c_str(), options.max_trials_global, o.db_path.c_str());
  absl::StatusOr<TuneSummary> summary =
      Tune(tasks, db->get(), options, [tty](const TuneProgress& p) { PrintProgress(p, tty); });
  if (tty) std::fprintf(stderr, "\n");
  if (!summary.ok()) return ReportError(summary.status());

  // Each model's estimate over its tasks (tuner/tune.h EstimateModel).
  std::vector<std::pair<std::string, ModelEstimate>> estimates;
  for (const ModelRange& m : models) {
    std::vector<TaskSummary> model_summaries;
    for (size_t i = m.begin; i < m.end; ++i) {
      TaskSummary s;  // no best and no default unless tuned below
      s.name = model_tasks[i].name;
      s.weight = model_tasks[i].weight;
      for (const TaskSummary& t : summary->tasks) {
        if (t.name == s.name) s = t;
      }
      model_summaries.push_back(s);
    }
    estimates.emplace_back(m.path, EstimateModel(model_summaries));
  }

  const TuneTimes& times = summary->times;
  if (o.json) {
    nlohmann::json out;
    out["target"] = target->ToString();
    out["trials"] = summary->total_trials;
    out["batch_sizes"] = {{"warmup", summary->warmup_batch_size}, {"later", summary->batch_size}};
    out["warnings"] = summary->warnings;
    for (const TaskSummary& t : summary->tasks) {
      nlohmann::json task = {{"name", t.name},
                             {"trials", t.trials},
                             {"best_seconds", nullptr},
                             {"gflops_per_second", t.gflops()},
                             {"verified", t.best_verified},
                             {"best_record", nullptr},
                             {"errors",
                              {{"build_error", t.build_errors},
                               {"run_error", t.run_errors},
                               {"timeout", t.timeouts},
                               {"wrong_output", t.wrong_outputs},
                               {"worker_lost", t.workers_lost}}}};
      if (t.best_secs) {
        task["best_seconds"] = *t.best_secs;
        task["best_record"] = t.best_record_id;
      }
      task["default_seconds"] = t.default_secs ? nlohmann::json(*t.default_secs) : nlohmann::json();
      task["gain"] = t.gain() ? nlohmann::json(*t.gain()) : nlohmann::json();
      task["disturbed"] = t.disturbed;
      if (!t.default_error.empty()) task["default_error"] = t.default_error;
      task["runoff"] = nlohmann::json::array();
      for (const Runoff& r : t.runoffs) {
        task["runoff"].push_back({{"fastest_record", r.fastest_id},
                                  {"default_record", r.default_id},
                                  {"fastest_seconds_in_job", r.fastest_secs_before},
                                  {"default_seconds_in_job", r.default_secs_before},
                                  {"fastest_seconds", r.fastest_secs},
                                  {"default_seconds", r.default_secs},
                                  {"records", {r.fastest_new_id, r.default_new_id}},
                                  {"best", BestAfter(r)},
                                  {"best_record", r.best_id}});
      }
      if (!t.runoff_error.empty()) task["runoff_error"] = t.runoff_error;
      out["tasks"].push_back(std::move(task));
    }
    out["seconds"] = {{"wall", times.wall},
                      {"build", times.build},
                      {"run", times.run},
                      {"verify", times.verify},
                      {"search", times.search},
                      {"cost_model", times.cost_model},
                      {"overhead", times.overhead()},
                      {"build_per_candidate_median", times.build_median},
                      {"build_per_candidate_p99", times.build_p99}};
    for (const auto& [path, e] : estimates) {
      const bool complete = e.missing.empty() && !e.default_missing;
      out["models"].push_back(
          {{"model", path},
           {"estimated_seconds", e.missing.empty() ? nlohmann::json(e.seconds) : nlohmann::json()},
           {"tasks_without_best", e.missing.size()},
           {"default_estimated_seconds",
            e.default_missing ? nlohmann::json() : nlohmann::json(e.default_seconds)},
           {"gain", complete && e.seconds > 0 ? nlohmann::json(e.default_seconds / e.seconds)
                                              : nlohmann::json()}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  // default: the default schedule's latency; gain: default / best.
  std::printf("%-4s %-40s %6s %11s %11s %7s %9s %8s %6s\n", "ID", "task", "trials", "default",
              "best", "gain", "GFLOP/s", "verified", "errors");
  for (size_t i = 0; i < summary->tasks.size(); ++i) {
    const TaskSummary& t = summary->tasks[i];
    std::printf("%-4zu %-40s %6d %11s %11s %7s %9.2f %8s %6d\n", i, t.name.c_str(), t.trials,
                t.default_secs ? FormatSeconds(*t.default_secs).c_str() : "-",
                t.best_secs ? FormatSeconds(*t.best_secs).c_str() : "-",
                t.gain() ? absl::StrFormat("%.2fx", *t.gain()).c_str() : "-", t.gflops(),
                t.best_verified ? "yes" : "no", t.errors());
  }
  for (const std::string& w : summary->warnings) std::printf("warning: %s\n", w.c_str());
  for (size_t i = 0; i < summary->tasks.size(); ++i) {
    const TaskSummary& t = summary->tasks[i];
    if (!t.runoff_error.empty()) {
      std::printf("runoff of task %zu failed: %s\n", i, t.runoff_error.c_str());
    }
    for (const Runoff& r : t.runoffs) {
      const std::string verdict = RunoffVerdict(r);
      std::printf(
          "runoff of task %zu: the fastest, record %lld (%s in the job), against the default "
          "schedule, record %lld (%s), side by side: %s against %s: %s\n",
          i, static_cast<long long>(r.fastest_id), FormatSeconds(r.fastest_secs_before).c_str(),
          static_cast<long long>(r.default_id), FormatSeconds(r.default_secs_before).c_str(),
          FormatSeconds(r.fastest_secs).c_str(), FormatSeconds(r.default_secs).c_str(),
          verdict.c_str());
    }
  }
  int n = std::max(1, summary->total_trials);
  std::printf(
      "%d trials in %.1f s (%.2f s per trial): build %.1f s, run %.1f s, verify %.1f s, search "
      "and cost model %.1f s (%.1f%% overhead); build per candidate: median %.2f s, p99 %.2f "
      "s\n",
      summary->total_trials, times.wall, times.wall / n, times.build, times.run, times.verify,
      times.overhead(), 100 * times.overhead() / std::max(times.wall, 1e-9), times.build_median,
      times.build_p99);
  std::printf("batches: %d candidate(s) per task in the warm-up, then %d\n",
              summary->warmup_batch_size, summary->batch_size);
  for (const auto& [path, e] : estimates) {
    std::printf("%s\n", ModelEstimateLine(path, e).c_str());
  }
  return 0;
}

}  // namespace

Command RegisterTuneCommand(CLI::App* root) {
  CLI::App* app =
      root->add_subcommand("tune", "Tune workloads and store the results in a database");
  auto o = std::make_shared<TuneCommandOptions>();
  o->functions.AddOptions(app);
  app->add_option("--target", o->target, "Target to tune for (cpu, or cuda with a GPU)")
      ->capture_default_str();
  app->add_option("--db", o->db_path,
                  "Tuning database: a SQLite file (created if missing) or a postgresql:// URL")
      ->required();
  TuningSettings& settings = o->settings;
  app->add_option("--trials", settings.max_trials_global, "Trial budget of the whole job")
      ->capture_default_str();
  app->add_option("--trials-per-task", settings.max_trials_per_task,
                  "Trial budget of each task (default: the job's budget)");
  app->add_option("--trials-per-iter", settings.num_trials_per_iter,
                  "Candidates measured per batch")
      ->capture_default_str();
  app->add_option("--seed", settings.seed, "Seed of the search and of the input data")
      ->capture_default_str();
  app->add_option("--strategy", settings.strategy, "Search strategy: evolutionary or replay")
      ->capture_default_str();
  app->add_option("--cost-model", settings.cost_model, "Cost model: xgb or random")
      ->capture_default_str();
  app->add_option("--task-scheduler", settings.task_scheduler, "gradient or round-robin")
      ->capture_default_str();
  app->add_option("--work-dir", o->work_dir,
                  "Directory for per-task logs and the saved cost model");
  app->add_option("--threads", o->num_threads, "Search threads (default: all cores)");
  app->add_option("--repeat", o->repeat, "Timed repeats per candidate")->capture_default_str();
  app->add_option("--min-repeat-ms", o->min_repeat_ms,
                  "Grow the runs per repeat until a repeat lasts this long")
      ->capture_default_str();
  app->add_option("--timeout", o->timeout, "Seconds before a candidate's run is killed")
      ->capture_default_str();
  app->add_flag("--no-verify", o->no_verify,
                "Do not check new bests against the reference (they stay unverified)");
  app->add_flag("--no-runoff", o->no_runoff,
                "Skip the runoff after the search: timing each task's fastest record against the "
                "default schedule's again, side by side");
  app->add_flag("--json", o->json, "Print the summary as JSON");
  app->add_option("--input-shape", o->input_shapes,
                  "For .onnx models: NAME=D0,D1,..., the shape of a graph input (fixes dynamic "
                  "dimensions); repeatable");
  app->add_flag("--no-winograd", o->no_winograd,
                "For .onnx models: compute the wide 3x3 convolutions directly, not as Winograd "
                "GEMMs (docs/models.md "
                "\"Winograd convolutions\"; tune and compile a model with the same choice)");
  app->add_option("--rule-params", o->rule_params,
                  "JSON object: default schedule rules made with other parameters, by rule name, "
                  "e.g. '{\"MultiLevelTiling\": {\"pad_odd_extents\": true}}'")
      ->capture_default_str();
  app->add_option("--build-threads", o->build_threads,
                  "Concurrent compilations (default: all cores)");
  app->add_option("--overlap-builds", o->overlap_builds,
                  "Compile candidates while earlier ones run: auto (only with cores that neither "
                  "the compilers nor the kernels use), on, off")
      ->capture_default_str();
  return {app, [o]() { return RunTune(*o); }};
}

}  // namespace cli
}  // namespace tessera
