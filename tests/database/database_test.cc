// The Database contract, checked on every implementation (in-memory, SQLite and PostgreSQL)
// by one typed suite, with real workloads and real traces. SQLite-only behaviour (files, schema
// versions, crashes, other processes) is in sqlite_database_test.cc, PostgreSQL-only behaviour
// in postgres_database_test.cc. The PostgreSQL kind runs on a throw-away cluster
// (postgres_cluster.h) and skips, saying why, where the server binaries are missing.
#include "database/database.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "ir/structural_equal.h"
#include "ir/structural_hash.h"
#include "ir/target.h"
#include "tests/database/database_testing.h"
#include "tests/database/postgres_cluster.h"

namespace tessera {
namespace {

using ::tessera::testing::CpuTarget;
using ::tessera::testing::ExpectSameRecord;
using ::tessera::testing::MakeFailedRecord;
using ::tessera::testing::MakeRecord;
using ::tessera::testing::RenamedGmm;
using ::tessera::testing::Sm80Target;
using ::tessera::testing::Sm90Target;
using ::tessera::testing::SmallGmm;
using ::tessera::testing::TempDir;
using ::tessera::testing::TileTrace;

struct MemoryKind {
  static bool Available(std::string* /*why*/) { return true; }
  static std::unique_ptr<Database> Open(const std::string& /*path*/) { return NewMemoryDatabase(); }
};
struct SqliteKind {
  static bool Available(std::string* /*why*/) { return true; }
  static std::unique_ptr<Database> Open(const std::string& path) {
    absl::StatusOr<std::unique_ptr<Database>> db = OpenSqliteDatabase(path);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }
};
// Each Open is a new, empty database in the process's cluster (the path is not used).
struct PostgresKind {
  static bool Available(std::string* why) { return testing::PostgresCluster::Get(why) != nullptr; }
  static std::unique_ptr<Database> Open(const std::string& /*path*/) {
    std::string why;
    testing::PostgresCluster* cluster = testing::PostgresCluster::Get(&why);
    EXPECT_NE(cluster, nullptr) << why;
    if (cluster == nullptr) return nullptr;
    absl::StatusOr<std::string> url = cluster->NewDatabase();
    EXPECT_TRUE(url.ok()) << url.status();
    if (!url.ok()) return nullptr;
    absl::StatusOr<std::unique_ptr<Database>> db = OpenPostgresDatabase(*url);
    EXPECT_TRUE(db.ok()) << db.status();
    return db.ok() ? *std::move(db) : nullptr;
  }
};

template <typename Kind>
class DatabaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why; !Kind::Available(&why)) GTEST_SKIP() << "PostgreSQL: " << why;
    db_ = Kind::Open(dir_.Path("main.db"));
    ASSERT_NE(db_, nullptr);
  }
  // Another, empty database of the same kind.
  std::unique_ptr<Database> OpenOther(const std::string& name) {
    return Kind::Open(dir_.Path(name + ".db"));
  }
  Workload Commit(const PrimFunc& func) { return db_->CommitWorkload(func).value(); }
  int64_t Commit(const TuningRecord& record) { return db_->CommitRecord(record).value(); }
  std::vector<double> TopTimes(const Workload& w, const std::string& target, int k,
                               bool verified_only = false) {
    std::vector<double> out;
    std::vector<TuningRecord> top = db_->TopK(w, target, k, verified_only).value();
    for (const TuningRecord& r : top) {
      out.push_back(r.run_secs[0]);
    }
    return out;
  }

  TempDir dir_;
  std::unique_ptr<Database> db_;
};

class KindNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    if (std::is_same_v<T, MemoryKind>) return "Memory";
    return std::is_same_v<T, SqliteKind> ? "Sqlite" : "Postgres";
  }
};

using Kinds = ::testing::Types<MemoryKind, SqliteKind, PostgresKind>;
TYPED_TEST_SUITE(DatabaseTest, Kinds, KindNames);

