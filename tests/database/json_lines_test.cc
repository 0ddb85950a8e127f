// Tests of database/json_lines.cc, on the in-memory database (the typed suite in
// database_test.cc runs export and import on every kind): one line per record, duplicates
// found by value (a trace re-indented or with its keys reordered is the same trace, and so is
// an earlier line of the same file), blank lines skipped, and errors that name the file.
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
    EXPECT_TRUE(j["workload"]["func"].is_object());
  }
  EXPECT_EQ(ExportJsonLines(NewMemoryDatabase().get(), path).value(), 0);
  EXPECT_TRUE(Lines(path).empty()) << "export replaces the file";
}

TEST(JsonLinesTest, TracesCompareAsJsonValuesNotAsText) {
  TempDir dir;
  const std::string path = dir.Path("records.jsonl");
  ASSERT_TRUE(ExportJsonLines(TwoRecords().get(), path).ok());
  // The stored records hold the same traces as indented text, the file's lines as compact
  // JSON; blank lines in the file are skipped.
  std::vector<std::string> lines = Lines(path);
  {
    std::ofstream out(path, std::ios::trunc);
    for (const std::string& line : lines) out << "\n  \n" << line << "\n";
  }
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  for (int loop : {1, 2}) {
    const std::string indented = json::parse(TileTrace(16, loop, 4)).dump(2);
    ASSERT_NE(indented, TileTrace(16, loop, 4));
    ASSERT_TRUE(db->CommitRecord(MakeRecord(w, CpuTarget(), indented, {3e-4})).ok());
  }
  ImportStats stats = ImportJsonLines(db.get(), path).value();
  EXPECT_EQ(stats.imported, 0);
  EXPECT_EQ(stats.duplicates, 2);
  EXPECT_EQ(db->NumRecords().value(), 2);
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
