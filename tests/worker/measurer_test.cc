// LocalMeasurer: typed outcomes (build error, wrong output, timeout), packing candidates timed
// as their kernels and checked whole, checks only of the
// candidates that beat the best and verified set only by a check that passed, the
// slow-candidate and cut-off rules, and builds overlapped with runs (BuildOverlap) giving the
// same outcomes in the same order, without stalling on a failed or timed-out build; a cancel
// stops a batch after the run in progress.
#include "worker/measurer.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/median.h"
#include "frontend/workloads.h"
#include "gtest/gtest.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "tests/codegen/test_funcs.h"
#include "tests/testing/schedule_testing.h"
#include "worker/host.h"

namespace tessera {
namespace {

PrimFunc SmallGmm() {
  return *MakeWorkload("GMM", {{"B", 1}, {"M", 128}, {"N", 128}, {"K", 128}}, "float32");
}

std::unique_ptr<LocalMeasurer> CpuMeasurer(const MeasureConfig& config) {
  absl::StatusOr<std::unique_ptr<LocalMeasurer>> m =
      LocalMeasurer::Create(*ResolveTarget("cpu"), config);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

PrimFunc SmallElementwise() {
  return *MakeWorkload("ELEMENTWISE", {{"M", 64}, {"N", 64}}, "float32");
}

// `good` with the same parameters and other outputs: C = max(A * 3 + B, 0).
absl::StatusOr<PrimFunc> WrongElementwise(const PrimFunc& good) {
  const std::string text = PrintFunc(good);
  if (text.find("* float32(2.0)") == std::string::npos) {
    return absl::InternalError("no '* float32(2.0)' in the ELEMENTWISE workload: " + text);
  }
  return ParseFunc(absl::StrReplaceAll(text, {{"* float32(2.0)", "* float32(3.0)"}}));
}

MeasureRequest RequestOf(const LocalMeasurer& m, const PrimFunc& workload,
                         std::vector<PrimFunc> candidates, double best_secs = 0) {
  MeasureRequest request;
  request.target = m.target();
  request.workload = workload;
  request.candidates = std::move(candidates);
  request.best_secs = best_secs;
  return request;
}

TEST(LocalMeasurerTest, OutcomesAreTypedAndOnlyAPassedCheckVerifies) {
  MeasureConfig config;
  config.runner.repeat = 2;
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  const PrimFunc good = SmallElementwise();
  absl::StatusOr<PrimFunc> wrong = WrongElementwise(good);
  ASSERT_TRUE(wrong.ok()) << wrong.status();

  // The wrong one alone: it beats no best, so it is checked, and fails.
  absl::StatusOr<MeasuredBatch> batch = m->Measure(RequestOf(*m, good, {*wrong}));
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->outcomes.size(), 1u);
  EXPECT_EQ(batch->outcomes[0].error, MeasureError::kWrongOutput);
  EXPECT_FALSE(batch->outcomes[0].ok());
  EXPECT_FALSE(batch->outcomes[0].verified);
  EXPECT_NE(batch->outcomes[0].error_msg.find("check: outputs differ"), std::string::npos)
      << batch->outcomes[0].error_msg;
  EXPECT_FALSE(batch->outcomes[0].run_secs.empty());  // it ran; its time is kept
  EXPECT_FALSE(batch->provenance.device.empty());

  // The right one passes its check.
  batch = m->Measure(RequestOf(*m, good, {good}));
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_TRUE(batch->outcomes[0].ok());
  EXPECT_TRUE(batch->outcomes[0].verified);
  ASSERT_TRUE(batch->outcomes[0].mean_secs().has_value());

  // Slower than the best: not checked, so not verified (and not an error).
  batch = m->Measure(RequestOf(*m, good, {good}, /*best_secs=*/1e-12));
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_TRUE(batch->outcomes[0].ok());
  EXPECT_FALSE(batch->outcomes[0].verified);

  // Without checks nothing is verified, and a wrong program is not caught.
  MeasureRequest unchecked = RequestOf(*m, good, {*wrong});
  unchecked.verify = false;
  batch = m->Measure(unchecked);
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_TRUE(batch->outcomes[0].ok());
  EXPECT_FALSE(batch->outcomes[0].verified);
}

// A candidate that packs its layout-free weight (ir/prepack.h) is timed as its kernel
// (TimedRunInput) and checked whole, packing then kernel, against the plain workload.
TEST(LocalMeasurerTest, APackingCandidateIsTimedAndCheckedWhole) {
  MeasureConfig config;
  config.runner.repeat = 2;
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  const PrimFunc linear = *MakeWorkload("LINEAR", {{"M", 8}, {"N", 64}, {"K", 32}});
  absl::StatusOr<MeasuredBatch> batch =
      m->Measure(RequestOf(*m, linear, {testing::LinearWithPackedWeight(linear)}));
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->outcomes.size(), 1u);
  EXPECT_TRUE(batch->outcomes[0].ok()) << batch->outcomes[0].error_msg;
  EXPECT_TRUE(batch->outcomes[0].verified);
  EXPECT_TRUE(batch->outcomes[0].mean_secs().has_value());
}

// The default schedule is checked whatever its time (MeasureRequest::check_always): `best` may
// return it within the noise of the fastest and shows verified records only.
TEST(LocalMeasurerTest, CandidatesToCheckAlwaysAreCheckedWhenSlowerThanTheBest) {
  MeasureConfig config;
  config.runner.repeat = 2;
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  const PrimFunc good = SmallElementwise();
  absl::StatusOr<PrimFunc> wrong = WrongElementwise(good);
  ASSERT_TRUE(wrong.ok()) << wrong.status();

  // Nothing beats a best of 1 ps, so only the named candidates are checked.
  MeasureRequest request = RequestOf(*m, good, {good, good, *wrong}, /*best_secs=*/1e-12);
  request.check_always = {1, 2};
  absl::StatusOr<MeasuredBatch> batch = m->Measure(request);
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->outcomes.size(), 3u);
  EXPECT_TRUE(batch->outcomes[0].ok());
  EXPECT_FALSE(batch->outcomes[0].verified);
  EXPECT_EQ(batch->outcomes[0].verify_secs, 0);
  EXPECT_TRUE(batch->outcomes[1].ok());
  EXPECT_TRUE(batch->outcomes[1].verified);
  EXPECT_GT(batch->outcomes[1].verify_secs, 0);
  EXPECT_EQ(batch->outcomes[2].error, MeasureError::kWrongOutput);
  EXPECT_FALSE(batch->outcomes[2].verified);

