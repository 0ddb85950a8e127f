// Smoke tests of the third-party packages Tessera builds on: each one links, starts and does a
// small piece of real work on this machine (no mocks). A failure here means the machine's set-up
// is broken (see scripts/setup.sh), not Tessera.
#include <link.h>
#include <omp.h>
#include <sqlite3.h>
#include <unistd.h>
#include <xgboost/c_api.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "onnx/onnx_pb.h"
#include "proto/tessera.grpc.pb.h"
#include "proto/tessera.pb.h"

#if defined(TESSERA_TEST_OPENBLAS)
#include <cblas.h>
#endif
#if defined(TESSERA_WITH_CUDA)
#include <nvrtc.h>
#endif
// libpq, the PostgreSQL client (the records database a fleet shares).
#include <libpq-fe.h>

namespace {

// ---------------------------------------------------------------------------------------------
// SQLite: a file database in WAL mode (as the tuning database uses it), prepared insert/select.

// A database path unique to this process; removes the file and its WAL side files.
class TempDbPath {
 public:
  TempDbPath()
      : path_(::testing::TempDir() + "tessera_deps_test_" + std::to_string(getpid()) + ".db") {
    Remove();
  }
  ~TempDbPath() { Remove(); }
  const std::string& path() const { return path_; }

 private:
  void Remove() const {
    for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path_ + suffix).c_str());
  }
  std::string path_;
};

using StmtPtr = std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)>;

StmtPtr Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) stmt = nullptr;
  return StmtPtr(stmt, &sqlite3_finalize);
}

