// RenderReportHtml: what the page says, and the page as a browser lays it out. The browser
// test renders the report in headless Chromium with a checking script appended (the report
// itself has none), which measures every task's charts after layout and writes what it found
// into the DOM that Chromium dumps; a screenshot is taken too. Skips without Chromium.
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "database/database.h"
#include "gtest/gtest.h"
#include "report/report.h"
#include "tests/database/database_testing.h"

namespace tessera {
namespace {

using ::tessera::testing::CpuTarget;
using ::tessera::testing::MakeFailedRecord;
using ::tessera::testing::MakeRecord;
using ::tessera::testing::Sm80Target;
using ::tessera::testing::SmallGmm;
using ::tessera::testing::TempDir;
using ::tessera::testing::TileTrace;

// Three tasks that ran (GMM 16 and 32 on the CPU, GMM 16 on sm_80) and one whose every trial
// failed (GMM 8 on the CPU), with error messages that need escaping. The tasks that ran have
// stage times (builds dominate GMM 32's, runs GMM 16's on sm_80); GMM 8's records were stored
// without any. `db`: where the records stay, when the caller wants them.
std::vector<ReportTask> SampleTasks(std::unique_ptr<Database>* db_out = nullptr) {
  std::unique_ptr<Database> db = NewMemoryDatabase();
  Workload w16 = db->CommitWorkload(SmallGmm(16)).value();
  Workload w32 = db->CommitWorkload(SmallGmm(32)).value();
  Workload w8 = db->CommitWorkload(SmallGmm(8)).value();
  const std::vector<double> times = {4e-4, 3e-4, 3.5e-4, 1e-4, 2e-4, 1.5e-4};
  for (size_t i = 0; i < times.size(); ++i) {
    int loop = 1 + static_cast<int>(i % 3);
    int64_t inner = i < 3 ? 2 : 4;
    TuningRecord cpu16 = MakeRecord(w16, CpuTarget(), TileTrace(16, loop, inner), {times[i]});
    cpu16.stage_secs = StageSeconds{0.4, 0.2, i == 3 ? 0.3 : 0, 0.1};
    db->CommitRecord(cpu16).value();
    TuningRecord cpu32 = MakeRecord(w32, CpuTarget(), TileTrace(32, loop, inner), {8 * times[i]});
    cpu32.stage_secs = StageSeconds{2.0, 0.1, 0, 0.05};
    db->CommitRecord(cpu32).value();
    TuningRecord sm80 = MakeRecord(w16, Sm80Target(), TileTrace(16, loop, inner), {times[i] / 20});
    sm80.stage_secs = StageSeconds{0.3, 1.5, 0.1, 0.1};
    db->CommitRecord(sm80).value();
  }
  db->CommitRecord(MakeFailedRecord(w16, CpuTarget(), TileTrace(16, 1, 8),
                                    "build: <stdin>:3: error: expected ';' & \"more\""))
      .value();
  for (auto [inner, message] : {std::pair<int64_t, const char*>{2, "run: kernel crashed"},
                                {4, "run: timed out after 2s"}}) {
    TuningRecord old = MakeFailedRecord(w8, CpuTarget(), TileTrace(8, 1, inner), message);
    old.stage_secs = StageSeconds{};
    db->CommitRecord(old).value();
  }
  std::vector<ReportTask> tasks = SummarizeTasks(db.get()).value();
  if (db_out != nullptr) *db_out = std::move(db);
  return tasks;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) {
    ++n;
  }
  return n;
}

TEST(HtmlTest, PageHasASectionAndTwoChartsPerTaskAndEscapesText) {
  std::vector<ReportTask> tasks = SampleTasks();
  ASSERT_EQ(tasks.size(), 4u);
  ReportOptions options;
  options.source = "tune<1>.db";
  std::string html = RenderReportHtml(tasks, options);
  EXPECT_EQ(Count(html, "<section class=\"task\""), 4u);
  EXPECT_EQ(Count(html, "<svg class=\"tuning-curve\""), 4u);
  EXPECT_EQ(Count(html, "<svg class=\"time-curve\""), 4u);
  EXPECT_EQ(Count(html, "<path class=\"curve-line\""), 6u) << "two curves per task that ran";
  EXPECT_EQ(Count(html, "no successful trial"), 2u);
  EXPECT_NE(html.find("tune&lt;1&gt;.db"), std::string::npos);
  EXPECT_NE(html.find("build: &lt;stdin&gt;:3: error: expected ';' &amp; &quot;more&quot;"),
            std::string::npos);
  EXPECT_EQ(html.find("<stdin>"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "the page is script-free";
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"))
      << "no external resource";
  EXPECT_NE(html.find("Split("), std::string::npos) << "the best trace, one instruction a line";
  EXPECT_NE(html.find("Intel Xeon (test)"), std::string::npos) << "provenance";
  EXPECT_EQ(Count(html, "<div class=\"bar stages\">"), 3u) << "the tasks with stage times";
  EXPECT_EQ(Count(html, "<table class=\"stages\">"), 3u);
  EXPECT_EQ(Count(html, "stored without stage times"), 1u) << "GMM 8's records";
}

// With the record `best` returns set (ApplyChosenRecords), the page shows it as the best
// schedule, says why it was chosen over a faster one and that a runoff changed it.
TEST(HtmlTest, TheBestScheduleIsTheRecordBestReturnsAndSaysWhatTheRunoffChanged) {
  std::unique_ptr<Database> db;
  std::vector<ReportTask> tasks = SampleTasks(&db);
  ASSERT_EQ(tasks.size(), 4u);
  ASSERT_TRUE(tasks[0].best.has_value());
  const TuningRecord fastest = *tasks[0].best;
  // The default schedule's record (say, the slowest trial) timed again by a runoff.
  std::vector<TuningRecord> all = db->AllRecords().value();
  TuningRecord retimed = all[0];
  retimed.run_secs = {1.02e-4};
  retimed.retimes = all[0].id;
  retimed.id = db->CommitRecord(retimed).value();
  ASSERT_TRUE(ApplyChosenRecords(
                  [&](const ReportTask& t) -> absl::StatusOr<ChosenRecords> {
                    ChosenRecords out;
                    if (&t != &tasks[0]) return out;
                    out.chosen = retimed;
                    out.passed_over = fastest;
                    out.before_runoff = fastest;
                    return out;
                  },
                  &tasks)
                  .ok());
  EXPECT_FALSE(tasks[1].chosen.has_value());
  const std::string html = RenderReportHtml(tasks, ReportOptions());
  EXPECT_NE(html.find(absl::StrCat("<th>record</th><td>", retimed.id, ", measured")),
            std::string::npos)
      << "the chosen record is the one shown";
  EXPECT_NE(html.find(absl::StrCat("the default schedule: record ", fastest.id)),
            std::string::npos);
  EXPECT_NE(html.find(absl::StrCat("a runoff changed the best: record ", fastest.id)),
            std::string::npos);
  EXPECT_NE(html.find(absl::StrCat("a runoff, re-measuring record ", all[0].id)),
            std::string::npos);
  EXPECT_EQ(Count(html, "a runoff changed the best"), 1u) << "only the task it happened to";
}

// The first of `names` found in PATH, or "".
std::string FindProgram(const std::vector<std::string>& names) {
  const char* path = getenv("PATH");
  std::stringstream dirs(path == nullptr ? "/usr/bin" : path);
  std::vector<std::string> list;
  for (std::string d; std::getline(dirs, d, ':');) list.push_back(d);
  for (const std::string& name : names) {
    for (const std::string& d : list) {
      std::string candidate = d + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0) return candidate;
    }
  }
  return "";
}

// Runs `command` (bounded by `timeout`); returns its stdout and sets `*status`.
std::string RunCommand(const std::string& command, int* status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *status = -1;
    return out;
  }
  char buf[8192];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  *status = pclose(pipe);
  return out;
}

// Appended to the page under test only: per task section, the laid-out size of its charts,
// the length of each curve as drawn, and the dots, as JSON in <pre id="check">.
constexpr const char* kCheckScript = R"js(<script>
const found = [];
for (const section of document.querySelectorAll('section.task')) {
  const one = {id: section.id, title: section.querySelector('h2').textContent, charts: []};
  for (const svg of section.querySelectorAll('svg')) {
    const box = svg.getBoundingClientRect();
    const path = svg.querySelector('path.curve-line');
    one.charts.push({cls: svg.getAttribute('class'), width: box.width, height: box.height,
                     visible: box.width > 0 && box.height > 0 &&
                              getComputedStyle(svg).visibility !== 'hidden',
                     length: path ? path.getTotalLength() : 0,
                     dots: svg.querySelectorAll('circle.trial-dot').length});
  }
  const roof = section.querySelector('svg.tuning-curve line.roofline');
  one.roofline = roof ? roof.getBoundingClientRect().width : 0;
  const anchor = section.querySelector('svg.tuning-curve line.anchor');
  one.anchor = anchor ? anchor.getBoundingClientRect().width : 0;
  one.above = [...section.querySelectorAll('svg.tuning-curve text.anchor-label')]
                  .filter(t => t.textContent.endsWith('above the chart')).length;
  const bar = section.querySelector('.bar.stages');
  one.stages = {};
  if (bar) {
    const total = bar.getBoundingClientRect().width;
    for (const part of bar.children) {
      one.stages[part.className.replace('stage-', '')] = part.getBoundingClientRect().width / total;
    }
    one.stage_rows = [...section.querySelectorAll('table.stages tr.stage')].map(
        tr => tr.querySelector('th').textContent.trim());
  }
  found.push(one);
}
const models = [];
for (const section of document.querySelectorAll('section.model')) {
  const table = section.querySelector('table.kernels');
  const box = table ? table.getBoundingClientRect() : {width: 0, height: 0};
  models.push({title: section.querySelector('h2').textContent, width: box.width,
               height: box.height, tuned: section.querySelectorAll('tr.tuned').length,
               untuned: section.querySelectorAll('tr.default').length,
               links: [...section.querySelectorAll('a')].map(a => a.getAttribute('href'))});
}
const pre = document.createElement('pre');
pre.id = 'check';
pre.textContent = JSON.stringify({tasks: found, models: models});
document.body.appendChild(pre);
</script>)js";

