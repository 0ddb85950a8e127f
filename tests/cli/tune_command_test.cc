// `tessera tune` (cli/tune_command.cc) run as a user runs it: a small GMM tuned into a fresh
// SQLite file with the JSON summary checked field by field, a second run that continues on the
// same database without measuring anything again, a model whose budget reaches every task
// (per-task trials, default latency and gain) or warns when it cannot, and one-line errors for
// bad input.
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "database/database.h"
#include "gtest/gtest.h"
#include "tests/cli/cli_testing.h"

namespace tessera {
namespace {

using cli_testing::kQuickRuns;
using cli_testing::kSmallGmm;
using cli_testing::OneLine;
using cli_testing::Output;
using cli_testing::RunTessera;
using cli_testing::RunTesseraJson;
using cli_testing::ScratchDir;
using cli_testing::TuneSmallGmm;

TEST(TuneCommandTest, TunesASmallGmmAndPrintsTheSummaryAsJson) {
  const std::string db = ScratchDir("tune_json") + "/tune.db";
  nlohmann::json summary = TuneSmallGmm(db, 8);
  ASSERT_TRUE(summary.is_object()) << summary;
  EXPECT_EQ(summary["trials"], 8);
  EXPECT_EQ(summary["target"].get<std::string>().rfind("cpu", 0), 0u) << summary["target"];
  ASSERT_EQ(summary["tasks"].size(), 1u);
  const nlohmann::json& task = summary["tasks"][0];
  EXPECT_EQ(task["name"], "GMM(B=1,M=16,N=16,K=16) float32");
  EXPECT_EQ(task["trials"], 8);
  // The default schedule leads the first batch and is checked: there is a verified best.
  ASSERT_TRUE(task["best_seconds"].is_number()) << task;
  EXPECT_GT(task["best_seconds"].get<double>(), 0);
  EXPECT_GT(task["gflops_per_second"].get<double>(), 0);
  EXPECT_TRUE(task["best_record"].is_number_integer()) << task;
  EXPECT_EQ(task["verified"], true);
  for (const char* kind : {"build_error", "run_error", "timeout", "wrong_output", "worker_lost"}) {
    EXPECT_TRUE(task["errors"][kind].is_number_integer()) << kind;
  }
  EXPECT_EQ(task["errors"]["wrong_output"], 0);
  for (const char* field : {"wall", "build", "run", "verify", "search", "cost_model", "overhead"}) {
    EXPECT_GE(summary["seconds"][field].get<double>(), 0) << field;
  }
  EXPECT_GT(summary["seconds"]["wall"].get<double>(), 0);
}

// The search never measures a program twice (the runoff does, on purpose: it is off here).
TEST(TuneCommandTest, ASecondRunContinuesWithoutMeasuringAnythingAgain) {
  const std::string db = ScratchDir("tune_again") + "/tune.db";
  ASSERT_EQ(TuneSmallGmm(db, 8, "--no-runoff")["trials"], 8);
  nlohmann::json again = RunTesseraJson(std::string("tune ") + kSmallGmm + " --db " + db +
                                        " --trials 4 --trials-per-iter 4 --threads 1 --seed 1 " +
                                        "--no-runoff --json " + kQuickRuns);
  EXPECT_EQ(again["trials"], 4);
  // Every stored record, failed ones too (topk lists a program once, so it cannot show a
  // program measured twice): 12 records of 12 programs.
  absl::StatusOr<std::unique_ptr<Database>> opened = OpenDatabase(db);
  ASSERT_TRUE(opened.ok()) << opened.status();
  absl::StatusOr<std::vector<TuningRecord>> records = (*opened)->AllRecords();
  ASSERT_TRUE(records.ok()) << records.status();
  std::set<std::string> traces;
  for (const TuningRecord& r : *records) traces.insert(r.trace_json);
  EXPECT_EQ(records->size(), 12u);
  EXPECT_EQ(traces.size(), records->size()) << "a program was measured twice";
}

// After the search the fastest record runs off against the default schedule's (tuner/runoff.h):
// the summary lists the rounds, and `best` returns the record the last one left the best (its
// winner, or an earlier round's: in CI a first round's tuned record at 1.30 ms, against its
// default at 1.56 ms, stayed the best after a second round timed the default at 1.45 ms).
TEST(TuneCommandTest, TheRunoffIsInTheSummaryAndBestReturnsItsWinner) {
  const std::string db = ScratchDir("tune_runoff") + "/tune.db";
  nlohmann::json summary = TuneSmallGmm(db, 8);
  ASSERT_EQ(summary["tasks"].size(), 1u) << summary;
  const nlohmann::json& rounds = summary["tasks"][0]["runoff"];
  ASSERT_TRUE(rounds.is_array()) << summary;
  EXPECT_FALSE(summary["tasks"][0].contains("runoff_error")) << summary;
  nlohmann::json best =
      RunTesseraJson(std::string("best ") + kSmallGmm + " --db " + db + " --json");
  if (rounds.empty()) return;  // the default was the fastest: nothing to run off
  for (const nlohmann::json& r : rounds) {
    EXPECT_GT(r["fastest_seconds"].get<double>(), 0) << r;
    EXPECT_GT(r["default_seconds"].get<double>(), 0) << r;
    EXPECT_LT(r["fastest_seconds_in_job"].get<double>(), r["default_seconds_in_job"].get<double>())
        << r;
    EXPECT_NE(r["fastest_record"], r["default_record"]) << r;
  }
  EXPECT_LE(rounds.size(), 3u) << summary;
  const nlohmann::json& last = rounds.back();
  ASSERT_TRUE(last["best"] == "tuned" || last["best"] == "default" || last["best"] == "other")
      << last;
  ASSERT_EQ(best["records"].size(), 1u) << best;
  if (last["best"] != "other") {
    EXPECT_EQ(last["best_record"], last["records"][last["best"] == "tuned" ? 0 : 1]) << last;
  }
  EXPECT_EQ(best["records"][0]["id"], last["best_record"]) << best << "\n" << summary;
}

// A model's tasks (docs/models.md), from the frontend's test data.
std::string Model(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/" + name;
}

// Issue 32: a model's budget reaches every task. cnn.onnx has 6 tasks (its five and the
// transpose of its input to channels-last); 12 trials with the
// default 64 per batch give each task a warm-up batch of 1 (its default schedule), then batches
// of 2. The summary says per task the trials, the default and best latencies and the gain.
TEST(TuneCommandTest, AModelsBudgetReachesEveryTaskAndTheSummarySaysTheGains) {
  const std::string db = ScratchDir("tune_model") + "/model.db";
  nlohmann::json summary =
      RunTesseraJson("tune " + Model("cnn.onnx") + " --db " + db +
                     " --trials 12 --threads 1 --no-runoff --json " + kQuickRuns);
  ASSERT_TRUE(summary.is_object()) << summary;
  EXPECT_EQ(summary["trials"], 12);
  EXPECT_EQ(summary["batch_sizes"]["warmup"], 1) << summary;
  EXPECT_EQ(summary["batch_sizes"]["later"], 2) << summary;
  ASSERT_TRUE(summary["warnings"].is_array()) << summary;
  EXPECT_TRUE(summary["warnings"].empty()) << summary["warnings"];
  ASSERT_EQ(summary["tasks"].size(), 6u) << summary;
  for (const nlohmann::json& task : summary["tasks"]) {
    EXPECT_GE(task["trials"].get<int>(), 1) << task;
    ASSERT_TRUE(task["default_seconds"].is_number()) << task;
    ASSERT_TRUE(task["best_seconds"].is_number()) << task;
    ASSERT_TRUE(task["gain"].is_number()) << task;
    EXPECT_DOUBLE_EQ(task["gain"].get<double>(),
                     task["default_seconds"].get<double>() / task["best_seconds"].get<double>())
        << task;
  }
  ASSERT_EQ(summary["models"].size(), 1u) << summary;
  const nlohmann::json& model = summary["models"][0];
  EXPECT_EQ(model["tasks_without_best"], 0) << model;
  EXPECT_TRUE(model["estimated_seconds"].is_number()) << model;
  EXPECT_TRUE(model["default_estimated_seconds"].is_number()) << model;
  EXPECT_GE(model["gain"].get<double>(), 1) << model;
}

// A budget below one trial per task is a warning that says the minimum, not an error: what it
// measures is kept, and the next run on the database continues.
TEST(TuneCommandTest, ABudgetBelowOneTrialPerTaskIsAWarningWithTheMinimum) {
  const std::string db = ScratchDir("tune_small_budget") + "/model.db";
  Output out = RunTessera("tune " + Model("cnn.onnx") + " --db " + db +
                          " --trials 3 --threads 1 --no-runoff " + kQuickRuns);
  ASSERT_EQ(out.exit_code, 0) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("warning: a budget of 3 trial(s) cannot measure each of the 6 "
                                 "tasks once: the minimum is 6"),
            std::string::npos)
      << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("): not measured"), std::string::npos) << out.stdout_text;
  EXPECT_NE(out.stdout_text.find("cnn.onnx: no estimate yet (3 task(s) without a valid "
                                 "candidate: "),
            std::string::npos)
      << out.stdout_text;
}