TYPED_TEST(DatabaseTest, RenamedEqualFunctionsShareOneWorkload) {
  PrimFunc gmm = SmallGmm(16), renamed = RenamedGmm(16);
  ASSERT_TRUE(StructuralEqual(gmm, renamed)) << StructuralDiff(gmm, renamed);
  Workload a = this->Commit(gmm);
  Workload b = this->Commit(renamed);
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.hash, StructuralHashHex(gmm));
  EXPECT_EQ(this->db_->AllWorkloads().value().size(), 1u);
  std::optional<Workload> found = this->db_->FindWorkload(renamed).value();
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->id, a.id);
  EXPECT_TRUE(StructuralEqual(found->func, gmm));
}

TYPED_TEST(DatabaseTest, DifferentShapesAreDifferentWorkloads) {
  Workload small = this->Commit(SmallGmm(16));
  Workload large = this->Commit(SmallGmm(32));
  EXPECT_NE(small.id, large.id);
  EXPECT_FALSE(this->db_->FindWorkload(SmallGmm(8)).value().has_value());
  std::vector<Workload> all = this->db_->AllWorkloads().value();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, small.id);
  EXPECT_EQ(all[1].id, large.id);
  EXPECT_TRUE(StructuralEqual(all[1].func, SmallGmm(32)));
}

// Commits, into `db`, records on GMM 16 and GMM 32: some failed, one verified, two targets.
void FillSample(Database* db) {
  Workload w16 = db->CommitWorkload(SmallGmm(16)).value();
  Workload w32 = db->CommitWorkload(SmallGmm(32)).value();
  TuningRecord verified = MakeRecord(w16, CpuTarget(), TileTrace(16, 1, 4), {2e-4, 2.5e-4});
  verified.verified = true;
  for (const TuningRecord& r :
       {verified, MakeRecord(w16, CpuTarget(), TileTrace(16, 2, 4), {1e-4}),
        MakeFailedRecord(w16, CpuTarget(), TileTrace(16, 3, 4), "run: timeout after 10 s"),
        MakeRecord(w32, Sm80Target(), TileTrace(32, 1, 8), {3e-5}),
        MakeRecord(w32, CpuTarget(), TileTrace(32, 1, 8), {7e-4})}) {
    ASSERT_TRUE(db->CommitRecord(r).ok());
  }
}

TYPED_TEST(DatabaseTest, RecordsKeepEveryField) {
  Workload w = this->Commit(SmallGmm(16));
  TuningRecord record = MakeRecord(w, Sm80Target(), TileTrace(16, 1, 4), {1e-4, 1.2e-4});
  record.provenance.driver = "CUDA 13.0";
  record.verified = true;
  int64_t id = this->Commit(record);
  EXPECT_GE(id, 1);
  std::vector<TuningRecord> all = this->db_->AllRecords().value();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, id);
  ExpectSameRecord(all[0], record);
  ASSERT_EQ(all[0].args.size(), 3u);
  EXPECT_EQ(all[0].args[2].shape, (std::vector<int64_t>{1, 16, 16}));
  EXPECT_DOUBLE_EQ(all[0].mean_secs(), 1.1e-4);
  EXPECT_EQ(all[0].retimes, -1) << "a measurement of its own";
  EXPECT_EQ(this->db_->NumRecords().value(), 1);

  // A runoff's re-measurement of the same program says which record it times again.
  TuningRecord again = MakeRecord(w, Sm80Target(), TileTrace(16, 1, 4), {1.3e-4});
  again.retimes = id;
  const int64_t again_id = this->Commit(again);
  TuningRecord orphan = MakeRecord(w, Sm80Target(), TileTrace(16, 1, 4), {1.4e-4});
  orphan.retimes = 0;  // re-times a record of another database
  this->Commit(orphan);
  all = this->db_->AllRecords().value();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].id, again_id);
  EXPECT_EQ(all[1].retimes, id);
  EXPECT_TRUE(all[1].is_retiming());
  EXPECT_EQ(all[2].retimes, 0);
  EXPECT_TRUE(all[2].is_retiming());
  EXPECT_FALSE(all[0].is_retiming());
  EXPECT_EQ(this->db_->TopK(w, Sm80Target(), 5).value()[1].retimes, id);
  orphan.retimes = -2;
  EXPECT_EQ(this->db_->CommitRecord(orphan).status().code(), absl::StatusCode::kInvalidArgument);
}

