// bench_service: what the tuning service costs against tuning in one process. The same job
// (default GMM 256^3, 64 trials, batches of 16, seed 0) runs
//   1. in process, through tuner/tune.h Tune (what `tessera tune` does), and
//   2. through `tessera serve` and 1, 2 and 4 `tessera worker --target cpu` processes on
//      loopback, submitted and followed with `tessera submit --watch`,
// each into a fresh SQLite file; the in-process job runs before and after the service runs and
// the faster of the two counts (the first run on a cold machine pays for cold caches). It
// prints, per run, the wall time and candidates measured per second; for the service with 1
// worker, its throughput relative to in-process tuning (the goal is >= 0.9) and the time per
// candidate spent outside measuring: the wall time minus what the workers spent measuring
// (their "measured N candidates in S s" log lines), against the same figure in process (wall
// minus build, run and verification). Both hold the search and the database; the difference is
// what the RPCs, the queue and the job store add per candidate. With several workers on one
// machine the cores are shared: each worker builds in parallel and times its kernels with OpenMP
// on every core, so more workers measure more candidates per second only by overlapping builds
// with runs, and disturb each other's timings (see the note printed).
//
//   bench_service [--workload GMM:M=256,N=256,K=256] [--trials 64] [--trials-per-iter 16]
//                 [--workers 1,2,4] [--seed 0] [--dir DIR]
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "database/database.h"
#include "frontend/workloads.h"
#include "tests/testing/process.h"
#include "tuner/tune.h"
#include "worker/host.h"

