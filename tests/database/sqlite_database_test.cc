// What only the SQLite database has: a file that persists, a schema version, errors for files
// that are not (tessera) databases, hash collisions stored side by side, consistency after the
// writer is killed, and readers in another process while a writer commits.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "database/database.h"
#include "gtest/gtest.h"
#include "ir/serialize.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"
#include "tests/database/database_testing.h"

namespace tessera {
namespace {

using ::tessera::testing::CpuTarget;
using ::tessera::testing::ExpectSameRecord;
using ::tessera::testing::ExpectSchemaThreeMigratesInPlace;
using ::tessera::testing::ExpectSchemaTwoMigratesInPlace;
using ::tessera::testing::MakeFailedRecord;
using ::tessera::testing::MakeRecord;
using ::tessera::testing::RenamedGmm;
using ::tessera::testing::Sm80Target;
using ::tessera::testing::SmallGmm;
using ::tessera::testing::TempDir;
using ::tessera::testing::TileTrace;

// Runs one SQL script on the file directly, bypassing the Database class.
void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
  sqlite3_free(error);
  sqlite3_close(db);
}

// The integer that `sql` selects, read from the file directly.
int64_t RawQueryInt(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sql;
  int64_t value = -1;
  if (sqlite3_step(stmt) == SQLITE_ROW) value = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

// Starts `body` in a child process that exits with its return value, never returning into
// the test framework.
pid_t ForkChild(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

// Record number `i` of the writer processes: its fields are a function of i (timestamp = i),
// so a reader can check each record it sees is whole. Every fifth one failed, with an error
// message long enough to span several database pages.
TuningRecord NumberedRecord(const Workload& w, const std::vector<std::string>& traces, int i) {
  const std::string target = i % 2 == 0 ? CpuTarget() : Sm80Target();
  const std::string& trace = traces[i % traces.size()];
  TuningRecord r;
  if (i % 5 == 0) {
    r = MakeFailedRecord(w, target, trace, std::string(10000 + i, 'e'));
  } else {
    std::vector<double> secs;
    for (int j = 0; j <= i % 3; ++j) secs.push_back(1e-6 * i + 1e-9 * j);
    r = MakeRecord(w, target, trace, secs);
  }
  r.timestamp = i;
  return r;
}

std::vector<std::string> SomeTraces() {
  std::vector<std::string> traces;
  for (int loop = 1; loop <= 3; ++loop) {
    for (int64_t inner : {2, 4}) traces.push_back(TileTrace(16, loop, inner));
  }
  return traces;
}

class SqliteDatabaseTest : public ::testing::Test {
 protected:
  std::unique_ptr<Database> Open() {
    absl::StatusOr<std::unique_ptr<Database>> db = OpenSqliteDatabase(path_);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }

  // Makes the file's records table what schema 3 had: no re-timing links.
  void DropRetimesColumn() { RawExec(path_, "ALTER TABLE records DROP COLUMN retimes"); }
  // Makes the file's records table what schema 2 had: no stage times (nor links).
  void DropStageColumns() {
    DropRetimesColumn();
    for (const char* column : {"build_secs", "run_wall_secs", "verify_secs", "search_secs"}) {
      RawExec(path_, std::string("ALTER TABLE records DROP COLUMN ") + column);
    }
  }

  TempDir dir_;
  const std::string path_ = dir_.Path("tuning.db");
};

TEST_F(SqliteDatabaseTest, RecordsPersistAcrossReopen) {
  std::vector<TuningRecord> before;
  int64_t workload_id;
  {
    std::unique_ptr<Database> db = Open();
    Workload w = db->CommitWorkload(SmallGmm(16)).value();
    workload_id = w.id;
    ASSERT_TRUE(db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {2e-4})).ok());
    ASSERT_TRUE(db->CommitRecord(MakeFailedRecord(w, CpuTarget(), TileTrace(16, 2, 4), "x")).ok());
    int64_t id = db->CommitRecord(MakeRecord(w, Sm80Target(), TileTrace(16, 3, 4), {1e-5})).value();
    ASSERT_TRUE(db->SetVerified(id, true).ok());
    before = db->AllRecords().value();
  }
  std::unique_ptr<Database> db = Open();
  std::optional<Workload> w = db->FindWorkload(RenamedGmm(16)).value();
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->id, workload_id);
  EXPECT_TRUE(StructuralEqual(w->func, SmallGmm(16)));
  std::vector<TuningRecord> after = db->AllRecords().value();
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i].id, before[i].id);
    ExpectSameRecord(after[i], before[i]);
  }
  std::optional<TuningRecord> best = BestRecord(db.get(), SmallGmm(16), Sm80Target(), true).value();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->id, before[2].id);
  EXPECT_EQ(db->CommitWorkload(SmallGmm(16)).value().id, workload_id);
  EXPECT_EQ(db->AllWorkloads().value().size(), 1u);
}

