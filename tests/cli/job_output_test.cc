// Tests of cli/job_output.cc called in process: job states by name and job messages as JSON
// with every field (the form `status --json` and `jobs --json` print).
#include "cli/job_output.h"

#include <nlohmann/json.hpp>
#include <string>

#include "gtest/gtest.h"

namespace tessera {
namespace cli {
namespace {

TEST(JobOutputTest, StatesHaveLowercaseNames) {
  EXPECT_EQ(JobStateName(v1::JOB_QUEUED), "queued");
  EXPECT_EQ(JobStateName(v1::JOB_RUNNING), "running");
  EXPECT_EQ(JobStateName(v1::JOB_SUCCEEDED), "succeeded");
  EXPECT_EQ(JobStateName(v1::JOB_FAILED), "failed");
  EXPECT_EQ(JobStateName(v1::JOB_CANCELLED), "cancelled");
  EXPECT_EQ(JobStateName(v1::JOB_STATE_UNSPECIFIED), "unknown");
}

TEST(JobOutputTest, ToJsonKeepsProtoFieldNamesAndDefaultFields) {
  v1::JobStatus job;
  job.set_job_id("j1");
  job.set_state(v1::JOB_RUNNING);
  job.set_max_trials(64);
  const std::string text = ToJson(job);
  EXPECT_NE(text.back(), '\n');
  nlohmann::json parsed = nlohmann::json::parse(text);
  EXPECT_EQ(parsed["job_id"], "j1");
  EXPECT_EQ(parsed["state"], "JOB_RUNNING");
  EXPECT_EQ(parsed["max_trials"], 64);
  EXPECT_EQ(parsed["trials"], 0);  // a default field is printed too
}

// The status says which record `best` returns, how many of the job's records are its runoff's
// re-measurements rather than trials, what the runoff did and that it changed the best.
TEST(JobOutputTest, StatusTextSaysWhatTheRunoffDidToTheBest) {
  v1::JobStatus job;
  job.set_job_id("job-2");
  job.set_state(v1::JOB_SUCCEEDED);
  job.set_max_trials(16);
  job.set_trials(16);
  job.set_runoff_records(2);
  v1::TaskStatus* t = job.add_tasks();
  t->set_name("GMM(B=1,M=32,N=32,K=32)");
  t->set_trials(16);
  t->set_has_best(true);
  t->set_best_seconds(2.4e-4);
  t->set_best_record_id(18);
  t->set_best_job_id("job-2");
  t->set_runoff_records(2);
  t->set_best_changed_by_runoff(true);
  t->set_best_record_id_before_runoff(9);
  t->set_runoff("record 9 (0.103 ms in the job) against the default schedule's record 1 (0.25 ms)");
  const std::string text = JobStatusText(job);
  EXPECT_NE(text.find("job job-2: succeeded, 16/16 trials"), std::string::npos) << text;
  EXPECT_NE(text.find("records: 16 trials and 2 re-measurements by the runoff"), std::string::npos)
      << text;
  EXPECT_NE(text.find("task 0: best is record 18\n"), std::string::npos) << text;
  EXPECT_NE(text.find("task 0: runoff (2 re-measurements):\n  record 9 (0.103 ms in the job)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("task 0: the runoff changed the best: record 9 before, record 18 now"),
            std::string::npos)
      << text;
  // Another job's record is named as such; a job without a runoff says nothing of one.
  t->set_best_job_id("job-1");
  t->set_runoff_records(0);
  t->set_runoff("");
  t->set_best_changed_by_runoff(false);
  job.set_runoff_records(0);
  const std::string plain = JobStatusText(job);
  EXPECT_NE(plain.find("task 0: best is record 18 (of job job-1)"), std::string::npos) << plain;
  EXPECT_EQ(plain.find("runoff"), std::string::npos) << plain;
}

// Per task the default schedule's time and the gain over it; the job's warnings below the table.
TEST(JobOutputTest, StatusTextShowsTheDefaultTheGainAndTheWarnings) {
  v1::JobStatus job;
  job.set_job_id("job-3");
  job.set_state(v1::JOB_SUCCEEDED);
  v1::TaskStatus* t = job.add_tasks();
  t->set_name("fused_softmax_7");
  t->set_trials(8);
  t->set_has_best(true);
  t->set_best_seconds(1e-5);
  t->set_has_default(true);
  t->set_default_seconds(2.5e-5);
  t->set_gain(2.5);
  v1::TaskStatus* unmeasured = job.add_tasks();
  unmeasured->set_name("fused_mat_mul_8");
  job.add_warnings("task 1 (fused_mat_mul_8): not measured");
  const std::string text = JobStatusText(job);
  EXPECT_NE(text.find("default"), std::string::npos) << text;
  EXPECT_NE(text.find("25.00 us"), std::string::npos) << text;
  EXPECT_NE(text.find("2.50x"), std::string::npos) << text;
  EXPECT_NE(text.find("warning: task 1 (fused_mat_mul_8): not measured\n"), std::string::npos)
      << text;
}

// A model job's status ends its table with the model's estimate, in the words `tune MODEL`
// uses; without a best for every task it names those left.
TEST(JobOutputTest, StatusTextOfAModelJobGivesItsEstimatedLatency) {
  v1::JobStatus job;
  job.set_job_id("job-3");
  job.set_model("cnn.onnx");
  for (const char* name : {"fused_conv_0", "fused_gemm_1"}) {
    v1::TaskStatus* t = job.add_tasks();
    t->set_name(name);
    t->set_has_best(std::string(name) == "fused_conv_0");
  }
  EXPECT_NE(JobStatusText(job).find(
                "cnn.onnx: no estimate yet (1 task(s) without a valid candidate: fused_gemm_1)"),
            std::string::npos)
      << JobStatusText(job);
  job.mutable_tasks(1)->set_has_best(true);
  job.set_estimated_latency_seconds(1.5e-5);
  job.set_default_latency_seconds(3e-5);
  EXPECT_NE(JobStatusText(job).find("cnn.onnx: estimated latency 15.00 us (sum of weight x best "
                                    "over its tasks); with the default schedules 30.00 us: gain "
                                    "2.00x"),
            std::string::npos)
      << JobStatusText(job);
}

}  // namespace
}  // namespace cli
}  // namespace tessera