namespace tessera {
namespace {

using testing::ChildProcess;

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

absl::StatusOr<PrimFunc> LoadSpec(const std::string& spec) {
  std::string name = spec.substr(0, spec.find(':'));
  std::string shape = spec.find(':') == std::string::npos ? "" : spec.substr(spec.find(':') + 1);
  absl::StatusOr<std::map<std::string, int64_t>> overrides = ParseShapeOverrides(shape);
  if (!overrides.ok()) return overrides.status();
  return MakeWorkload(name, *overrides, "");
}

struct LocalRun {
  double wall = 0;
  double measure = 0;  // build + run + verify
  int trials = 0;
};

struct ServiceRun {
  int workers = 0;
  double wall = 0;
  double busy = 0;  // sum over workers of the time spent measuring batches
  int trials = 0;
  bool ok = false;
};

absl::StatusOr<LocalRun> RunLocal(const PrimFunc& func, const std::string& spec, int trials,
                                  int per_iter, int64_t seed, const std::string& path) {
  std::remove(path.c_str());
  absl::StatusOr<std::unique_ptr<Database>> db = OpenSqliteDatabase(path);
  if (!db.ok()) return db.status();
  absl::StatusOr<Target> target = ResolveTarget("cpu");
  if (!target.ok()) return target.status();
  // The options `tessera tune` and `tessera serve` both default to.
  TuneOptions options;
  options.target = *target;
  options.max_trials_global = trials;
  options.num_trials_per_iter = per_iter;
  options.seed = seed;
  options.measure.runner.repeat = 3;
  options.measure.runner.min_repeat_ms = 20;
  options.measure.runner.timeout_sec = 30;
  options.measure.runner.seed = static_cast<uint64_t>(seed);
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<TuneSummary> summary = Tune({{spec, func, 1.0}}, db->get(), options);
  if (!summary.ok()) return summary.status();
  LocalRun run;
  run.wall = Since(start);
  run.measure = summary->times.build + summary->times.run + summary->times.verify;
  run.trials = summary->total_trials;
  return run;
}

ServiceRun RunService(const std::string& binary, const std::string& spec, int trials, int per_iter,
                      int64_t seed, int workers, const std::string& dir) {
  ServiceRun run;
  run.workers = workers;
  std::string sub = absl::StrCat(dir, "/service_", workers);
  std::system(absl::StrCat("rm -rf '", sub, "' && mkdir -p '", sub, "'").c_str());
  absl::StatusOr<std::unique_ptr<ChildProcess>> server = ChildProcess::Start(
      {binary, "serve", "--db", sub + "/records.db", "--listen", "127.0.0.1:0", "--quiet"},
      sub + "/serve.out", sub + "/serve.err");
  if (!server.ok()) return run;
  absl::StatusOr<std::string> address = (*server)->WaitForLine("listening on ", 30);
  if (!address.ok()) {
    std::fprintf(stderr, "server: %s\n", std::string(address.status().message()).c_str());
    return run;
  }
  std::vector<std::unique_ptr<ChildProcess>> pool;
  int share = std::max(1, per_iter / workers);
  for (int i = 0; i < workers; ++i) {
    absl::StatusOr<std::unique_ptr<ChildProcess>> w = ChildProcess::Start(
        {binary, "worker", "--server", *address, "--target", "cpu", "--max-candidates",
         std::to_string(share)},
        absl::StrCat(sub, "/worker", i, ".out"), absl::StrCat(sub, "/worker", i, ".err"));
    if (!w.ok()) return run;
    pool.push_back(std::move(*w));
  }
  for (auto& w : pool) {  // registered before the clock starts
    for (int tries = 0; tries < 600 && w->Stderr().find("registered with") == std::string::npos;
         ++tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  auto start = std::chrono::steady_clock::now();
  testing::CommandResult submitted =
      testing::RunCommand({binary, "submit", spec, "--server", *address, "--trials",
                           std::to_string(trials), "--trials-per-iter", std::to_string(per_iter),
                           "--seed", std::to_string(seed), "--watch", "--json"},
                          3600, sub);
  run.wall = Since(start);
  run.ok = submitted.exit_code == 0;
  if (!run.ok) std::fprintf(stderr, "submit: %s\n", submitted.err.c_str());
  static const std::regex kMeasured("measured (\\d+) candidates in ([0-9.]+) s");
  for (auto& w : pool) {
    std::string log = w->Stderr();
    for (std::sregex_iterator it(log.begin(), log.end(), kMeasured), end; it != end; ++it) {
      run.trials += std::stoi((*it)[1]);
      run.busy += std::stod((*it)[2]);
    }
    w->Signal(SIGTERM);
  }
  for (auto& w : pool) {
    if (!w->Wait(60).ok()) w->Kill();
  }
  (*server)->Signal(SIGTERM);
  if (!(*server)->Wait(30).ok()) (*server)->Kill();
  return run;
}

int Main(int argc, char** argv) {
  CLI::App app{"The tuning service against in-process tuning", "bench_service"};
  std::string workload = "GMM:M=256,N=256,K=256";
  int trials = 64, per_iter = 16;
  int64_t seed = 0;
  std::string workers_list = "1,2,4";
  std::string dir;
  app.add_option("--workload", workload, "Workload spec")->capture_default_str();
  app.add_option("--trials", trials, "Trials of the job")->capture_default_str();
  app.add_option("--trials-per-iter", per_iter, "Candidates per batch")->capture_default_str();
  app.add_option("--workers", workers_list, "Worker counts to run the service with")
      ->capture_default_str();
  app.add_option("--seed", seed, "Seed of the search")->capture_default_str();
  app.add_option("--dir", dir, "Scratch directory (default: a new one under /tmp)");
  CLI11_PARSE(app, argc, argv);
  if (dir.empty()) dir = absl::StrCat("/tmp/bench_service_", getpid());
  std::system(absl::StrCat("mkdir -p '", dir, "'").c_str());
  const char* env = std::getenv("TESSERA_BINARY");
  std::string binary = env != nullptr && *env ? env : TESSERA_BINARY;

  absl::StatusOr<PrimFunc> func = LoadSpec(workload);
  if (!func.ok()) {
    std::fprintf(stderr, "bench_service: %s\n", std::string(func.status().message()).c_str());
    return 1;
  }
  std::printf("job: %s, %d trials, batches of %d, seed %lld, on %d cores\n", workload.c_str(),
              trials, per_iter, static_cast<long long>(seed), HostCpuCores());
  auto run_local = [&](const char* when) -> absl::StatusOr<LocalRun> {
    absl::StatusOr<LocalRun> local = RunLocal(*func, workload, trials, per_iter, seed,
                                              absl::StrCat(dir, "/local_", when, ".db"));
    if (!local.ok()) return local.status();
    std::printf(
        "in process (Tune), %s: %d candidates in %.1f s, %.2f candidates/s (measuring "
        "%.1f s, search and database %.1f s)\n",
        when, local->trials, local->wall, local->trials / local->wall, local->measure,
        local->wall - local->measure);
    std::fflush(stdout);
    return local;
  };
  absl::StatusOr<LocalRun> local = run_local("first");
  if (!local.ok()) {
    std::fprintf(stderr, "bench_service: %s\n", std::string(local.status().message()).c_str());
    return 1;
  }
  std::vector<ServiceRun> runs;
  for (const std::string& n : std::vector<std::string>(absl::StrSplit(workers_list, ','))) {
    int workers = std::atoi(n.c_str());
    if (workers <= 0) continue;
    ServiceRun run = RunService(binary, workload, trials, per_iter, seed, workers, dir);
    if (!run.ok) {
      std::printf("service, %d worker(s): FAILED (logs in %s/service_%d)\n", workers, dir.c_str(),
                  workers);
      continue;
    }
    std::printf(
        "service, %d worker(s): %d candidates in %.1f s, %.2f candidates/s; workers "
        "busy measuring %.1f s\n",
        workers, run.trials, run.wall, run.trials / run.wall, run.busy);
    std::fflush(stdout);
    runs.push_back(run);
  }
  absl::StatusOr<LocalRun> again = run_local("again");
  if (again.ok() && again->trials / again->wall > local->trials / local->wall) local = again;
  double local_rate = local->trials / local->wall;
  double local_other = (local->wall - local->measure) / std::max(1, local->trials);
  std::printf("summary (in process: the faster run, %.2f candidates/s):\n", local_rate);
  for (const ServiceRun& run : runs) {
    double rate = run.trials / run.wall;
    std::printf("  %d worker(s): %.2fx in-process throughput\n", run.workers, rate / local_rate);
    if (run.workers == 1 && run.trials > 0) {
      double other = (run.wall - run.busy) / run.trials;
      std::printf(
          "  per candidate outside measuring: service %.1f ms, in process %.1f ms; the "
          "server's overhead (RPC + queue + job store) %.1f ms per candidate\n",
          other * 1e3, local_other * 1e3, (other - local_other) * 1e3);
    }
  }
  std::printf(
      "note: the %d cores are shared by every worker here: several workers raise the "
      "candidates measured per second only by overlapping one worker's builds with "
      "another's runs, and then kernels are timed while other processes compile and "
      "run, so their timings are disturbed. Several workers pay off with one per "
      "machine or per GPU, not several on one CPU\n",
      HostCpuCores());
  return 0;
}

}  // namespace
}  // namespace tessera

int main(int argc, char** argv) { return tessera::Main(argc, argv); }
