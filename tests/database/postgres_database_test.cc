// What only the PostgreSQL database has: URLs (OpenDatabase picks the backend, passwords never
// reach messages), a server that may be unreachable, schema versions and the migrations from
// schemas 1, 2 and 3, and several processes committing to one database at once. Runs on the test
// process's throw-away cluster (postgres_cluster.h); skips, saying why, without the server
// binaries. The Database contract itself is checked by the typed suite in database_test.cc.
#include <libpq-fe.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "database/database.h"
#include "gtest/gtest.h"
#include "tests/database/database_testing.h"
#include "tests/database/postgres_cluster.h"

namespace tessera {
namespace {

using ::tessera::testing::CpuTarget;
using ::tessera::testing::ExpectSameRecord;
using ::tessera::testing::ExpectSchemaThreeMigratesInPlace;
using ::tessera::testing::ExpectSchemaTwoMigratesInPlace;
using ::tessera::testing::MakeFailedRecord;
using ::tessera::testing::MakeRecord;
using ::tessera::testing::PostgresCluster;
using ::tessera::testing::Sm80Target;
using ::tessera::testing::SmallGmm;
using ::tessera::testing::TempDir;
using ::tessera::testing::TileTrace;

// Runs one SQL script on the database at `url` directly, bypassing the Database class.
void RawExec(const std::string& url, const std::string& sql) {
  PGconn* conn = PQconnectdb(url.c_str());
  ASSERT_EQ(PQstatus(conn), CONNECTION_OK) << PQerrorMessage(conn);
  PGresult* result = PQexec(conn, sql.c_str());
  EXPECT_EQ(PQresultStatus(result), PGRES_COMMAND_OK) << PQresultErrorMessage(result);
  PQclear(result);
  PQfinish(conn);
}

// Makes the records table what schema 3 had: no re-timing links.
constexpr const char* kDropRetimesColumn = "ALTER TABLE records DROP COLUMN retimes; ";
// Makes the records table what schema 2 had: no stage times (nor links).
constexpr const char* kDropStageColumns =
    "ALTER TABLE records DROP COLUMN retimes, DROP COLUMN build_secs, DROP COLUMN run_wall_secs, "
    "DROP COLUMN verify_secs, DROP COLUMN search_secs; ";

class PostgresDatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    cluster_ = PostgresCluster::Get(&why);
    if (cluster_ == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
    absl::StatusOr<std::string> url = cluster_->NewDatabase();
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
  }
  std::unique_ptr<Database> Open() {
    absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(url_);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }

  PostgresCluster* cluster_ = nullptr;
  std::string url_;
};

TEST_F(PostgresDatabaseTest, OpenDatabasePicksTheBackendFromTheName) {
  EXPECT_TRUE(IsPostgresUrl("postgresql://db.example/tuning"));
  EXPECT_TRUE(IsPostgresUrl("postgres:///tuning?host=/run/postgresql"));
  EXPECT_FALSE(IsPostgresUrl("tuning.db"));
  EXPECT_FALSE(IsPostgresUrl("/var/lib/postgresql.db"));

  std::unique_ptr<Database> db = Open();
  ASSERT_NE(db, nullptr);
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  ASSERT_TRUE(db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {2e-4})).ok());
  db.reset();
  EXPECT_EQ(Open()->NumRecords().value(), 1) << "records persist in the server";

  TempDir dir;
  const std::string file = dir.Path("tuning.db");
  absl::StatusOr<std::unique_ptr<Database>> sqlite = OpenDatabase(file);
  ASSERT_TRUE(sqlite.ok()) << sqlite.status();
  EXPECT_EQ((*sqlite)->NumRecords().value(), 0);
  EXPECT_EQ(access(file.c_str(), F_OK), 0) << "a path opens (creates) a SQLite file";
}