TEST_F(SqliteDatabaseTest, HashCollisionsKeepWorkloadsApart) {
  std::unique_ptr<Database> db = Open();
  Workload w16 = db->CommitWorkload(SmallGmm(16)).value();
  // A row claiming GMM 32's hash but holding GMM 16: a collision, as far as lookups can tell.
  RawExec(path_, "INSERT INTO workloads (hash, func_json) VALUES ('" +
                     StructuralHashHex(SmallGmm(32)) + "', '" + SaveJson(SmallGmm(16)) + "')");
  Workload w32 = db->CommitWorkload(SmallGmm(32)).value();
  EXPECT_NE(w32.id, w16.id);
  EXPECT_TRUE(StructuralEqual(w32.func, SmallGmm(32)));
  EXPECT_EQ(db->FindWorkload(SmallGmm(32)).value()->id, w32.id);
  EXPECT_EQ(db->CommitWorkload(SmallGmm(32)).value().id, w32.id);
  EXPECT_EQ(db->FindWorkload(SmallGmm(16)).value()->id, w16.id);
  EXPECT_EQ(db->AllWorkloads().value().size(), 3u);
}

TEST_F(SqliteDatabaseTest, RefusesANewerSchemaVersion) {
  Open().reset();
  RawExec(path_, "UPDATE schema_version SET version = 99");
  absl::Status status = OpenSqliteDatabase(path_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find(path_), std::string::npos) << status;
  EXPECT_NE(status.message().find("schema version 99 is newer"), std::string::npos) << status;
}

// A file written by schema 1 (no error kinds, no job ids) opens, and its failed records get
// the kinds their messages name.
TEST_F(SqliteDatabaseTest, MigratesSchemaOneInPlace) {
  {
    std::unique_ptr<Database> db = Open();
    Workload w = db->CommitWorkload(SmallGmm(16)).value();
    db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 2), {1e-4})).value();
    db->CommitRecord(MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 4), "build: cc failed"))
        .value();
    db->CommitRecord(
          MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 8), "run: timed out after 2s"))
        .value();
    db->CommitRecord(MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 16), "run: kernel crashed"))
        .value();
  }
  RawExec(path_, "ALTER TABLE records DROP COLUMN error_kind");
  RawExec(path_, "ALTER TABLE records DROP COLUMN job_id");
  DropStageColumns();
  RawExec(path_, "DELETE FROM schema_version");
  RawExec(path_, "INSERT INTO schema_version (version) VALUES (1)");

  std::unique_ptr<Database> db = Open();
  std::vector<TuningRecord> all = db->AllRecords().value();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].error, MeasureError::kNone);
  EXPECT_EQ(all[1].error, MeasureError::kBuild);
  EXPECT_EQ(all[2].error, MeasureError::kTimeout);
  EXPECT_EQ(all[3].error, MeasureError::kRun);
  for (const TuningRecord& r : all) EXPECT_EQ(r.job_id, "");
  // New records keep their kinds and job ids after the migration.
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  TuningRecord r = MakeRecord(w, CpuTarget(), TileTrace(16, 2, 2), {2e-4});
  r.job_id = "job-1";
  db->CommitRecord(r).value();
  db.reset();
  all = Open()->AllRecords().value();
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all[4].job_id, "job-1");
}

