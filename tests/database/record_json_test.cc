// The JSON encoding of tuning-record fields (database/record_json.h), shared by the SQLite rows
// and the JSON-lines files: each field's exact JSON (docs/formats.md), round trips, and
// decoder errors that name the field and the element.
#include "database/record_json.h"

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ir/serialize_json.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"
#include "tests/database/database_testing.h"

namespace tessera {
namespace {

using nlohmann::json;
using testing::CpuTarget;
using testing::MakeFailedRecord;
using testing::MakeRecord;
using testing::SmallGmm;
using testing::TileTrace;

Workload GmmWorkload(int64_t n) {
  Workload w;
  w.func = SmallGmm(n);
  w.hash = StructuralHashHex(w.func);
  return w;
}

void ExpectInvalid(const absl::Status& status, const std::string& message) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(status.message(), message);
}

TEST(RecordJsonTest, RunSecsAreAPlainArrayOfNumbers) {
  EXPECT_EQ(RunSecsToJson({0.5, 0.25}).dump(), "[0.5,0.25]");
  absl::StatusOr<std::vector<double>> back = RunSecsFromJson(json::parse("[0.5, 2, 1e-6]"));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, (std::vector<double>{0.5, 2.0, 1e-6}));
  EXPECT_TRUE(RunSecsFromJson(json::array())->empty());
}

TEST(RecordJsonTest, RunSecsErrorsNameTheElement) {
  ExpectInvalid(RunSecsFromJson(json::parse(R"({"a": 1})")).status(),
                "run_secs: expected an array of numbers");
  ExpectInvalid(RunSecsFromJson(json::parse(R"([0.1, "fast"])")).status(),
                "run_secs[1]: expected a number");
}

TEST(RecordJsonTest, ArgInfosUseMetaSchedulesTensorLayout) {
  std::vector<ArgInfo> args = {{DataType::Float32(), {16, 32}}, {DataType::Float32(), {32}}};
  EXPECT_EQ(ArgInfosToJson(args).dump(),
            R"([["TENSOR","float32",[16,32]],["TENSOR","float32",[32]]])");
  absl::StatusOr<std::vector<ArgInfo>> back = ArgInfosFromJson(ArgInfosToJson(args));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].dtype, DataType::Float32());
  EXPECT_EQ((*back)[0].shape, (std::vector<int64_t>{16, 32}));
  EXPECT_EQ((*back)[1].shape, (std::vector<int64_t>{32}));
}

TEST(RecordJsonTest, ArgInfosErrorsNameTheEntryAndItsPart) {
  ExpectInvalid(ArgInfosFromJson(json::parse("{}")).status(), "args: expected an array");
  ExpectInvalid(ArgInfosFromJson(json::parse(R"([["TENSOR", "float32", [1]], ["BUF"]])")).status(),
                R"(args[1]: expected ["TENSOR", dtype, shape])");
  ExpectInvalid(ArgInfosFromJson(json::parse(R"([["TENSOR", 32, [1]]])")).status(),
                "args[0][1]: expected a dtype");
  ExpectInvalid(ArgInfosFromJson(json::parse(R"([["TENSOR", "float32", [4, 2.5]]])")).status(),
                "args[0][2]: expected an array of integers");
  ExpectInvalid(ArgInfosFromJson(json::parse(R"([["TENSOR", "float32", 4]])")).status(),
                "args[0][2]: expected an array of integers");
  absl::Status bad_dtype = ArgInfosFromJson(json::parse(R"([["TENSOR", "float7", [4]]])")).status();
  EXPECT_EQ(bad_dtype.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_dtype.message().rfind("args[0][1]: ", 0), 0u) << bad_dtype;
}