TYPED_TEST(DatabaseTest, RecordsAfterAnIdArePagesInCommitOrder) {
  FillSample(this->db_.get());
  std::vector<TuningRecord> all = this->db_->AllRecords().value();
  ASSERT_EQ(all.size(), 5u);
  std::vector<int64_t> paged;
  for (int64_t after = 0;;) {
    std::vector<TuningRecord> page = this->db_->RecordsAfter(after, 2).value();
    if (page.empty()) break;
    EXPECT_LE(page.size(), 2u);
    for (const TuningRecord& r : page) paged.push_back(r.id);
    ExpectSameRecord(page.front(), all[paged.size() - page.size()]);
    after = page.back().id;
  }
  std::vector<int64_t> ids;
  for (const TuningRecord& r : all) ids.push_back(r.id);
  EXPECT_EQ(paged, ids);
  EXPECT_TRUE(this->db_->RecordsAfter(ids.back(), 10).value().empty());
  EXPECT_TRUE(this->db_->RecordsAfter(0, 0).value().empty());
  EXPECT_EQ(this->db_->RecordsAfter(0, -1).status().code(), absl::StatusCode::kInvalidArgument);
}

TYPED_TEST(DatabaseTest, TopKIsFastestFirstWithOlderFirstOnTies) {
  Workload w = this->Commit(SmallGmm(16));
  const std::string cpu = CpuTarget();
  const std::vector<double> times = {3e-4, 1e-4, 5e-4, 2e-4, 1e-4};
  std::vector<int64_t> ids;
  for (size_t i = 0; i < times.size(); ++i) {
    ids.push_back(this->Commit(MakeRecord(w, cpu, TileTrace(16, 1 + i % 3, 2), {times[i]})));
  }
  std::vector<TuningRecord> top = this->db_->TopK(w, cpu, 3).value();
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].id, ids[1]);  // 1e-4, committed before ids[4]
  EXPECT_EQ(top[1].id, ids[4]);
  EXPECT_EQ(top[2].id, ids[3]);
  EXPECT_TRUE(this->db_->TopK(w, cpu, 0).value().empty());
  EXPECT_EQ(this->TopTimes(w, cpu, 100), (std::vector<double>{1e-4, 1e-4, 2e-4, 3e-4, 5e-4}));
  absl::StatusOr<std::vector<TuningRecord>> negative = this->db_->TopK(w, cpu, -1);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
}

TYPED_TEST(DatabaseTest, RecordsAnswerOnlyTheirTarget) {
  PrimFunc gmm = SmallGmm(16);
  Workload w = this->Commit(gmm);
  this->Commit(MakeRecord(w, Sm80Target(), TileTrace(16, 1, 4), {1e-5}));
  this->Commit(MakeRecord(w, CpuTarget(), TileTrace(16, 2, 4), {9e-4}));
  EXPECT_TRUE(this->db_->TopK(w, Sm90Target(), 10).value().empty());
  EXPECT_EQ(this->TopTimes(w, CpuTarget(), 10), std::vector<double>{9e-4});
  EXPECT_EQ(this->TopTimes(w, Sm80Target(), 10), std::vector<double>{1e-5});
  EXPECT_EQ(this->db_->AllRecords(w, Sm80Target()).value().size(), 1u);
  EXPECT_TRUE(this->db_->AllRecords(w, Sm90Target()).value().empty());

  std::optional<TuningRecord> best = BestRecord(this->db_.get(), gmm, Sm90Target(), false).value();
  EXPECT_FALSE(best.has_value());
  best = BestRecord(this->db_.get(), RenamedGmm(16), Sm80Target(), false).value();
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->run_secs, std::vector<double>{1e-5});
  // Another spelling of the same target has the same canonical string.
  const std::string respelled = Target::Parse("cuda -warp_size=32 -arch=sm_80").value().ToString();
  EXPECT_EQ(this->TopTimes(w, respelled, 10), std::vector<double>{1e-5});
  EXPECT_FALSE(BestRecord(this->db_.get(), SmallGmm(8), Sm80Target(), false).value());
}