TEST(SqliteDepsTest, WalDatabaseStoresAndReadsRows) {
  TempDbPath file;
  sqlite3* raw_db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(file.path().c_str(), &raw_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                            nullptr),
            SQLITE_OK);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw_db, &sqlite3_close);

  StmtPtr wal = Prepare(db.get(), "PRAGMA journal_mode=WAL");
  ASSERT_NE(wal, nullptr) << sqlite3_errmsg(db.get());
  ASSERT_EQ(sqlite3_step(wal.get()), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(wal.get(), 0)), "wal");

  ASSERT_EQ(sqlite3_exec(db.get(),
                         "CREATE TABLE records (workload TEXT NOT NULL, seconds REAL, trace BLOB)",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db.get());
  StmtPtr insert = Prepare(db.get(), "INSERT INTO records VALUES (?1, ?2, ?3)");
  ASSERT_NE(insert, nullptr) << sqlite3_errmsg(db.get());
  const std::vector<double> seconds = {3e-4, 1e-4, 2e-4};
  for (size_t i = 0; i < seconds.size(); ++i) {
    const std::string trace = "trace-" + std::to_string(i);
    sqlite3_bind_text(insert.get(), 1, "GMM", -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(insert.get(), 2, seconds[i]);
    sqlite3_bind_blob(insert.get(), 3, trace.data(), static_cast<int>(trace.size()),
                      SQLITE_TRANSIENT);
    ASSERT_EQ(sqlite3_step(insert.get()), SQLITE_DONE) << sqlite3_errmsg(db.get());
    sqlite3_reset(insert.get());
  }

  StmtPtr select = Prepare(db.get(),
                           "SELECT seconds, trace, (SELECT COUNT(*) FROM records) FROM records "
                           "WHERE workload = ?1 ORDER BY seconds LIMIT 1");
  ASSERT_NE(select, nullptr) << sqlite3_errmsg(db.get());
  sqlite3_bind_text(select.get(), 1, "GMM", -1, SQLITE_STATIC);
  ASSERT_EQ(sqlite3_step(select.get()), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_double(select.get(), 0), 1e-4);
  const std::string best_trace(static_cast<const char*>(sqlite3_column_blob(select.get(), 1)),
                               sqlite3_column_bytes(select.get(), 1));
  EXPECT_EQ(best_trace, "trace-1");
  EXPECT_EQ(sqlite3_column_int(select.get(), 2), 3);
  EXPECT_EQ(sqlite3_step(select.get()), SQLITE_DONE);
}

// ---------------------------------------------------------------------------------------------
// XGBoost C API: train a small regression with one thread, predict, save/load the model.

#define XGB_ASSERT_OK(call) ASSERT_EQ((call), 0) << #call << ": " << XGBGetLastError()

struct DMatrixDeleter {
  void operator()(void* h) const { XGDMatrixFree(h); }
};
struct BoosterDeleter {
  void operator()(void* h) const { XGBoosterFree(h); }
};
using DMatrix = std::unique_ptr<void, DMatrixDeleter>;
using Booster = std::unique_ptr<void, BoosterDeleter>;

void Predict(BoosterHandle booster, DMatrixHandle data, std::vector<float>* out) {
  bst_ulong len = 0;
  const float* result = nullptr;
  XGB_ASSERT_OK(XGBoosterPredict(booster, data, /*option_mask=*/0, /*ntree_limit=*/0,
                                 /*training=*/0, &len, &result));
  out->assign(result, result + len);
}

// libpq (the PostgreSQL records database): the client library of PostgreSQL 15, thread-safe,
// and a connection to a server that is not there fails with a message instead of blocking.
TEST(LibpqDepsTest, ClientLibraryIsThreadSafeAndReportsAMissingServer) {
  EXPECT_GE(PQlibVersion(), 150000);
  EXPECT_EQ(PQisthreadsafe(), 1);
  PGconn* conn = PQconnectdb("host=/nonexistent/tessera-socket-dir dbname=x connect_timeout=2");
  ASSERT_NE(conn, nullptr);
  EXPECT_EQ(PQstatus(conn), CONNECTION_BAD);
  EXPECT_NE(std::string(PQerrorMessage(conn)).find("/nonexistent/tessera-socket-dir"),
            std::string::npos)
      << PQerrorMessage(conn);
  PQfinish(conn);
}

TEST(XgboostDepsTest, RegressionLearnsAndSurvivesSaveLoad) {
  // y = 3*x0 - 2*x1 + x0*x1 on an 8 x 6 grid: 48 rows, 2 features.
  constexpr int kRows = 48;
  constexpr int kCols = 2;
  std::vector<float> x;
  std::vector<float> y;
  for (int i = 0; i < 8; ++i) {
    for (int j = 0; j < 6; ++j) {
      const float x0 = i / 7.0f;
      const float x1 = j / 5.0f;
      x.push_back(x0);
      x.push_back(x1);
      y.push_back(3 * x0 - 2 * x1 + x0 * x1);
    }
  }
  DMatrixHandle raw_data = nullptr;
  XGB_ASSERT_OK(XGDMatrixCreateFromMat(x.data(), kRows, kCols, NAN, &raw_data));
  DMatrix data(raw_data);
  XGB_ASSERT_OK(XGDMatrixSetFloatInfo(data.get(), "label", y.data(), kRows));

  BoosterHandle raw_booster = nullptr;
  DMatrixHandle train_set[] = {data.get()};
  XGB_ASSERT_OK(XGBoosterCreate(train_set, 1, &raw_booster));
  Booster booster(raw_booster);
  const std::pair<const char*, const char*> params[] = {
      {"nthread", "1"},  {"objective", "reg:squarederror"}, {"max_depth", "3"},
      {"eta", "0.3"},    {"tree_method", "hist"},           {"seed", "0"},
      {"verbosity", "0"}};
  for (const auto& [key, value] : params) {
    XGB_ASSERT_OK(XGBoosterSetParam(booster.get(), key, value));
  }
  for (int iter = 0; iter < 30; ++iter) {
    XGB_ASSERT_OK(XGBoosterUpdateOneIter(booster.get(), iter, data.get()));
  }

  std::vector<float> pred;
  ASSERT_NO_FATAL_FAILURE(Predict(booster.get(), data.get(), &pred));
  ASSERT_EQ(pred.size(), static_cast<size_t>(kRows));
  double mean = 0;
  for (float v : y) mean += v / kRows;
  double baseline_sq = 0;  // error of always predicting the mean
  double model_sq = 0;
  for (int r = 0; r < kRows; ++r) {
    baseline_sq += (y[r] - mean) * (y[r] - mean);
    model_sq += (y[r] - pred[r]) * (y[r] - pred[r]);
  }
  const double baseline_rmse = std::sqrt(baseline_sq / kRows);
  const double model_rmse = std::sqrt(model_sq / kRows);
  EXPECT_LT(model_rmse, 0.2 * baseline_rmse)
      << "model RMSE " << model_rmse << ", predicting the mean " << baseline_rmse;

  // JSON model round trip (the cost model persists itself this way).
  bst_ulong size = 0;
  const char* bytes = nullptr;
  XGB_ASSERT_OK(XGBoosterSaveModelToBuffer(booster.get(), R"({"format": "json"})", &size, &bytes));
  const std::string model(bytes, size);  // owned by the booster: copy before the next call
  ASSERT_EQ(model.front(), '{');
  BoosterHandle raw_loaded = nullptr;
  XGB_ASSERT_OK(XGBoosterCreate(nullptr, 0, &raw_loaded));
  Booster loaded(raw_loaded);
  XGB_ASSERT_OK(XGBoosterLoadModelFromBuffer(loaded.get(), model.data(), model.size()));
  XGB_ASSERT_OK(XGBoosterSetParam(loaded.get(), "nthread", "1"));
  std::vector<float> loaded_pred;
  ASSERT_NO_FATAL_FAILURE(Predict(loaded.get(), data.get(), &loaded_pred));
  ASSERT_EQ(loaded_pred.size(), pred.size());
  for (size_t r = 0; r < pred.size(); ++r) EXPECT_FLOAT_EQ(loaded_pred[r], pred[r]) << "row " << r;
}

// ---------------------------------------------------------------------------------------------
// gRPC + protobuf: the generated Tuner service, served and called in one process.

class FakeVersionTuner final : public tessera::v1::TuningService::Service {
 public:
  grpc::Status GetVersion(grpc::ServerContext* /*context*/, const tessera::v1::Empty* /*request*/,
                          tessera::v1::VersionInfo* reply) override {
    reply->set_version("1.2.3");
    reply->set_git_commit("0123456789abcdef");
    return grpc::Status::OK;
  }
};

TEST(GrpcDepsTest, ClientGetsVersionFromLocalServer) {
  FakeVersionTuner service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  ASSERT_GT(port, 0);

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);  // straight to 127.0.0.1 even if http_proxy is set
  std::unique_ptr<tessera::v1::TuningService::Stub> stub =
      tessera::v1::TuningService::NewStub(grpc::CreateCustomChannel(
          "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials(), args));
  for (int call = 0; call < 2; ++call) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    tessera::v1::VersionInfo reply;
    const grpc::Status status = stub->GetVersion(&context, tessera::v1::Empty(), &reply);
    ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
    EXPECT_EQ(reply.version(), "1.2.3");
    EXPECT_EQ(reply.git_commit(), "0123456789abcdef");
  }
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

TEST(ProtobufDepsTest, MessageSerializeParseRoundTrips) {
  tessera::v1::VersionInfo in;
  in.set_version("0.1.0");
  in.set_git_commit(std::string(40, 'f'));
  std::string bytes;
  ASSERT_TRUE(in.SerializeToString(&bytes));
  tessera::v1::VersionInfo out;
  ASSERT_TRUE(out.ParseFromString(bytes));
  EXPECT_EQ(out.version(), "0.1.0");
  EXPECT_EQ(out.git_commit(), std::string(40, 'f'));
  EXPECT_EQ(out.SerializeAsString(), bytes);
  EXPECT_EQ(tessera::v1::VersionInfo::descriptor()->full_name(), "tessera.v1.VersionInfo");
}

// ---------------------------------------------------------------------------------------------
// ONNX (libonnx-dev 1.12): its ModelProto messages, generated by Debian for the same protobuf,
// live in the one descriptor pool with ours and round-trip.

TEST(OnnxDepsTest, ModelProtoRoundTripsInTheSharedProtobuf) {
  onnx::ModelProto in;
  in.set_ir_version(8);
  in.add_opset_import()->set_version(17);
  onnx::NodeProto* node = in.mutable_graph()->add_node();
  node->set_op_type("Relu");
  node->add_input("x");
  node->add_output("y");
  std::string bytes;
  ASSERT_TRUE(in.SerializeToString(&bytes));
  onnx::ModelProto out;
  ASSERT_TRUE(out.ParseFromString(bytes));
  EXPECT_EQ(out.graph().node(0).op_type(), "Relu");
  EXPECT_EQ(out.opset_import(0).version(), 17);
  EXPECT_EQ(onnx::ModelProto::descriptor()->full_name(), "onnx.ModelProto");
  EXPECT_EQ(google::protobuf::DescriptorPool::generated_pool()->FindMessageTypeByName(
                tessera::v1::VersionInfo::descriptor()->full_name()),
            tessera::v1::VersionInfo::descriptor());
}

// ---------------------------------------------------------------------------------------------
// abseil (Debian's 20220623: absl::StatusOr, no absl::log).

absl::StatusOr<int> HalfOfEven(int n) {
  if (n % 2 != 0) return absl::InvalidArgumentError("odd: " + std::to_string(n));
  return n / 2;
}

TEST(AbseilDepsTest, StatusOrCarriesValueOrError) {
  const absl::StatusOr<int> half = HalfOfEven(10);
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(*half, 5);

  const absl::StatusOr<int> odd = HalfOfEven(7);
  ASSERT_FALSE(odd.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(odd.status()));
  EXPECT_EQ(std::string(odd.status().message()), "odd: 7");
  EXPECT_EQ(odd.status().ToString(), "INVALID_ARGUMENT: odd: 7");
}

// ---------------------------------------------------------------------------------------------
// nlohmann-json (traces, records, IR serialization) and CLI11 (the command line).

TEST(NlohmannJsonDepsTest, DumpParseRoundTripIsExact) {
  const nlohmann::json record = {
      {"trace", {{{"SamplePerfectTile", {"l1"}, {4, 64}, {"v2", "v3"}}}, {{1, {8, 4, 2, 2}}}}},
      {"seconds", {1.0 / 3.0, 1e-7, 0.1}}};
  const std::string text = record.dump();
  const nlohmann::json back = nlohmann::json::parse(text);
  EXPECT_EQ(back, record);
  EXPECT_EQ(back["seconds"][0].get<double>(), 1.0 / 3.0);  // doubles round-trip bit-exactly
  EXPECT_EQ(back.dump(), text);
}

// The `tessera run WORKLOAD --target T [--check]` shape of the real command line.
struct RunCommand {
  CLI::App app{"tessera"};
  CLI::App* run = nullptr;
  std::string workload;
  std::string target = "cpu";
  bool check = false;

  RunCommand() {
    app.require_subcommand(1);
    run = app.add_subcommand("run", "Run a workload");
    run->add_option("workload", workload, "Workload name")->required();
    run->add_option("--target", target, "Target")->check(CLI::IsMember({"cpu", "cuda"}));
    run->add_flag("--check", check, "Check against the reference");
  }
};

TEST(Cli11DepsTest, ParsesSubcommandOptionsAndValidates) {
  RunCommand ok;
  const char* good[] = {"tessera", "run", "GMM", "--target", "cpu", "--check"};
  ASSERT_NO_THROW(ok.app.parse(6, good));
  EXPECT_TRUE(ok.run->parsed());
  EXPECT_EQ(ok.workload, "GMM");
  EXPECT_EQ(ok.target, "cpu");
  EXPECT_TRUE(ok.check);

  RunCommand bad;
  const char* wrong_target[] = {"tessera", "run", "GMM", "--target", "tpu"};
  EXPECT_THROW(bad.app.parse(5, wrong_target), CLI::ValidationError);
  EXPECT_FALSE(bad.app.help().empty());
}

// ---------------------------------------------------------------------------------------------
// OpenMP (also what XGBoost and the generated CPU kernels use).

TEST(OpenMpDepsTest, ParallelReductionSums) {
  long long sum = 0;
  int threads = 0;
#pragma omp parallel for reduction(+ : sum) reduction(max : threads) num_threads(2)
  for (int i = 1; i <= 1000; ++i) {
    sum += i;
    threads = omp_get_num_threads();
  }
  EXPECT_EQ(sum, 500500);
  EXPECT_GE(threads, 1);
}

#if defined(TESSERA_TEST_OPENBLAS)
// OpenBLAS: the benchmarks' CPU anchor.
TEST(OpenBlasDepsTest, SgemmMultiplies) {
  const float a[4] = {1, 2, 3, 4};
  const float b[4] = {5, 6, 7, 8};
  float c[4] = {0, 0, 0, 0};
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0f, a, 2, b, 2, 0.0f, c, 2);
  EXPECT_FLOAT_EQ(c[0], 19);
  EXPECT_FLOAT_EQ(c[1], 22);
  EXPECT_FLOAT_EQ(c[2], 43);
  EXPECT_FLOAT_EQ(c[3], 50);
}
#endif

// ---------------------------------------------------------------------------------------------
// NVRTC: compiles CUDA C to a CUBIN for a given architecture; no GPU or driver needed.

bool IsLoaded(const char* name_part) {
  struct Search {
    const char* part;
    bool found;
  } search{name_part, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t /*size*/, void* data) {
        auto* s = static_cast<Search*>(data);
        if (info->dlpi_name != nullptr && std::strstr(info->dlpi_name, s->part) != nullptr) {
          s->found = true;
        }
        return 0;
      },
      &search);
  return search.found;
}

