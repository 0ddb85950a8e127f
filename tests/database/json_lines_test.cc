// Tests of database/json_lines.cc, on the in-memory database (the typed suite in
// database_test.cc runs export and import on every kind): one line per record, duplicates
// found by value (the same measurement of a trace re-indented or with its keys reordered is the
// same measurement, and so is an earlier line of the same file; another timing of the same
// trace is not), blank lines skipped, and errors that name the file.
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "database/database.h"
#include "gtest/gtest.h"
#include "tests/database/database_testing.h"

namespace tessera {
namespace {

using nlohmann::json;
using testing::CpuTarget;
using testing::MakeRecord;
using testing::SmallGmm;
using testing::TempDir;
using testing::TileTrace;

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A database with two records of GMM 16 on the CPU.
std::unique_ptr<Database> TwoRecords() {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  EXPECT_TRUE(db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {1e-4})).ok());
  EXPECT_TRUE(db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 2, 4), {2e-4})).ok());
  return db;
}

TEST(JsonLinesTest, ExportWritesOneObjectPerLine) {
  TempDir dir;
  const std::string path = dir.Path("out.jsonl");
  EXPECT_EQ(ExportJsonLines(TwoRecords().get(), path).value(), 2);
  std::vector<std::string> lines = Lines(path);
  ASSERT_EQ(lines.size(), 2u);
  for (const std::string& line : lines) {
    json j = json::parse(line);
    EXPECT_EQ(j["target"], CpuTarget());
    EXPECT_TRUE(j["workload_func"].is_object());
  }
  EXPECT_EQ(ExportJsonLines(NewMemoryDatabase().get(), path).value(), 0);
  EXPECT_TRUE(Lines(path).empty()) << "export replaces the file";
}

TEST(JsonLinesTest, TracesCompareAsJsonValuesNotAsText) {
  TempDir dir;
  const std::string path = dir.Path("records.jsonl");
  std::unique_ptr<Database> source = TwoRecords();
  ASSERT_TRUE(ExportJsonLines(source.get(), path).ok());
  // The stored records are the same measurements with their traces as indented text; blank
  // lines in the file are skipped.
  std::vector<std::string> lines = Lines(path);
  {
    std::ofstream out(path, std::ios::trunc);
    for (const std::string& line : lines) out << "\n  \n" << line << "\n";
  }
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  std::vector<TuningRecord> records = source->AllRecords().value();
  for (TuningRecord r : records) {
    const std::string indented = json::parse(r.trace_json).dump(2);
    ASSERT_NE(indented, r.trace_json);
    r.trace_json = indented;
    r.workload_id = w.id;
    ASSERT_TRUE(db->CommitRecord(r).ok());
  }
  ImportStats stats = ImportJsonLines(db.get(), path).value();
  EXPECT_EQ(stats.imported, 0);
  EXPECT_EQ(stats.duplicates, 2);
  EXPECT_EQ(db->NumRecords().value(), 2);
}

// The same program timed again (a runoff's re-measurement) is another measurement.
TEST(JsonLinesTest, AnotherTimingOfTheSameTraceIsNoDuplicate) {
  TempDir dir;
  const std::string path = dir.Path("records.jsonl");
  std::unique_ptr<Database> source = TwoRecords();
  ASSERT_TRUE(ExportJsonLines(source.get(), path).ok());
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  ASSERT_TRUE(db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {1e-4})).ok());
  ImportStats stats = ImportJsonLines(db.get(), path).value();
  EXPECT_EQ(stats.imported, 2) << "another timestamp: another measurement";
  EXPECT_EQ(stats.duplicates, 0);
}

TEST(JsonLinesTest, AnEarlierLineOfTheSameFileMakesADuplicate) {
  TempDir dir;
  const std::string path = dir.Path("twice.jsonl");
  ASSERT_TRUE(ExportJsonLines(TwoRecords().get(), path).ok());
  std::vector<std::string> lines = Lines(path);
  std::ofstream(path, std::ios::app) << lines[0] << "\n";
  std::unique_ptr<Database> db = NewMemoryDatabase();
  ImportStats stats = ImportJsonLines(db.get(), path).value();
  EXPECT_EQ(stats.imported, 2);
  EXPECT_EQ(stats.duplicates, 1);
  EXPECT_EQ(db->NumRecords().value(), 2);
}

TEST(JsonLinesTest, ErrorsNameTheFileAndTheLine) {
  TempDir dir;
  const std::string missing = dir.Path("missing.jsonl");
  absl::Status status = ImportJsonLines(NewMemoryDatabase().get(), missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "import '" + missing + "': cannot open the file");

  const std::string unwritable = dir.Path("no/such/dir/out.jsonl");
  status = ExportJsonLines(TwoRecords().get(), unwritable).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(status.message(), "export '" + unwritable + "': cannot open the file for writing");

  const std::string bad = dir.Path("bad.jsonl");
  std::ofstream(bad) << "[1, 2]\n";
  status = ImportJsonLines(NewMemoryDatabase().get(), bad).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), bad + ":1: expected a JSON object");
}

}  // namespace
}  // namespace tessera