TYPED_TEST(DatabaseTest, VerifiedOnlyQueriesSkipUnverifiedRecords) {
  PrimFunc gmm = SmallGmm(16);
  Workload w = this->Commit(gmm);
  const std::string cpu = CpuTarget();
  int64_t fast = this->Commit(MakeRecord(w, cpu, TileTrace(16, 1, 2), {1e-4}));
  TuningRecord slow = MakeRecord(w, cpu, TileTrace(16, 1, 4), {2e-4});
  slow.verified = true;
  this->Commit(slow);
  EXPECT_EQ(this->TopTimes(w, cpu, 5), (std::vector<double>{1e-4, 2e-4}));
  EXPECT_EQ(this->TopTimes(w, cpu, 5, /*verified_only=*/true), std::vector<double>{2e-4});
  EXPECT_EQ(BestRecord(this->db_.get(), gmm, cpu, true).value()->run_secs[0], 2e-4);

  ASSERT_TRUE(this->db_->SetVerified(fast, true).ok());
  EXPECT_EQ(this->TopTimes(w, cpu, 5, true), (std::vector<double>{1e-4, 2e-4}));
  EXPECT_EQ(this->db_->SetVerified(12345, true).code(), absl::StatusCode::kNotFound);
}

TYPED_TEST(DatabaseTest, FailedRecordsAreStoredButNeverReturned) {
  PrimFunc gmm = SmallGmm(16);
  Workload w = this->Commit(gmm);
  const std::string cpu = CpuTarget();
  this->Commit(MakeFailedRecord(w, cpu, TileTrace(16, 1, 2), "build: cc exited with 1"));
  TuningRecord wrong = MakeRecord(w, cpu, TileTrace(16, 1, 4), {1e-6});
  wrong.error = MeasureError::kWrongOutput;
  wrong.error_msg = "check: output C differs by 3.5";
  wrong.job_id = "job-7";
  this->Commit(wrong);
  EXPECT_TRUE(this->db_->TopK(w, cpu, 10).value().empty());
  EXPECT_FALSE(BestRecord(this->db_.get(), gmm, cpu, false).value().has_value());

  this->Commit(MakeRecord(w, cpu, TileTrace(16, 1, 8), {5e-4}));
  EXPECT_EQ(this->TopTimes(w, cpu, 10), std::vector<double>{5e-4});
  std::vector<TuningRecord> all = this->db_->AllRecords(w, cpu).value();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_FALSE(all[0].ok());
  EXPECT_EQ(all[0].error_msg, "build: cc exited with 1");
  EXPECT_EQ(all[0].mean_secs(), 1e10);
  EXPECT_EQ(all[0].error, MeasureError::kBuild);
  EXPECT_FALSE(all[1].ok());
  EXPECT_EQ(all[1].error, MeasureError::kWrongOutput);
  EXPECT_EQ(all[1].run_secs, std::vector<double>{1e-6});  // the time of a wrong output is kept
  EXPECT_EQ(all[1].job_id, "job-7");
  EXPECT_EQ(this->db_->NumRecords().value(), 3);
}

