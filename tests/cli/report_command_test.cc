// `tessera report` end to end, and `--db` as a PostgreSQL URL through the commands that open
// the database themselves (tune, best, report), on a throw-away PostgreSQL cluster
// (tests/database/postgres_cluster.h; those tests skip, saying why, without the server
// binaries).
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/database/database_testing.h"
#include "tests/database/postgres_cluster.h"

namespace tessera {
namespace {

using ::tessera::testing::PostgresCluster;
using ::tessera::testing::TempDir;

struct Output {
  int exit_code = -1;
  std::string text;  // stdout and stderr
};

// Runs `tessera <args>` (the binary built with this test, or $TESSERA_BINARY).
Output RunTessera(const std::string& args) {
  const char* binary = std::getenv("TESSERA_BINARY");
  std::string command =
      std::string(binary != nullptr && *binary ? binary : TESSERA_BINARY) + " " + args + " 2>&1";
  Output out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.text.append(buffer, n);
  int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

// Tunes two small workloads into `db` (8 trials each: a few seconds on the CPU).
void TuneTwo(const std::string& db, const std::string& work) {
  for (const char* workload : {"GMM:M=16,N=16,K=16", "GMM:M=32,N=16,K=8"}) {
    Output out = RunTessera(std::string("tune ") + workload + " --trials 8 --db '" + db +
                            "' --work-dir " + work);
    ASSERT_EQ(out.exit_code, 0) << out.text;
  }
}

TEST(ReportCommandTest, WritesOnePageWithOneCurvePerTask) {
  TempDir dir;
  const std::string db = dir.Path("tune.db"), page = dir.Path("report.html");
  TuneTwo(db, dir.Path("work"));
  Output out = RunTessera("report --db " + db + " -o " + page);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_EQ(out.text, "wrote " + page + ": 2 tasks, 16 trials\n");
  std::string html = ReadFile(page);
  EXPECT_EQ(Count(html, "<section class=\"task\""), 2u);
  EXPECT_EQ(Count(html, "<svg class=\"tuning-curve\""), 2u);
  EXPECT_NE(html.find("Records: " + db), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  // Each task's best schedule is the record `best` returns (the runoff's verdict included).
  for (const char* workload : {"GMM:M=16,N=16,K=16", "GMM:M=32,N=16,K=8"}) {
    Output best = RunTessera(std::string("best ") + workload + " --db " + db);
    ASSERT_EQ(best.exit_code, 0) << best.text;
    const size_t at = best.text.find("#1 record ");
    ASSERT_NE(at, std::string::npos) << best.text;
    const std::string id =
        best.text.substr(at + 10, best.text.find_first_not_of("0123456789", at + 10) - at - 10);
    EXPECT_EQ(Count(html, "<th>record</th><td>" + id + ", measured"), 1u) << workload << " " << id;
  }
  // An anchor for the first workload on the CPU: a row under its best schedule.
  const std::string anchors = dir.Path("anchors.jsonl");
  std::ofstream(anchors) << "\n{\"workload\": \"GMM:M=16,N=16,K=16\", \"target\": \"cpu\", "
                            "\"name\": \"test library\", \"seconds\": 1e-5}\n";
  out = RunTessera("report --db " + db + " -o " + page + " --anchors " + anchors);
  ASSERT_EQ(out.exit_code, 0) << out.text;
  html = ReadFile(page);
  EXPECT_EQ(Count(html, "<th>anchor</th><td>test library: "), 1u);
  std::ofstream(anchors) << "{\"workload\": \"GMM\", \"target\": \"cpu\", \"name\": \"x\"}\n";
  out = RunTessera("report --db " + db + " -o " + page + " --anchors " + anchors);
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.text,
            "tessera: error: --anchors " + anchors + ":1: \"seconds\" must be a positive number\n");
}

// --model and --roofline on a tuned model: one kernel table (a row per extracted kernel, tuned
// or default) and the CPU tasks' rooflines, besides the usual sections.
TEST(ReportCommandTest, ModelTableAndRooflinesFromTheCommandLine) {
  TempDir dir;
  const std::string db = dir.Path("cnn.db"), page = dir.Path("report.html");
  const std::string model = std::string(TESSERA_SOURCE_DIR) + "/tests/frontend/data/cnn.onnx";
  Output out = RunTessera("tune " + model + " --db " + db +
                          " --trials 10 --trials-per-iter 2 --cost-model random --work-dir " +
                          dir.Path("work"));
  ASSERT_EQ(out.exit_code, 0) << out.text;
  const size_t tasks_at = out.text.find("tuning ");
  ASSERT_NE(tasks_at, std::string::npos) << out.text;
  const int kernels = std::atoi(out.text.c_str() + tasks_at + 7);  // "tuning 5 task(s)"
  ASSERT_GT(kernels, 0) << out.text;
  out = RunTessera("report --db " + db + " -o " + page + " --model " + model +
                   " --roofline cpu=100,10");
  ASSERT_EQ(out.exit_code, 0) << out.text;
  std::string html = ReadFile(page);
  EXPECT_EQ(Count(html, "<section class=\"model\""), 1u);
  EXPECT_NE(html.find("Model " + model), std::string::npos);
  EXPECT_EQ(Count(html, "<tr class=\"tuned\">") + Count(html, "<tr class=\"default\">"),
            static_cast<size_t>(kernels));
  EXPECT_GE(Count(html, "<tr class=\"tuned\">"), 1u) << "10 trials tune at least one kernel";
  // Every task is on the host CPU, so each that ran and has arithmetic has its roofline row.
  const size_t sections = Count(html, "<section class=\"task\"");
  EXPECT_EQ(Count(html, "<th>roofline</th>"),
            sections - Count(html, "No trial ran successfully") - Count(html, "<th>calls/s</th>"));
  EXPECT_GE(Count(html, "<line class=\"roofline\"") + Count(html, ": above the chart"), 1u);
  out = RunTessera("report --db " + db + " -o " + page + " --roofline cpu=fast");
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_NE(out.text.find("--roofline cpu=fast: not two numbers"), std::string::npos) << out.text;
}

TEST(ReportCommandTest, ErrorsAreOneLineAndWriteNothing) {
  TempDir dir;
  Output out = RunTessera("report --db " + dir.Path("tune.db") + " -o " +
                          dir.Path("no/such/dir/report.html"));
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.text, "tessera: error: report: cannot write " +
                          dir.Path("no/such/dir/report.html.tmp") + "\n");
  out = RunTessera("report --db 'postgresql://tessera:s3cret@/tuning?host=" + dir.Path("none") +
                   "' -o " + dir.Path("report.html"));
  EXPECT_EQ(out.exit_code, 1);
  EXPECT_EQ(out.text.find("s3cret"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("postgresql://tessera:***@/tuning"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("cannot connect"), std::string::npos) << out.text;
  EXPECT_EQ(std::count(out.text.begin(), out.text.end(), '\n'), 1) << out.text;
  std::ifstream page(dir.Path("report.html"));
  EXPECT_FALSE(page.good());
}

TEST(ReportCommandTest, PostgresUrlWorksWhereAFileDoes) {
  std::string why;
  PostgresCluster* cluster = PostgresCluster::Get(&why);
  if (cluster == nullptr) GTEST_SKIP() << "PostgreSQL: " << why;
  absl::StatusOr<std::string> url = cluster->NewDatabase();
  ASSERT_TRUE(url.ok()) << url.status();
  TempDir dir;
  TuneTwo(*url, dir.Path("work"));
  Output best = RunTessera("best GMM:M=16,N=16,K=16 --db '" + *url + "'");
  ASSERT_EQ(best.exit_code, 0) << best.text;
  EXPECT_NE(best.text.find("GFLOP/s, verified"), std::string::npos) << best.text;
  Output report = RunTessera("report --db '" + *url + "' -o " + dir.Path("report.html"));
  ASSERT_EQ(report.exit_code, 0) << report.text;
  EXPECT_NE(report.text.find(": 2 tasks, 16 trials"), std::string::npos) << report.text;
  EXPECT_EQ(Count(ReadFile(dir.Path("report.html")), "<svg class=\"tuning-curve\""), 2u);
  // Tuning again continues from the shared records: nothing is measured twice.
  Output again = RunTessera("tune GMM:M=16,N=16,K=16 --trials 8 --db '" + *url + "' --work-dir " +
                            dir.Path("work"));
  ASSERT_EQ(again.exit_code, 0) << again.text;
  report = RunTessera("report --db '" + *url + "' -o " + dir.Path("report.html"));
  EXPECT_NE(report.text.find(": 2 tasks, 24 trials"), std::string::npos) << report.text;
}

}  // namespace
}  // namespace tessera
