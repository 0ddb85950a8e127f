// The worker daemon in process (worker/daemon.h) against a real tuning server in the same
// process on 127.0.0.1:0 (tests/server/server_testing.h): it registers, measures a small job
// to the end with real builds and runs, stops on Stop(), retries a server that is not there,
// and gives up on a refused token. `tessera worker` as a process (signals, exit codes) is
// tested in tests/cli/worker_command_test.cc. Every wait is bounded.
#include "worker/daemon.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/server.h"
#include "tests/server/server_testing.h"
#include "tests/testing/wait_until.h"

namespace tessera {
namespace {

using testing::TempDir;
using testing::WaitUntil;

WorkerDaemonOptions FastOptions(const TempDir& dir) {
  WorkerDaemonOptions o;
  o.target = "cpu";
  o.build_parallelism = 2;
  o.pull_wait_sec = 0.5;
  o.rpc_timeout_sec = 10;
  o.min_backoff_sec = 0.05;
  o.max_backoff_sec = 0.2;
  o.drain_timeout_sec = 30;
  o.work_dir = dir.Path("work");
  return o;
}

std::unique_ptr<WorkerDaemon> NewDaemon(const std::string& address, WorkerDaemonOptions o) {
  o.server_label = address;
  absl::StatusOr<std::unique_ptr<WorkerDaemon>> daemon = WorkerDaemon::Create(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()), std::move(o));
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  return daemon.ok() ? *std::move(daemon) : nullptr;
}

// Run() on a thread; Stop() and join in Finish (bounded by the daemon's drain time-out).
class Running {
 public:
  explicit Running(WorkerDaemon* daemon)
      : daemon_(daemon), thread_([this] { status_ = daemon_->Run(); }) {}
  ~Running() { Finish().IgnoreError(); }
  absl::Status Finish() {
    if (thread_.joinable()) {
      daemon_->Stop();
      thread_.join();
    }
    return status_;
  }