TYPED_TEST(DatabaseTest, CommitRecordRejectsBadRecords) {
  Workload w = this->Commit(SmallGmm(16));
  TuningRecord good = MakeRecord(w, CpuTarget(), TileTrace(16, 1, 2), {1e-4});
  TuningRecord r = good;
  r.workload_id = 999;
  EXPECT_EQ(this->db_->CommitRecord(r).status().code(), absl::StatusCode::kNotFound);
  r = good;
  r.trace_json = "[[[\"NoSuchInstruction\", [], [], []]], []]";
  absl::Status status = this->db_->CommitRecord(r).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("trace"), std::string::npos) << status;
  r = good;
  r.run_secs = {1e-4, -1};
  EXPECT_EQ(this->db_->CommitRecord(r).status().code(), absl::StatusCode::kInvalidArgument);
  r = good;
  r.target = "";
  EXPECT_EQ(this->db_->CommitRecord(r).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(this->db_->NumRecords().value(), 0);
}

// The file's content.
std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TYPED_TEST(DatabaseTest, ExportImportRoundTripsEveryRecord) {
  FillSample(this->db_.get());
  // A runoff's re-measurement of the first record: the same trace, timed again.
  std::vector<TuningRecord> stored = this->db_->AllRecords().value();
  TuningRecord again = stored[0];
  again.run_secs = {2.2e-4};
  again.timestamp += 100;
  again.retimes = stored[0].id;
  this->Commit(again);
  const std::string path = this->dir_.Path("records.jsonl");
  EXPECT_EQ(ExportJsonLines(this->db_.get(), path).value(), 6);

  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  nlohmann::json line = nlohmann::json::parse(first);
  EXPECT_EQ(line["trace_json"], stored[0].trace_json) << "the trace's text, as Record has it";
  EXPECT_TRUE(line["workload_func"].is_object());
  EXPECT_EQ(line["id"], stored[0].id);
  EXPECT_EQ(line["args"][0], nlohmann::json::parse(R"(["TENSOR", "float32", [1, 16, 16]])"));

  std::unique_ptr<Database> copy = this->OpenOther("copy");
  ImportStats stats = ImportJsonLines(copy.get(), path).value();
  EXPECT_EQ(stats.imported, 6) << "the re-measurement is a measurement of its own";
  EXPECT_EQ(stats.duplicates, 0);
  EXPECT_EQ(stats.links_dropped, 0);
  std::vector<TuningRecord> a = this->db_->AllRecords().value();
  std::vector<TuningRecord> b = copy->AllRecords().value();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ExpectSameRecord(a[i], b[i]);
  EXPECT_EQ(b.back().retimes, b.front().id) << "linked to the record it re-times, here";
  std::vector<Workload> wa = this->db_->AllWorkloads().value();
  std::vector<Workload> wb = copy->AllWorkloads().value();
  ASSERT_EQ(wa.size(), wb.size());
  for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(StructuralEqual(wa[i].func, wb[i].func));

  // Export -> import -> export gives the same file, byte for byte.
  const std::string again_path = this->dir_.Path("again.jsonl");
  EXPECT_EQ(ExportJsonLines(copy.get(), again_path).value(), 6);
  EXPECT_EQ(ReadFile(again_path), ReadFile(path));
  // And importing it again finds every measurement stored.
  stats = ImportJsonLines(copy.get(), again_path).value();
  EXPECT_EQ(stats.imported, 0);
  EXPECT_EQ(stats.duplicates, 6);
}

