#include "server/tuning_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "ir/analysis.h"
#include "ir/printer.h"
#include "schedule/schedule.h"
#include "server/job_manager.h"
#include "server/server.h"
#include "tests/database/postgres_cluster.h"
#include "tests/server/server_testing.h"

namespace tessera {
namespace {

using testing::Context;
using testing::TempDir;

constexpr char kGmm[] = "GMM:M=32,N=32,K=32";

v1::SubmitJobRequest Job(int trials = 8) {
  v1::SubmitJobRequest r;
  r.add_workloads(kGmm);
  r.set_target("cpu");
  r.set_max_trials(trials);
  r.set_trials_per_iter(4);
  r.set_cost_model("random");
  r.set_seed(1);
  r.set_runoff(false);  // its measurements counted exactly (daemon_test runs a job's runoff)
  return r;
}

// The status of a SubmitJob call with `request`.
grpc::Status Submit(v1::TuningService::Stub* stub, const v1::SubmitJobRequest& request,
                    std::string* job_id = nullptr) {
  v1::SubmitJobResponse response;
  grpc::Status s = stub->SubmitJob(Context().get(), request, &response);
  if (job_id != nullptr) *job_id = response.job_id();
  return s;
}

void ExpectInvalid(const grpc::Status& s, const std::string& field) {
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_EQ(s.error_message().rfind(field + ":", 0), 0u) << s.error_message();
}

v1::JobStatus GetJob(v1::TuningService::Stub* stub, const std::string& id) {
  v1::JobRef ref;
  ref.set_job_id(id);
  v1::JobStatus status;
  EXPECT_TRUE(stub->GetJob(Context().get(), ref, &status).ok());
  return status;
}

class TuningServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = TuningServer::Start(testing::TestServerOptions(dir_)).value();
    stub_ = testing::TuningStub(server_->address());
  }
  TempDir dir_;
  std::unique_ptr<TuningServer> server_;
  std::unique_ptr<v1::TuningService::Stub> stub_;
};

TEST_F(TuningServiceTest, SubmitValidatesEveryField) {
  v1::SubmitJobRequest r = Job();
  r.set_max_trials(0);
  ExpectInvalid(Submit(stub_.get(), r), "max_trials");
  r = Job();
  r.clear_workloads();
  ExpectInvalid(Submit(stub_.get(), r), "workloads");
  r = Job();
  r.add_workloads("NOPE:M=1");
  ExpectInvalid(Submit(stub_.get(), r), "workloads[1]");
  r = Job();
  r.set_workloads(0, "GMM:M=-4");
  ExpectInvalid(Submit(stub_.get(), r), "workloads[0]");
  r = Job();
  r.set_workloads(0, "@prim_func\ndef broken(");
  ExpectInvalid(Submit(stub_.get(), r), "workloads[0]");
  r = Job();
  r.set_target("tpu");
  ExpectInvalid(Submit(stub_.get(), r), "target");
  r = Job();
  r.set_target("");
  ExpectInvalid(Submit(stub_.get(), r), "target");
  r = Job();
  r.set_max_trials_per_task(-1);
  ExpectInvalid(Submit(stub_.get(), r), "max_trials_per_task");
  r = Job();
  r.set_strategy("annealing");
  ExpectInvalid(Submit(stub_.get(), r), "strategy");
  r = Job();
  r.set_cost_model("oracle");
  ExpectInvalid(Submit(stub_.get(), r), "cost_model");
  r = Job();
  r.set_trials_per_iter(-3);
  ExpectInvalid(Submit(stub_.get(), r), "trials_per_iter");
  r = Job();
  r.add_input_shapes("x=1,3,16,16");
  ExpectInvalid(Submit(stub_.get(), r), "input_shapes");
  r = Job();
  r.set_model("not a model");
  ExpectInvalid(Submit(stub_.get(), r), "model");
  // A function whose buffer shapes contradict its loops: A holds 2 rows, its loop reads 4.
  std::string text = PrintFunc(ParseJobTasks({"GMM:M=4,N=4,K=4"}).value()[0].func);
  const std::string shape = "A: Buffer((1, 4, 4)";
  ASSERT_NE(text.find(shape), std::string::npos) << text;
  text.replace(text.find(shape), shape.size(), "A: Buffer((1, 2, 4)");
  r = Job();
  r.set_workloads(0, text);
  ExpectInvalid(Submit(stub_.get(), r), "workloads[0]");
  EXPECT_NE(Submit(stub_.get(), r)
                .error_message()
                .find("load of A: index 1 takes values 0..3, "
                      "outside its extent 2"),
            std::string::npos)
      << Submit(stub_.get(), r).error_message();

  v1::ListJobsResponse list;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), v1::ListJobsRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 0) << "no invalid job was stored";
}

