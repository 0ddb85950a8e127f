// SummarizeTasks: tasks by workload and target, the best-so-far curve, time (span, kernel time,
// stage times), errors, jobs;
// the rooflines (ParseRoofline, ApplyRooflines) and a model's kernel table (SummarizeModel).
#include <algorithm>
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

// A runoff's record re-measures a program: counted apart, never as a trial or a curve point,
// even when (imported from elsewhere) no earlier record of its trace is here.
TEST(SummaryTest, ARunoffsRecordIsARemeasurementNotATrial) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  const std::string cpu = CpuTarget();
  const int64_t first = db->CommitRecord(MakeRecord(w, cpu, TileTrace(16, 1, 4), {2e-4})).value();
  TuningRecord again = MakeRecord(w, cpu, TileTrace(16, 1, 4), {1e-4});
  again.retimes = first;
  db->CommitRecord(again).value();
  TuningRecord orphan = MakeRecord(w, cpu, TileTrace(16, 2, 4), {1.5e-4});
  orphan.retimes = 0;  // its re-timed record was not imported
  db->CommitRecord(orphan).value();
  std::vector<ReportTask> tasks = SummarizeTasks(db.get()).value();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].trials, 1);
  EXPECT_EQ(tasks[0].remeasured, 2);
  EXPECT_EQ(tasks[0].curve.size(), 1u);
}

// The stage times of a task's records add up; records without any (stored before schema 3)
// are not counted as timed.
TEST(SummaryTest, StageTimesAddUpOverTheTasksRecords) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  TuningRecord ran = MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {1e-4});
  ran.stage_secs = StageSeconds{0.5, 0.25, 0.125, 0.0625};
  TuningRecord failed = MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 2), "build: cc: 1");
  failed.stage_secs = StageSeconds{1.5, 0, 0, 0.0625};
  TuningRecord old = MakeRecord(w, CpuTarget(), TileTrace(16, 2, 4), {2e-4});
  old.stage_secs = StageSeconds{};
  for (const TuningRecord& r : {ran, failed, old}) db->CommitRecord(r).value();
  std::vector<ReportTask> tasks = SummarizeTasks(db.get()).value();
  ASSERT_EQ(tasks.size(), 1u);
  const ReportTask& t = tasks[0];
  EXPECT_EQ(t.trials, 3);
  EXPECT_EQ(t.timed_records, 2);
  EXPECT_EQ(t.stage_secs.build, 2.0);
  EXPECT_EQ(t.stage_secs.run, 0.25);
  EXPECT_EQ(t.stage_secs.verify, 0.125);
  EXPECT_EQ(t.stage_secs.search, 0.125);
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

TEST(SummaryTest, RooflineParsesTargetPeakAndBandwidth) {
  Roofline r = ParseRoofline("cuda -arch=sm_80=19500,1555").value();
  EXPECT_EQ(r.target_prefix, "cuda -arch=sm_80");
  EXPECT_EQ(r.peak_gflops, 19500);
  EXPECT_EQ(r.bandwidth_gbps, 1555);
  for (const char* bad : {"cpu", "=1,2", "cpu=1", "cpu=1,x", "cpu=0,5", "cpu=-1,5", "cpu=1,2,3"}) {
    absl::StatusOr<Roofline> parsed = ParseRoofline(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(parsed.status().message().find(bad), std::string::npos) << parsed.status();
  }
}

// GMM n: 2n^3 FLOP over three float32 n x n arguments (12 n^2 bytes): n/6 FLOP per byte.
TEST(SummaryTest, RooflineIsTheLesserOfPeakAndIntensityTimesBandwidth) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w16 = db->CommitWorkload(SmallGmm(16)).value();
  Workload w64 = db->CommitWorkload(SmallGmm(64)).value();
  db->CommitRecord(MakeRecord(w16, CpuTarget(), TileTrace(16, 1, 4), {1e-5})).value();
  db->CommitRecord(MakeRecord(w64, CpuTarget(), TileTrace(64, 1, 4), {1e-4})).value();
  db->CommitRecord(MakeRecord(w16, Sm80Target(), TileTrace(16, 1, 4), {1e-6})).value();
  std::vector<ReportTask> tasks = SummarizeTasks(db.get()).value();
  ASSERT_EQ(tasks.size(), 3u);
  ASSERT_EQ(CpuTarget().rfind("cpu", 0), 0u);
  // A generic cpu roofline and a more specific one that does not match: the longest matching
  // prefix wins, and the sm_80 task matches none.
  ApplyRooflines({{"cpu", 8, 2}, {"cpu -cores=999", 1, 1}}, &tasks);
  for (const ReportTask& t : tasks) {
    const double n = t.workload.id == w16.id ? 16 : 64;
    if (t.target == Sm80Target()) {
      EXPECT_EQ(t.roofline_gflops, 0);
      continue;
    }
    EXPECT_DOUBLE_EQ(t.bytes, 3 * n * n * 4);
    const double memory = (2 * n * n * n) / (12 * n * n) * 2;  // FLOP/byte x GB/s
    EXPECT_DOUBLE_EQ(t.roofline_gflops, std::min(memory, 8.0)) << t.label;
    EXPECT_EQ(t.memory_bound, memory < 8.0) << t.label;
    EXPECT_NE(t.roofline_source.find("given for cpu"), std::string::npos) << t.roofline_source;
  }
}