 private:
  WorkerDaemon* daemon_;
  absl::Status status_;
  std::thread thread_;
};

// Submits `request` to the server at `address` and waits (bounded) until the job ends; its last
// status (not final when it did not end in time or was not accepted, which the test sees).
v1::JobStatus RunJob(const std::string& address, const v1::SubmitJobRequest& request) {
  auto stub = testing::TuningStub(address);
  v1::SubmitJobResponse submitted;
  v1::JobStatus status;
  grpc::Status s = stub->SubmitJob(testing::Context().get(), request, &submitted);
  EXPECT_TRUE(s.ok()) << s.error_message();
  if (!s.ok()) return status;
  v1::JobRef ref;
  ref.set_job_id(submitted.job_id());
  EXPECT_TRUE(WaitUntil(
      [&] {
        status.Clear();
        return stub->GetJob(testing::Context().get(), ref, &status).ok() &&
               (status.state() == v1::JOB_SUCCEEDED || status.state() == v1::JOB_FAILED);
      },
      240))
      << status.DebugString();
  return status;
}

TEST(WorkerDaemonTest, RegistersMeasuresAJobToTheEndAndStops) {
  TempDir dir;
  auto server = TuningServer::Start(testing::TestServerOptions(dir)).value();
  std::unique_ptr<WorkerDaemon> daemon = NewDaemon(server->address(), FastOptions(dir));
  ASSERT_NE(daemon, nullptr);
  EXPECT_EQ(daemon->target().rfind("cpu", 0), 0u) << daemon->target();
  Running running(daemon.get());
  ASSERT_TRUE(WaitUntil([&] { return server->dispatcher()->workers().Workers().size() == 1; }, 30));
  EXPECT_EQ(server->dispatcher()->workers().Workers()[0].devices.at(0).target, daemon->target());

  v1::SubmitJobRequest request;
  request.add_workloads("GMM:M=16,N=16,K=16");
  request.set_target("cpu");
  request.set_max_trials(4);
  request.set_trials_per_iter(4);
  request.set_cost_model("random");
  request.set_seed(1);
  request.set_runoff(false);  // its records counted exactly
  const v1::JobStatus status = RunJob(server->address(), request);
  EXPECT_EQ(status.state(), v1::JOB_SUCCEEDED) << status.DebugString();
  EXPECT_EQ(status.trials(), 4) << status.DebugString();
  // The first record is the default schedule's, and the worker checked it whatever its time
  // (the lease's check_always_hashes): GetBest may return it.
  std::vector<TuningRecord> records = server->database()->AllRecords().value();
  ASSERT_EQ(records.size(), 4u);
  EXPECT_TRUE(records[0].ok()) << records[0].error_msg;
  EXPECT_TRUE(records[0].verified) << "the default schedule's record is not verified";
  EXPECT_TRUE(running.Finish().ok());
  EXPECT_FALSE(daemon->abandoned());
}

// A job that does not turn its runoff off times its fastest record again beside the default
// schedule's on the worker after the search (tuner/runoff.h): each round adds one record of each of
// the two programs, repeating their traces, and leaves no pending batch behind.
TEST(WorkerDaemonTest, AJobsRunoffIsMeasuredOnTheWorker) {
  TempDir dir;
  auto server = TuningServer::Start(testing::TestServerOptions(dir)).value();
  std::unique_ptr<WorkerDaemon> daemon = NewDaemon(server->address(), FastOptions(dir));
  ASSERT_NE(daemon, nullptr);
  Running running(daemon.get());
  ASSERT_TRUE(WaitUntil([&] { return server->dispatcher()->workers().Workers().size() == 1; }, 30));

  v1::SubmitJobRequest request;
  request.add_workloads("GMM:M=32,N=32,K=32");
  request.set_target("cpu");
  request.set_max_trials(8);
  request.set_trials_per_iter(8);
  request.set_cost_model("random");
  request.set_seed(3);  // and runoff not set: a job runs it unless told not to
  const v1::JobStatus status = RunJob(server->address(), request);
  ASSERT_EQ(status.state(), v1::JOB_SUCCEEDED) << status.DebugString();
  EXPECT_EQ(status.trials(), 8) << "the runoff's measurements are not trials";

  std::vector<TuningRecord> records = server->database()->AllRecords().value();
  ASSERT_GE(records.size(), 8u);
  const size_t remeasured = records.size() - 8;
  EXPECT_EQ(remeasured % 2, 0u);
  EXPECT_LE(remeasured, 6u) << "at most 3 rounds";
  std::set<std::string> searched;
  for (size_t i = 0; i < 8; ++i) searched.insert(records[i].trace_json);
  EXPECT_EQ(searched.size(), 8u);
  for (size_t i = 8; i < records.size(); ++i) {
    EXPECT_TRUE(searched.count(records[i].trace_json)) << "record " << records[i].id;
    EXPECT_TRUE(records[i].ok()) << records[i].error_msg;
    EXPECT_EQ(records[i].job_id, status.job_id());
    EXPECT_FALSE(records[i].provenance.worker_id.empty()) << "measured on the worker";
  }
  EXPECT_TRUE(server->store()->PendingBatch(status.job_id()).value().empty());
  EXPECT_TRUE(running.Finish().ok());
}

TEST(WorkerDaemonTest, AnUnreachableServerIsRetriedUntilStop) {
  TempDir dir;
  // Port 1 on loopback: nothing listens there; every attempt fails at once.
  std::unique_ptr<WorkerDaemon> daemon = NewDaemon("127.0.0.1:1", FastOptions(dir));
  ASSERT_NE(daemon, nullptr);
  Running running(daemon.get());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto start = std::chrono::steady_clock::now();
  absl::Status status = running.Finish();
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10)
      << "Stop() ends the back-off";
  EXPECT_FALSE(daemon->abandoned());
}

TEST(WorkerDaemonTest, ARefusedTokenEndsRunWithTheServersCode) {
  TempDir dir;
  ServerOptions options = testing::TestServerOptions(dir);
  options.worker_tokens = {{"the-worker-token", {}}};
  auto server = TuningServer::Start(options).value();
  WorkerDaemonOptions o = FastOptions(dir);
  o.token = "not-the-token";
  std::unique_ptr<WorkerDaemon> daemon = NewDaemon(server->address(), o);
  ASSERT_NE(daemon, nullptr);
  absl::Status status;
  std::atomic<bool> done{false};
  std::thread thread([&] {
    status = daemon->Run();
    done = true;
  });
  bool returned = WaitUntil([&] { return done.load(); }, 30);
  if (!returned) daemon->Stop();
  thread.join();
  ASSERT_TRUE(returned) << "Run() kept retrying a refused token";
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_TRUE(server->dispatcher()->workers().Workers().empty());
}

}  // namespace
}  // namespace tessera
