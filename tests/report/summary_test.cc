// SummarizeTasks: tasks by workload and target, the best-so-far curve, time, errors, jobs.
#include <memory>
#include <string>
#include <vector>

#include "database/database.h"
#include "gtest/gtest.h"
#include "ir/flops.h"
#include "report/report.h"
#include "tests/database/database_testing.h"

namespace tessera {
namespace {

using ::tessera::testing::CpuTarget;
using ::tessera::testing::MakeFailedRecord;
using ::tessera::testing::MakeRecord;
using ::tessera::testing::Sm80Target;
using ::tessera::testing::SmallGmm;
using ::tessera::testing::TileTrace;

TEST(SummaryTest, EmptyDatabaseHasNoTasks) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  db->CommitWorkload(SmallGmm(16)).value();  // a workload without records is no task
  EXPECT_TRUE(SummarizeTasks(db.get()).value().empty());
}

TEST(SummaryTest, CurveIsTheBestSoFarInCommitOrder) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w16 = db->CommitWorkload(SmallGmm(16)).value();
  Workload w32 = db->CommitWorkload(SmallGmm(32)).value();
  const std::string cpu = CpuTarget();
  std::vector<TuningRecord> records = {
      MakeFailedRecord(w16, cpu, TileTrace(16, 1, 2), "build: cc exited with 1"),
      MakeRecord(w16, cpu, TileTrace(16, 1, 4), {2e-4, 2e-4}),
      MakeRecord(w32, Sm80Target(), TileTrace(32, 1, 4), {1e-5}),
      MakeRecord(w16, cpu, TileTrace(16, 2, 4), {1e-4}),
      MakeFailedRecord(w16, cpu, TileTrace(16, 3, 4), "run: timed out after 2s"),
      MakeFailedRecord(w16, cpu, TileTrace(16, 3, 2), "run: timed out after 3s"),
      MakeRecord(w16, cpu, TileTrace(16, 2, 2), {3e-4}),
  };
  records[3].verified = true;
  records[3].job_id = "job-2";
  for (const TuningRecord& r : records) db->CommitRecord(r).value();

  std::vector<ReportTask> tasks = SummarizeTasks(db.get()).value();
  ASSERT_EQ(tasks.size(), 2u);
  const ReportTask& t = tasks[0];
  EXPECT_EQ(t.workload.id, w16.id);
  EXPECT_EQ(t.target, cpu);
  EXPECT_EQ(t.label,
            SmallGmm(16).name() + "(float32[1,16,16], float32[1,16,16], float32[1,16,16])");
  EXPECT_EQ(t.unit, "GFLOP/s");
  EXPECT_EQ(t.flops, EstimateFlops(SmallGmm(16)));
  EXPECT_EQ(t.trials, 6);
  EXPECT_EQ(t.succeeded, 3);
  EXPECT_EQ(t.verified, 1);
  ASSERT_TRUE(t.best.has_value());
  EXPECT_EQ(t.best->run_secs, std::vector<double>{1e-4});
  auto gflops = [&](double secs) { return t.flops / secs / 1e9; };
  const std::vector<double> best = {
      0, gflops(2e-4), gflops(1e-4), gflops(1e-4), gflops(1e-4), gflops(1e-4)};
  const std::vector<double> own = {0, gflops(2e-4), gflops(1e-4), 0, 0, gflops(3e-4)};
  ASSERT_EQ(t.curve.size(), 6u);
  for (size_t i = 0; i < t.curve.size(); ++i) {
    EXPECT_DOUBLE_EQ(t.curve[i].best_gflops, best[i]) << "trial " << i + 1;
    EXPECT_DOUBLE_EQ(t.curve[i].gflops, own[i]) << "trial " << i + 1;
  }
  EXPECT_EQ(t.curve[5].trial, 6);
  EXPECT_DOUBLE_EQ(t.curve[5].seconds, records[6].timestamp - records[0].timestamp);
  EXPECT_DOUBLE_EQ(t.span_seconds, records[6].timestamp - records[0].timestamp);
  EXPECT_DOUBLE_EQ(t.measured_seconds, 2e-4 + 2e-4 + 1e-4 + 3e-4);
  ASSERT_EQ(t.errors.size(), 2u);
  EXPECT_EQ(t.errors.at("build_error").count, 1);
  EXPECT_EQ(t.errors.at("timeout").count, 2);
  EXPECT_EQ(t.errors.at("timeout").example, "run: timed out after 2s");
  EXPECT_EQ(t.job_ids, (std::vector<std::string>{"", "job-2"}));
  EXPECT_EQ(t.devices, std::vector<std::string>{"Intel Xeon (test)"});

  EXPECT_EQ(tasks[1].workload.id, w32.id);
  EXPECT_EQ(tasks[1].target, Sm80Target());
  EXPECT_EQ(tasks[1].trials, 1);
  EXPECT_DOUBLE_EQ(tasks[1].span_seconds, 0);
}

TEST(SummaryTest, TaskWithoutSuccessHasNoBest) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  TuningRecord wrong = MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {1e-6});
  wrong.error = MeasureError::kWrongOutput;
  wrong.error_msg = "check: output C differs by 3.5";
  db->CommitRecord(wrong).value();
  std::vector<ReportTask> tasks = SummarizeTasks(db.get()).value();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_FALSE(tasks[0].best.has_value());
  EXPECT_EQ(tasks[0].curve[0].best_gflops, 0);
  EXPECT_EQ(tasks[0].errors.at("wrong_output").count, 1);
  EXPECT_DOUBLE_EQ(tasks[0].measured_seconds, 1e-6);
}

}  // namespace
}  // namespace tessera
