// RunOff (tuner/runoff.cc) with a scripted measurer on an in-memory database: a schedule that
// was lucky in its job loses its runoff and the default becomes the best; one that is really
// faster stays the best; lucky schedules run off in turn; nothing runs when the default is the
// fastest; a runoff measurement that fails commits nothing; a runoff timed on two workers is
// timed again.
#include "tuner/runoff.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status_macros.h"
#include "gtest/gtest.h"
#include "ir/structural_hash.h"
#include "tests/testing/scripted_measurer.h"
#include "tests/tuner/record_testing.h"
#include "tests/tuner/search_testing.h"
#include "tuner/best_record.h"
#include "tuner/tune.h"

namespace tessera {
namespace {

using record_testing::MakeSchedules;
using record_testing::RecordOf;
using record_testing::Schedules;
using search_testing::NewSetup;
using search_testing::SearchSetup;
using testing::ScriptedMeasurer;

std::optional<double> ScriptedLatency(const Schedule& sch) {
  return ScriptedMeasurer::Latency(StructuralHashHex(sch.func()));
}

// The scripted measurer behind a pool of workers whose first `split` batches were split between
// two workers (a lease that expired half reported); it records whether every request asked for
// one machine.
class SplitLeaseMeasurer : public Measurer {
 public:
  explicit SplitLeaseMeasurer(int split) : split_(split) {}
  absl::StatusOr<MeasuredBatch> Measure(const MeasureRequest& request) override {
    all_same_machine_ = all_same_machine_ && request.same_machine;
    TESSERA_ASSIGN_OR_RETURN(MeasuredBatch batch, scripted_.Measure(request));
    const bool split = batches_++ < split_;
    for (size_t i = 0; i < batch.outcomes.size(); ++i) {
      Provenance p = batch.provenance;
      p.worker_id = split && i >= batch.outcomes.size() / 2 ? "worker-b" : "worker-a";
      batch.outcomes[i].provenance = p;
    }
    return batch;
  }
  int batches() const { return batches_; }
  bool all_same_machine() const { return all_same_machine_; }

 private:
  ScriptedMeasurer scripted_;
  int split_;
  int batches_ = 0;
  bool all_same_machine_ = true;
};

// The scripted measurer whose first run of each batch is `factor` times slower: a child process
// that was slow throughout (seen in jobs: a depthwise default at 66.7 against 36 us).
class FirstRunSlowMeasurer : public Measurer {
 public:
  explicit FirstRunSlowMeasurer(double factor) : factor_(factor) {}
  absl::StatusOr<MeasuredBatch> Measure(const MeasureRequest& request) override {
    TESSERA_ASSIGN_OR_RETURN(MeasuredBatch batch, scripted_.Measure(request));
    if (!batch.outcomes.empty()) {
      for (double& secs : batch.outcomes[0].run_secs) secs *= factor_;
    }
    return batch;
  }

 private:
  ScriptedMeasurer scripted_;
  double factor_;
};

class RunoffTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setup_ = NewSetup("GMM", {{"M", 32}, {"N", 32}, {"K", 32}});
    schedules_ = std::make_unique<Schedules>(MakeSchedules(*setup_, 48));
    default_secs_ = ScriptedLatency(schedules_->default_schedule);
    ASSERT_TRUE(default_secs_.has_value()) << "the scripted measurer fails the default";
  }
  // A sample of the space whose scripted latency satisfies `pred`; nullptr if none does.
  const Schedule* Other(const std::function<bool(std::optional<double>)>& pred,
                        const Schedule* besides = nullptr) const {
    for (const Schedule& s : schedules_->others) {
      if (&s != besides && pred(ScriptedLatency(s))) return &s;
    }
    return nullptr;
  }
  int64_t Commit(const Schedule& sch, double secs) {
    absl::StatusOr<int64_t> id = setup_->db->CommitRecord(RecordOf(*setup_, sch, secs));
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : -1;
  }
  absl::StatusOr<std::vector<Runoff>> RunWith(Measurer* measurer) {
    return RunOff(setup_->db.get(), setup_->func, setup_->target, /*verified_only=*/true, measurer);
  }
  std::vector<Runoff> Run() {
    absl::StatusOr<std::vector<Runoff>> rounds = RunWith(&measurer_);
    EXPECT_TRUE(rounds.ok()) << rounds.status();
    return rounds.ok() ? *rounds : std::vector<Runoff>();
  }
  // The default at its scripted time and a slower sample timed at half the default's in its job
  // (a lucky minute): the fastest record, which a runoff must not keep.
  void CommitTheDefaultAndALuckySlowerSchedule() {
    const Schedule* slower =
        Other([&](std::optional<double> s) { return s && *s > *default_secs_; });
    ASSERT_NE(slower, nullptr);
    Commit(schedules_->default_schedule, *default_secs_);
    Commit(*slower, 0.5 * *default_secs_);
  }
  TuningRecord Best() {
    absl::StatusOr<std::optional<ChosenRecord>> best =
        BestRecordOrDefault(setup_->db.get(), setup_->func, setup_->target, true);
    EXPECT_TRUE(best.ok() && best->has_value());
    return best.ok() && best->has_value() ? (*best)->record : TuningRecord();
  }
  bool IsDefault(const TuningRecord& r) const {
    return r.trace_json == schedules_->default_schedule.trace().ToJson();
  }
  int TimesMeasured(const Schedule& sch) const {
    auto it = measurer_.measured().find(StructuralHashHex(sch.func()));
    return it == measurer_.measured().end() ? 0 : it->second;
  }

