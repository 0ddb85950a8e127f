// What an operator reads off a running service, end to end on loopback: a real `tessera serve
// --metrics-listen` and a real `tessera worker` finish one small job, then the Prometheus
// endpoint is scraped over HTTP (server/metrics.h) and `tessera report --server` writes the
// report from the server's records (cli/report_command.cc), stage times included. One job serves
// every test.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

constexpr char kGmm[] = "GMM:M=32,N=32,K=32";
constexpr int kTrials = 8;

// GET http://127.0.0.1:port/path with HTTP/1.0 (the server closes after the answer); the
// whole answer, headers included, or "" when the connection fails. Bounded by 10 s timeouts.
std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request =
        absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\nAccept: text/plain\r\n\r\n");
    if (send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) answer.append(buf, n);
    }
  }
  close(fd);
  return answer;
}

// The samples of a text exposition: "name{labels}" -> value (comments skipped).
std::map<std::string, double> ParseSamples(const std::string& text) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    double value = 0;
    if (absl::SimpleAtod(line.substr(space + 1), &value)) {
      samples[std::string(line.substr(0, space))] = value;
    }
  }
  return samples;
}

// The sum of every sample of `name` (any labels), and how many there are.
std::pair<double, int> SumOf(const std::map<std::string, double>& samples,
                             const std::string& name) {
  double sum = 0;
  int count = 0;
  for (const auto& [key, value] : samples) {
    if (key == name || key.rfind(name + "{", 0) == 0) {
      sum += value;
      ++count;
    }
  }
  return {sum, count};
}

class ObservabilityTest : public ::testing::Test {
 protected:
  // One server, one worker, one finished job for the whole suite.
  static void SetUpTestSuite() {
    cluster_ = new ServiceCluster(TesseraBinary(), ScratchDir("ObservabilityTest"));
    absl::Status started = cluster_->StartServer({"--metrics-listen", "127.0.0.1:0"});
    if (!started.ok()) {
      setup_error_ = absl::StrCat("server: ", started.ToString(), "\n", cluster_->Logs());
      return;
    }
    // "metrics on http://127.0.0.1:PORT/metrics"
    absl::StatusOr<std::string> line = cluster_->server()->WaitForLine("metrics on ", 10);
    const size_t colon = line.ok() ? line->rfind(':') : std::string::npos;
    if (colon == std::string::npos ||
        !absl::SimpleAtoi(line->substr(colon + 1, line->find('/', colon) - colon - 1),
                          &metrics_port_)) {
      setup_error_ = absl::StrCat("no metrics line: ", line.status().ToString());
      return;
    }
    if (!cluster_->StartWorker({"--max-candidates", "4"}).ok()) {
      setup_error_ = "worker did not start\n" + cluster_->Logs();
      return;
    }
    std::string error;
    job_ = Submit(cluster_,
                  // No runoff: the metrics' measured candidates equal the records only without
                  // it (a runoff round measures 6 candidates and stores 2 records).
                  {kGmm, "--trials", std::to_string(kTrials), "--trials-per-iter", "4", "--seed",
                   "3", "--no-runoff"},
                  &error);
    if (job_.empty()) {
      setup_error_ = "submit: " + error;
      return;
    }
    CommandResult watch = cluster_->RunClient({"watch", job_}, 240);
    if (watch.exit_code != 0) setup_error_ = "watch: " + watch.err + "\n" + cluster_->Logs();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(setup_error_.empty()) << setup_error_; }

  static ServiceCluster* cluster_;
  static int metrics_port_;
  static std::string job_;
  static std::string setup_error_;
};

ServiceCluster* ObservabilityTest::cluster_ = nullptr;
int ObservabilityTest::metrics_port_ = 0;
std::string ObservabilityTest::job_;
std::string ObservabilityTest::setup_error_;