TEST(RecordJsonTest, ProvenanceRoundTripsAndMissingKeysReadAsEmpty) {
  Provenance p{"0.3.0", "gcc 12.2.0 -O3", "AMD EPYC", "", "worker-7"};
  json j = ProvenanceToJson(p);
  EXPECT_EQ(j, json::parse(R"({"tessera_version": "0.3.0", "compiler": "gcc 12.2.0 -O3",
                               "device": "AMD EPYC", "driver": "", "worker_id": "worker-7"})"));
  absl::StatusOr<Provenance> back = ProvenanceFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tessera_version, "0.3.0");
  EXPECT_EQ(back->compiler, "gcc 12.2.0 -O3");
  EXPECT_EQ(back->device, "AMD EPYC");
  EXPECT_EQ(back->worker_id, "worker-7");

  absl::StatusOr<Provenance> partial = ProvenanceFromJson(json::parse(R"({"device": "GPU"})"));
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(partial->device, "GPU");
  EXPECT_EQ(partial->compiler, "");
  EXPECT_EQ(partial->worker_id, "");
}

TEST(RecordJsonTest, ProvenanceErrorsNameTheKey) {
  ExpectInvalid(ProvenanceFromJson(json::parse("[]")).status(), "provenance: expected an object");
  ExpectInvalid(ProvenanceFromJson(json::parse(R"({"driver": 13})")).status(),
                "provenance: driver: expected a string");
}

TEST(RecordJsonTest, StageSecondsRoundTripAndMissingKeysReadAsZero) {
  StageSeconds stages{0.5, 0.25, 0.125, 0.0625};
  json j = StageSecondsToJson(stages);
  EXPECT_EQ(j, json::parse(R"({"build": 0.5, "run": 0.25, "verify": 0.125, "search": 0.0625})"));
  absl::StatusOr<StageSeconds> back = StageSecondsFromJson(j);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->build, 0.5);
  EXPECT_EQ(back->run, 0.25);
  EXPECT_EQ(back->verify, 0.125);
  EXPECT_EQ(back->search, 0.0625);
  EXPECT_EQ(back->total(), 0.9375);

  absl::StatusOr<StageSeconds> partial = StageSecondsFromJson(json::parse(R"({"run": 2})"));
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(partial->run, 2);
  EXPECT_EQ(partial->build, 0);
  EXPECT_EQ(partial->search, 0);
  ExpectInvalid(StageSecondsFromJson(json::parse("[1]")).status(),
                "stage_secs: expected an object");
  ExpectInvalid(StageSecondsFromJson(json::parse(R"({"verify": "1s"})")).status(),
                "stage_secs.verify: expected a number");
}

TEST(RecordJsonTest, LegacyMessagesGiveTheirErrorKindByPrefix) {
  EXPECT_EQ(ErrorKindOfLegacyMessage(""), MeasureError::kNone);
  EXPECT_EQ(ErrorKindOfLegacyMessage("build: gcc exited with 1"), MeasureError::kBuild);
  EXPECT_EQ(ErrorKindOfLegacyMessage("run: timed out after 2s"), MeasureError::kTimeout);
  EXPECT_EQ(ErrorKindOfLegacyMessage("run: kernel crashed: SIGSEGV"), MeasureError::kRun);
  EXPECT_EQ(ErrorKindOfLegacyMessage("something else"), MeasureError::kRun);
}

TEST(RecordJsonTest, ValidateRecordAcceptsRealRecordsAndNamesTheBadField) {
  Workload w = GmmWorkload(16);
  TuningRecord good = MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {1e-4, 2e-4});
  EXPECT_TRUE(ValidateRecord(good).ok()) << ValidateRecord(good);
  EXPECT_TRUE(
      ValidateRecord(MakeFailedRecord(w, CpuTarget(), TileTrace(16, 2, 4), "build: x")).ok());

  TuningRecord r = good;
  r.target = "";
  ExpectInvalid(ValidateRecord(r), "target: empty");

  r = good;
  r.run_secs = {1e-4, -1};
  ExpectInvalid(ValidateRecord(r), "run_secs[1]: expected a finite time >= 0, got -1");
  r.run_secs = {std::numeric_limits<double>::quiet_NaN()};
  EXPECT_EQ(ValidateRecord(r).message().rfind("run_secs[0]: expected a finite time", 0), 0u);

  r = good;
  r.timestamp = std::numeric_limits<double>::infinity();
  ExpectInvalid(ValidateRecord(r), "timestamp: not finite");

  r = good;
  r.stage_secs.search = -0.5;
  ExpectInvalid(ValidateRecord(r), "stage_secs.search: expected a finite time >= 0, got -0.5");

  r = good;
  r.error = MeasureError::kTimeout;
  r.error_msg = "";
  ExpectInvalid(ValidateRecord(r), "error: a timeout record needs a message");

  r = good;
  r.trace_json = "not json";
  absl::Status bad_trace = ValidateRecord(r);
  EXPECT_EQ(bad_trace.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad_trace.message().rfind("trace: ", 0), 0u) << bad_trace;
}