  // Without checks, naming a candidate checks nothing.
  request.verify = false;
  batch = m->Measure(request);
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (const MeasureOutcome& o : batch->outcomes) {
    EXPECT_TRUE(o.ok());
    EXPECT_FALSE(o.verified);
  }
}

// Each outcome carries its own stage times: its compile, its run steps (at least its timed
// repeats), and its check only if it was the one checked; they fit within the batch's totals.
TEST(LocalMeasurerTest, EachOutcomeCarriesItsOwnStageTimes) {
  MeasureConfig config;
  config.runner.repeat = 2;
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  const PrimFunc func = *MakeWorkload("ELEMENTWISE", {{"M", 64}, {"N", 64}}, "float32");
  absl::StatusOr<MeasuredBatch> batch = m->Measure(RequestOf(*m, func, {func, func}));
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->outcomes.size(), 2u);
  int checked = 0;
  double run_total = 0, verify_total = 0;
  for (const MeasureOutcome& o : batch->outcomes) {
    ASSERT_TRUE(o.ok()) << o.error_msg;
    EXPECT_GT(o.build_secs, 0);
    double timed = 0;
    for (double s : o.run_secs) timed += s;
    EXPECT_GE(o.run_wall_secs, timed);
    EXPECT_EQ(o.verify_secs > 0, o.verified);
    checked += o.verified;
    run_total += o.run_wall_secs;
    verify_total += o.verify_secs;
  }
  EXPECT_EQ(checked, 1) << "checks stop at the first that passes";
  EXPECT_LE(run_total, batch->run_seconds);
  EXPECT_LE(verify_total, batch->verify_seconds);
}

