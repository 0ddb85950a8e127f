// `tessera best|topk|apply --server ADDR` (cli/remote_records.cc): a server started on a
// database that a local `tessera tune` filled answers the record commands with the output they
// give on that database file directly (--db), and their failures are one-line errors.
#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

constexpr char kSmallGmm[] = "GMM:M=16,N=16,K=16";

class RemoteRecordsTest : public OneServerTest {
 protected:
  // Eight trials of kSmallGmm tuned into the records database the server will serve.
  void BeforeServerStarts() override {
    CommandResult tune = cluster_->Run(
        {"tune", kSmallGmm, "--db", cluster_->db_path(), "--trials", "8", "--trials-per-iter", "4",
         "--threads", "1", "--repeat", "1", "--min-repeat-ms", "0"},
        300);
    ASSERT_EQ(tune.exit_code, 0) << tune.err;
  }
  // The command's stdout, answered by the server and by the database file; both must succeed.
  std::pair<std::string, std::string> Both(const std::vector<std::string>& args) {
    CommandResult remote = cluster_->RunClient(args, 60);
    EXPECT_EQ(remote.exit_code, 0) << remote.err;
    std::vector<std::string> local = args;
    local.push_back("--db");
    local.push_back(cluster_->db_path());
    CommandResult file = cluster_->Run(local, 60);
    EXPECT_EQ(file.exit_code, 0) << file.err;
    return {remote.out, file.out};
  }
};

// The records as (id, mean seconds, verified), in order.
std::vector<std::tuple<int64_t, double, bool>> Records(const std::string& json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << json_text;
  std::vector<std::tuple<int64_t, double, bool>> out;
  if (j.is_discarded()) return out;
  for (const nlohmann::json& r : j["records"]) {
    out.emplace_back(r["id"].get<int64_t>(), r["mean_seconds"].get<double>(),
                     r["verified"].get<bool>());
  }
  return out;
}

TEST_F(RemoteRecordsTest, BestAndTopkGiveTheRecordsTheDatabaseHolds) {
  auto [remote_best, file_best] = Both({"best", kSmallGmm, "--json"});
  ASSERT_EQ(Records(remote_best).size(), 1u) << remote_best;
  EXPECT_EQ(Records(remote_best), Records(file_best));
  auto [remote_top, file_top] = Both({"topk", kSmallGmm, "-k", "3", "--all", "--json"});
  EXPECT_GE(Records(remote_top).size(), 1u) << remote_top;
  EXPECT_LE(Records(remote_top).size(), 3u) << remote_top;
  EXPECT_EQ(Records(remote_top), Records(file_top));
  // Text output names the same record.
  auto [remote_text, file_text] = Both({"best", kSmallGmm});
  EXPECT_EQ(FirstLine(remote_text), FirstLine(file_text));
}

TEST_F(RemoteRecordsTest, ApplySchedulesTheWorkloadAsTheDatabaseFileDoes) {
  auto [remote, file] = Both({"apply", kSmallGmm});
  EXPECT_FALSE(remote.empty());
  EXPECT_EQ(remote, file);
}

TEST_F(RemoteRecordsTest, FailuresAreOneLineErrors) {
  ExpectOneLineError(cluster_->RunClient({"best", "GMM:M=64,N=64,K=64"}), "no verified record",
                     "best without records");
  ExpectOneLineError(cluster_->RunClient({"best", "GMM", "--db", cluster_->dir() + "/x.db"}),
                     "either --db FILE or --server ADDR", "both --db and --server");
  ExpectOneLineError(cluster_->RunClient({"topk", "NOPE:M=3"}), "NOPE", "unknown workload");
}

}  // namespace
}  // namespace testing
}  // namespace tessera