TEST(TuneCommandTest, BadInputIsAOneLineErrorAndANonzeroExit) {
  const std::string dir = ScratchDir("tune_errors");
  Output no_db = RunTessera(std::string("tune ") + kSmallGmm + " --trials 4");
  EXPECT_NE(no_db.exit_code, 0);
  EXPECT_NE(no_db.stdout_text.find("--db is required"), std::string::npos) << no_db.stdout_text;

  Output unknown = RunTessera("tune NOPE --db " + dir + "/a.db --trials 4");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_TRUE(OneLine(unknown.stdout_text)) << unknown.stdout_text;
  EXPECT_NE(unknown.stdout_text.find("tessera: error: unknown workload 'NOPE'"), std::string::npos)
      << unknown.stdout_text;

  Output strategy = RunTessera(std::string("tune ") + kSmallGmm + " --db " + dir +
                               "/b.db --trials 4 " + "--strategy annealing");
  EXPECT_EQ(strategy.exit_code, 1);
  EXPECT_NE(
      strategy.stdout_text.find("tessera: error: tune: --strategy: unknown strategy 'annealing'"),
      std::string::npos)
      << strategy.stdout_text;

  Output trials =
      RunTessera(std::string("tune ") + kSmallGmm + " --db " + dir + "/c.db --trials 0");
  EXPECT_NE(trials.exit_code, 0);
  EXPECT_NE(trials.stdout_text.find("trials"), std::string::npos) << trials.stdout_text;
}