TEST(SummaryTest, AnchorsJoinTheTasksOfTheirWorkloadOnMatchingTargets) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w16 = db->CommitWorkload(SmallGmm(16)).value();
  db->CommitRecord(MakeRecord(w16, CpuTarget(), TileTrace(16, 1, 4), {1e-5})).value();
  db->CommitRecord(MakeRecord(w16, Sm80Target(), TileTrace(16, 1, 4), {1e-6})).value();
  std::vector<ReportTask> tasks = SummarizeTasks(db.get()).value();
  ASSERT_EQ(tasks.size(), 2u);
  std::vector<std::pair<PrimFunc, Anchor>> anchors = {
      {SmallGmm(16), {"OpenBLAS", "cpu", 4e-5}},
      {SmallGmm(16), {"cuBLAS", "cuda -arch=sm_90", 1e-6}},  // no such task
      {SmallGmm(12), {"OpenBLAS", "cpu", 1e-5}}};            // a workload without records
  EXPECT_EQ(ApplyAnchors(db.get(), anchors, &tasks).value(), 1);
  for (const ReportTask& t : tasks) {
    if (t.target != CpuTarget()) {
      EXPECT_TRUE(t.anchors.empty()) << t.target;
      continue;
    }
    ASSERT_EQ(t.anchors.size(), 1u);
    EXPECT_EQ(t.anchors[0].name, "OpenBLAS");
    EXPECT_DOUBLE_EQ(t.anchors[0].gflops, EstimateFlops(SmallGmm(16)) / 4e-5 / 1e9);
  }
}

TEST(SummaryTest, ModelKernelsAreTunedOrDefaultWithTheirShare) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w16 = db->CommitWorkload(SmallGmm(16)).value();
  Workload w32 = db->CommitWorkload(SmallGmm(32)).value();
  Workload w8 = db->CommitWorkload(SmallGmm(8)).value();
  const std::string cpu = CpuTarget();
  db->CommitRecord(MakeRecord(w16, cpu, TileTrace(16, 1, 4), {3e-5})).value();
  db->CommitRecord(MakeRecord(w16, cpu, TileTrace(16, 2, 4), {2e-5})).value();
  db->CommitRecord(MakeRecord(w32, cpu, TileTrace(32, 1, 4), {1e-4})).value();
  db->CommitRecord(MakeFailedRecord(w8, cpu, TileTrace(8, 1, 2), "run: kernel crashed")).value();
  db->CommitRecord(MakeRecord(w16, Sm80Target(), TileTrace(16, 1, 4), {1e-6})).value();
  std::vector<ReportTask> tasks = SummarizeTasks(db.get()).value();
  // k16 twice per inference, k32 once, k8 (every trial failed), k12 never tuned.
  std::vector<ModelKernel> kernels = {{"k16", SmallGmm(16), 2},
                                      {"k32", SmallGmm(32), 1},
                                      {"k8", SmallGmm(8), 1},
                                      {"k12", SmallGmm(12), 3}};
  std::vector<ReportModel> models =
      SummarizeModel(db.get(), "m.onnx", kernels, tasks, "cpu").value();
  ASSERT_EQ(models.size(), 2u) << "one per target with records of its kernels";
  const ReportModel& on_cpu = models[0].target == cpu ? models[0] : models[1];
  const ReportModel& on_gpu = models[0].target == cpu ? models[1] : models[0];
  ASSERT_EQ(on_cpu.kernels.size(), 4u);
  EXPECT_EQ(on_cpu.kernels[0].name, "k16");
  EXPECT_DOUBLE_EQ(on_cpu.kernels[0].best_secs, 2e-5) << "the best of its records";
  EXPECT_EQ(on_cpu.kernels[0].weight, 2);
  EXPECT_DOUBLE_EQ(on_cpu.kernels[0].flops, EstimateFlops(SmallGmm(16)));
  EXPECT_DOUBLE_EQ(on_cpu.kernels[1].best_secs, 1e-4);
  EXPECT_EQ(on_cpu.kernels[2].best_secs, 0) << "no successful record";
  EXPECT_GE(on_cpu.kernels[2].task, 0) << "but a task, with its failures";
  EXPECT_EQ(on_cpu.kernels[3].task, -1);
  EXPECT_DOUBLE_EQ(on_cpu.tuned_seconds, 2 * 2e-5 + 1e-4);
  EXPECT_EQ(on_cpu.untuned, 2);
  EXPECT_EQ(tasks[on_cpu.kernels[0].task].target, cpu);
  EXPECT_DOUBLE_EQ(on_gpu.tuned_seconds, 2 * 1e-6);
  EXPECT_EQ(on_gpu.untuned, 3);
  // A model none of whose kernels was tuned: one table on the target named, all default.
  std::vector<ReportModel> untuned =
      SummarizeModel(db.get(), "u.onnx", {{"k12", SmallGmm(12), 1}}, tasks, "cuda").value();
  ASSERT_EQ(untuned.size(), 1u);
  EXPECT_EQ(untuned[0].target, "cuda");
  EXPECT_EQ(untuned[0].untuned, 1);
  EXPECT_EQ(untuned[0].tuned_seconds, 0);
}

}  // namespace
}  // namespace tessera