TEST_F(PostgresDatabaseTest, UnreachableServerIsUnavailableAndHidesThePassword) {
  TempDir dir;
  const std::string url =
      "postgresql://tessera:s3cret@/tuning?host=" + dir.Path("no-socket-here") + "&port=5432";
  absl::Status status = OpenDatabase(url).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_EQ(status.message().find("s3cret"), std::string::npos) << status;
  EXPECT_NE(status.message().find("postgresql://tessera:***@/tuning"), std::string::npos) << status;
  EXPECT_EQ(RedactDatabaseUrl("postgresql://u@h/db?password=pw&sslmode=require"),
            "postgresql://u@h/db?password=***&sslmode=require");
  EXPECT_EQ(RedactDatabaseUrl("tuning.db"), "tuning.db");

  status = OpenDatabase(cluster_->Url("no_such_database")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("no_such_database"), std::string::npos) << status;
}

TEST_F(PostgresDatabaseTest, RefusesANewerSchemaAndForeignTables) {
  Open().reset();
  RawExec(url_, "UPDATE schema_version SET version = 99");
  absl::Status status = OpenDatabase(url_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("schema version 99 is newer"), std::string::npos) << status;

  absl::StatusOr<std::string> other = cluster_->NewDatabase();
  ASSERT_TRUE(other.ok()) << other.status();
  RawExec(*other, "CREATE TABLE photos (id BIGSERIAL PRIMARY KEY, name TEXT)");
  status = OpenDatabase(*other).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(status.message().find("not a tessera database"), std::string::npos) << status;
}

// A database written by schema 1 (no error kinds, no job ids) opens, and its failed records
// get the kinds their messages name, as with SQLite.
TEST_F(PostgresDatabaseTest, MigratesSchemaOneInPlace) {
  {
    std::unique_ptr<Database> db = Open();
    Workload w = db->CommitWorkload(SmallGmm(16)).value();
    db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 2), {1e-4})).value();
    db->CommitRecord(MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 4), "build: cc failed"))
        .value();
    db->CommitRecord(
          MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1, 8), "run: timed out after 2s"))
        .value();
  }
  RawExec(url_, absl::StrCat("ALTER TABLE records DROP COLUMN error_kind; ALTER TABLE records DROP "
                             "COLUMN job_id; ",
                             kDropStageColumns,
                             "DELETE FROM schema_version; INSERT INTO schema_version (version) "
                             "VALUES (1)"));
  std::unique_ptr<Database> db = Open();
  ASSERT_NE(db, nullptr);
  std::vector<TuningRecord> all = db->AllRecords().value();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].error, MeasureError::kNone);
  EXPECT_EQ(all[1].error, MeasureError::kBuild);
  EXPECT_EQ(all[2].error, MeasureError::kTimeout);
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  TuningRecord r = MakeRecord(w, CpuTarget(), TileTrace(16, 2, 2), {2e-4});
  r.job_id = "job-1";
  db->CommitRecord(r).value();
  db.reset();
  all = Open()->AllRecords().value();
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].job_id, "job-1");
}

// A schema 2 database (no stage times) opens: its records read 0 for every stage, and new
// records keep theirs.
TEST_F(PostgresDatabaseTest, MigratesSchemaTwoInPlace) {
  ExpectSchemaTwoMigratesInPlace(
      [&] { return Open(); },
      [&] {
        RawExec(url_,
                absl::StrCat(kDropStageColumns,
                             "DELETE FROM schema_version; INSERT INTO schema_version (version) "
                             "VALUES (1), (2)"));
      });
}

// A schema 3 database (no re-timing links) opens: its records are measurements of their own,
// and new records keep their links.
TEST_F(PostgresDatabaseTest, MigratesSchemaThreeInPlace) {
  ExpectSchemaThreeMigratesInPlace(
      [&] { return Open(); },
      [&] {
        RawExec(url_,
                absl::StrCat(kDropRetimesColumn,
                             "DELETE FROM schema_version; INSERT INTO schema_version (version) "
                             "VALUES (1), (2), (3)"));
      });
}