TEST(LocalMeasurerTest, BuildErrorsAreOutcomesAndOtherTargetsAreRefused) {
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(MeasureConfig());
  ASSERT_NE(m, nullptr);
  auto [good, bound] = testing_funcs::ElementwiseAndThreadBound(8);
  absl::StatusOr<MeasuredBatch> batch = m->Measure(RequestOf(*m, good, {bound, good}));
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->outcomes.size(), 2u);
  EXPECT_EQ(batch->outcomes[0].error, MeasureError::kBuild);
  EXPECT_EQ(batch->outcomes[0].error_msg, "build: cpu codegen: loop i bound to threadIdx.x");
  EXPECT_TRUE(batch->outcomes[0].run_secs.empty());
  EXPECT_FALSE(batch->outcomes[0].mean_secs().has_value());
  EXPECT_TRUE(batch->outcomes[1].ok()) << batch->outcomes[1].error_msg;

  MeasureRequest request = RequestOf(*m, good, {good});
  request.target = *Target::Parse("cuda -arch=sm_80");
  EXPECT_EQ(m->Measure(request).status().code(), absl::StatusCode::kInvalidArgument);
}

// A compile that outlasts its time-out is a build error of that candidate, not a stall.
TEST(LocalMeasurerTest, CompileTimeOutIsABuildError) {
  MeasureConfig config;
  config.build_timeout_sec = 0.001;
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  const PrimFunc gmm = SmallGmm();
  absl::StatusOr<MeasuredBatch> batch = m->Measure(RequestOf(*m, gmm, {gmm}));
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->outcomes[0].error, MeasureError::kBuild);
  EXPECT_NE(batch->outcomes[0].error_msg.find("timed out after 0.001s"), std::string::npos)
      << batch->outcomes[0].error_msg;
  EXPECT_LT(batch->build_seconds, 10);
}

