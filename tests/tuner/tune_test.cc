// End-to-end tuning on the CPU (issue #6): a small GMM and a small C2D tuned for 32 trials
// each into a SQLite file; the best is verified, faster than the unscheduled program, and
// ApplyBest reproduces it; a second run on the same database measures no duplicate. (Whether a
// cost model learns from one run's records is tested on a modelled machine in
// tests/tuner/tuning_job_test.cc, where the load of this one cannot decide it.)
#include "tuner/tune.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/status_macros.h"
#include "database/database.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"
#include "rules/annotations.h"
#include "rules/default/default_rule.h"
#include "tuner/apply_best.h"
#include "tuner/best_record.h"
#include "worker/builder.h"
#include "worker/host.h"
#include "worker/runner.h"

namespace tessera {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(getpid())))
      .string();
}

PrimFunc SmallGmm() {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", 128}, {"N", 128}, {"K", 128}}, "float32");
}

PrimFunc SmallC2d() {
  return *MakeWorkload("C2D",
                       {{"N", 1},
                        {"H", 16},
                        {"W", 16},
                        {"CI", 32},
                        {"CO", 32},
                        {"K", 3},
                        {"stride", 1},
                        {"padding", 1}},
                       "float32");
}

TuneOptions SmallOptions(int trials) {
  TuneOptions options;
  options.target = *ResolveTarget("cpu");
  options.max_trials_global = trials;
  options.num_trials_per_iter = 16;
  options.seed = 3;
  options.evolutionary.population_size = 128;
  options.measure.runner.repeat = 3;
  options.measure.runner.min_repeat_ms = 5;
  return options;
}

// The program a stored trace gives on `func`.
absl::StatusOr<PrimFunc> Replayed(const PrimFunc& func, const std::string& trace_json) {
  TESSERA_ASSIGN_OR_RETURN(Trace trace, Trace::FromJson(trace_json));
  Schedule sch = Schedule::Create(func, 0);
  TESSERA_RETURN_IF_ERROR(trace.ApplyTo(&sch, /*remove_postproc=*/false));
  return sch.func();
}

double MeasureUnscheduled(const PrimFunc& func, const Target& target) {
  std::unique_ptr<Builder> builder = NewCBuilder();
  absl::StatusOr<BuildResult> built = BuildOne(builder.get(), func, target);
  EXPECT_TRUE(built.ok()) << built.status();
  RunnerConfig config;
  config.repeat = 3;
  config.min_repeat_ms = 5;
  std::vector<RunResult> ran = NewCpuRunner()->Run(
      {RunInput{built->artifact_path, built->symbol, ArgInfosOf(func)}}, config);
  EXPECT_TRUE(ran[0].ok()) << ran[0].error_msg;
  return *std::min_element(ran[0].run_secs.begin(), ran[0].run_secs.end());
}

TEST(TuneTest, TunesGmmAndC2dIntoSqliteAndApplyBestReproducesTheBest) {
  const std::string db_path = TempPath("tessera_tune_test.db");
  std::filesystem::remove(db_path);
  const std::string work_dir = TempPath("tessera_tune_work");
  std::vector<TuneTaskSpec> tasks = {{"gmm", SmallGmm(), 1}, {"c2d", SmallC2d(), 1}};
  TuneOptions options = SmallOptions(64);
  options.max_trials_per_task = 32;
  options.work_dir = work_dir;

  int64_t records_after_first = 0;
  {
    absl::StatusOr<std::unique_ptr<Database>> db = OpenSqliteDatabase(db_path);
    ASSERT_TRUE(db.ok()) << db.status();
    absl::StatusOr<TuneSummary> summary = Tune(tasks, db->get(), options);
    ASSERT_TRUE(summary.ok()) << summary.status();
    ASSERT_EQ(summary->tasks.size(), 2u);
    for (const TaskSummary& t : summary->tasks) {
      EXPECT_EQ(t.trials, 32) << t.name;
      EXPECT_TRUE(t.best_verified) << t.name;
      EXPECT_EQ(t.wrong_outputs, 0) << t.name;
    }
    records_after_first = *(*db)->NumRecords();
    EXPECT_EQ(records_after_first, 64);
    std::printf("first run: %.1f s wall, build %.1f s, run %.1f s, overhead %.1f s\n",
                summary->times.wall, summary->times.build, summary->times.run,
                summary->times.overhead());
    std::fflush(stdout);
  }
  EXPECT_TRUE(std::filesystem::exists(work_dir + "/cost_model.bin"));
  EXPECT_FALSE(std::filesystem::is_empty(work_dir + "/logs"));

  absl::StatusOr<std::unique_ptr<Database>> db = OpenSqliteDatabase(db_path);
  ASSERT_TRUE(db.ok()) << db.status();
  const Target target = options.target;
  for (const TuneTaskSpec& task : tasks) {
    // The fastest record, or the default's within the timings' noise (tuner/best_record.h).
    absl::StatusOr<std::optional<ChosenRecord>> chosen =
        BestRecordOrDefault(db->get(), task.func, target, /*verified_only=*/true);
    ASSERT_TRUE(chosen.ok()) << chosen.status();
    ASSERT_TRUE(chosen->has_value()) << task.name;
    const std::optional<TuningRecord> best = (*chosen)->record;
    double unscheduled = MeasureUnscheduled(task.func, target);
    std::printf("%s: tuned %.4f ms, unscheduled %.4f ms\n", task.name.c_str(),
                best->mean_secs() * 1e3, unscheduled * 1e3);
    EXPECT_LT(best->mean_secs(), unscheduled) << task.name;

    // ApplyBest replays exactly that record's program.
    IRModule mod = IRModule::FromFunction(task.func);
    std::vector<ApplyBestEntry> report;
    absl::StatusOr<IRModule> applied = ApplyBest(mod, target, db->get(), &report);
    ASSERT_TRUE(applied.ok()) << applied.status();
    ASSERT_EQ(report.size(), 1u);
    EXPECT_TRUE(report[0].hit);
    EXPECT_EQ(report[0].record_id, best->id);
    PrimFunc scheduled = *applied->Lookup(task.func.name());
    EXPECT_TRUE(scheduled.attrs().count(attr::kScheduled));
    absl::StatusOr<PrimFunc> replayed = Replayed(task.func, best->trace_json);
    ASSERT_TRUE(replayed.ok()) << replayed.status() << "\n" << best->trace_json;
    EXPECT_TRUE(StructuralEqual(replayed->WithAttr(attr::kScheduled, int64_t{1}), scheduled));
  }

  // A second run continues: nothing measured before is measured again.
  std::set<std::string> hashes;
  auto collect = [&](std::set<std::string>* out) {
    for (const TuneTaskSpec& task : tasks) {
      Workload w = *(*db)->CommitWorkload(task.func);
      absl::StatusOr<std::vector<TuningRecord>> records = (*db)->AllRecords(w, target.ToString());
      ASSERT_TRUE(records.ok()) << records.status();
      for (const TuningRecord& r : *records) {
        absl::StatusOr<PrimFunc> program = Replayed(task.func, r.trace_json);
        ASSERT_TRUE(program.ok()) << program.status() << "\n" << r.trace_json;
        EXPECT_TRUE(out->insert(StructuralHashHex(*program)).second)
            << task.name << ": record " << r.id << " measures a program measured before";
      }
    }
  };
  options.work_dir.clear();
  options.seed = 4;
  options.max_trials_global = 32;
  options.max_trials_per_task = 16;
  absl::StatusOr<TuneSummary> again = Tune(tasks, db->get(), options);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_GT(*(*db)->NumRecords(), records_after_first);
  collect(&hashes);

  db->reset();  // closed first, or its write-ahead log outlives the removed file
  std::filesystem::remove_all(work_dir);
  std::filesystem::remove(db_path);
}