TEST_F(ObservabilityTest, MetricsCountTheFinishedJob) {
  const std::string answer = HttpGet(metrics_port_, "/metrics");
  ASSERT_EQ(answer.rfind("HTTP/1.", 0), 0u) << answer;
  EXPECT_NE(answer.find(" 200 "), std::string::npos) << answer.substr(0, 200);
  const std::string body = answer.substr(answer.find("\r\n\r\n") + 4);
  EXPECT_NE(body.find("# HELP tessera_candidates_measured_total "), std::string::npos) << body;
  std::map<std::string, double> samples = ParseSamples(body);

  EXPECT_EQ(samples["tessera_jobs{state=\"succeeded\"}"], 1) << body;
  EXPECT_EQ(samples["tessera_jobs{state=\"running\"}"], 0) << body;
  EXPECT_EQ(samples["tessera_workers"], 1) << body;
  // Every stored record of the job was measured once by the worker and counted once.
  absl::StatusOr<std::vector<StoredRecord>> records = ReadRecords(cluster_->db_path(), job_);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_FALSE(records->empty());
  int failed = 0;
  for (const StoredRecord& r : *records) failed += r.ok ? 0 : 1;
  auto [measured, targets] = SumOf(samples, "tessera_candidates_measured_total");
  EXPECT_EQ(measured, static_cast<double>(records->size())) << body;
  EXPECT_EQ(targets, 1) << body;
  EXPECT_EQ(SumOf(samples, "tessera_measure_errors_total").first, failed) << body;
  EXPECT_EQ(samples["tessera_lease_expiries_total"], 0) << body;
  EXPECT_GT(samples["tessera_candidate_build_seconds_total"], 0) << body;
  EXPECT_GT(samples["tessera_candidate_run_seconds_total"], 0) << body;
  // The queue drained; the latency histograms saw the calls that ran the job.
  EXPECT_EQ(SumOf(samples, "tessera_queued_candidates").first, 0) << body;
  EXPECT_GE(samples["tessera_rpc_duration_seconds_count{method=\"TuningService/SubmitJob\"}"], 1)
      << body;
  EXPECT_GE(samples["tessera_rpc_duration_seconds_count{method=\"WorkerService/ReportResults\"}"],
            1)
      << body;
  EXPECT_GE(samples["tessera_rpcs_total{code=\"OK\",method=\"WorkerService/RegisterWorker\"}"], 1)
      << body;
}

TEST_F(ObservabilityTest, UnknownPathIsNotFound) {
  const std::string answer = HttpGet(metrics_port_, "/nothing-here");
  EXPECT_NE(answer.find(" 404 "), std::string::npos) << answer.substr(0, 200);
}

TEST_F(ObservabilityTest, ReportFromTheServerMatchesTheReportFromItsDatabase) {
  const std::string remote = cluster_->dir() + "/remote.html";
  CommandResult r = cluster_->RunClient({"report", "-o", remote});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  CommandResult local =
      cluster_->Run({"report", "--db", cluster_->db_path(), "-o", cluster_->dir() + "/local.html"});
  ASSERT_EQ(local.exit_code, 0) << local.out << local.err;
  // "wrote FILE: 1 task, N trials": the same tasks and trials both ways.
  auto counts = [](const std::string& out) { return out.substr(out.find(": ")); };
  EXPECT_EQ(counts(r.out), counts(local.out)) << r.out << local.out;
  EXPECT_NE(r.out.find(": 1 task, "), std::string::npos) << r.out;
  std::ifstream in(remote);
  std::stringstream html;
  html << in.rdbuf();
  EXPECT_NE(html.str().find("<section class=\"task\""), std::string::npos);
  EXPECT_NE(html.str().find(absl::StrCat("server ", cluster_->address())), std::string::npos);
  EXPECT_NE(html.str().find(job_), std::string::npos);
  // Stage times went from the worker daemons through the server's records and ExportRecords.
  EXPECT_NE(html.str().find("<table class=\"stages\">"), std::string::npos);
  EXPECT_EQ(html.str().find("stored without stage times"), std::string::npos);
}

TEST_F(ObservabilityTest, ReportNeedsExactlyOneSource) {
  CommandResult both = cluster_->RunClient(
      {"report", "--db", cluster_->db_path(), "-o", cluster_->dir() + "/x.html"});
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("give either --db DB or --server ADDR"), std::string::npos) << both.err;
  CommandResult unreachable = cluster_->Run({"report", "--server", "127.0.0.1:1", "--rpc-timeout",
                                             "5", "-o", cluster_->dir() + "/y.html"});
  EXPECT_EQ(unreachable.exit_code, 1);
  EXPECT_NE(unreachable.err.find("UNAVAILABLE"), std::string::npos) << unreachable.err;
}

}  // namespace
}  // namespace testing
}  // namespace tessera