// A server restart breaks the connection: the call that finds it broken fails with
// kUnavailable (retry), the next one reconnects, and nothing committed is lost.
TEST_F(PostgresDatabaseTest, ReconnectsAfterTheServerRestarts) {
  std::unique_ptr<Database> db = Open();
  ASSERT_NE(db, nullptr);
  Workload w = db->CommitWorkload(SmallGmm(16)).value();
  ASSERT_TRUE(db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 1, 4), {2e-4})).ok());
  ASSERT_TRUE(cluster_->Restart().ok());
  absl::StatusOr<int64_t> first = db->NumRecords();
  if (!first.ok()) {
    EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
    EXPECT_EQ(first.status().message().find('\n'), std::string::npos) << first.status();
  }
  EXPECT_EQ(db->NumRecords().value(), 1);
  EXPECT_TRUE(db->CommitRecord(MakeRecord(w, CpuTarget(), TileTrace(16, 2, 4), {1e-4})).ok());
  EXPECT_EQ(BestRecord(db.get(), SmallGmm(16), CpuTarget(), false).value()->run_secs,
            std::vector<double>{1e-4});
}

// Record `i` of writer `writer`: its fields are a function of both, so the reader can check
// each stored record is whole, and which writer and number it was.
TuningRecord WriterRecord(const Workload& w, int writer, int i) {
  TuningRecord r = i % 7 == 0
                       ? MakeFailedRecord(w, CpuTarget(), TileTrace(16, 1 + i % 3, 2), "run: boom")
                       : MakeRecord(w, i % 2 ? CpuTarget() : Sm80Target(),
                                    TileTrace(16, 1 + i % 3, 4), {1e-6 * (i + 1), 2e-6 * writer});
  r.timestamp = i;
  r.job_id = "writer-" + std::to_string(writer);
  r.provenance.worker_id = "w" + std::to_string(writer);
  return r;
}

// Two processes open one (fresh) database at the same moment, both commit the same workload
// and then their records as fast as they can: one schema, one workload, every record exactly
// once, whole.
TEST_F(PostgresDatabaseTest, TwoProcessesCommitConcurrentlyWithoutLossOrDuplicates) {
  constexpr int kWriters = 2, kRecords = 300;
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  std::vector<pid_t> children;
  for (int writer = 0; writer < kWriters; ++writer) {
    pid_t pid = fork();
    if (pid == 0) {
      close(go[1]);
      char byte;
      if (read(go[0], &byte, 1) != 1) _exit(2);
      absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(url_);
      if (!db.ok()) _exit(3);
      absl::StatusOr<Workload> w = (*db)->CommitWorkload(SmallGmm(16));
      if (!w.ok()) _exit(4);
      for (int i = 0; i < kRecords; ++i) {
        if (!(*db)->CommitRecord(WriterRecord(*w, writer, i)).ok()) _exit(5);
      }
      _exit(0);
    }
    ASSERT_GT(pid, 0);
    children.push_back(pid);
  }
  close(go[0]);
  ASSERT_EQ(write(go[1], "gg", 2), 2);  // both start together
  close(go[1]);
  for (pid_t pid : children) {
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << "writer status " << wstatus;
  }

  std::unique_ptr<Database> db = Open();
  ASSERT_NE(db, nullptr);
  std::vector<Workload> workloads = db->AllWorkloads().value();
  ASSERT_EQ(workloads.size(), 1u) << "both writers committed GMM 16: one workload";
  std::vector<TuningRecord> all = db->AllRecords().value();
  ASSERT_EQ(all.size(), static_cast<size_t>(kWriters * kRecords));
  std::set<int64_t> ids;
  std::map<std::string, std::set<int>> seen;  // job id -> record numbers
  for (const TuningRecord& r : all) {
    EXPECT_TRUE(ids.insert(r.id).second) << "duplicate id " << r.id;
    int writer = r.job_id == "writer-1" ? 1 : 0;
    int i = static_cast<int>(r.timestamp);
    EXPECT_TRUE(seen[r.job_id].insert(i).second) << r.job_id << " record " << i << " twice";
    ExpectSameRecord(r, WriterRecord(workloads[0], writer, i));
  }
  ASSERT_EQ(seen.size(), 2u);
  for (const auto& [job, numbers] : seen) {
    EXPECT_EQ(numbers.size(), static_cast<size_t>(kRecords)) << job;
    EXPECT_EQ(*numbers.begin(), 0) << job;
    EXPECT_EQ(*numbers.rbegin(), kRecords - 1) << job;
  }
  EXPECT_EQ(db->NumRecords().value(), kWriters * kRecords);
}

}  // namespace
}  // namespace tessera