// The default schedule leads the first batch: with a budget too small to find anything better,
// the best is the default, never something slower.
TEST(TuneTest, DefaultScheduleIsMeasuredFirstAndBoundsTheBest) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  TuneOptions options = SmallOptions(2);
  options.num_trials_per_iter = 2;
  const PrimFunc gmm = SmallGmm();
  absl::StatusOr<TuneSummary> summary = Tune({{"gmm", gmm, 1}}, db.get(), options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  std::vector<TuningRecord> records = db->AllRecords().value();
  ASSERT_EQ(records.size(), 2u);

  std::optional<Schedule> default_sch;
  for (const DefaultRulePtr& rule : DefaultRulesFor(options.target)) {
    default_sch = rule->Apply(gmm, options.target).value();
    if (default_sch) break;
  }
  ASSERT_TRUE(default_sch.has_value());
  absl::StatusOr<PrimFunc> first = Replayed(gmm, records[0].trace_json);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(StructuralHashHex(*first), StructuralHashHex(default_sch->func()))
      << "the first record is not the default schedule";
  ASSERT_TRUE(records[0].ok()) << records[0].error_msg;
  // Checked whatever its time: `best` returns it within the noise of the fastest.
  EXPECT_TRUE(records[0].verified) << "the default schedule's record is not verified";

  absl::StatusOr<std::optional<TuningRecord>> best =
      BestRecord(db.get(), gmm, options.target.ToString(), /*verified_only=*/true);
  ASSERT_TRUE(best.ok() && best->has_value());
  EXPECT_LE((*best)->mean_secs(), records[0].mean_secs());
  ASSERT_TRUE(summary->tasks[0].best_secs.has_value());
  EXPECT_LE(*summary->tasks[0].best_secs, records[0].mean_secs());

  // Tuning again does not measure the default a second time.
  options.seed = 5;
  ASSERT_TRUE(Tune({{"gmm", gmm, 1}}, db.get(), options).ok());
  records = db->AllRecords().value();
  ASSERT_EQ(records.size(), 4u);
  for (size_t i = 2; i < records.size(); ++i) {
    EXPECT_NE(StructuralHashHex(*Replayed(gmm, records[i].trace_json)),
              StructuralHashHex(default_sch->func()));
  }
}

TEST(TuneTest, RejectsBadOptionsWithClearErrors) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  TuneOptions options = SmallOptions(0);
  absl::StatusOr<TuneSummary> s = Tune({{"gmm", SmallGmm(), 1}}, db.get(), options);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find("budget"), std::string::npos);
  options = SmallOptions(8);
  options.strategy = "annealing";
  s = Tune({{"gmm", SmallGmm(), 1}}, db.get(), options);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find("annealing"), std::string::npos);
  EXPECT_FALSE(Tune({}, db.get(), SmallOptions(8)).ok());
}

}  // namespace
}  // namespace tessera