  std::unique_ptr<SearchSetup> setup_;
  std::unique_ptr<Schedules> schedules_;
  std::optional<double> default_secs_;
  ScriptedMeasurer measurer_;
};

TEST_F(RunoffTest, ALuckyScheduleLosesItsRunoffAndTheDefaultIsTheBest) {
  const Schedule* slower = Other([&](std::optional<double> s) { return s && *s > *default_secs_; });
  ASSERT_NE(slower, nullptr);
  const int64_t def = Commit(schedules_->default_schedule, *default_secs_);
  const int64_t lucky = Commit(*slower, 0.5 * *default_secs_);  // timed in a quiet minute
  ASSERT_EQ(Best().id, lucky);

  std::vector<Runoff> rounds = Run();
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].fastest_id, lucky);
  EXPECT_EQ(rounds[0].default_id, def);
  EXPECT_DOUBLE_EQ(rounds[0].fastest_secs_before, 0.5 * *default_secs_);
  EXPECT_DOUBLE_EQ(rounds[0].fastest_secs, *ScriptedLatency(*slower));
  EXPECT_DOUBLE_EQ(rounds[0].default_secs, *default_secs_);
  EXPECT_FALSE(rounds[0].tuned_kept);
  EXPECT_EQ(rounds[0].best_id, rounds[0].default_new_id);
  EXPECT_EQ(RunoffVerdict(rounds[0]), "the tuned schedule was not faster; the default is the best");
  // Each program three times, alternately; both new records are verified like the old ones.
  EXPECT_EQ(TimesMeasured(*slower), 3);
  EXPECT_EQ(TimesMeasured(schedules_->default_schedule), 3);
  const TuningRecord best = Best();
  EXPECT_EQ(best.id, rounds[0].default_new_id);
  EXPECT_TRUE(IsDefault(best));
  EXPECT_TRUE(best.verified);
  EXPECT_EQ(best.run_secs.size(), 1u) << "the median run's timings (the scripted runs have one)";
  // The runoff's records are re-measurements, linked to the records they time again; the
  // search's records are measurements of their own.
  std::vector<TuningRecord> all = setup_->db->AllRecords().value();
  ASSERT_EQ(all.size(), 4u);
  for (const TuningRecord& r : all) {
    if (r.id == rounds[0].default_new_id) {
      EXPECT_EQ(r.retimes, def);
    } else if (r.id == rounds[0].fastest_new_id) {
      EXPECT_EQ(r.retimes, lucky);
    } else {
      EXPECT_EQ(r.retimes, -1) << "record " << r.id;
    }
  }
  absl::StatusOr<BestAndRunoff> effect =
      BestRecordAndRunoff(setup_->db.get(), setup_->func, setup_->target, /*verified_only=*/true);
  ASSERT_TRUE(effect.ok()) << effect.status();
  EXPECT_EQ(effect->runoff_records, 2);
  ASSERT_TRUE(effect->before_runoff.has_value());
  EXPECT_EQ(effect->before_runoff->record.id, lucky);
  EXPECT_EQ(effect->best->record.id, rounds[0].default_new_id);
  EXPECT_TRUE(effect->changed_by_runoff());
}

