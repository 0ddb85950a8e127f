// BestRecordOrDefault (tuner/best_record.cc) on an in-memory database: the default schedule's
// record is returned while the fastest record beats it by no more than the margin (and the
// faster one is named), a record that wins by more is returned as it is, without a record of
// the default the fastest one is returned, and a program counts with its latest record.
#include "tuner/best_record.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "rules/default/default_rule.h"
#include "tests/tuner/record_testing.h"
#include "tests/tuner/search_testing.h"

namespace tessera {
namespace {

using record_testing::MakeSchedules;
using record_testing::RecordOf;
using record_testing::Schedules;
using search_testing::NewSetup;
using search_testing::SearchSetup;

class BestRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setup_ = NewSetup("GMM", {{"M", 32}, {"N", 32}, {"K", 32}});
    schedules_ = std::make_unique<Schedules>(MakeSchedules(*setup_, 2));
  }
  int64_t Commit(const Schedule& sch, double secs, bool verified = true) {
    absl::StatusOr<int64_t> id = setup_->db->CommitRecord(RecordOf(*setup_, sch, secs, verified));
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : -1;
  }
  std::optional<ChosenRecord> Best() {
    absl::StatusOr<std::optional<ChosenRecord>> best =
        BestRecordOrDefault(setup_->db.get(), setup_->func, setup_->target, true);
    EXPECT_TRUE(best.ok()) << best.status();
    return best.ok() ? *best : std::nullopt;
  }
  std::unique_ptr<SearchSetup> setup_;
  std::unique_ptr<Schedules> schedules_;
};

TEST_F(BestRecordTest, TheDefaultWinsWhenTheFastestBeatsItByLessThanTheMargin) {
  const int64_t def = Commit(schedules_->default_schedule, 1.00e-3);
  const int64_t near = Commit(schedules_->others[0], 0.98e-3);  // 2% faster
  Commit(schedules_->others[1], 1.50e-3);
  std::optional<ChosenRecord> best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, def);
  ASSERT_TRUE(best->passed_over.has_value());
  EXPECT_EQ(best->passed_over->id, near);
}

// `best` shows verified records: an unverified record of the default does not count, nor one
// whose outputs were wrong.
TEST_F(BestRecordTest, OnlyAVerifiedRecordOfTheDefaultCounts) {
  Commit(schedules_->default_schedule, 1.00e-3, /*verified=*/false);
  TuningRecord wrong = RecordOf(*setup_, schedules_->default_schedule, 0.995e-3, false);
  wrong.error = MeasureError::kWrongOutput;
  wrong.error_msg = "max abs error 0.5";
  absl::StatusOr<int64_t> wrong_id = setup_->db->CommitRecord(wrong);
  ASSERT_TRUE(wrong_id.ok()) << wrong_id.status();
  const int64_t fastest = Commit(schedules_->others[0], 0.99e-3);
  std::optional<ChosenRecord> best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, fastest);
  EXPECT_FALSE(best->passed_over.has_value());

  const int64_t def = Commit(schedules_->default_schedule, 1.01e-3, /*verified=*/true);
  best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, def);
  ASSERT_TRUE(best->passed_over.has_value());
  EXPECT_EQ(best->passed_over->id, fastest);
}

TEST_F(BestRecordTest, AScheduleThatWinsByMoreThanTheMarginIsTheBest) {
  Commit(schedules_->default_schedule, 1.00e-3);
  const int64_t faster = Commit(schedules_->others[0], 0.90e-3);  // 10% faster
  std::optional<ChosenRecord> best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, faster);
  EXPECT_FALSE(best->passed_over.has_value());
}

TEST_F(BestRecordTest, TheFastestIsTheBestWithoutARecordOfTheDefault) {
  const int64_t fastest = Commit(schedules_->others[0], 0.99e-3);
  Commit(schedules_->others[1], 1.00e-3);
  std::optional<ChosenRecord> best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, fastest);
  EXPECT_FALSE(best->passed_over.has_value());
}

TEST_F(BestRecordTest, TheDefaultThatIsFastestHasNothingPassedOver) {
  const int64_t def = Commit(schedules_->default_schedule, 0.99e-3);
  Commit(schedules_->others[0], 1.00e-3);
  std::optional<ChosenRecord> best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, def);
  EXPECT_FALSE(best->passed_over.has_value());
}

// A program measured again (the runoff) is timed by its latest record: a schedule that was
// lucky in its job and slower when timed again no longer beats the default.
TEST_F(BestRecordTest, AProgramCountsWithItsLatestRecord) {
  const int64_t def = Commit(schedules_->default_schedule, 1.00e-3);
  const int64_t lucky = Commit(schedules_->others[0], 0.80e-3);
  std::optional<ChosenRecord> best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, lucky);

  const int64_t again = Commit(schedules_->others[0], 1.20e-3);
  best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, def);
  EXPECT_FALSE(best->passed_over.has_value()) << "the slower latest record passed nothing over";

  // And the default measured again counts with its own latest record.
  const int64_t default_again = Commit(schedules_->default_schedule, 1.30e-3);
  best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, again);
  EXPECT_NE(best->record.id, default_again);

  absl::StatusOr<std::vector<TuningRecord>> latest = LatestRecordPerProgram(
      setup_->db.get(), setup_->workload, setup_->target.ToString(), /*verified_only=*/true);
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_EQ(latest->size(), 2u);
  EXPECT_EQ((*latest)[0].id, again);
  EXPECT_EQ((*latest)[1].id, default_again);
}