// Options that are on by default are optional bools named for what they turn on, absent
// meaning true (verify, runoff); skip_verify, verify's old negative form, is still read. What a
// job's first batch tells its worker says which way the job went.
TEST_F(TuningServiceTest, VerifyIsAnOptionalBoolAndSkipVerifyItsOldForm) {
  testing::TestWorker worker(server_->address());
  ASSERT_TRUE(worker.Register().ok());
  auto verifies = [&](const v1::SubmitJobRequest& request) -> bool {
    std::string id;
    EXPECT_TRUE(Submit(stub_.get(), request, &id).ok());
    absl::StatusOr<v1::WorkBatch> batch = worker.PullOnly(0, 30);
    EXPECT_TRUE(batch.ok()) << batch.status();
    v1::JobRef ref;
    ref.set_job_id(id);
    v1::JobStatus cancelled;
    EXPECT_TRUE(stub_->CancelJob(Context().get(), ref, &cancelled).ok());
    return batch.ok() && batch->verify();
  };
  v1::SubmitJobRequest r = Job();
  EXPECT_TRUE(verifies(r)) << "absent: true";
  r.set_verify(false);
  EXPECT_FALSE(verifies(r));
  r = Job();
  r.set_skip_verify(true);
  EXPECT_FALSE(verifies(r));
  r.set_verify(false);
  EXPECT_FALSE(verifies(r));
  r.set_verify(true);
  ExpectInvalid(Submit(stub_.get(), r), "verify");
}

// A model job's status carries the model's name and its estimate: the sum over its tasks of
// weight x best, and of weight x default, once every task has one.
TEST(TuningServiceToProtoTest, AModelJobsStatusEstimatesItsLatency) {
  JobSnapshot snap;
  snap.row.spec.model = "cnn.onnx";
  for (double weight : {1.0, 2.0}) {
    TaskSnapshot t;
    t.summary.weight = weight;
    t.summary.best_secs = 1e-5;
    t.summary.best_verified = true;
    snap.tasks.push_back(t);
  }
  v1::JobStatus status;
  ToProto(snap, &status);
  EXPECT_EQ(status.model(), "cnn.onnx");
  EXPECT_DOUBLE_EQ(status.estimated_latency_seconds(), 3e-5);
  EXPECT_FALSE(status.has_default_latency_seconds());
  snap.tasks[1].summary.best_verified = false;  // the job verifies: no best for this task
  for (TaskSnapshot& t : snap.tasks) t.summary.default_secs = 2e-5;
  status.Clear();
  ToProto(snap, &status);
  EXPECT_FALSE(status.has_estimated_latency_seconds());
  EXPECT_DOUBLE_EQ(status.default_latency_seconds(), 6e-5);
}

