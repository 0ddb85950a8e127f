// `tessera jobs`, `tessera status JOB`, `tessera watch JOB` and `tessera cancel JOB`: the jobs
// of a tuning server (ListJobs, GetJob, WatchJob, CancelJob).
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/job_output.h"
#include "proto/tessera.grpc.pb.h"

namespace tessera {
namespace cli {
namespace {

struct JobOptions {
  ClientOptions client;
  std::string job_id;
  std::vector<std::string> states;
  int limit = 0;
  bool json = false;
  double reconnect = 120;
};

absl::StatusOr<v1::JobState> ParseState(const std::string& text) {
  std::string s = absl::AsciiStrToLower(text);
  if (s == "queued") return v1::JOB_QUEUED;
  if (s == "running") return v1::JOB_RUNNING;
  if (s == "succeeded") return v1::JOB_SUCCEEDED;
  if (s == "failed") return v1::JOB_FAILED;
  if (s == "cancelled") return v1::JOB_CANCELLED;
  return absl::InvalidArgumentError(absl::StrCat(
      "--state: unknown state '", text, "' (queued, running, succeeded, failed, cancelled)"));
}

int RunJobs(const JobOptions& o) {
  absl::StatusOr<Client> client = Connect(o.client);
  if (!client.ok()) return ReportError(client.status());
  v1::ListJobsRequest request;
  for (const std::string& s : o.states) {
    absl::StatusOr<v1::JobState> state = ParseState(s);
    if (!state.ok()) return ReportError(state.status());
    request.add_states(*state);
  }
  request.set_limit(o.limit);
  auto stub = v1::TuningService::NewStub(client->channel);
  grpc::ClientContext context;
  client->Prepare(&context);
  v1::ListJobsResponse response;
  grpc::Status s = stub->ListJobs(&context, request, &response);
  if (!s.ok()) return ReportRpcError(s, "list jobs");
  if (o.json) {
    std::printf("%s\n", ToJson(response).c_str());
    return 0;
  }
  std::printf("%-12s %-10s %11s %8s %-24s %s\n", "JOB", "STATE", "TRIALS", "PRIORITY", "NAME",
              "TARGET");
  for (const v1::JobStatus& job : response.jobs()) {
    std::printf("%-12s %-10s %11s %8d %-24s %s\n", job.job_id().c_str(),
                JobStateName(job.state()).c_str(),
                absl::StrCat(job.trials(), "/", job.max_trials()).c_str(), job.priority(),
                job.name().c_str(), job.target().c_str());
  }
  return 0;
}

int RunStatus(const JobOptions& o, bool cancel) {
  absl::StatusOr<Client> client = Connect(o.client);
  if (!client.ok()) return ReportError(client.status());
  v1::JobRef ref;
  ref.set_job_id(o.job_id);
  auto stub = v1::TuningService::NewStub(client->channel);
  grpc::ClientContext context;
  client->Prepare(&context);
  v1::JobStatus job;
  grpc::Status s =
      cancel ? stub->CancelJob(&context, ref, &job) : stub->GetJob(&context, ref, &job);
  if (!s.ok()) return ReportRpcError(s, absl::StrCat(cancel ? "cancel " : "status ", o.job_id));
  if (o.json) {
    std::printf("%s\n", ToJson(job).c_str());
  } else {
    PrintJobStatus(job);
  }
  return 0;
}

int RunWatch(const JobOptions& o) {
  absl::StatusOr<Client> client = Connect(o.client);
  if (!client.ok()) return ReportError(client.status());
  return WatchUntilDone(*client, o.job_id, o.json, o.reconnect);
}

CLI::App* AddJobCommand(CLI::App* root, const std::string& name, const std::string& help,
                        JobOptions* o) {
  CLI::App* app = root->add_subcommand(name, help);
  app->add_option("job", o->job_id, "The job id (as `tessera submit` printed it)")->required();
  o->client.AddOptions(app);
  app->add_flag("--json", o->json, "Print the job's status as JSON");
  return app;
}

}  // namespace

Command RegisterJobsCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand("jobs", "List the jobs of a tuning server, newest first");
  auto o = std::make_shared<JobOptions>();
  o->client.AddOptions(app);
  app->add_option("--state", o->states,
                  "Only jobs in these states (queued, running, succeeded, failed, cancelled)");
  app->add_option("--limit", o->limit, "At most this many jobs (default: the server's, 100)");
  app->add_flag("--json", o->json, "Print JSON");
  return {app, [o]() { return RunJobs(*o); }};
}

Command RegisterStatusCommand(CLI::App* root) {
  auto o = std::make_shared<JobOptions>();
  CLI::App* app =
      AddJobCommand(root, "status", "Show a job's state and its tasks' progress", o.get());
  return {app, [o]() { return RunStatus(*o, /*cancel=*/false); }};
}

Command RegisterWatchCommand(CLI::App* root) {
  auto o = std::make_shared<JobOptions>();
  CLI::App* app = AddJobCommand(
      root, "watch", "Follow a job until it ends (exit status 0 only if it succeeded)", o.get());
  app->add_option("--reconnect", o->reconnect, "Seconds to keep trying when the server goes away")
      ->capture_default_str();
  return {app, [o]() { return RunWatch(*o); }};
}

Command RegisterCancelCommand(CLI::App* root) {
  auto o = std::make_shared<JobOptions>();
  CLI::App* app = AddJobCommand(root, "cancel", "Cancel a job", o.get());
  return {app, [o]() { return RunStatus(*o, /*cancel=*/true); }};
}

}  // namespace cli
}  // namespace tessera
