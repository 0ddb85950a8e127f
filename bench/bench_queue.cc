// bench_queue: how many candidates per second the service's queue hands out and takes back,
// through the real WorkerService gRPC API on loopback, with the state in SQLite (one server, the
// queue in memory written through to the file) and in PostgreSQL (the queue in rows, shared by
// servers: every lease and report is a transaction). What it leaves out on purpose: the search
// and the records database (a job's NextBatch and Commit) and measuring. Simulated workers
// report each candidate at once with a pre-measured outcome (run_seconds = [1e-5]), so the
// figure is the queue's ceiling, not a tuning rate.
//
// Per backend and worker count: a feeder keeps `jobs` jobs each with a pending batch of `batch`
// candidates (AddBatch + Dispatcher::SubmitBatch; when a batch is complete, AwaitBatch +
// DeleteBatch and the next one), and N worker threads, each with its own gRPC channel, loop
// PullWork(max_candidates) -> ReportResults for `seconds`. Printed: candidates leased and
// reported per second, and pulls that came back empty (when there are many, the feeder, not
// the queue, was the limit).
//
// The comparison: a GPU that finishes a candidate every ~2 s (build on the worker's CPUs
// overlapped, a few timed repeats of a kernel of ~ms) asks ~0.5 candidates/s, so 300 GPUs ask
// ~150/s of the queue.
//
// PostgreSQL: --pg URL, or a throw-away cluster like the tests' (initdb/postgres from Debian's
// postgresql package) when none is given; skipped, saying why, when neither can be had.
//
//   bench_queue [--workers 8,32,128] [--seconds 5] [--jobs 4] [--batch 256]
//               [--max-candidates 4] [--pg URL] [--backends sqlite,postgres]
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "ir/target.h"
#include "proto/tessera.grpc.pb.h"
#include "server/auth.h"
#include "server/dispatcher.h"
#include "server/job_store.h"
#include "server/worker_service.h"
#include "tests/database/postgres_cluster.h"