TEST_F(TuningServiceTest, QueriesValidateTheirFields) {
  v1::JobRef ref;
  v1::JobStatus status;
  ExpectInvalid(stub_->GetJob(Context().get(), ref, &status), "job_id");
  ref.set_job_id("job-404");
  EXPECT_EQ(stub_->GetJob(Context().get(), ref, &status).error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(stub_->CancelJob(Context().get(), ref, &status).error_code(),
            grpc::StatusCode::NOT_FOUND);
  v1::ListJobsRequest list;
  list.add_states(static_cast<v1::JobState>(42));
  v1::ListJobsResponse jobs;
  ExpectInvalid(stub_->ListJobs(Context().get(), list, &jobs), "states[0]");
  v1::GetBestRequest best;
  v1::GetBestResponse found;
  best.set_target("cpu");
  ExpectInvalid(stub_->GetBest(Context().get(), best, &found), "workload");
  best.set_workload(kGmm);
  best.set_target("cpu -nonsense=1");
  ExpectInvalid(stub_->GetBest(Context().get(), best, &found), "target");
  v1::GetTopKRequest topk;
  topk.set_workload(kGmm);
  topk.set_target("cpu");
  topk.set_k(-1);
  v1::GetTopKResponse records;
  ExpectInvalid(stub_->GetTopK(Context().get(), topk, &records), "k");
  v1::ApplyBestRequest apply;
  v1::ApplyBestResponse applied;
  apply.set_target("cpu");
  ExpectInvalid(stub_->ApplyBest(Context().get(), apply, &applied), "workloads");
  auto watch_context = Context();
  auto watch = stub_->WatchJob(watch_context.get(), ref);
  v1::JobEvent event;
  EXPECT_FALSE(watch->Read(&event));
  EXPECT_EQ(watch->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST_F(TuningServiceTest, JobRunsWatchedToTheEndAndItsRecordsAnswerQueries) {
  testing::TestWorker worker(server_->address());
  ASSERT_TRUE(worker.Register().ok());
  worker.Start(/*max_candidates=*/3);
  std::string id;
  ASSERT_TRUE(Submit(stub_.get(), Job(8), &id).ok());

  v1::JobRef ref;
  ref.set_job_id(id);
  auto context = Context("", 300);
  auto watch = stub_->WatchJob(context.get(), ref);
  std::vector<v1::JobEvent> events;
  for (v1::JobEvent e; watch->Read(&e);) events.push_back(e);
  ASSERT_TRUE(watch->Finish().ok());
  worker.Stop();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().kind(), v1::JobEvent::EVENT_SNAPSHOT);
  EXPECT_EQ(events.back().kind(), v1::JobEvent::EVENT_JOB_FINISHED);
  int batches = 0;
  for (const v1::JobEvent& e : events) batches += e.kind() == v1::JobEvent::EVENT_BATCH_DONE;
  EXPECT_EQ(batches, 2);

  v1::JobStatus status = GetJob(stub_.get(), id);
  EXPECT_EQ(status.state(), v1::JOB_SUCCEEDED);
  EXPECT_EQ(status.trials(), 8);
  EXPECT_EQ(status.target(), testing::HostCpuTarget());
  ASSERT_EQ(status.tasks_size(), 1);
  EXPECT_EQ(status.tasks(0).trials(), 8);
  EXPECT_TRUE(status.tasks(0).finished());
  EXPECT_EQ(worker.measured(), 8);
  // The default schedule ran in the first batch: its time and the gain over it are reported.
  EXPECT_TRUE(status.tasks(0).has_default()) << status.tasks(0).default_error();
  EXPECT_GT(status.tasks(0).default_seconds(), 0);
  EXPECT_GT(status.tasks(0).gain(), 0);

  // Exactly the budget, each candidate once, each with the worker's provenance.
  std::vector<TuningRecord> records = server_->database()->AllRecords().value();
  ASSERT_EQ(records.size(), 8u);
  std::set<std::string> traces;
  for (const TuningRecord& r : records) {
    traces.insert(r.trace_json);
    EXPECT_EQ(r.job_id, id);
    EXPECT_EQ(r.provenance.worker_id, worker.id());
    EXPECT_EQ(r.provenance.device, "test cpu");
    // Stage times as the worker measured them, and the server's search share.
    if (r.ok()) {
      EXPECT_GT(r.stage_secs.build, 0);
      EXPECT_GT(r.stage_secs.run, 0);
    }
    EXPECT_EQ(r.stage_secs.verify > 0, r.verified || r.error == MeasureError::kWrongOutput);
    EXPECT_GT(r.stage_secs.search, 0);
  }
  EXPECT_EQ(traces.size(), 8u);

  v1::GetBestRequest best;
  best.set_workload(kGmm);
  best.set_target("cpu");
  v1::GetBestResponse found;
  ASSERT_TRUE(stub_->GetBest(Context().get(), best, &found).ok());
  ASSERT_TRUE(found.found());
  EXPECT_TRUE(found.record().verified());
  EXPECT_EQ(found.record().job_id(), id);
  EXPECT_EQ(found.record().provenance().worker_id(), worker.id());
  EXPECT_GT(found.record().mean_seconds(), 0);
  EXPECT_GT(found.record().stage_seconds().build(), 0) << "stage times travel with the record";
  EXPECT_GT(found.record().stage_seconds().verify(), 0) << "it was checked";
  EXPECT_EQ(found.record().target(), testing::HostCpuTarget());

  v1::GetTopKRequest topk;
  topk.set_workload(kGmm);
  topk.set_target(testing::HostCpuTarget());
  topk.set_k(3);
  topk.set_include_unverified(true);
  v1::GetTopKResponse top;
  ASSERT_TRUE(stub_->GetTopK(Context().get(), topk, &top).ok());
  ASSERT_GE(top.records_size(), 1);
  EXPECT_LE(top.records_size(), 3);
  // The best comes first (it may be the default schedule, up to the margin slower than the
  // fastest: tuner/best_record.h), then the others fastest first.
  for (int i = 2; i < top.records_size(); ++i) {
    EXPECT_LE(top.records(i - 1).mean_seconds(), top.records(i).mean_seconds());
  }

  v1::ApplyBestRequest apply;
  apply.add_workloads(kGmm);
  apply.add_workloads("SFM");
  apply.set_target("cpu");
  v1::ApplyBestResponse applied;
  ASSERT_TRUE(stub_->ApplyBest(Context().get(), apply, &applied).ok());
  ASSERT_EQ(applied.functions_size(), 2);
  EXPECT_EQ(applied.functions(0).source(), "record");
  EXPECT_EQ(applied.functions(0).record_id(), found.record().id());
  EXPECT_NE(applied.functions(0).ir_text().find("@prim_func"), std::string::npos);
  EXPECT_EQ(applied.functions(1).source(), "default");
  EXPECT_FALSE(applied.functions(1).default_rule().empty());

  // Export, then import into a second server: all new there, all duplicates the second time.
  auto export_context = Context();
  auto exported = stub_->ExportRecords(export_context.get(), v1::ExportRecordsRequest());
  std::vector<v1::RecordLine> lines;
  for (v1::RecordLine line; exported->Read(&line);) lines.push_back(line);
  ASSERT_TRUE(exported->Finish().ok());
  ASSERT_EQ(lines.size(), 8u);
  TempDir other_dir;
  auto other = TuningServer::Start(testing::TestServerOptions(other_dir)).value();
  auto other_stub = testing::TuningStub(other->address());
  for (int round = 0; round < 2; ++round) {
    v1::ImportRecordsResponse imported;
    auto import_context = Context();
    auto writer = other_stub->ImportRecords(import_context.get(), &imported);
    for (const v1::RecordLine& line : lines) ASSERT_TRUE(writer->Write(line));
    writer->WritesDone();
    ASSERT_TRUE(writer->Finish().ok());
    EXPECT_EQ(imported.imported(), round == 0 ? 8 : 0);
    EXPECT_EQ(imported.duplicates(), round == 0 ? 0 : 8);
  }
  // A malformed line imports nothing.
  v1::ImportRecordsResponse imported;
  auto import_context = Context();
  auto writer = other_stub->ImportRecords(import_context.get(), &imported);
  v1::RecordLine bad;
  bad.set_json("{\"not\": \"a record\"}");
  ASSERT_TRUE(writer->Write(lines[0]));
  writer->Write(bad);
  writer->WritesDone();
  grpc::Status s = writer->Finish();
  ExpectInvalid(s, "line 2");
  EXPECT_EQ(other->database()->NumRecords().value(), 8);
}

// Every record of `stub`'s server, as ExportRecords streams it in pages of `page_size` (0: one
// stream); checks that each page but the last ends with the next page's token.
std::vector<std::string> ExportAll(v1::TuningService::Stub* stub, int page_size) {
  std::vector<std::string> lines;
  std::string token;
  for (int page = 0; page < 1000; ++page) {
    v1::ExportRecordsRequest request;
    request.set_page_size(page_size);
    request.set_page_token(token);
    auto context = Context();
    auto reader = stub->ExportRecords(context.get(), request);
    std::vector<v1::RecordLine> got;
    for (v1::RecordLine line; reader->Read(&line);) got.push_back(line);
    EXPECT_TRUE(reader->Finish().ok());
    if (page_size > 0) {
      EXPECT_LE(got.size(), static_cast<size_t>(page_size));
    }
    for (size_t i = 0; i + 1 < got.size(); ++i) EXPECT_TRUE(got[i].next_page_token().empty());
    for (const v1::RecordLine& line : got) lines.push_back(line.json());
    token = got.empty() ? "" : got.back().next_page_token();
    if (token.empty()) break;
    EXPECT_EQ(got.size(), static_cast<size_t>(page_size)) << "only a full page has a next one";
  }
  return lines;
}

v1::GetBestResponse Best(v1::TuningService::Stub* stub) {
  v1::GetBestRequest request;
  request.set_workload(kGmm);
  request.set_target("cpu");
  v1::GetBestResponse response;
  EXPECT_TRUE(stub->GetBest(Context().get(), request, &response).ok());
  return response;
}

v1::GetTopKResponse TopK(v1::TuningService::Stub* stub) {
  v1::GetTopKRequest request;
  request.set_workload(kGmm);
  request.set_target("cpu");
  v1::GetTopKResponse response;
  EXPECT_TRUE(stub->GetTopK(Context().get(), request, &response).ok());
  return response;
}

// A job whose runoff changes the best: another job's record timed its program at 1 ns (a
// lucky minute, or worse), so the job's runoff times that program against the default side by
// side. Its records are re-measurements linked to what they re-time, not trials; the status's
// best is GetBest's and topk's first, and says that the runoff changed it. Exported in pages
// and imported into a fresh server, the records give the same GetBest and GetTopK answers and
// export again to the same lines.
TEST_F(TuningServiceTest, ARunoffsRecordsSurviveExportAndImportAndStatusAgreesWithBest) {
  const PrimFunc func = ParseJobTasks({kGmm}).value()[0].func;
  Database* db = server_->database();
  const Workload workload = db->CommitWorkload(func).value();
  Schedule sch = Schedule::Create(func, /*seed=*/0);
  BlockRV block = sch.GetBlock("C").value();
  std::vector<LoopRV> loops = sch.GetLoops(block).value();
  std::vector<ExprRV> tile =
      sch.SamplePerfectTile(loops[2], 2, /*max_innermost_factor=*/-1, InstValue::IntArray({8, 4}))
          .value();
  sch.Split(loops[2], {InstValue::Of(tile[0]), InstValue::Of(tile[1])}).value();
  TuningRecord lucky;
  lucky.workload_id = workload.id;
  lucky.target = testing::HostCpuTarget();
  lucky.trace_json = sch.trace().ToJson();
  lucky.run_secs = {1e-9};
  lucky.args = ArgInfosOf(func);
  lucky.timestamp =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() -
      60;
  lucky.provenance = {"0.1.0", "cc -O3", "test cpu", "", "worker-0"};
  lucky.verified = true;
  lucky.job_id = "job-0";
  const int64_t lucky_id = db->CommitRecord(lucky).value();
  ASSERT_EQ(Best(stub_.get()).record().id(), lucky_id);

  testing::TestWorker worker(server_->address());
  ASSERT_TRUE(worker.Register().ok());
  worker.Start(/*max_candidates=*/4);
  v1::SubmitJobRequest request = Job(8);
  request.clear_runoff();  // the runoff runs, as `tune` runs it
  std::string id;
  ASSERT_TRUE(Submit(stub_.get(), request, &id).ok());
  v1::JobStatus status;
  for (int i = 0; i < 3000; ++i) {
    status = GetJob(stub_.get(), id);
    if (status.state() != v1::JOB_QUEUED && status.state() != v1::JOB_RUNNING) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  worker.Stop();
  ASSERT_EQ(status.state(), v1::JOB_SUCCEEDED) << status.error();
  ASSERT_EQ(status.tasks_size(), 1);
  const v1::TaskStatus& task = status.tasks(0);

  // Trials are the search's; the runoff's records are counted apart, and together they are the
  // job's records.
  EXPECT_EQ(status.trials(), 8);
  EXPECT_EQ(task.trials(), 8);
  ASSERT_GE(task.runoff_records(), 2);
  EXPECT_EQ(task.runoff_records() % 2, 0);
  EXPECT_EQ(status.runoff_records(), task.runoff_records());
  std::vector<TuningRecord> all = db->AllRecords().value();
  std::map<int64_t, const TuningRecord*> by_id;
  for (const TuningRecord& r : all) by_id[r.id] = &r;
  int job_records = 0, retimings = 0;
  for (const TuningRecord& r : all) {
    if (r.job_id != id) continue;
    ++job_records;
    if (!r.is_retiming()) continue;
    ++retimings;
    // Linked to the record whose program it times again.
    ASSERT_TRUE(by_id.count(r.retimes)) << "record " << r.id << " re-times " << r.retimes;
    EXPECT_EQ(by_id[r.retimes]->trace_json, r.trace_json);
    EXPECT_LT(r.retimes, r.id);
  }
  EXPECT_EQ(job_records, task.trials() + task.runoff_records());
  EXPECT_EQ(retimings, task.runoff_records());

  // The status's best is GetBest's, and topk's first; the runoff changed it and says so.
  const v1::GetBestResponse best = Best(stub_.get());
  ASSERT_TRUE(best.found());
  ASSERT_TRUE(task.has_best());
  EXPECT_EQ(task.best_record_id(), best.record().id());
  EXPECT_DOUBLE_EQ(task.best_seconds(), best.record().mean_seconds());
  EXPECT_EQ(task.best_job_id(), best.record().job_id());
  EXPECT_NE(best.record().id(), lucky_id) << "1 ns was not what its program takes";
  // Re-timed honestly, the 1 ns program may still win the runoff (its latest record, the
  // runoff's, is the best then): the best changed only when another program won, and only then
  // does the status name the record that was the best before.
  EXPECT_EQ(task.best_changed_by_runoff(), best.record().trace_json() != lucky.trace_json);
  EXPECT_EQ(task.best_record_id_before_runoff(), task.best_changed_by_runoff() ? lucky_id : 0);
  EXPECT_NE(task.runoff().find("side by side"), std::string::npos) << task.runoff();
  EXPECT_NE(task.runoff().find(absl::StrCat("record ", lucky_id, " (")), std::string::npos)
      << task.runoff();
  const v1::GetTopKResponse top = TopK(stub_.get());
  ASSERT_GE(top.records_size(), 2);
  EXPECT_EQ(top.records(0).id(), best.record().id());
  EXPECT_EQ(top.best_record_id(), best.record().id());
  std::set<std::string> programs;
  for (const v1::Record& r : top.records()) {
    EXPECT_TRUE(programs.insert(r.trace_json()).second) << "each program once: its latest record";
  }

  // Export in pages of 3 (and whole), import into a fresh server.
  const std::vector<std::string> lines = ExportAll(stub_.get(), 3);
  EXPECT_EQ(lines.size(), all.size());
  EXPECT_EQ(ExportAll(stub_.get(), 0), lines);
  TempDir other_dir;
  auto other = TuningServer::Start(testing::TestServerOptions(other_dir)).value();
  auto other_stub = testing::TuningStub(other->address());
  v1::ImportRecordsResponse imported;
  {
    auto import_context = Context();
    auto writer = other_stub->ImportRecords(import_context.get(), &imported);
    for (const std::string& json : lines) {
      v1::RecordLine line;
      line.set_json(json);
      ASSERT_TRUE(writer->Write(line));
    }
    writer->WritesDone();
    ASSERT_TRUE(writer->Finish().ok());
  }
  EXPECT_EQ(imported.imported(), static_cast<int64_t>(lines.size()))
      << "re-measurements are measurements, not duplicates";
  EXPECT_EQ(imported.duplicates(), 0);
  EXPECT_EQ(imported.links_dropped(), 0);

  // The same answers there, and the same lines again.
  const v1::GetBestResponse other_best = Best(other_stub.get());
  EXPECT_EQ(other_best.record().SerializeAsString(), best.record().SerializeAsString());
  EXPECT_EQ(other_best.passed_over().SerializeAsString(), best.passed_over().SerializeAsString());
  const v1::GetTopKResponse other_top = TopK(other_stub.get());
  EXPECT_EQ(other_top.SerializeAsString(), top.SerializeAsString());
  EXPECT_EQ(ExportAll(other_stub.get(), 0), lines);
}

TEST_F(TuningServiceTest, JobWithoutAWorkerSaysWhatItWaitsFor) {
  testing::TestWorker worker(server_->address());
  ASSERT_TRUE(worker.Register("cpu -cores=1 -vector_bits=128").ok());
  v1::SubmitJobRequest r = Job();
  // Full, so that it is queued as written (a partial one waits for a worker to complete it).
  r.set_target(
      "cpu -cores=64 -vector_bits=512 -fma_per_cycle=2 -l1d_kb=48 -l2_kb=2048 "
      "-isa=avx2+fma+avx512f");
  r.clear_runoff();
  std::string full;
  ASSERT_TRUE(Submit(stub_.get(), r, &full).ok());
  r.set_target("cuda");
  r.set_runoff(false);
  std::string bare;
  ASSERT_TRUE(Submit(stub_.get(), r, &bare).ok());
  // A request that does not say runs the runoff, as `tessera tune` does.
  EXPECT_TRUE(server_->store()->GetJob(full).value().spec.runoff);
  EXPECT_FALSE(server_->store()->GetJob(bare).value().spec.runoff);
  v1::JobStatus a, b;
  for (int i = 0; i < 600; ++i) {
    a = GetJob(stub_.get(), full);
    b = GetJob(stub_.get(), bare);
    if (a.queued() > 0 && !b.waiting_for().empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_GE(a.queued(), 4);
  EXPECT_NE(a.waiting_for().find("no live worker serves target cpu -cores=64"), std::string::npos)
      << a.waiting_for();
  EXPECT_NE(a.waiting_for().find("cpu -cores=1"), std::string::npos) << a.waiting_for();
  EXPECT_NE(b.waiting_for().find("no worker for target 'cuda'"), std::string::npos)
      << b.waiting_for();
  EXPECT_EQ(b.state(), v1::JOB_QUEUED);

  v1::JobRef ref;
  ref.set_job_id(full);
  v1::JobStatus cancelled;
  ASSERT_TRUE(stub_->CancelJob(Context().get(), ref, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::JOB_CANCELLED);
  EXPECT_EQ(cancelled.queued(), 0);
  ref.set_job_id(bare);
  ASSERT_TRUE(stub_->CancelJob(Context().get(), ref, &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::JOB_CANCELLED);
  EXPECT_TRUE(server_->store()->PendingBatch(full).value().empty());

  v1::ListJobsRequest list;
  list.add_states(v1::JOB_CANCELLED);
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), list, &jobs).ok());
  ASSERT_EQ(jobs.jobs_size(), 2);
  EXPECT_EQ(jobs.jobs(0).job_id(), bare);  // newest first
}

// Two servers on one PostgreSQL database (records and state), the worker registered with the
// first, which runs the job: a watch on the second follows the job's rows, a BATCH_DONE when
// its first batch is committed and JOB_FINISHED at the end. Skipped, saying why, without the
// PostgreSQL binaries.
TEST(SharedWatchTest, AnotherServerWatchesAJobToTheEnd) {
  std::string why;
  testing::PostgresCluster* cluster = testing::PostgresCluster::Get(&why);
  if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
  const std::string url = cluster->NewDatabase().value();
  TempDir dir_a, dir_b;
  ServerOptions options_a = testing::TestServerOptions(dir_a);
  ServerOptions options_b = testing::TestServerOptions(dir_b);
  options_a.db_path = options_b.db_path = url;
  std::unique_ptr<TuningServer> a = TuningServer::Start(options_a).value();
  std::unique_ptr<TuningServer> b = TuningServer::Start(options_b).value();
  auto stub_a = testing::TuningStub(a->address());
  auto stub_b = testing::TuningStub(b->address());
  testing::TestWorker worker(a->address());
  ASSERT_TRUE(worker.Register().ok());
  std::string id;
  ASSERT_TRUE(Submit(stub_a.get(), Job(8), &id).ok());

  std::mutex mu;
  std::vector<v1::JobEvent> events;
  grpc::Status finished;
  auto context = Context("", 300);
  std::thread watcher([&] {
    v1::JobRef ref;
    ref.set_job_id(id);
    auto watch = stub_b->WatchJob(context.get(), ref);
    for (v1::JobEvent e; watch->Read(&e);) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(e);
    }
    grpc::Status s = watch->Finish();
    std::lock_guard<std::mutex> lock(mu);
    finished = s;
  });
  auto count = [&](v1::JobEvent::Kind kind) {
    std::lock_guard<std::mutex> lock(mu);
    int n = 0;
    for (const v1::JobEvent& e : events) n += e.kind() == kind;
    return n;
  };
  // One batch (4 candidates), then a pause: the watch on b sees it from the rows.
  int measured = 0;
  for (int i = 0; i < 60 && measured < 4; ++i) measured += worker.RunOnce(4, 1).value_or(0);
  ASSERT_EQ(measured, 4);
  for (int i = 0; i < 100 && count(v1::JobEvent::EVENT_BATCH_DONE) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(count(v1::JobEvent::EVENT_BATCH_DONE), 1);
  worker.Start(/*max_candidates=*/4);
  watcher.join();
  worker.Stop();
  ASSERT_TRUE(finished.ok()) << finished.error_message();
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front().kind(), v1::JobEvent::EVENT_SNAPSHOT);
  EXPECT_EQ(events[1].kind(), v1::JobEvent::EVENT_BATCH_DONE);
  EXPECT_EQ(events[1].status().trials(), 4);
  EXPECT_EQ(events.back().kind(), v1::JobEvent::EVENT_JOB_FINISHED);
  EXPECT_EQ(events.back().status().trials(), 8);
  EXPECT_EQ(events.back().status().state(), v1::JOB_SUCCEEDED);
}

}  // namespace
}  // namespace tessera
