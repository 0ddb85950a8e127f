// `tessera report --db DB -o report.html`: the tuning report (report/report.h) of every task in
// a records database, a SQLite file or a postgresql:// URL, as one self-contained HTML page.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "report/report.h"

namespace tessera {
namespace cli {
namespace {

struct ReportCommandOptions {
  std::string db_path;
  std::string output;
  std::string title = "Tessera tuning report";
};

std::string NowUtc() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

int RunReport(const ReportCommandOptions& o) {
  absl::StatusOr<std::unique_ptr<Database>> db = OpenDatabase(o.db_path);
  if (!db.ok()) return ReportError(db.status());
  absl::StatusOr<std::vector<ReportTask>> tasks = SummarizeTasks(db->get());
  if (!tasks.ok()) return ReportError(tasks.status());
  ReportOptions options;
  options.title = o.title;
  options.source = RedactDatabaseUrl(o.db_path);
  options.generated_at = NowUtc();
  const std::string html = RenderReportHtml(*tasks, options);
  // Written beside the target, then renamed: a reader never sees half a page.
  const std::string temporary = o.output + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << html;
    out.flush();
    if (!out) {
      return ReportError(
          absl::FailedPreconditionError(absl::StrCat("report: cannot write ", temporary)));
    }
  }
  if (std::rename(temporary.c_str(), o.output.c_str()) != 0) {
    std::remove(temporary.c_str());
    return ReportError(
        absl::FailedPreconditionError(absl::StrCat("report: cannot write ", o.output)));
  }
  int64_t trials = 0;
  for (const ReportTask& t : *tasks) trials += t.trials;
  std::printf("wrote %s: %zu task%s, %lld trials\n", o.output.c_str(), tasks->size(),
              tasks->size() == 1 ? "" : "s", static_cast<long long>(trials));
  return 0;
}

}  // namespace

Command RegisterReportCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand(
      "report", "Write the tuning report of a records database as one HTML page");
  auto o = std::make_shared<ReportCommandOptions>();
  app->add_option("--db", o->db_path, "Tuning database: a SQLite file or a postgresql:// URL")
      ->required();
  app->add_option("-o,--output", o->output, "The HTML file to write")->required();
  app->add_option("--title", o->title, "The page's title")->capture_default_str();
  return {app, [o]() { return RunReport(*o); }};
}

}  // namespace cli
}  // namespace tessera