TEST(RecordJsonTest, JsonLineRoundTripsEveryField) {
  Workload w = GmmWorkload(16);
  TuningRecord record = MakeRecord(w, CpuTarget(), TileTrace(16, 3, 2), {3e-4, 1e-4});
  record.id = 12;
  record.verified = true;
  record.job_id = "job-42";
  record.retimes = 7;
  json line = RecordToJsonLine(w, record);

  // The service's Record names (proto/tessera.proto), and what Record leaves out.
  EXPECT_EQ(line["id"], 12);
  EXPECT_EQ(line["workload_hash"], w.hash);
  EXPECT_TRUE(line["workload_func"].is_object());
  EXPECT_EQ(line["trace_json"], record.trace_json) << "the trace's text, as Record carries it";
  EXPECT_EQ(line["run_seconds"], json::parse("[3e-4, 1e-4]"));
  EXPECT_EQ(line["error_kind"], "");
  EXPECT_EQ(line["error_msg"], "");
  EXPECT_EQ(line["job_id"], "job-42");
  EXPECT_DOUBLE_EQ(line["mean_seconds"].get<double>(), 2e-4);
  EXPECT_EQ(line["stage_seconds"]["build"], record.stage_secs.build);
  EXPECT_EQ(line["retimes_record_id"], 7);
  for (const char* legacy : {"workload", "trace", "run_secs", "error", "stage_secs"}) {
    EXPECT_FALSE(line.contains(legacy)) << legacy;
  }

  // Through text, as a JSON-lines file carries it.
  absl::StatusOr<JsonLineRecord> back = RecordFromJsonLine(json::parse(line.dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(StructuralEqual(back->func, w.func));
  EXPECT_EQ(back->record.id, 12) << "the id of the database that wrote the line";
  EXPECT_EQ(back->record.retimes, 7);
  EXPECT_EQ(back->record.workload_id, -1);
  EXPECT_EQ(back->record.trace_json, record.trace_json) << "the very text";
  EXPECT_EQ(back->record.target, record.target);
  EXPECT_EQ(back->record.run_secs, record.run_secs);
  EXPECT_EQ(back->record.error, MeasureError::kNone);
  EXPECT_EQ(back->record.args.size(), record.args.size());
  EXPECT_EQ(back->record.timestamp, record.timestamp);
  EXPECT_EQ(back->record.provenance.compiler, record.provenance.compiler);
  EXPECT_TRUE(back->record.verified);
  EXPECT_EQ(back->record.job_id, "job-42");
  EXPECT_EQ(back->record.stage_secs.build, record.stage_secs.build);
  EXPECT_EQ(back->record.stage_secs.run, record.stage_secs.run);
  EXPECT_EQ(back->record.stage_secs.verify, record.stage_secs.verify);
  EXPECT_EQ(back->record.stage_secs.search, record.stage_secs.search);
  // A measurement of its own carries no link at all.
  record.retimes = -1;
  EXPECT_FALSE(RecordToJsonLine(w, record).contains("retimes_record_id"));
  EXPECT_EQ(RecordFromJsonLine(RecordToJsonLine(w, record))->record.retimes, -1);
}

// Files written before the names followed Record still import.
TEST(RecordJsonTest, JsonLineWithTheOldNamesIsRead) {
  Workload w = GmmWorkload(16);
  const TuningRecord record =
      MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 8), "build: cc exited with 1");
  const json legacy = {{"workload", {{"hash", w.hash}, {"func", ToJson(w.func)}}},
                       {"target", record.target},
                       {"trace", json::parse(record.trace_json)},
                       {"run_secs", json::array()},
                       {"error", record.error_msg},
                       {"args", ArgInfosToJson(record.args)},
                       {"timestamp", record.timestamp},
                       {"provenance", ProvenanceToJson(record.provenance)},
                       {"verified", false},
                       {"stage_secs", {{"build", 0.5}}}};
  absl::StatusOr<JsonLineRecord> back = RecordFromJsonLine(legacy);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(StructuralEqual(back->func, w.func));
  EXPECT_EQ(json::parse(back->record.trace_json), json::parse(record.trace_json));
  EXPECT_EQ(back->record.error, MeasureError::kBuild);
  EXPECT_EQ(back->record.error_msg, "build: cc exited with 1");
  EXPECT_EQ(back->record.stage_secs.build, 0.5);
  EXPECT_EQ(back->record.id, -1);
  EXPECT_EQ(back->record.retimes, -1);
}

