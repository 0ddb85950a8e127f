#include "proto/convert.h"

#include <gtest/gtest.h>

#include <string>

#include "database/record_json.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"

namespace tessera {
namespace {

using ::google::protobuf::util::MessageDifferencer;

Provenance SomeProvenance() {
  Provenance p;
  p.tessera_version = "0.9.0";
  p.compiler = "gcc 12.2.0 -O3 -march=native";
  p.device = "Some CPU";
  p.driver = "";
  p.worker_id = "worker-3";
  return p;
}

void ExpectSameProvenance(const Provenance& a, const Provenance& b) {
  EXPECT_EQ(ProvenanceToJson(a), ProvenanceToJson(b));  // every field, worker_id included
}

TEST(ProtoConvertTest, ProvenanceRoundTrips) {
  v1::Provenance message;
  ToProto(SomeProvenance(), &message);
  EXPECT_EQ(message.worker_id(), "worker-3");
  ExpectSameProvenance(FromProto(message), SomeProvenance());
}

TEST(ProtoConvertTest, ARecordRoundTripsWithItsHashAndMean) {
  TuningRecord r;
  r.id = 42;
  r.workload_id = 7;
  r.target = "cpu -cores=2";
  r.trace_json = "[]";
  r.run_secs = {1e-3, 3e-3};
  r.error = MeasureError::kNone;
  r.verified = true;
  r.timestamp = 1.7e9;
  r.provenance = SomeProvenance();
  r.job_id = "job-1";
  r.stage_secs = {0.5, 0.25, 0.125, 0.0625};
  r.retimes = 12;
  v1::Record message;
  ToProto(r, "abc123", &message);
  EXPECT_EQ(message.workload_hash(), "abc123");
  EXPECT_EQ(message.error_kind(), "") << "MeasureErrorName's spelling";
  EXPECT_DOUBLE_EQ(message.mean_seconds(), r.mean_secs());
  EXPECT_EQ(message.retimes_record_id(), 12);

  absl::StatusOr<TuningRecord> back = FromProto(message);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->workload_id, -1) << "a message names its workload by hash";
  EXPECT_EQ(back->run_secs, r.run_secs);
  ExpectSameProvenance(back->provenance, r.provenance);
  // Every field the message carries comes back.
  v1::Record again;
  ToProto(*back, "abc123", &again);
  EXPECT_TRUE(MessageDifferencer::Equals(again, message)) << again.DebugString();
}

TEST(ProtoConvertTest, AFailedRecordHasNoMeanAndAnUnknownErrorKindIsNamed) {
  TuningRecord r;
  r.error = MeasureError::kBuild;
  r.error_msg = "build: no";
  v1::Record message;
  ToProto(r, "h", &message);
  EXPECT_EQ(message.mean_seconds(), 0);
  EXPECT_FALSE(message.has_retimes_record_id());
  absl::StatusOr<TuningRecord> back = FromProto(message);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->error, MeasureError::kBuild);
  EXPECT_EQ(back->error_msg, "build: no");
  EXPECT_FALSE(back->is_retiming());

  message.set_error_kind("gremlins");
  absl::StatusOr<TuningRecord> bad = FromProto(message);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(bad.status().message()).rfind("error_kind: ", 0), 0u) << bad.status();
}

TEST(ProtoConvertTest, AnOutcomeRoundTripsThroughACandidateResult) {
  MeasureOutcome o;
  o.error = MeasureError::kNone;
  o.run_secs = {2e-3, 2.5e-3};
  o.process_medians = {2e-3, 2.1e-3};
  o.disturbed = true;
  o.others_busy_cores = 0.75;
  o.verified = true;
  o.build_secs = 1.5;
  o.run_wall_secs = 0.75;
  o.verify_secs = 0.25;
  v1::CandidateResult message;
  ToProto(o, &message);
  EXPECT_TRUE(message.candidate_id().empty()) << "the worker's to set";
  absl::StatusOr<MeasureOutcome> back = FromProto(message);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->run_secs, o.run_secs);
  EXPECT_EQ(back->process_medians, o.process_medians);
  EXPECT_TRUE(back->disturbed);
  EXPECT_DOUBLE_EQ(back->others_busy_cores, 0.75);
  EXPECT_FALSE(back->provenance.has_value()) << "a result carries no provenance";
  v1::CandidateResult again;
  ToProto(*back, &again);
  EXPECT_TRUE(MessageDifferencer::Equals(again, message)) << again.DebugString();

  // A wrong output keeps its times and is never verified.
  o.error = MeasureError::kWrongOutput;
  o.error_msg = "check: 3 of 64 outputs differ";
  message.Clear();
  ToProto(o, &message);
  back = FromProto(message);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->error, MeasureError::kWrongOutput);
  EXPECT_EQ(back->error_msg, o.error_msg);
  EXPECT_EQ(back->run_secs, o.run_secs);
  EXPECT_FALSE(back->verified);
}

TEST(ProtoConvertTest, AResultKeepsOnlyWhatItsKindAllows) {
  v1::CandidateResult message;
  message.set_error_kind("build_error");
  message.add_run_seconds(1e-3);
  message.set_verified(true);
  absl::StatusOr<MeasureOutcome> o = FromProto(message);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->error, MeasureError::kBuild);
  EXPECT_TRUE(o->run_secs.empty());
  EXPECT_FALSE(o->verified);

  message.set_error_kind("gremlins");
  EXPECT_EQ(std::string(FromProto(message).status().message()).rfind("error_kind: ", 0), 0u);
}

TEST(ProtoConvertTest, RunnerSettingsRoundTripAndUnsetOnesTakeTheDefaults) {
  v1::RunnerSettings message;
  ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(
      "warmup: 2 number: 3 repeat: 5 min_repeat_ms: 20 enable_cpu_cache_flush: true "
      "timeout: 12 build_timeout: 45",
      &message));
  const MeasureConfig back = FromProto(message);
  v1::RunnerSettings again;
  ToProto(back.runner, back.build_timeout_sec, &again);
  EXPECT_TRUE(MessageDifferencer::Equals(again, message)) << again.DebugString();

  const MeasureConfig unset = FromProto(v1::RunnerSettings());
  const MeasureConfig defaults;
  EXPECT_EQ(unset.runner.warmup, defaults.runner.warmup);
  EXPECT_EQ(unset.runner.number, defaults.runner.number);
  EXPECT_EQ(unset.runner.repeat, defaults.runner.repeat);
  EXPECT_EQ(unset.runner.timeout_sec, defaults.runner.timeout_sec);
  EXPECT_EQ(unset.build_timeout_sec, defaults.build_timeout_sec);
}

TEST(ProtoConvertTest, RunnerSettingsAreClampedAsAWorkerTakesThem) {
  v1::RunnerSettings message;
  message.set_repeat(1000000);
  message.set_min_repeat_ms(-5);
  message.set_timeout(1e9);
  message.set_build_timeout(1e9);
  const MeasureConfig c = FromProto(message);
  EXPECT_EQ(c.runner.repeat, 100);
  EXPECT_EQ(c.runner.min_repeat_ms, 0);
  EXPECT_EQ(c.runner.timeout_sec, 3600);
  EXPECT_EQ(c.build_timeout_sec, 3600);
}

}  // namespace
}  // namespace tessera