// A merge keeps every measurement: a record of the same program timed at another time is
// another measurement (a runoff's re-measurement is one), and only the same measurement is a
// duplicate. A re-measurement's link follows the record it re-times into the merged database,
// through a duplicate too; one whose record is in neither is kept, with its link dropped.
TYPED_TEST(DatabaseTest, ImportMergesOverlappingDatabasesKeepingEveryMeasurement) {
  FillSample(this->db_.get());
  std::unique_ptr<Database> other = this->OpenOther("other");
  Workload w16 = other->CommitWorkload(RenamedGmm(16)).value();
  for (const TuningRecord& r : {MakeRecord(w16, CpuTarget(), TileTrace(16, 2, 4), {1.1e-4}),
                                MakeRecord(w16, Sm90Target(), TileTrace(16, 2, 4), {4e-6}),
                                MakeRecord(w16, CpuTarget(), TileTrace(16, 2, 8), {9e-5})}) {
    ASSERT_TRUE(other->CommitRecord(r).ok());
  }
  const std::string mine = this->dir_.Path("mine.jsonl"), theirs = this->dir_.Path("theirs.jsonl");
  ASSERT_TRUE(ExportJsonLines(this->db_.get(), mine).ok());
  ASSERT_TRUE(ExportJsonLines(other.get(), theirs).ok());

  std::unique_ptr<Database> merged = this->OpenOther("merged");
  ImportStats first = ImportJsonLines(merged.get(), mine).value();
  EXPECT_EQ(first.imported, 5);
  ImportStats second = ImportJsonLines(merged.get(), theirs).value();
  EXPECT_EQ(second.imported, 3) << "the same trace timed at another time is kept";
  EXPECT_EQ(second.duplicates, 0);
  ImportStats again = ImportJsonLines(merged.get(), mine).value();
  EXPECT_EQ(again.imported, 0);
  EXPECT_EQ(again.duplicates, 5);
  EXPECT_EQ(merged->NumRecords().value(), 8);
  EXPECT_EQ(merged->AllWorkloads().value().size(), 2u);
  Workload w = merged->FindWorkload(SmallGmm(16)).value().value();
  EXPECT_EQ(BestRecord(merged.get(), SmallGmm(16), Sm90Target(), false).value()->run_secs,
            std::vector<double>{4e-6});
  EXPECT_EQ(merged->TopK(w, CpuTarget(), 1).value()[0].run_secs, std::vector<double>{9e-5});

  // A re-measurement of mine's second record, exported with and without that record.
  std::vector<TuningRecord> stored = this->db_->AllRecords().value();
  TuningRecord remeasured = stored[1];
  remeasured.timestamp += 50;
  remeasured.run_secs = {1.4e-4};
  remeasured.retimes = stored[1].id;
  this->Commit(remeasured);
  const std::string all = this->dir_.Path("all.jsonl");
  ASSERT_TRUE(ExportJsonLines(this->db_.get(), all).ok());
  ImportStats linked = ImportJsonLines(merged.get(), all).value();
  EXPECT_EQ(linked.imported, 1);
  EXPECT_EQ(linked.duplicates, 5);
  EXPECT_EQ(linked.links_dropped, 0);
  std::vector<TuningRecord> here = merged->AllRecords().value();
  const TuningRecord& imported = here.back();
  ASSERT_EQ(imported.run_secs, std::vector<double>{1.4e-4});
  ASSERT_GE(imported.retimes, 1);
  auto target = std::find_if(here.begin(), here.end(),
                             [&](const TuningRecord& r) { return r.id == imported.retimes; });
  ASSERT_NE(target, here.end());
  EXPECT_EQ(target->run_secs, stored[1].run_secs)
      << "linked to the merged database's copy of the record it re-times";
  EXPECT_EQ(target->trace_json, imported.trace_json);

  std::ifstream in(all);
  std::string last;
  for (std::string line; std::getline(in, line);) last = line;
  const std::string alone = this->dir_.Path("alone.jsonl");
  std::ofstream(alone) << last << "\n";
  std::unique_ptr<Database> fresh = this->OpenOther("fresh");
  ImportStats orphan = ImportJsonLines(fresh.get(), alone).value();
  EXPECT_EQ(orphan.imported, 1);
  EXPECT_EQ(orphan.links_dropped, 1);
  EXPECT_EQ(fresh->AllRecords().value()[0].retimes, 0) << "re-times a record not held here";
}

