#include "server/job_spec_convert.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/server/server_testing.h"

namespace tessera {
namespace {

TEST(JobSpecConvertTest, AJobSpecRoundTripsThroughASubmitJobRequest) {
  JobSpec spec = testing::TestJobSpec();
  spec.max_trials_per_task = 4;
  spec.num_trials_per_iter = 8;
  spec.strategy = "replay";
  spec.cost_model = "random";
  spec.task_scheduler = "round-robin";
  spec.runoff = false;
  spec.rule_params = RuleParamsFromText(R"({"MultiLevelTiling": {"max_innermost_factor": 4}})");
  v1::SubmitJobRequest request;
  request.set_model_name("kept.onnx");
  ToProto(spec, &request);
  EXPECT_EQ(request.model_name(), "kept.onnx") << "the model fields are left alone";
  EXPECT_EQ(request.max_trials(), spec.max_trials_global) << "the service's spelling";
  EXPECT_EQ(request.trials_per_iter(), 8);
  absl::StatusOr<JobSpec> back = JobSpecFromProto(request);
  ASSERT_TRUE(back.ok()) << back.status();
  // The stored JSON (server/job_store.h) holds every field a request carries.
  EXPECT_EQ(back->ToJson(), spec.ToJson());
  EXPECT_EQ(back->rule_params, spec.rule_params);
}

TEST(JobSpecConvertTest, UnsetFieldsKeepTheSettingsDefaults) {
  v1::SubmitJobRequest request;
  request.add_workloads("GMM");
  request.set_max_trials(16);
  absl::StatusOr<JobSpec> spec = JobSpecFromProto(request);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const TuningSettings defaults;
  EXPECT_EQ(spec->max_trials_global, 16);
  EXPECT_EQ(spec->max_trials_per_task, 0);
  EXPECT_EQ(spec->num_trials_per_iter, defaults.num_trials_per_iter);
  EXPECT_EQ(spec->strategy, defaults.strategy);
  EXPECT_EQ(spec->cost_model, defaults.cost_model);
  EXPECT_EQ(spec->task_scheduler, defaults.task_scheduler);
  EXPECT_TRUE(spec->verify);
  EXPECT_TRUE(spec->runoff) << "absent: on, as tune runs it";
  EXPECT_EQ(spec->rule_params, nlohmann::json::object());
}

TEST(JobSpecConvertTest, AnEmptyWorkloadAndVerifyBesideSkipVerifyAreNamed) {
  v1::SubmitJobRequest request;
  request.add_workloads("GMM");
  request.add_workloads("");
  EXPECT_EQ(JobSpecFromProto(request).status().message(), "workloads[1]: empty");
  request.clear_workloads();
  request.set_skip_verify(true);
  EXPECT_FALSE(JobSpecFromProto(request).value().verify) << "skip_verify is still read";
  request.set_verify(true);
  absl::StatusOr<JobSpec> both = JobSpecFromProto(request);
  EXPECT_EQ(both.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(both.status().message()).rfind("verify: ", 0), 0u) << both.status();
}

}  // namespace
}  // namespace tessera