TEST(LocalMeasurerTest, FarSlowerCandidatesGetOneRunAndAnEarlierCutoff) {
  MeasureConfig config;
  config.runner.repeat = 3;
  config.runner.min_repeat_ms = 20;
  config.runner.timeout_sec = 30;
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  // No best yet: the configured runner.
  RunnerConfig r = m->RunnerConfigFor(0);
  EXPECT_EQ(r.slow_run_secs, 0);
  EXPECT_EQ(r.timeout_sec, 30);
  // Best 10 ms: one run at >= 100 ms; a step is cut at max(20 x 10 ms + 50 ms, 100 ms + 3 x
  // 20 ms) = 250 ms.
  r = m->RunnerConfigFor(0.010);
  EXPECT_DOUBLE_EQ(r.slow_run_secs, 0.1);
  EXPECT_NEAR(r.timeout_sec, 0.25, 1e-9);
  // Best 1 ms: one run only at >= 50 ms (start-up noise of a first run).
  EXPECT_DOUBLE_EQ(m->RunnerConfigFor(0.001).slow_run_secs, config.min_slow_run_secs);
  r = m->RunnerConfigFor(0.1);
  EXPECT_NEAR(r.timeout_sec, 2.05, 1e-9);
  EXPECT_NEAR(m->RunnerConfigFor(1e-6).timeout_sec, config.min_timeout_sec, 1e-9);
  EXPECT_EQ(m->RunnerConfigFor(10).timeout_sec, 30);  // never above the configured one

  // End to end: the unscheduled 128^3 GMM (milliseconds) against a best of 1 us is timed by
  // its warm-up run only (with the 50 ms floor lowered); against no best, by every repeat.
  const PrimFunc gmm = SmallGmm();
  config.min_slow_run_secs = 0;
  m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  MeasureRequest request = RequestOf(*m, gmm, {gmm}, 1e-6);
  request.verify = false;
  absl::StatusOr<MeasuredBatch> slow = m->Measure(request);
  ASSERT_TRUE(slow.ok()) << slow.status();
  ASSERT_TRUE(slow->outcomes[0].ok()) << slow->outcomes[0].error_msg;
  EXPECT_EQ(slow->outcomes[0].run_secs.size(), 1u);
  // Measured fully (a runoff's batch): every repeat, whatever the best.
  request.measure_fully = true;
  absl::StatusOr<MeasuredBatch> full = m->Measure(request);
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_TRUE(full->outcomes[0].ok()) << full->outcomes[0].error_msg;
  EXPECT_EQ(full->outcomes[0].run_secs.size(), 3u);
  request.measure_fully = false;
  request.best_secs = 0;
  absl::StatusOr<MeasuredBatch> plain = m->Measure(request);
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(plain->outcomes[0].ok()) << plain->outcomes[0].error_msg;
  EXPECT_EQ(plain->outcomes[0].run_secs.size(), 3u);
  // A 1024^3 GMM (seconds unscheduled) against a best of 1 us is cut off at the floor: a
  // timeout, not a run error.
  const PrimFunc big = *MakeWorkload("GMM", {{"M", 1024}, {"N", 1024}, {"K", 1024}}, "float32");
  request = RequestOf(*m, big, {big}, 1e-6);
  request.verify = false;
  absl::StatusOr<MeasuredBatch> cut = m->Measure(request);
  ASSERT_TRUE(cut.ok()) << cut.status();
  EXPECT_EQ(cut->outcomes[0].error, MeasureError::kTimeout);
  EXPECT_NE(cut->outcomes[0].error_msg.find("timed out after 0.25s (cut off at 20x the best"),
            std::string::npos)
      << cut->outcomes[0].error_msg;
  EXPECT_LT(cut->run_seconds, 5);
}

// The processes a candidate is timed in (MeasureConfig::processes_per_candidate): how many,
// which one's repeats it keeps, when one more runs and when it is flagged. The bound decides,
// not the machine: a bound below zero calls any two processes disagreeing, a huge one none.
TEST(LocalMeasurerTest, EachCandidateIsTimedInSeveralProcessesAndKeepsTheLowest) {
  MeasureConfig config;
  config.runner.repeat = 2;
  config.runner.min_repeat_ms = 1;
  const PrimFunc good = SmallElementwise();
  auto measure = [&](const MeasureConfig& c) {
    std::unique_ptr<LocalMeasurer> m = CpuMeasurer(c);
    MeasureRequest request = RequestOf(*m, good, {good, good});
    request.verify = false;
    absl::StatusOr<MeasuredBatch> batch = m->Measure(request);
    EXPECT_TRUE(batch.ok()) << batch.status();
    return batch.ok() ? *batch : MeasuredBatch();
  };
  config.process_disagreement = 1e9;
  MeasuredBatch agreed = measure(config);
  ASSERT_EQ(agreed.outcomes.size(), 2u);
  for (const MeasureOutcome& o : agreed.outcomes) {
    ASSERT_TRUE(o.ok()) << o.error_msg;
    EXPECT_EQ(o.process_medians.size(), 2u) << "two processes by default, no third";
    EXPECT_FALSE(o.disturbed);
    EXPECT_EQ(o.run_secs.size(), 2u);
    EXPECT_DOUBLE_EQ(Median(o.run_secs),
                     *std::min_element(o.process_medians.begin(), o.process_medians.end()))
        << "the repeats kept are the lowest process's";
  }
  config.process_disagreement = -1;
  MeasuredBatch disagreed = measure(config);
  for (const MeasureOutcome& o : disagreed.outcomes) {
    ASSERT_TRUE(o.ok()) << o.error_msg;
    EXPECT_EQ(o.process_medians.size(), 3u) << "one more process where they disagree";
    EXPECT_TRUE(o.disturbed) << "and flagged when they still do";
  }
  config.processes_per_candidate = 1;
  MeasuredBatch once = measure(config);
  for (const MeasureOutcome& o : once.outcomes) {
    ASSERT_TRUE(o.ok()) << o.error_msg;
    EXPECT_EQ(o.process_medians.size(), 1u);
    EXPECT_FALSE(o.disturbed);
  }
}