TEST(RecordJsonTest, JsonLineOfAFailedRecordKeepsItsKind) {
  Workload w = GmmWorkload(16);
  TuningRecord failed = MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 8), "run: boom");
  failed.error = MeasureError::kWrongOutput;
  json line = RecordToJsonLine(w, failed);
  EXPECT_EQ(line["error_kind"], "wrong_output");
  EXPECT_EQ(line["mean_seconds"], 0.0) << "as Record: 0 when failed";
  absl::StatusOr<JsonLineRecord> back = RecordFromJsonLine(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->record.error, MeasureError::kWrongOutput);
  EXPECT_EQ(back->record.error_msg, "run: boom");
}

TEST(RecordJsonTest, JsonLineWithoutErrorKindTakesItFromTheLegacyMessage) {
  Workload w = GmmWorkload(16);
  json line = RecordToJsonLine(
      w, MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 8), "run: timed out after 1s"));
  line.erase("error_kind");
  line.erase("job_id");
  line.erase("stage_seconds");
  line.erase("id");
  absl::StatusOr<JsonLineRecord> back = RecordFromJsonLine(line);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->record.error, MeasureError::kTimeout);
  EXPECT_EQ(back->record.job_id, "");
  EXPECT_EQ(back->record.stage_secs.total(), 0);
}

TEST(RecordJsonTest, JsonLineErrorsNameTheField) {
  Workload w = GmmWorkload(16);
  const json good = RecordToJsonLine(w, MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {1e-4}));

  ExpectInvalid(RecordFromJsonLine(json::parse("[1]")).status(), "expected a JSON object");
  json j = good;
  j.erase("workload_func");
  ExpectInvalid(RecordFromJsonLine(j).status(), "workload_func: missing");
  j = good;
  j.erase("target");
  ExpectInvalid(RecordFromJsonLine(j).status(), "target: missing");
  j = good;
  j["target"] = 7;
  ExpectInvalid(RecordFromJsonLine(j).status(), "target: expected a string");
  j = good;
  j.erase("trace_json");
  ExpectInvalid(RecordFromJsonLine(j).status(), "trace_json: missing");
  j = good;
  j["trace_json"] = "not json";
  absl::Status trace = RecordFromJsonLine(j).status();
  EXPECT_EQ(trace.message().rfind("trace_json: ", 0), 0u) << trace;
  j = good;
  j["run_seconds"] = json::array({1e-4, nullptr});
  ExpectInvalid(RecordFromJsonLine(j).status(), "run_seconds[1]: expected a number");
  j = good;
  j["timestamp"] = "yesterday";
  ExpectInvalid(RecordFromJsonLine(j).status(), "timestamp: expected a number");
  j = good;
  j["verified"] = 1;
  ExpectInvalid(RecordFromJsonLine(j).status(), "verified: expected true or false");
  j = good;
  j["id"] = 0;
  ExpectInvalid(RecordFromJsonLine(j).status(), "id: expected an integer >= 1");
  j = good;
  j["retimes_record_id"] = "3";
  ExpectInvalid(RecordFromJsonLine(j).status(), "retimes_record_id: expected an integer >= 0");
  j = good;
  j["error_kind"] = "melted";
  absl::Status kind = RecordFromJsonLine(j).status();
  EXPECT_EQ(kind.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(kind.message().rfind("error_kind: ", 0), 0u) << kind;
  j = good;
  j["run_seconds"] = json::array({-2.0});
  ExpectInvalid(RecordFromJsonLine(j).status(),
                "run_seconds[0]: expected a finite time >= 0, got -2");
  j = good;
  j["error_kind"] = "timeout";
  ExpectInvalid(RecordFromJsonLine(j).status(), "error_msg: a timeout record needs a message");
}