// After a runoff, a task's gain compares the round's side-by-side timings: a default timed 10x
// slow in its job (a cold first batch) and beaten there by a lucky schedule is the best after
// the runoff, and the gain is 1, not the job's 20x.
TEST_F(RunoffTest, TheGainAfterARunoffComparesItsSideBySideTimings) {
  const Schedule* slower = Other([&](std::optional<double> s) { return s && *s > *default_secs_; });
  ASSERT_NE(slower, nullptr);
  const int64_t def = Commit(schedules_->default_schedule, 10 * *default_secs_);
  const int64_t lucky = Commit(*slower, 0.5 * *default_secs_);
  TaskSummary task;
  task.default_secs = 10 * *default_secs_;
  task.best_secs = 0.5 * *default_secs_;
  task.best_record_id = lucky;
  ASSERT_DOUBLE_EQ(task.gain().value_or(0), 20);

  std::vector<Runoff> rounds = Run();
  ASSERT_EQ(rounds.size(), 1u);
  ASSERT_EQ(rounds[0].default_id, def);
  ASSERT_TRUE(TakeRunoffFigures(setup_->db.get(), setup_->func, setup_->target,
                                /*verified_only=*/true, rounds, &task)
                  .ok());
  EXPECT_EQ(task.runoffs.size(), 1u);
  EXPECT_DOUBLE_EQ(task.default_secs.value_or(0), *default_secs_);
  EXPECT_EQ(task.best_record_id, rounds[0].default_new_id);
  EXPECT_EQ(task.best_record_id, Best().id) << "the best `tessera best` returns";
  EXPECT_DOUBLE_EQ(task.gain().value_or(0), 1);
}

// Without rounds (the default was the fastest) the job's figures stand.
TEST_F(RunoffTest, TheJobsFiguresStandWithoutRunoffRounds) {
  TaskSummary task;
  task.default_secs = 2e-6;
  task.best_secs = 1e-6;
  task.best_record_id = 7;
  ASSERT_TRUE(TakeRunoffFigures(setup_->db.get(), setup_->func, setup_->target,
                                /*verified_only=*/true, {}, &task)
                  .ok());
  EXPECT_DOUBLE_EQ(task.gain().value_or(0), 2);
  EXPECT_EQ(task.best_record_id, 7);
}

// A job's runoff tags its records with the job that ran it, whatever job measured the records
// it re-times.
TEST_F(RunoffTest, TheRunoffsRecordsCarryTheJobThatRanIt) {
  CommitTheDefaultAndALuckySlowerSchedule();
  absl::StatusOr<std::vector<Runoff>> rounds =
      RunOff(setup_->db.get(), setup_->func, setup_->target, /*verified_only=*/true, &measurer_,
             std::string("job-9"));
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ASSERT_EQ(rounds->size(), 1u);
  int tagged = 0;
  // A local: a range over value() of the temporary StatusOr would outlive it.
  const std::vector<TuningRecord> records = setup_->db->AllRecords().value();
  for (const TuningRecord& r : records) {
    EXPECT_EQ(r.job_id == "job-9", r.is_retiming()) << "record " << r.id;
    tagged += r.job_id == "job-9";
  }
  EXPECT_EQ(tagged, 2);
  absl::StatusOr<BestAndRunoff> other_job = BestRecordAndRunoff(
      setup_->db.get(), setup_->func, setup_->target, true, std::string("job-1"));
  ASSERT_TRUE(other_job.ok()) << other_job.status();
  EXPECT_EQ(other_job->runoff_records, 0) << "job-1 ran no runoff";
  EXPECT_FALSE(other_job->changed_by_runoff());
}

TEST_F(RunoffTest, AScheduleThatWinsItsRunoffStaysTheBest) {
  const Schedule* faster =
      Other([&](std::optional<double> s) { return s && *s < *default_secs_ / 1.1; });
  ASSERT_NE(faster, nullptr) << "no sample is scripted 10% faster than the default";
  Commit(schedules_->default_schedule, *default_secs_);
  const int64_t fastest = Commit(*faster, *ScriptedLatency(*faster));
  std::vector<Runoff> rounds = Run();
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].fastest_id, fastest);
  EXPECT_TRUE(rounds[0].tuned_kept);
  EXPECT_EQ(rounds[0].best_id, rounds[0].fastest_new_id);
  EXPECT_EQ(RunoffVerdict(rounds[0]), "the tuned schedule stays the best");
  EXPECT_EQ(Best().id, rounds[0].fastest_new_id);
  // A later runoff (the next job's) times them side by side again; the winner stays.
  rounds = Run();
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_TRUE(rounds[0].tuned_kept);
  EXPECT_EQ(Best().id, rounds[0].fastest_new_id);
}