// Each outcome says how busy the machine's other programs kept its cores while its batch ran.
// A spinning process that is not the measurer's own (a child nobody waits for until the batch
// is done) is such a program; the measurer's compilers and kernel processes are not. The child
// spins for the whole batch, so it holds at least a fair share of a core however loaded the
// machine is: the bound is far below that.
TEST(LocalMeasurerTest, OutcomesSayHowBusyOtherProgramsKeptTheCores) {
  MeasureConfig config;
  config.runner.repeat = 2;
  config.runner.min_repeat_ms = 20;
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  const PrimFunc good = SmallElementwise();
  MeasureRequest request = RequestOf(*m, good, {good, good});
  request.verify = false;
  const pid_t spinner = fork();
  ASSERT_GE(spinner, 0);
  if (spinner == 0) {
    const auto start = std::chrono::steady_clock::now();
    volatile uint64_t sink = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(60)) sink = sink + 1;
    _exit(0);
  }
  absl::StatusOr<MeasuredBatch> batch = m->Measure(request);
  kill(spinner, SIGKILL);
  waitpid(spinner, nullptr, 0);
  ASSERT_TRUE(batch.ok()) << batch.status();
  for (const MeasureOutcome& o : batch->outcomes) {
    ASSERT_TRUE(o.ok()) << o.error_msg;
    EXPECT_GE(o.others_busy_cores, 0.2) << "a process spun beside the batch";
  }
}

// Outcomes that do not depend on timing noise: the error kind, its message for build errors,
// whether it ran.
std::vector<std::string> Shapes(const MeasuredBatch& batch) {
  std::vector<std::string> shapes;
  for (const MeasureOutcome& o : batch.outcomes) {
    shapes.push_back(absl::StrCat(MeasureErrorName(o.error), o.ok() ? " ran" : " did not run",
                                  o.error == MeasureError::kBuild ? " " + o.error_msg : ""));
  }
  return shapes;
}

TEST(LocalMeasurerTest, OverlappedBuildsGiveTheSequentialOutcomesInOrder) {
  MeasureConfig config;
  config.runner.repeat = 2;
  config.runner.timeout_sec = 0.5;  // the unscheduled 1024^3 GMM runs for seconds
  config.cutoff_ratio = 0;
  config.build_parallelism = 2;
  config.overlap_builds = BuildOverlap::kOff;
  std::unique_ptr<LocalMeasurer> sequential = CpuMeasurer(config);
  config.overlap_builds = BuildOverlap::kOn;
  std::unique_ptr<LocalMeasurer> overlapped = CpuMeasurer(config);
  ASSERT_NE(sequential, nullptr);
  ASSERT_NE(overlapped, nullptr);
  EXPECT_FALSE(sequential->overlaps_builds());
  EXPECT_TRUE(overlapped->overlaps_builds());

  auto [good, bound] = testing_funcs::ElementwiseAndThreadBound(8);
  const PrimFunc big = *MakeWorkload("GMM", {{"M", 1024}, {"N", 1024}, {"K", 1024}}, "float32");
  // A build error and a run time-out in the middle of the batch.
  MeasureRequest request =
      RequestOf(*overlapped, good, {good, bound, good, big, good, bound, good});
  request.verify = false;
  absl::StatusOr<MeasuredBatch> a = sequential->Measure(request);
  absl::StatusOr<MeasuredBatch> b = overlapped->Measure(request);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(Shapes(*b), Shapes(*a));
  ASSERT_EQ(b->outcomes.size(), 7u);
  EXPECT_EQ(b->outcomes[1].error, MeasureError::kBuild);
  EXPECT_EQ(b->outcomes[3].error, MeasureError::kTimeout) << b->outcomes[3].error_msg;
  for (size_t i : {0, 2, 4, 6}) {
    EXPECT_TRUE(b->outcomes[i].ok()) << i << ": " << b->outcomes[i].error_msg;
    EXPECT_GT(b->outcomes[i].build_secs, 0) << i;
  }
  // The runs' wall times add up to at most the batch's run time.
  double run_total = 0;
  for (const MeasureOutcome& o : b->outcomes) run_total += o.run_wall_secs;
  EXPECT_LE(run_total, b->run_seconds + 1e-6);
}