// Latest means measured last: history imported later from another database (a higher id,
// an older timestamp) does not replace a newer measurement.
TEST_F(BestRecordTest, TheLatestRecordIsTheOneMeasuredLast) {
  TuningRecord recent = RecordOf(*setup_, schedules_->others[0], 1.20e-3);
  recent.timestamp = 1.8e9;
  const int64_t recent_id = setup_->db->CommitRecord(recent).value();
  TuningRecord imported = RecordOf(*setup_, schedules_->others[0], 0.80e-3);
  imported.timestamp = 1.7e9;  // measured before, imported after
  const int64_t imported_id = setup_->db->CommitRecord(imported).value();
  ASSERT_GT(imported_id, recent_id);
  std::optional<ChosenRecord> best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, recent_id);
  // Equal timestamps fall back to commit order.
  TuningRecord same_time = RecordOf(*setup_, schedules_->others[0], 1.10e-3);
  same_time.timestamp = 1.8e9;
  const int64_t same_time_id = setup_->db->CommitRecord(same_time).value();
  best = Best();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->record.id, same_time_id);
}

// topk's first record is best's, then one record per program (its latest), fastest first.
TEST_F(BestRecordTest, TopRecordsBeginWithTheBestAndListEachProgramOnce) {
  const int64_t def = Commit(schedules_->default_schedule, 1.00e-3);
  Commit(schedules_->others[0], 0.80e-3);
  const int64_t near = Commit(schedules_->others[1], 0.99e-3);
  const int64_t again = Commit(schedules_->others[0], 1.50e-3);  // timed again: slower
  absl::StatusOr<TopRecords> top = TopRecordsWithBest(setup_->db.get(), setup_->func,
                                                      setup_->target, /*verified_only=*/true, 10);
  ASSERT_TRUE(top.ok()) << top.status();
  ASSERT_TRUE(top->best.has_value());
  EXPECT_EQ(top->best->record.id, def) << "the default, within the margin of the fastest";
  std::vector<int64_t> ids;
  for (const TuningRecord& r : top->records) ids.push_back(r.id);
  EXPECT_EQ(ids, (std::vector<int64_t>{def, near, again}));
  absl::StatusOr<TopRecords> two =
      TopRecordsWithBest(setup_->db.get(), setup_->func, setup_->target, true, 2);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->records.size(), 2u);
  EXPECT_FALSE(TopRecordsWithBest(setup_->db.get(), setup_->func, setup_->target, true, 0).ok());
}

// The default schedule's record is found by replaying records' traces and comparing the
// programs with the default rules' schedule: that must hold for every kind of default, padded
// and packed ones included, or `best` could never return the default's record.
TEST(BestRecordDefaultTest, EveryDefaultsRecordReplaysToTheDefaultSchedule) {
  const Target target = *Target::Parse("cpu -cores=2 -vector_bits=512");
  const std::vector<std::pair<std::string, std::map<std::string, int64_t>>> workloads = {
      {"GMM", {{"M", 128}, {"N", 768}, {"K", 768}}},
      {"GMM", {{"M", 127}, {"N", 257}, {"K", 509}}},
      {"GMM", {{"M", 32}, {"N", 512}, {"K", 512}}},
      {"DENSE_BIAS_RELU", {{"M", 128}, {"N", 256}, {"K", 64}}},
      {"GEMV", {{"M", 256}, {"K", 512}}},
      {"C2D",
       {{"N", 1},
        {"H", 14},
        {"W", 14},
        {"CI", 32},
        {"CO", 32},
        {"K", 3},
        {"stride", 1},
        {"padding", 1}}},
      {"DEP", {{"N", 1}, {"H", 14}, {"W", 14}, {"C", 32}, {"K", 3}, {"stride", 1}, {"padding", 1}}},
      {"SFM", {{"M", 64}, {"N", 77}}},
      {"LAYER_NORM", {{"M", 16}, {"N", 768}}},
  };
  for (const auto& [name, shape] : workloads) {
    SCOPED_TRACE(name);
    absl::StatusOr<PrimFunc> func = MakeWorkload(name, shape, "float32");
    ASSERT_TRUE(func.ok()) << func.status();
    std::optional<Schedule> def;
    for (const DefaultRulePtr& rule : DefaultRulesFor(target)) {
      absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(*func, target);
      ASSERT_TRUE(sch.ok()) << sch.status();
      if (*sch) {
        def = **sch;
        break;
      }
    }
    ASSERT_TRUE(def.has_value());
    TuningRecord record;
    record.trace_json = def->trace().ToJson();
    absl::StatusOr<std::optional<std::string>> default_hash = DefaultScheduleHash(*func, target);
    ASSERT_TRUE(default_hash.ok() && default_hash->has_value()) << default_hash.status();
    EXPECT_EQ(RecordHash(*func, record), **default_hash);
  }
}

TEST(BestRecordEmptyTest, NoRecordsNoBest) {
  std::unique_ptr<SearchSetup> s = NewSetup("GMM", {{"M", 16}, {"N", 16}, {"K", 16}});
  absl::StatusOr<std::optional<ChosenRecord>> best =
      BestRecordOrDefault(s->db.get(), s->func, s->target, true);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_FALSE(best->has_value());
}

}  // namespace
}  // namespace tessera