TEST(HtmlTest, ChromiumRendersOneVisibleCurvePerTask) {
  const std::string chromium = FindProgram({"chromium", "chromium-browser", "google-chrome"});
  if (chromium.empty()) GTEST_SKIP() << "no chromium in PATH (Debian's chromium package)";
  TempDir dir;
  std::unique_ptr<Database> db;
  std::vector<ReportTask> tasks = SampleTasks(&db);
  // A CPU roofline near the best GMMs reach (drawn in their charts), and a model of three GMM
  // kernels (two tuned on the CPU, one with only failures) and one never tuned.
  ApplyRooflines({{"cpu", 0.2, 0.05}}, &tasks);
  // An anchor near GMM 16's best (drawn) and one far above GMM 32's (named above the chart).
  ASSERT_EQ(
      ApplyAnchors(db.get(),
                   {{SmallGmm(16), {"lib A", "cpu", 2e-4}}, {SmallGmm(32), {"lib B", "cpu", 1e-7}}},
                   &tasks)
          .value(),
      2);
  std::vector<ReportModel> models = SummarizeModel(db.get(), "net.onnx",
                                                   {{"k16", SmallGmm(16), 2},
                                                    {"k32", SmallGmm(32), 1},
                                                    {"k8", SmallGmm(8), 1},
                                                    {"k12", SmallGmm(12), 1}},
                                                   tasks, "cpu")
                                        .value();
  std::string html = RenderReportHtml(tasks, ReportOptions(), models);
  const std::string page = dir.Path("report.html"), checked = dir.Path("checked.html");
  std::ofstream(page) << html;
  size_t body_end = html.rfind("</body>");
  ASSERT_NE(body_end, std::string::npos);
  std::ofstream(checked) << html.substr(0, body_end) << kCheckScript << html.substr(body_end);

  // --no-sandbox: Chromium refuses root otherwise; a profile of its own per run.
  const std::string flags =
      "--headless --no-sandbox --disable-gpu --hide-scrollbars "
      "--no-first-run --user-data-dir=" +
      dir.Path("profile") + " --window-size=1100,1400";
  int status = 0;
  std::string dom = RunCommand("timeout 120 " + chromium + " " + flags + " --dump-dom file://" +
                                   checked + " 2>" + dir.Path("chromium.log"),
                               &status);
  ASSERT_EQ(status, 0) << "chromium failed; its log: " << dir.Path("chromium.log");
  const std::string open = "<pre id=\"check\">";
  size_t start = dom.find(open);
  ASSERT_NE(start, std::string::npos) << "the check script did not run:\n" << dom.substr(0, 500);
  start += open.size();
  std::string text = dom.substr(start, dom.find("</pre>", start) - start);
  // Text nodes come back with &, < and > escaped.
  for (auto [from, to] :
       {std::pair<std::string, std::string>{"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + 1)) {
      text.replace(p, from.size(), to);
    }
  }
  nlohmann::json checked_json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  ASSERT_TRUE(checked_json.is_object()) << text;
  const nlohmann::json& found = checked_json["tasks"];
  ASSERT_TRUE(found.is_array()) << text;
  ASSERT_EQ(found.size(), tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    const nlohmann::json& task = found[i];
    SCOPED_TRACE(task["title"].get<std::string>());
    EXPECT_EQ(task["title"], tasks[i].label);
    ASSERT_EQ(task["charts"].size(), 2u);
    const nlohmann::json& trials = task["charts"][0];
    const nlohmann::json& time = task["charts"][1];
    EXPECT_EQ(trials["cls"], "tuning-curve");
    EXPECT_EQ(time["cls"], "time-curve");
    for (const nlohmann::json& chart : {trials, time}) {
      EXPECT_TRUE(chart["visible"].get<bool>()) << chart;
      EXPECT_GT(chart["width"].get<double>(), 300) << chart;
      EXPECT_GT(chart["height"].get<double>(), 150) << chart;
    }
    if (tasks[i].succeeded > 0) {
      EXPECT_GT(trials["length"].get<double>(), 100) << "a drawn curve: " << trials;
      EXPECT_GT(time["length"].get<double>(), 100) << time;
      EXPECT_EQ(trials["dots"].get<int64_t>(), tasks[i].succeeded);
    } else {
      EXPECT_EQ(trials["length"].get<double>(), 0) << trials;
    }
    if (tasks[i].roofline_gflops > 0) {
      EXPECT_GT(task["roofline"].get<double>(), 300) << "across the plot: " << task;
    } else {
      EXPECT_EQ(task["roofline"].get<double>(), 0) << task;
    }
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    const bool drawn = !tasks[i].anchors.empty() && tasks[i].anchors[0].name == "lib A";
    const bool above = !tasks[i].anchors.empty() && tasks[i].anchors[0].name == "lib B";
    if (drawn) {
      EXPECT_GT(found[i]["anchor"].get<double>(), 300) << found[i];
    } else {
      EXPECT_EQ(found[i]["anchor"].get<double>(), 0) << found[i];
    }
    EXPECT_EQ(found[i]["above"].get<int>(), above ? 1 : 0) << found[i];
  }
  // Where the time went, as laid out: each stage's segment as wide as its share of the task's
  // stage times, and a table row per stage; none for GMM 8, whose records have no stage times.
  for (size_t i = 0; i < tasks.size(); ++i) {
    SCOPED_TRACE(tasks[i].label + " on " + tasks[i].target);
    const nlohmann::json& stages = found[i]["stages"];
    const StageSeconds& s = tasks[i].stage_secs;
    if (tasks[i].timed_records == 0) {
      EXPECT_TRUE(stages.empty()) << stages;
      continue;
    }
    ASSERT_EQ(stages.size(), 4u) << stages;
    EXPECT_EQ(found[i]["stage_rows"],
              nlohmann::json::parse(R"(["build", "run", "verify", "search"])"));
    for (auto [name, secs] : {std::pair<const char*, double>{"build", s.build},
                              {"run", s.run},
                              {"verify", s.verify},
                              {"search", s.search}}) {
      EXPECT_NEAR(stages[name].get<double>(), secs / s.total(), 0.01) << name;
    }
  }
  int with_roofline = 0;
  for (const ReportTask& t : tasks) with_roofline += t.roofline_gflops > 0;
  EXPECT_EQ(with_roofline, 3) << "the CPU tasks";
  // One kernel table per target with records (the CPU and sm_80), laid out with its rows.
  const nlohmann::json& drawn = checked_json["models"];
  ASSERT_EQ(drawn.size(), models.size());
  for (size_t i = 0; i < models.size(); ++i) {
    SCOPED_TRACE(drawn[i].dump());
    EXPECT_GT(drawn[i]["width"].get<double>(), 300);
    EXPECT_GT(drawn[i]["height"].get<double>(), 4 * 15) << "a header and four kernel rows";
    EXPECT_EQ(drawn[i]["tuned"].get<int>() + drawn[i]["untuned"].get<int>(), 4);
    EXPECT_EQ(drawn[i]["untuned"].get<int>(), models[i].untuned);
    for (const nlohmann::json& link : drawn[i]["links"]) {
      EXPECT_EQ(link.get<std::string>().rfind("#task-", 0), 0u) << link;
    }
  }

  // And a picture of the page as a person sees it (kept beside the page while the test runs).
  const std::string shot = dir.Path("report.png");
  RunCommand("timeout 120 " + chromium + " " + flags + " --screenshot=" + shot + " file://" + page +
                 " >/dev/null 2>&1",
             &status);
  ASSERT_EQ(status, 0);
  std::ifstream png(shot, std::ios::binary);
  std::string header(8, '\0');
  png.read(header.data(), 8);
  EXPECT_EQ(header, "\x89PNG\r\n\x1a\n");
  EXPECT_GT(std::filesystem::file_size(shot), 20000u) << "a blank page compresses to less";
}

}  // namespace
}  // namespace tessera