// An import checks each line as strictly as SubmitJob checks a workload, and names the field.
TEST(RecordJsonTest, ImportChecksRefuseWhatNoTesseraWrote) {
  Workload w = GmmWorkload(16);
  const TuningRecord record = MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {1e-4});
  const double now = record.timestamp + 3600;
  auto check = [&](const json& line) {
    absl::StatusOr<JsonLineRecord> entry = RecordFromJsonLine(line);
    return entry.ok() ? CheckImportedRecord(*entry, now) : entry.status();
  };
  auto expect_refused = [&](const json& line, const std::string& prefix) {
    absl::Status s = check(line);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << prefix;
    EXPECT_EQ(s.message().rfind(prefix, 0), 0u) << "expected \"" << prefix << "...\", got " << s;
  };
  const json good = RecordToJsonLine(w, record);
  EXPECT_TRUE(check(good).ok()) << check(good);

  // A workload whose buffer shapes contradict its loops: A of 1x8x16 read over 16 rows.
  std::string func_text = good["workload_func"].dump();
  const std::string shape = "[1,16,16]";
  ASSERT_NE(func_text.find(shape), std::string::npos) << func_text;
  func_text.replace(func_text.find(shape), shape.size(), "[1,8,16]");
  json j = good;
  j["workload_func"] = json::parse(func_text);
  j.erase("args");
  expect_refused(j, "workload_func: verify ");
  EXPECT_NE(check(j).message().find("outside its extent 8"), std::string::npos) << check(j);

  j = good;
  j["timestamp"] = 170000000.0;  // 1975
  expect_refused(j, "timestamp: 170000000 (1975-05-22) is before 2020-01-01");
  j = good;
  j["timestamp"] = now + 3 * 86400;
  expect_refused(j, "timestamp: ");
  j = good;
  j.erase("timestamp");
  expect_refused(j, "timestamp: 0 (1970-01-01) is before 2020-01-01");

  j = good;
  j["provenance"]["device"] = std::string(5000, 'x');
  expect_refused(j, "provenance.device: 5000 bytes, more than 1024");
  j = good;
  j["provenance"]["worker_id"] = "worker-1\nINFO forged log line";
  expect_refused(j, "provenance.worker_id: not printable UTF-8 text");
  j = good;
  j["provenance"]["tessera_version"] = "0.1.0\u001b[2J";  // a terminal escape
  expect_refused(j, "provenance.tessera_version: not printable UTF-8 text");
  j = good;
  j["job_id"] = std::string(2000, 'j');
  expect_refused(j, "job_id: 2000 bytes");

  j = good;
  j["args"][0][2] = json::array({1, 4, 4});
  expect_refused(j, "args: do not match the parameters of workload_func");
  j = good;
  j["target"] = "tpu -cores=3";
  expect_refused(j, "target: ");
  j = good;
  std::string trace = record.trace_json;  // a trace of another function: no block "D" here
  ASSERT_NE(trace.find("\"C\""), std::string::npos) << trace;
  trace.replace(trace.find("\"C\""), 3, "\"D\"");
  j["trace_json"] = trace;
  expect_refused(j, "trace_json: does not replay on workload_func: ");
  j = good;
  j["id"] = 3;
  j["retimes_record_id"] = 5;
  expect_refused(j, "retimes_record_id: 5 is not an earlier record than id 3");
}

}  // namespace
}  // namespace tessera