TEST(LocalMeasurerTest, OverlappedCompileTimeOutsAreBuildErrorsNotAStall) {
  MeasureConfig config;
  config.build_timeout_sec = 0.001;
  config.overlap_builds = BuildOverlap::kOn;
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
  ASSERT_NE(m, nullptr);
  const PrimFunc gmm = SmallGmm();
  absl::StatusOr<MeasuredBatch> batch = m->Measure(RequestOf(*m, gmm, {gmm, gmm, gmm}));
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_EQ(batch->outcomes.size(), 3u);
  for (const MeasureOutcome& o : batch->outcomes) {
    EXPECT_EQ(o.error, MeasureError::kBuild);
    EXPECT_NE(o.error_msg.find("timed out after 0.001s"), std::string::npos) << o.error_msg;
  }
  EXPECT_LT(batch->build_seconds + batch->run_seconds, 10);
}

// With the defaults the compilers and the kernels each take every hardware thread, so no
// machine has cores to spare for overlapping them.
TEST(LocalMeasurerTest, BuildsDoNotOverlapRunsByDefault) {
  std::unique_ptr<LocalMeasurer> m = CpuMeasurer(MeasureConfig());
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->overlaps_builds());
}

// A cancel (a worker's revoked lease) stops the batch: no candidate starts after it, with builds
// overlapped or not, and the measurer answers kCancelled rather than partial outcomes.
TEST(LocalMeasurerTest, CancelStopsTheBatchAfterTheRunInProgress) {
  MeasureConfig config;
  config.runner.timeout_sec = 0.5;  // each run of the unscheduled 1024^3 GMM is cut off at 0.5 s
  config.cutoff_ratio = 0;
  config.build_parallelism = 1;
  const PrimFunc big = *MakeWorkload("GMM", {{"M", 1024}, {"N", 1024}, {"K", 1024}}, "float32");
  for (BuildOverlap overlap : {BuildOverlap::kOff, BuildOverlap::kOn}) {
    config.overlap_builds = overlap;
    std::unique_ptr<LocalMeasurer> m = CpuMeasurer(config);
    ASSERT_NE(m, nullptr);
    // Eight candidates: 8 builds and 8 runs of at least 0.5 s each, uncancelled.
    MeasureRequest request = RequestOf(*m, big, std::vector<PrimFunc>(8, big));
    request.verify = false;
    auto cancel = std::make_shared<std::atomic<bool>>(true);
    request.cancel = cancel;
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<MeasuredBatch> cancelled = m->Measure(request);
    EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled) << cancelled.status();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.5)
        << "cancelled before it started: nothing is built or run";

    cancel->store(false);
    std::thread canceller([cancel] {
      std::this_thread::sleep_for(std::chrono::milliseconds(700));
      cancel->store(true);
    });
    start = std::chrono::steady_clock::now();
    cancelled = m->Measure(request);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    canceller.join();
    EXPECT_EQ(cancelled.status().code(), absl::StatusCode::kCancelled) << cancelled.status();
    // The build or run in progress at 0.7 s ends (a build of the 1024^3 GMM takes ~0.2 s, a run
    // is cut off at 0.5 s); the rest, over 4 s, never starts.
    EXPECT_LT(seconds, 2.5) << "overlap " << static_cast<int>(overlap);
  }
}

}  // namespace
}  // namespace tessera
