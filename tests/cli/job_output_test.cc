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

}  // namespace
}  // namespace cli
}  // namespace tessera
