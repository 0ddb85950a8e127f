// BestRecordOrDefault (tuner/best_record.cc) on an in-memory database: the default schedule's
// record is returned while the fastest record beats it by no more than the margin (and the
// faster one is named), a record that wins by more is returned as it is, and without a record
// of the default the fastest one is returned.
#include "tuner/best_record.h"

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "rules/default/default_rule.h"
#include "tests/tuner/search_testing.h"
#include "tuner/search_util.h"

namespace tessera {
namespace {

using search_testing::NewSearchTask;
using search_testing::NewSetup;
using search_testing::SearchSetup;

TuningRecord RecordOf(const SearchSetup& s, const Schedule& sch, double secs,
                      bool verified = true) {
  TuningRecord r;
  r.workload_id = s.workload.id;
  r.target = s.target.ToString();
  r.trace_json = sch.trace().ToJson();
  r.run_secs = {secs};
  r.args = ArgInfosOf(s.func);
  r.verified = verified;
  return r;
}

struct Schedules {
  Schedule default_schedule;
  std::vector<Schedule> others;  // samples of the space, none of them the default
};

Schedules Make(const SearchSetup& s) {
  std::optional<Schedule> def;
  for (const DefaultRulePtr& rule : DefaultRulesFor(s.target)) {
    absl::StatusOr<std::optional<Schedule>> sch = rule->Apply(s.func, s.target);
    EXPECT_TRUE(sch.ok()) << sch.status();
    if (sch.ok() && *sch) {
      def = **sch;
      break;
    }
  }
  EXPECT_TRUE(def.has_value()) << "no default rule applies";
  Schedules out{*def, {}};
  const SearchTask task = NewSearchTask(s, 1);
  Random rng(4);
  std::vector<CandidateFailure> rejections;
  std::set<std::string> seen = {ToCandidate(*def).hash};
  for (int draws = 0; out.others.size() < 2 && draws < 100; ++draws) {
    std::optional<MeasureCandidate> c = SampleFresh(task, &rng, &rejections);
    if (c && seen.insert(c->hash).second) out.others.push_back(c->sch);
  }
  EXPECT_EQ(out.others.size(), 2u);
  return out;
}

class BestRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setup_ = NewSetup("GMM", {{"M", 32}, {"N", 32}, {"K", 32}});
    schedules_ = std::make_unique<Schedules>(Make(*setup_));
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

TEST(BestRecordEmptyTest, NoRecordsNoBest) {
  std::unique_ptr<SearchSetup> s = NewSetup("GMM", {{"M", 16}, {"N", 16}, {"K", 16}});
  absl::StatusOr<std::optional<ChosenRecord>> best =
      BestRecordOrDefault(s->db.get(), s->func, s->target, true);
  ASSERT_TRUE(best.ok()) << best.status();
  EXPECT_FALSE(best->has_value());
}

}  // namespace
}  // namespace tessera
