// `tessera submit`: submits a tuning job to a server (SubmitJob) and prints its id; with
// --watch it then follows the job as `tessera watch` does.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/job_output.h"
#include "ir/target.h"
#include "model/load.h"
#include "proto/tessera.grpc.pb.h"
#include "server/job_spec_convert.h"

namespace tessera {
namespace cli {
namespace {

struct SubmitOptions {
  ClientOptions client;
  std::vector<std::string> workloads;
  // The job as the flags give it (target, settings, priority, name) but for its workloads,
  // runoff, verify and rule parameters, which RunSubmit sets.
  JobSpec job;
  std::string rule_params;  // JSON, as tune's --rule-params; empty: the defaults
  std::vector<std::string> input_shapes;  // a model's, NAME=D0,D1,... as tune's --input-shape
  bool no_verify = false;
  bool no_runoff = false;
  bool watch = false;
  bool json = false;
  double reconnect = 120;
};

int RunSubmit(const SubmitOptions& o) {
  JobSpec job = o.job;
  job.verify = !o.no_verify;
  job.runoff = !o.no_runoff;
  job.rule_params = RuleParamsFromText(o.rule_params);
  // Checked here as the server checks them (its own limits aside), and answered alike.
  absl::StatusOr<Target> target = Target::Parse(job.target);
  absl::Status valid =
      target.ok()
          ? job.Validate(*target)
          : absl::InvalidArgumentError(absl::StrCat("--target: ", target.status().message()));
  if (!valid.ok()) {
    return ReportRpcError(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                       std::string(WithFlagName(valid).message())),
                          "submit");
  }
  absl::StatusOr<Client> client = Connect(o.client);
  if (!client.ok()) return ReportError(client.status());
  v1::SubmitJobRequest request;
  // One model alone is a model job, imported by the server (docs/service.md, "Model jobs").
  if (o.workloads.size() == 1 && IsModelPath(o.workloads[0])) {
    absl::StatusOr<std::string> model = ModelForServer(o.workloads[0]);
    if (!model.ok()) return ReportError(model.status());
    request.set_model(*std::move(model));
    request.set_model_name(o.workloads[0]);
    for (const std::string& shape : o.input_shapes) request.add_input_shapes(shape);
  } else {
    if (!o.input_shapes.empty()) {
      return ReportError(
          absl::InvalidArgumentError("submit: --input-shape: only with a model (.onnx)"));
    }
    for (const std::string& spec : o.workloads) {
      absl::StatusOr<std::string> workload = WorkloadForServer(spec);
      if (!workload.ok()) return ReportError(workload.status());
      job.workloads.push_back(*workload);
    }
  }
  ToProto(job, &request);
  auto stub = v1::TuningService::NewStub(client->channel);
  grpc::ClientContext context;
  client->Prepare(&context);
  v1::SubmitJobResponse response;
  grpc::Status s = stub->SubmitJob(&context, request, &response);
  if (!s.ok()) return ReportRpcError(s, "submit");
  if (o.json && !o.watch) {
    std::printf("%s\n", ToJson(response).c_str());
    return 0;
  }
  std::printf("%s\n", response.job_id().c_str());
  std::fflush(stdout);
  if (!o.watch) return 0;
  return WatchUntilDone(*client, response.job_id(), o.json, o.reconnect);
}

}  // namespace

Command RegisterSubmitCommand(CLI::App* root) {
  CLI::App* app = root->add_subcommand("submit", "Submit a tuning job to a server");
  auto o = std::make_shared<SubmitOptions>();
  JobSpec& job = o->job;
  job.target = "cpu";
  app->add_option("workload", o->workloads,
                  "Workloads to tune: NAME:K=V,... (see `tessera workloads`) or files holding a "
                  "function (.ir text or .json); or one ONNX model (.onnx), whose tasks the "
                  "server extracts")
      ->required();
  o->client.AddOptions(app);
  app->add_option("--target", job.target,
                  "Target: cpu, cuda, or a full target string (a bare kind is completed from "
                  "the workers)")
      ->capture_default_str();
  app->add_option("--trials", job.max_trials_global, "Trial budget of the whole job")->required();
  app->add_option("--trials-per-task", job.max_trials_per_task,
                  "Trial budget of each task (default: the job's budget)");
  app->add_option("--trials-per-iter", job.num_trials_per_iter, "Candidates per batch")
      ->capture_default_str();
  app->add_option("--seed", job.seed, "Seed of the search")->capture_default_str();
  app->add_option("--priority", job.priority,
                  "Higher runs first; equal priorities share the workers")
      ->capture_default_str();
  app->add_option("--strategy", job.strategy, "evolutionary or replay")->capture_default_str();
  app->add_option("--cost-model", job.cost_model, "xgb or random")->capture_default_str();
  app->add_option("--task-scheduler", job.task_scheduler, "gradient or round-robin")
      ->capture_default_str();
  app->add_option("--name", job.name, "A name for people");
  app->add_option("--rule-params", o->rule_params,
                  "JSON object: default schedule rules made with other parameters, by rule name "
                  "(as tune's --rule-params)");
  app->add_option("--input-shape", o->input_shapes,
                  "For a model: NAME=D0,D1,..., the shape of a graph input (fixes dynamic "
                  "dimensions); repeatable");
  app->add_flag("--no-verify", o->no_verify,
                "Do not check new bests against the reference (they stay unverified)");
  app->add_flag("--no-runoff", o->no_runoff,
                "Skip the runoff after the search: timing each task's fastest record again "
                "beside the default schedule's on one worker (as tune's --no-runoff)");
  app->add_flag("--watch", o->watch, "Follow the job until it ends (as `tessera watch`)");
  app->add_option("--reconnect", o->reconnect,
                  "With --watch: seconds to keep trying when the server goes away")
      ->capture_default_str();
  app->add_flag("--json", o->json, "Print JSON");
  return {app, [o]() { return RunSubmit(*o); }};
}

}  // namespace cli
}  // namespace tessera