// A schema 2 file (no stage times) opens: its records read 0 for every stage, and new
// records keep theirs.
TEST_F(SqliteDatabaseTest, MigratesSchemaTwoInPlace) {
  ExpectSchemaTwoMigratesInPlace([&] { return Open(); },
                                 [&] {
                                   DropStageColumns();
                                   RawExec(path_, "DELETE FROM schema_version");
                                   RawExec(path_,
                                           "INSERT INTO schema_version (version) VALUES (2)");
                                 });
  EXPECT_EQ(RawQueryInt(path_, "SELECT MAX(version) FROM schema_version"), 4);
}

// A schema 3 file (no re-timing links) opens: its records are measurements of their own, and
// new records keep their links.
TEST_F(SqliteDatabaseTest, MigratesSchemaThreeInPlace) {
  ExpectSchemaThreeMigratesInPlace([&] { return Open(); },
                                   [&] {
                                     DropRetimesColumn();
                                     RawExec(path_, "DELETE FROM schema_version");
                                     RawExec(path_,
                                             "INSERT INTO schema_version (version) VALUES (3)");
                                   });
  EXPECT_EQ(RawQueryInt(path_, "SELECT MAX(version) FROM schema_version"), 4);
}

TEST_F(SqliteDatabaseTest, RejectsFilesThatAreNotTesseraDatabases) {
  const std::string text = dir_.Path("notes.txt");
  std::ofstream(text) << std::string(8192, 'x');
  absl::Status status = OpenSqliteDatabase(text).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(status.message().find(text), std::string::npos) << status;
  EXPECT_NE(status.message().find("not a database"), std::string::npos) << status;

  const std::string other = dir_.Path("other.db");
  RawExec(other, "CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)");
  status = OpenSqliteDatabase(other).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("not a tessera database"), std::string::npos) << status;

  const std::string nowhere = dir_.Path("no/such/dir/tuning.db");
  status = OpenSqliteDatabase(nowhere).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(nowhere), std::string::npos) << status;
}

TEST_F(SqliteDatabaseTest, CorruptRowIsReportedNotReturned) {
  std::unique_ptr<Database> db = Open();
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  int64_t id = db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {1e-4})).value();
  RawExec(path_, "UPDATE records SET args = '[[\"TENSOR\"' WHERE id = " + std::to_string(id));
  absl::Status status = db->TopK(w, CpuTarget(), 1).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("record " + std::to_string(id) + ": args"), std::string::npos)
      << status;
}