#if defined(TESSERA_WITH_CUDA)
constexpr const char* kAxpySource = R"(
extern "C" __global__ void axpy(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

class NvrtcDepsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(NvrtcDepsTest, CompilesKernelToCubin) {
  nvrtcProgram program;
  ASSERT_EQ(nvrtcCreateProgram(&program, kAxpySource, "axpy.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const std::string arch = std::string("--gpu-architecture=") + GetParam();
  const char* options[] = {arch.c_str()};
  const nvrtcResult result = nvrtcCompileProgram(program, 1, options);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  nvrtcGetProgramLog(program, log.data());
  EXPECT_EQ(result, NVRTC_SUCCESS) << nvrtcGetErrorString(result) << "\n" << log;
  size_t cubin_size = 0;
  EXPECT_EQ(nvrtcGetCUBINSize(program, &cubin_size), NVRTC_SUCCESS);
  std::string cubin(cubin_size, '\0');
  if (cubin_size > 0) {
    EXPECT_EQ(nvrtcGetCUBIN(program, cubin.data()), NVRTC_SUCCESS);
  }
  nvrtcDestroyProgram(&program);
  ASSERT_GT(cubin_size, 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
}

INSTANTIATE_TEST_SUITE_P(Archs, NvrtcDepsTest, ::testing::Values("sm_80", "sm_90"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// docs/deps.md T1: linking NVRTC must not drag in libcuda (the driver is dlopen()ed when needed),
// or binaries cannot start on machines without a GPU driver.
TEST(NvrtcLinkDepsTest, LibcudaIsNotLoaded) {
  EXPECT_TRUE(IsLoaded("libnvrtc.so"));
  EXPECT_FALSE(IsLoaded("libcuda.so"));
}
#else
TEST(NvrtcLinkDepsTest, LibcudaIsNotLoaded) {
  EXPECT_FALSE(IsLoaded("libcuda.so"));
  GTEST_SKIP() << "built without CUDA (TESSERA_WITH_CUDA is off): NVRTC not tested";
}
#endif

}  // namespace