TEST(TuneCommandTest, RuleParamsMakeTheDefaultRulesWithOtherParameters) {
  const std::string dir = ScratchDir("tune_rule_params");
  // A parameter every CPU MultiLevelTiling reads: the job tunes with it and stores its trials.
  nlohmann::json summary =
      RunTesseraJson(std::string("tune ") + kSmallGmm + " --db " + dir + "/ok.db --trials 4 " +
                     "--trials-per-iter 4 --threads 1 --json " + kQuickRuns +
                     " --rule-params '{\"MultiLevelTiling\": {\"max_innermost_factor\": 4}}'");
  ASSERT_TRUE(summary.is_object()) << summary;
  EXPECT_EQ(summary["trials"], 4);

  Output not_json = RunTessera(std::string("tune ") + kSmallGmm + " --db " + dir +
                               "/a.db --trials 4 --rule-params '{MultiLevelTiling'");
  EXPECT_EQ(not_json.exit_code, 1);
  EXPECT_TRUE(OneLine(not_json.stdout_text)) << not_json.stdout_text;
  EXPECT_NE(not_json.stdout_text.find("tune: --rule-params: not a JSON object"), std::string::npos)
      << not_json.stdout_text;

  Output unknown_rule = RunTessera(std::string("tune ") + kSmallGmm + " --db " + dir +
                                   "/b.db --trials 4 --rule-params '{\"MultiLevelTilling\": {}}'");
  EXPECT_EQ(unknown_rule.exit_code, 1);
  EXPECT_NE(unknown_rule.stdout_text.find("'MultiLevelTilling' is not a default rule on cpu"),
            std::string::npos)
      << unknown_rule.stdout_text;

  Output unknown_param =
      RunTessera(std::string("tune ") + kSmallGmm + " --db " + dir +
                 "/c.db --trials 4 --rule-params '{\"MultiLevelTiling\": {\"tile\": 1}}'");
  EXPECT_EQ(unknown_param.exit_code, 1);
  EXPECT_NE(unknown_param.stdout_text.find("unknown parameter 'tile'"), std::string::npos)
      << unknown_param.stdout_text;
}

TEST(TuneCommandTest, OverlapBuildsIsAutoOnOrOff) {
  const std::string dir = ScratchDir("tune_overlap");
  // Forced on: the batch is built and run as a pipeline and every trial is stored.
  nlohmann::json summary = RunTesseraJson(
      std::string("tune ") + kSmallGmm + " --db " + dir + "/on.db --trials 4 " +
      "--trials-per-iter 4 --threads 1 --build-threads 2 --overlap-builds on --json " + kQuickRuns);
  ASSERT_TRUE(summary.is_object()) << summary;
  EXPECT_EQ(summary["trials"], 4);
  EXPECT_EQ(summary["tasks"][0]["verified"], true);

  Output bad = RunTessera(std::string("tune ") + kSmallGmm + " --db " + dir +
                          "/bad.db --trials 4 --overlap-builds sometimes");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(OneLine(bad.stdout_text)) << bad.stdout_text;
  EXPECT_NE(bad.stdout_text.find("tune: --overlap-builds: expected auto, on or off, got "
                                 "'sometimes'"),
            std::string::npos)
      << bad.stdout_text;
}

}  // namespace
}  // namespace tessera