TEST_F(SqliteDatabaseTest, FileWrittenByAKilledWriterIsConsistent) {
  Open()->CommitWorkload(SmallGmm(16)).value();
  const std::vector<std::string> traces = SomeTraces();
  const std::string path = path_;
  pid_t child = ForkChild([&]() {
    absl::StatusOr<std::unique_ptr<Database>> db = OpenSqliteDatabase(path);
    if (!db.ok()) return 2;
    absl::StatusOr<Workload> w = (*db)->CommitWorkload(SmallGmm(16));
    if (!w.ok()) return 3;
    for (int i = 0; i < 1000000; ++i) {
      if (!(*db)->CommitRecord(NumberedRecord(*w, traces, i)).ok()) return 4;
    }
    return 0;
  });
  ASSERT_GT(child, 0);
  struct KillOnFailure {  // Stops the writer if an assertion below returns early.
    pid_t pid;
    ~KillOnFailure() {
      if (pid > 0 && kill(pid, SIGKILL) == 0) waitpid(pid, nullptr, 0);
    }
  } guard{child};
  {
    std::unique_ptr<Database> watcher = Open();
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (watcher->NumRecords().value() < 300 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }  // Closed first, so that the killed writer is the file's last user.
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(waitpid(child, &wstatus, 0), child);
  guard.pid = -1;
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL)
      << "the writer ended on its own, status " << wstatus;

  std::unique_ptr<Database> db = Open();
  ASSERT_NE(db, nullptr);
  Workload w = db->FindWorkload(SmallGmm(16)).value().value();
  std::vector<TuningRecord> all = db->AllRecords().value();
  ASSERT_GE(all.size(), 300u);
  EXPECT_EQ(db->NumRecords().value(), static_cast<int64_t>(all.size()));
  for (size_t k = 0; k < all.size(); ++k) {
    EXPECT_EQ(all[k].id, static_cast<int64_t>(k) + 1);
    ASSERT_EQ(all[k].timestamp, static_cast<double>(k)) << "records are committed in order";
    TuningRecord expected = NumberedRecord(w, traces, static_cast<int>(k));
    expected.timestamp = static_cast<double>(k);
    ExpectSameRecord(all[k], expected);
  }
  size_t cpu = db->AllRecords(w, CpuTarget()).value().size();
  size_t sm80 = db->AllRecords(w, Sm80Target()).value().size();
  EXPECT_EQ(cpu + sm80, all.size());
  std::vector<TuningRecord> top = db->TopK(w, Sm80Target(), 1000000).value();
  EXPECT_EQ(top.size(), sm80 - (sm80 + 2) / 5);  // i odd and i % 5 == 0 fail: i = 5, 15, ...
  for (size_t k = 1; k < top.size(); ++k) EXPECT_LE(top[k - 1].mean_secs(), top[k].mean_secs());
  EXPECT_TRUE(db->CommitRecord(NumberedRecord(w, traces, 1)).ok());
  EXPECT_EQ(db->NumRecords().value(), static_cast<int64_t>(all.size()) + 1);
}

// The reader's connection is open before the writer starts, and the writer waits for the
// reader's word before its first commit, so the reads overlap the commits even on a loaded
// machine (once, under a parallel build, the writer finished its 300 commits before the reader
// had opened the file and read anything).
TEST_F(SqliteDatabaseTest, ReaderProcessSeesWholeCommitsWhileWriterProcessCommits) {
  Workload w = Open()->CommitWorkload(SmallGmm(16)).value();
  const std::vector<std::string> traces = SomeTraces();
  const std::string path = path_;
  constexpr int kRecords = 300;
  std::unique_ptr<Database> db = Open();
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  pid_t child = ForkChild([&]() {
    close(go[1]);
    char byte = 0;
    if (read(go[0], &byte, 1) != 1) return 5;
    absl::StatusOr<std::unique_ptr<Database>> writer = OpenSqliteDatabase(path);
    if (!writer.ok()) return 2;
    for (int i = 0; i < kRecords; ++i) {
      if (!(*writer)->CommitRecord(NumberedRecord(w, traces, i)).ok()) return 3;
    }
    return 0;
  });
  close(go[0]);
  ASSERT_GT(child, 0);
  ASSERT_EQ(write(go[1], "g", 1), 1);
  close(go[1]);
  int64_t last = 0, reads = 0;
  int wstatus = 0;
  do {
    absl::StatusOr<int64_t> n = db->NumRecords();
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_GE(*n, last);
    last = *n;
    absl::StatusOr<std::vector<TuningRecord>> top = db->TopK(w, CpuTarget(), 5);
    ASSERT_TRUE(top.ok()) << top.status();
    for (const TuningRecord& r : *top) {
      TuningRecord expected = NumberedRecord(w, traces, static_cast<int>(r.timestamp));
      EXPECT_EQ(r.run_secs, expected.run_secs);
      EXPECT_EQ(r.trace_json, expected.trace_json);
    }
    ++reads;
  } while (waitpid(child, &wstatus, WNOHANG) == 0);
  ASSERT_TRUE(WIFEXITED(wstatus)) << wstatus;
  EXPECT_EQ(WEXITSTATUS(wstatus), 0);
  EXPECT_GT(reads, 1) << "the writer finished before the reader's second read";
  EXPECT_EQ(db->NumRecords().value(), kRecords);
}

}  // namespace
}  // namespace tessera