TYPED_TEST(DatabaseTest, ImportErrorsNameFileAndLineAndChangeNothing) {
  FillSample(this->db_.get());
  const std::string good = this->dir_.Path("good.jsonl");
  ASSERT_TRUE(ExportJsonLines(this->db_.get(), good).ok());
  std::ifstream in(good);
  std::string line1;
  std::getline(in, line1);

  struct Case {
    std::string second_line;
    std::string expected;
  };
  nlohmann::json bad_trace = nlohmann::json::parse(line1);
  bad_trace["trace_json"] = R"([[["Nope", [], [], []]], []])";
  nlohmann::json bad_args = nlohmann::json::parse(line1);
  bad_args["args"] = nlohmann::json::parse(R"([["TENSOR", "float99", [1]]])");
  nlohmann::json old = nlohmann::json::parse(line1);
  old["timestamp"] = 1.7e8;  // 1975
  nlohmann::json small = nlohmann::json::parse(line1);
  std::string func = small["workload_func"].dump();
  func.replace(func.find("[1,16,16]"), 9, "[1,16,4]");  // A read over 16 columns
  small["workload_func"] = nlohmann::json::parse(func);
  small.erase("args");
  nlohmann::json forged = nlohmann::json::parse(line1);
  forged["provenance"]["compiler"] = std::string(4096, 'c');
  for (const Case& c : {Case{"{not json", "malformed JSON"}, Case{R"({"workload": 3})", "workload"},
                        Case{bad_trace.dump(), "trace_json"}, Case{bad_args.dump(), "args[0][1]"},
                        Case{old.dump(), "timestamp: 170000000 (1975-05-22) is before 2020-01-01"},
                        Case{small.dump(), "outside its extent 4"},
                        Case{forged.dump(), "provenance.compiler: 4096 bytes"}}) {
    const std::string path = this->dir_.Path("bad.jsonl");
    std::ofstream(path) << line1 << "\n\n" << c.second_line << "\n";
    std::unique_ptr<Database> target = this->OpenOther("target");
    absl::Status status = ImportJsonLines(target.get(), path).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find(path + ":3: "), std::string::npos) << status;
    EXPECT_NE(status.message().find(c.expected), std::string::npos) << status;
    EXPECT_EQ(target->NumRecords().value(), 0);
  }
  const std::string missing = this->dir_.Path("missing.jsonl");
  absl::Status status = ImportJsonLines(this->db_.get(), missing).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find(missing), std::string::npos) << status;
}

TYPED_TEST(DatabaseTest, ReaderThreadSeesWholeRecordsWhileWriterCommits) {
  Workload w = this->Commit(SmallGmm(16));
  const std::string cpu = CpuTarget(), trace = TileTrace(16, 1, 4);
  constexpr int kRecords = 200;
  std::atomic<bool> done = false;
  std::thread writer([&] {
    for (int i = 0; i < kRecords; ++i) {
      EXPECT_TRUE(this->db_->CommitRecord(MakeRecord(w, cpu, trace, {1e-3 - i * 1e-6})).ok());
    }
    done = true;
  });
  int64_t last = 0;
  while (!done) {
    int64_t n = this->db_->NumRecords().value();
    EXPECT_GE(n, last);
    last = n;
    std::vector<TuningRecord> top = this->db_->TopK(w, cpu, 3).value();
    for (const TuningRecord& r : top) {
      EXPECT_EQ(r.trace_json, trace);
      EXPECT_EQ(r.run_secs.size(), 1u);
    }
  }
  writer.join();
  EXPECT_EQ(this->db_->NumRecords().value(), kRecords);
  EXPECT_DOUBLE_EQ(this->TopTimes(w, cpu, 1)[0], 1e-3 - (kRecords - 1) * 1e-6);
}

}  // namespace
}  // namespace tessera