namespace tessera {
namespace {

struct Config {
  int seconds = 5;
  int jobs = 4;
  int batch = 256;
  int max_candidates = 4;
};

struct Figures {
  long reported = 0;
  long empty_pulls = 0;
  long refused = 0;
  double seconds = 0;
};

// Keeps every job's batch topped up until `stop`.
void Feed(JobStore* store, Dispatcher* dispatcher, const std::string& target, const Config& c,
          const std::atomic<bool>* stop) {
  std::vector<std::thread> jobs;
  for (int j = 0; j < c.jobs; ++j) {
    jobs.emplace_back([&, j] {
      JobSpec spec;
      spec.workloads = {"GMM"};
      spec.target = target;
      spec.max_trials_global = 1 << 20;
      std::string id = store->CreateJob(spec, 0).value().id;
      BatchContext context;
      context.target = target;
      context.workload_json = "{}";
      while (!stop->load()) {
        std::vector<NewCandidate> rows;
        for (int i = 0; i < c.batch; ++i) {
          rows.push_back({absl::StrCat("{\"job\": ", j, ", \"i\": ", i, "}"), "h", "{}"});
        }
        std::vector<int64_t> ids = store->AddBatch(id, 0, rows).value();
        std::vector<LeasedCandidate> items;
        for (int64_t cid : ids) items.push_back({cid, "{}", "h"});
        if (!dispatcher->SubmitBatch(id, 0, context, items, std::vector<int>(ids.size(), 0)).ok()) {
          return;
        }
        if (!dispatcher->AwaitBatch(id).ok()) return;
        store->DeleteBatch(id).IgnoreError();
      }
    });
  }
  for (std::thread& t : jobs) t.join();
}

Figures RunWorkers(const std::string& address, const std::string& target, int n, const Config& c) {
  std::atomic<long> reported{0}, empty{0}, refused{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  auto start = std::chrono::steady_clock::now();
  for (int w = 0; w < n; ++w) {
    threads.emplace_back([&] {
      grpc::ChannelArguments args;
      args.SetInt("grpc.use_local_subchannel_pool", 1);  // a connection per worker
      auto stub = v1::WorkerService::NewStub(
          grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
      v1::RegisterWorkerRequest reg;
      reg.set_host("bench");
      reg.add_devices()->set_target(target);
      v1::RegisterWorkerResponse registered;
      grpc::ClientContext rc;
      if (!stub->RegisterWorker(&rc, reg, &registered).ok()) return;
      while (!stop.load()) {
        v1::PullWorkRequest pull;
        pull.set_worker_id(registered.worker_id());
        pull.set_max_candidates(c.max_candidates);
        pull.set_wait_seconds(0.5);
        v1::PullWorkResponse work;
        grpc::ClientContext pc;
        if (!stub->PullWork(&pc, pull, &work).ok()) {
          ++refused;
          continue;
        }
        if (!work.has_work()) {
          ++empty;
          continue;
        }
        v1::ReportResultsRequest report;
        report.set_worker_id(registered.worker_id());
        report.set_lease_id(work.batch().lease_id());
        for (const v1::Candidate& cand : work.batch().candidates()) {
          v1::CandidateResult* r = report.add_results();
          r->set_candidate_id(cand.candidate_id());
          r->add_run_seconds(1e-5);
        }
        v1::ReportResultsResponse accepted;
        grpc::ClientContext xc;
        if (stub->ReportResults(&xc, report, &accepted).ok()) {
          reported += accepted.accepted();
        } else {
          ++refused;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(c.seconds));
  stop = true;
  Figures f;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (std::thread& t : threads) t.join();
  f.reported = reported;
  f.empty_pulls = empty;
  f.refused = refused;
  return f;
}

// One backend, every worker count; a fresh state database per count.
void Bench(const std::string& name, const std::function<std::string()>& fresh_state,
           const std::vector<int>& workers, const Config& c) {
  const std::string target = Target::Parse("cpu").value().ToString();
  for (int n : workers) {
    std::string path = fresh_state();
    if (path.empty()) return;
    absl::StatusOr<std::unique_ptr<JobStore>> store = JobStore::Open(path);
    if (!store.ok()) {
      std::printf("%-10s %5d  error: %s\n", name.c_str(), n, store.status().ToString().c_str());
      return;
    }
    DispatcherOptions options;
    options.max_wait_seconds = 1;
    std::unique_ptr<Dispatcher> dispatcher = NewDispatcher(store->get(), options);
    TokenAuth auth;
    WorkerServiceImpl service(dispatcher.get(), &auth);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&service);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    std::atomic<bool> stop{false};
    std::thread feeder([&] { Feed(store->get(), dispatcher.get(), target, c, &stop); });
    Figures f = RunWorkers(absl::StrCat("127.0.0.1:", port), target, n, c);
    stop = true;
    dispatcher->Shutdown();  // wakes the feeder's AwaitBatch
    feeder.join();
    server->Shutdown();
    double rate = f.reported / f.seconds;
    std::printf("%-10s %5d  %10.0f  %10ld  %8ld  %6.1fx\n", name.c_str(), n, rate, f.empty_pulls,
                f.refused, rate / 150.0);
    std::fflush(stdout);
  }
}

int Main(int argc, char** argv) {
  CLI::App app("bench_queue: the service queue's candidates leased and reported per second");
  std::string workers_text = "8,32,128";
  std::string backends_text = "sqlite,postgres";
  std::string pg_url;
  Config c;
  app.add_option("--workers", workers_text, "Simulated worker counts")->capture_default_str();
  app.add_option("--seconds", c.seconds, "Seconds per run")->capture_default_str();
  app.add_option("--jobs", c.jobs, "Jobs with a pending batch at once")->capture_default_str();
  app.add_option("--batch", c.batch, "Candidates per batch")->capture_default_str();
  app.add_option("--max-candidates", c.max_candidates, "Candidates per lease")
      ->capture_default_str();
  app.add_option("--pg", pg_url, "PostgreSQL URL (default: a throw-away cluster)");
  app.add_option("--backends", backends_text, "sqlite, postgres")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::vector<int> workers;
  for (absl::string_view w : absl::StrSplit(workers_text, ',')) {
    workers.push_back(std::stoi(std::string(w)));
  }
  std::printf("loopback gRPC, %d jobs x batches of %d, %d candidates per lease, %d s per run\n",
              c.jobs, c.batch, c.max_candidates, c.seconds);
  std::printf("reference: 300 GPUs x 1 candidate per ~2 s = 150 candidates/s\n\n");
  std::printf("%-10s %5s  %10s  %10s  %8s  %7s\n", "state", "workers", "cand/s", "empty-pulls",
              "refused", "vs 150/s");
  int run = 0;
  char tmpl[] = "/tmp/bench_queue_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  for (absl::string_view backend : absl::StrSplit(backends_text, ',')) {
    if (backend == "sqlite") {
      Bench(
          "sqlite", [&] { return absl::StrCat(dir, "/state", run++, ".db"); }, workers, c);
    } else if (backend == "postgres") {
      testing::PostgresCluster* cluster = nullptr;
      if (pg_url.empty()) {
        std::string why;
        cluster = testing::PostgresCluster::Get(&why);
        if (cluster == nullptr) {
          std::printf("postgres   skipped: %s\n", why.c_str());
          continue;
        }
      }
      Bench(
          "postgres",
          [&]() -> std::string {
            if (!pg_url.empty()) return pg_url;
            absl::StatusOr<std::string> url = cluster->NewDatabase();
            if (!url.ok()) std::printf("postgres   %s\n", url.status().ToString().c_str());
            return url.value_or("");
          },
          workers, c);
      if (cluster != nullptr) cluster->Stop();
    }
  }
  std::system(absl::StrCat("rm -rf '", dir, "'").c_str());
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::Main(argc, argv); }
