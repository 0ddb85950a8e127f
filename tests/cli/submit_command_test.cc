// `tessera submit` (cli/submit_command.cc) against a real server on loopback with no workers:
// what it prints, that the job is then listed with what it waits for, and its one-line errors
// with the gRPC status code. Model jobs (`submit MODEL`) with a worker: tuned through the
// service, `compile --server` gives the plan a local compile of the same records gives; bad
// models get the local import's error; the server's limits name their flags.
#include <fstream>
#include <sstream>

#include "tests/cli/service_test_util.h"

namespace tessera {
namespace testing {
namespace {

using SubmitCommandTest = OneServerTest;

TEST_F(SubmitCommandTest, SubmitPrintsTheJobIdAndTheJobIsListed) {
  CommandResult r = cluster_->RunClient(
      {"submit", "GMM:M=64,N=64,K=64", "--trials", "8", "--name", "small gmm", "--priority", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string job = FirstLine(r.out);
  EXPECT_FALSE(job.empty());
  EXPECT_EQ(CountLines(r.out), 1) << r.out;
  CommandResult jobs = cluster_->RunClient({"jobs"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_NE(jobs.out.find(job), std::string::npos) << jobs.out;
  EXPECT_NE(jobs.out.find("small gmm"), std::string::npos) << jobs.out;
  nlohmann::json status = JobStatus(cluster_.get(), job);
  ASSERT_FALSE(status.is_null());
  EXPECT_EQ(status["max_trials"], 8);
  EXPECT_EQ(status["priority"], 3);
  EXPECT_EQ(status["name"], "small gmm");
  // No worker serves cpu: the status says what the job waits for.
  ASSERT_TRUE(WaitUntil(
      [&] {
        nlohmann::json s = JobStatus(cluster_.get(), job);
        return !s.is_null() && !s["waiting_for"].get<std::string>().empty();
      },
      30));
  CommandResult text = cluster_->RunClient({"status", job});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("waiting for: "), std::string::npos) << text.out;
  CommandResult json =
      cluster_->RunClient({"submit", "GMM:M=64,N=64,K=64", "--trials", "8", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json parsed = nlohmann::json::parse(json.out, nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << json.out;
  EXPECT_FALSE(parsed["job_id"].get<std::string>().empty());
}

TEST_F(SubmitCommandTest, BadRequestsGetOneLineWithTheStatusCode) {
  ExpectOneLineError(cluster_->RunClient({"submit", "GMM", "--trials", "0"}), "INVALID_ARGUMENT",
                     "zero budget");
  ExpectOneLineError(cluster_->RunClient({"submit", "NOPE:M=3", "--trials", "8"}),
                     "INVALID_ARGUMENT", "unknown workload");
  ExpectOneLineError(cluster_->RunClient({"submit", "GMM", "--trials", "8", "--target", "tpu"}),
                     "INVALID_ARGUMENT", "unknown target");
}

const std::string kModel = std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/cnn.onnx";

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST_F(SubmitCommandTest, AModelTunedThroughTheServiceCompilesAsALocalCompileOfItsRecords) {
  ASSERT_TRUE(cluster_->StartWorker().ok()) << cluster_->Logs();
  CommandResult r = cluster_->RunClient(
      {"submit", kModel, "--trials", "8", "--trials-per-iter", "2", "--watch"}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err << cluster_->Logs();
  const std::string job = FirstLine(r.out);
  // Per task trials, default, best and gain (the columns of `tune`), and the model's estimate.
  EXPECT_NE(r.out.find("default         best    gain"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(kModel + ": estimated latency "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("; model ~"), std::string::npos) << r.err;
  nlohmann::json status = JobStatus(cluster_.get(), job);
  ASSERT_FALSE(status.is_null());
  EXPECT_EQ(status["model"], kModel);
  EXPECT_GT(status["estimated_latency_seconds"].get<double>(), 0) << status.dump();
  // The tasks `tessera tasks` lists, with their weights (the second convolution is called twice).
  ASSERT_EQ(status["tasks"].size(), 6u) << status.dump();
  int trials = 0;
  double weights = 0;
  for (const nlohmann::json& t : status["tasks"]) {
    trials += t["trials"].get<int>();
    weights += t["weight"].get<double>();
    EXPECT_TRUE(t["has_best"].get<bool>()) << t.dump();
  }
  EXPECT_EQ(trials, 8);
  EXPECT_EQ(weights, 7);

  const std::string dir = cluster_->dir();
  // The same records must give the same plan; the runoff in the model, which times kernels and
  // may decide either way for a near tie, is left out of the comparison.
  CommandResult remote =
      cluster_->RunClient({"compile", kModel, "--no-runoff", "-o", dir + "/remote"}, 300);
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  CommandResult local = cluster_->Run(
      {"compile", kModel, "--no-runoff", "--db", cluster_->db_path(), "-o", dir + "/local"}, 300);
  ASSERT_EQ(local.exit_code, 0) << local.err;
  EXPECT_NE(remote.out.find("tuned record"), std::string::npos) << remote.out;
  // The same records chosen, the same plan, the same kernels.
  EXPECT_EQ(remote.out.substr(remote.out.find('\n')), local.out.substr(local.out.find('\n')));
  nlohmann::json remote_plan = nlohmann::json::parse(ReadAll(dir + "/remote/plan.json"));
  nlohmann::json local_plan = nlohmann::json::parse(ReadAll(dir + "/local/plan.json"));
  EXPECT_EQ(remote_plan, local_plan);
  for (const nlohmann::json& k : local_plan["kernels"]) {
    const std::string source = k["artifact"].get<std::string>();
    const std::string c = source.substr(0, source.rfind('.')) + ".c";
    EXPECT_EQ(ReadAll(dir + "/remote/" + c), ReadAll(dir + "/local/" + c)) << c;
    EXPECT_FALSE(ReadAll(dir + "/local/" + c).empty()) << c;
  }
}

TEST_F(SubmitCommandTest, BadModelsGetTheLocalImportsErrorInOneLine) {
  const std::string dir = cluster_->dir();
  std::string bytes = ReadAll(kModel);
  // The first node's operator renamed (the same length keeps the protobuf valid).
  bytes.replace(bytes.find("\x22\x04Relu"), 6, "\x22\x04Relv");
  const std::string unsupported = WriteAll(dir + "/relv.onnx", bytes);
  const std::string notes = WriteAll(dir + "/notes.onnx", "hello\n");
  struct Case {
    std::vector<std::string> model;
    std::string code;
  };
  for (const Case& c : {Case{{unsupported}, "UNIMPLEMENTED"}, Case{{notes}, "INVALID_ARGUMENT"},
                        Case{{kModel, "--input-shape", "x=1,2"}, "INVALID_ARGUMENT"}}) {
    std::vector<std::string> tasks = {"tasks"};
    tasks.insert(tasks.end(), c.model.begin(), c.model.end());
    CommandResult here = cluster_->Run(tasks);
    ASSERT_EQ(here.exit_code, 1) << here.err;
    const std::string message = here.err.substr(std::string("tessera: error: ").size());
    std::vector<std::string> submit = {"submit", "--trials", "8"};
    submit.insert(submit.end(), c.model.begin(), c.model.end());
    CommandResult there = cluster_->RunClient(submit);
    ExpectOneLineError(there, c.code, c.model[0]);
    EXPECT_EQ(there.err, absl::StrCat("tessera: error: submit: ", c.code, ": ", message));
  }
  EXPECT_NE(cluster_->Run({"tasks", unsupported}).err.find("(Relv): unsupported operator"),
            std::string::npos);
  ExpectOneLineError(cluster_->RunClient({"submit", kModel, "GMM", "--trials", "8"}),
                     "alone submits the model", "a model and a workload");
}

TEST(SubmitModelLimitsTest, AModelBeyondTheServersLimitsIsRefusedNamingTheFlag) {
  ServiceCluster cluster(TesseraBinary(), ScratchDir("model_limits"));
  struct Case {
    std::vector<std::string> flags;
    std::string named;
  };
  for (const Case& c : {Case{{"--max-model-bytes", "1000"}, "--max-model-bytes"},
                        Case{{"--max-job-workloads", "5"}, "--max-job-workloads"},
                        Case{{"--max-buffer-bytes", "1000"}, "--max-buffer-bytes"}}) {
    ASSERT_TRUE(cluster.StartServer(c.flags).ok()) << cluster.Logs();
    CommandResult r = cluster.RunClient({"submit", kModel, "--trials", "8"});
    ExpectOneLineError(r, "INVALID_ARGUMENT", c.named);
    EXPECT_NE(r.err.find(c.named), std::string::npos) << r.err;
    ASSERT_TRUE(cluster.StopServer().ok());
  }
  // Above gRPC's 64 MiB but within --max-model-bytes: it arrives, and the import judges it.
  const std::string big = WriteAll(cluster.dir() + "/big.onnx", std::string(size_t{70} << 20, 'x'));
  ASSERT_TRUE(cluster.StartServer({"--max-model-bytes", std::to_string(80 << 20)}).ok());
  CommandResult r = cluster.RunClient({"submit", big, "--trials", "8"});
  ExpectOneLineError(r, "INVALID_ARGUMENT", "a 70 MiB model");
  EXPECT_NE(r.err.find("big.onnx: not an ONNX model"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace testing
}  // namespace tessera