TEST_F(RunoffTest, LuckySchedulesRunOffInTurn) {
  auto slower_than_default = [&](std::optional<double> s) { return s && *s > *default_secs_; };
  const Schedule* first = Other(slower_than_default);
  ASSERT_NE(first, nullptr);
  const Schedule* second = Other(slower_than_default, first);
  ASSERT_NE(second, nullptr);
  Commit(schedules_->default_schedule, *default_secs_);
  const int64_t luckiest = Commit(*first, 0.5 * *default_secs_);
  const int64_t lucky = Commit(*second, 0.6 * *default_secs_);
  std::vector<Runoff> rounds = Run();
  ASSERT_EQ(rounds.size(), 2u);
  EXPECT_EQ(rounds[0].fastest_id, luckiest);
  EXPECT_EQ(rounds[1].fastest_id, lucky);
  // After the first round the best is neither of its records: the next lucky one, which the
  // second round runs off.
  EXPECT_EQ(rounds[0].best_id, lucky);
  EXPECT_EQ(RunoffVerdict(rounds[0]), "record " + std::to_string(lucky) + " is the best now");
  EXPECT_FALSE(rounds[1].tuned_kept);
  EXPECT_EQ(rounds[1].best_id, rounds[1].default_new_id);
  EXPECT_TRUE(IsDefault(Best()));
}

TEST_F(RunoffTest, NothingRunsOffWhenTheDefaultIsTheFastest) {
  const Schedule* other = Other([](std::optional<double> s) { return s.has_value(); });
  ASSERT_NE(other, nullptr);
  Commit(schedules_->default_schedule, 1e-3);
  Commit(*other, 2e-3);
  EXPECT_TRUE(Run().empty());
  EXPECT_TRUE(measurer_.measured().empty());
}

TEST_F(RunoffTest, AFailedRunoffMeasurementCommitsNothing) {
  // The scripted measurer fails this program's build, as a machine that lost its compiler would.
  const Schedule* failing = Other([](std::optional<double> s) { return !s.has_value(); });
  ASSERT_NE(failing, nullptr);
  Commit(schedules_->default_schedule, *default_secs_);
  const int64_t lucky = Commit(*failing, 0.5 * *default_secs_);
  const int64_t records = setup_->db->NumRecords().value();
  absl::StatusOr<std::vector<Runoff>> rounds = RunWith(&measurer_);
  ASSERT_FALSE(rounds.ok());
  EXPECT_EQ(rounds.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(
      std::string(rounds.status().message()).find("runoff of record " + std::to_string(lucky)),
      std::string::npos)
      << rounds.status();
  EXPECT_EQ(setup_->db->NumRecords().value(), records);
}

// The default runs first in the runoff; one slow run of it (of three) does not hand the win to
// a schedule that is slower: each program counts with its median run.
TEST_F(RunoffTest, OneSlowRunOfTheDefaultDoesNotDecideTheRunoff) {
  const Schedule* slower = Other([&](std::optional<double> s) {
    return s && *s > *default_secs_ * 1.1 && *s < *default_secs_ * 4;
  });
  ASSERT_NE(slower, nullptr) << "no sample is scripted 1.1-4x the default";
  Commit(schedules_->default_schedule, *default_secs_);
  Commit(*slower, 0.5 * *default_secs_);
  FirstRunSlowMeasurer measurer(/*factor=*/10);
  absl::StatusOr<std::vector<Runoff>> rounds = RunWith(&measurer);
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ASSERT_EQ(rounds->size(), 1u);
  EXPECT_FALSE((*rounds)[0].tuned_kept);
  EXPECT_DOUBLE_EQ((*rounds)[0].default_secs, *default_secs_);
  EXPECT_TRUE(IsDefault(Best()));
}

TEST_F(RunoffTest, ARunoffTimedOnTwoWorkersIsTimedAgainWhole) {
  CommitTheDefaultAndALuckySlowerSchedule();
  SplitLeaseMeasurer measurer(/*split=*/1);
  absl::StatusOr<std::vector<Runoff>> rounds = RunWith(&measurer);
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ASSERT_EQ(rounds->size(), 1u);
  EXPECT_EQ(measurer.batches(), 2);
  EXPECT_TRUE(measurer.all_same_machine());
  EXPECT_EQ(Best().provenance.worker_id, "worker-a");
  EXPECT_TRUE(IsDefault(Best()));
}

TEST_F(RunoffTest, ARunoffAlwaysTimedOnTwoWorkersCommitsNothing) {
  CommitTheDefaultAndALuckySlowerSchedule();
  const int64_t records = setup_->db->NumRecords().value();
  SplitLeaseMeasurer measurer(/*split=*/1000);
  absl::StatusOr<std::vector<Runoff>> rounds = RunWith(&measurer);
  ASSERT_FALSE(rounds.ok());
  EXPECT_EQ(rounds.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(std::string(rounds.status().message()).find("timed on two workers"), std::string::npos)
      << rounds.status();
  EXPECT_EQ(measurer.batches(), 3);
  EXPECT_EQ(setup_->db->NumRecords().value(), records);
}

}  // namespace
}  // namespace tessera
