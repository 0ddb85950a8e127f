#include "server/tuning_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

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

  v1::ListJobsResponse list;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), v1::ListJobsRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 0) << "no invalid job was stored";
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
    if (r.ok()) EXPECT_GT(r.stage_secs.build, 0);
    if (r.ok()) EXPECT_GT(r.stage_secs.run, 0);
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
  for (int i = 1; i < top.records_size(); ++i) {
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

TEST_F(TuningServiceTest, JobWithoutAWorkerSaysWhatItWaitsFor) {
  testing::TestWorker worker(server_->address());
  ASSERT_TRUE(worker.Register("cpu -cores=1 -vector_bits=128").ok());
  v1::SubmitJobRequest r = Job();
  r.set_target("cpu -cores=64 -vector_bits=512");
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
