// Helpers shared by the database tests (database_testing.h).
#include "tests/database/database_testing.h"

#include <stdlib.h>

#include <filesystem>
#include <utility>

#include "database/record_json.h"
#include "frontend/compute.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/analysis.h"
#include "ir/target.h"
#include "schedule/schedule.h"

namespace tessera {
namespace testing {

PrimFunc SmallGmm(int64_t n) {
  return MakeWorkload("GMM", {{"B", 1}, {"M", n}, {"N", n}, {"K", n}}, "float32").value();
}

PrimFunc RenamedGmm(int64_t n) {
  Tensor x = Placeholder({1, n, n}, DataType::Float32(), "X");
  Tensor y = Placeholder({1, n, n}, DataType::Float32(), "Y");
  IterVar r = ReduceAxis(n, "r");
  Tensor z = Compute({1, n, n},
                     [&](const std::vector<Var>& i) {
                       return Sum(x({i[0], i[1], r.var}) * y({i[0], r.var, i[2]}), {r});
                     },
                     "C", {}, {"p", "q", "s"});
  return CreatePrimFunc("renamed_matmul", {x, y, z}).value();
}

std::string TileTrace(int64_t n, int loop, int64_t inner) {
  Schedule sch = Schedule::Create(SmallGmm(n), /*seed=*/7);
  BlockRV block = sch.GetBlock("C").value();
  std::vector<LoopRV> loops = sch.GetLoops(block).value();
  std::vector<ExprRV> tile = sch.SamplePerfectTile(loops[loop], 2, /*max_innermost_factor=*/-1,
                                                   InstValue::IntArray({n / inner, inner}))
                                 .value();
  sch.Split(loops[loop], {InstValue::Of(tile[0]), InstValue::Of(tile[1])}).value();
  return sch.trace().ToJson();
}

TuningRecord MakeRecord(const Workload& workload, const std::string& target,
                        const std::string& trace_json, std::vector<double> run_secs) {
  static double clock = 1.7e9;
  TuningRecord r;
  r.workload_id = workload.id;
  r.target = target;
  r.trace_json = trace_json;
  r.run_secs = std::move(run_secs);
  r.args = ArgInfosOf(workload.func);
  r.timestamp = (clock += 1.5);
  r.provenance = {"0.1.0", "gcc 12.2.0 -O3 -march=native", "Intel Xeon (test)", "", ""};
  // Distinct values, not exact binary fractions: a backend that rounds or swaps stages shows.
  r.stage_secs = StageSeconds{0.4125, 0.0301, 0.007, 0.05};
  return r;
}

TuningRecord MakeFailedRecord(const Workload& workload, const std::string& target,
                              const std::string& trace_json, const std::string& error) {
  TuningRecord r = MakeRecord(workload, target, trace_json, {});
  r.error_msg = error;
  r.error = ErrorKindOfLegacyMessage(error);
  return r;
}

std::string CpuTarget() { return Target::Parse("cpu -cores=4").value().ToString(); }
std::string Sm80Target() { return Target::Parse("cuda -arch=sm_80").value().ToString(); }
std::string Sm90Target() { return Target::Parse("cuda -arch=sm_90").value().ToString(); }

void ExpectSchemaTwoMigratesInPlace(const std::function<std::unique_ptr<Database>()>& open,
                                    const std::function<void()>& downgrade_to_schema_two) {
  {
    std::unique_ptr<Database> db = open();
    ASSERT_NE(db, nullptr);
    Workload w = db->CommitWorkload(SmallGmm(16)).value();
    TuningRecord r = MakeRecord(w, CpuTarget(), TileTrace(16, 1, 2), {1e-4});
    r.job_id = "job-0";
    db->CommitRecord(r).value();
  }
  downgrade_to_schema_two();
  std::unique_ptr<Database> db = open();
  ASSERT_NE(db, nullptr);
  std::vector<TuningRecord> all = db->AllRecords().value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].job_id, "job-0");
  EXPECT_EQ(all[0].stage_secs.total(), 0);
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  TuningRecord r = MakeRecord(w, CpuTarget(), TileTrace(16, 2, 2), {2e-4});
  db->CommitRecord(r).value();
  db.reset();
  all = open()->AllRecords().value();
  ASSERT_EQ(all.size(), 2u);
  ExpectSameRecord(all[1], r);
  EXPECT_GT(all[1].stage_secs.build, 0);
}

void ExpectSchemaThreeMigratesInPlace(const std::function<std::unique_ptr<Database>()>& open,
                                      const std::function<void()>& downgrade_to_schema_three) {
  int64_t old_id = -1;
  {
    std::unique_ptr<Database> db = open();
    ASSERT_NE(db, nullptr);
    Workload w = db->CommitWorkload(SmallGmm(16)).value();
    old_id = db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 2), {1e-4})).value();
  }
  downgrade_to_schema_three();
  std::unique_ptr<Database> db = open();
  ASSERT_NE(db, nullptr);
  std::vector<TuningRecord> all = db->AllRecords().value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].retimes, -1);
  EXPECT_GT(all[0].stage_secs.build, 0) << "the stage times stay";
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  TuningRecord again = MakeRecord(w, CpuTarget(), TileTrace(16, 1, 2), {1.1e-4});
  again.retimes = old_id;
  db->CommitRecord(again).value();
  db.reset();
  all = open()->AllRecords().value();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].retimes, -1);
  EXPECT_EQ(all[1].retimes, old_id);
}

void ExpectSameRecord(const TuningRecord& a, const TuningRecord& b) {
  EXPECT_EQ(a.workload_id, b.workload_id);
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.trace_json, b.trace_json);
  EXPECT_EQ(a.run_secs, b.run_secs);
  EXPECT_EQ(a.error_msg, b.error_msg);
  EXPECT_EQ(a.error, b.error);
  EXPECT_EQ(a.job_id, b.job_id);
  EXPECT_EQ(a.provenance.worker_id, b.provenance.worker_id);
  ASSERT_EQ(a.args.size(), b.args.size());
  for (size_t i = 0; i < a.args.size(); ++i) {
    EXPECT_EQ(a.args[i].dtype, b.args[i].dtype) << "arg " << i;
    EXPECT_EQ(a.args[i].shape, b.args[i].shape) << "arg " << i;
  }
  EXPECT_EQ(a.timestamp, b.timestamp);
  EXPECT_EQ(a.provenance.tessera_version, b.provenance.tessera_version);
  EXPECT_EQ(a.provenance.compiler, b.provenance.compiler);
  EXPECT_EQ(a.provenance.device, b.provenance.device);
  EXPECT_EQ(a.provenance.driver, b.provenance.driver);
  EXPECT_EQ(a.verified, b.verified);
  EXPECT_EQ(a.stage_secs.build, b.stage_secs.build);
  EXPECT_EQ(a.stage_secs.run, b.stage_secs.run);
  EXPECT_EQ(a.stage_secs.verify, b.stage_secs.verify);
  EXPECT_EQ(a.stage_secs.search, b.stage_secs.search);
}

}  // namespace testing
}  // namespace tessera
