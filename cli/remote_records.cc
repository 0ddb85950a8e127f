#include "cli/remote_records.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "database/record_json.h"
#include "ir/flops.h"
#include "ir/parser.h"
#include "ir/printer.h"
#include "ir/serialize.h"
#include "proto/tessera.grpc.pb.h"
#include "tuner/best_record.h"

namespace tessera {
namespace cli {
namespace {

// What the server gets for a function loaded here from `spec`: the spec itself for a workload
// of the library (the server builds the same function), else the function as IR JSON (files,
// and workloads with a --dtype, which a spec cannot say).
absl::StatusOr<std::string> ServerWorkload(const std::string& spec, const std::string& dtype,
                                           const PrimFunc& func) {
  if (IsRegularFile(spec) || !dtype.empty()) return SaveJson(func);
  return spec;
}

nlohmann::json RecordJson(const v1::Record& r, double flops, bool best) {
  double mean = r.mean_seconds();
  nlohmann::json j = {
      {"id", r.id()},
      {"mean_seconds", mean},
      {"gflops_per_second", mean > 0 ? flops / mean / 1e9 : 0},
      {"run_secs", std::vector<double>(r.run_seconds().begin(), r.run_seconds().end())},
      {"verified", r.verified()},
      {"timestamp", r.timestamp()},
      {"job_id", r.job_id()},
      {"provenance",
       {{"tessera_version", r.provenance().tessera_version()},
        {"compiler", r.provenance().compiler()},
        {"device", r.provenance().device()},
        {"driver", r.provenance().driver()},
        {"worker_id", r.provenance().worker_id()}}}};
  j["stage_secs"] = {{"build", r.stage_seconds().build()},
                     {"run", r.stage_seconds().run()},
                     {"verify", r.stage_seconds().verify()},
                     {"search", r.stage_seconds().search()}};
  j["trace"] = nlohmann::json::parse(r.trace_json(), nullptr, false);
  j["best"] = best;
  if (r.has_retimes_record_id()) j["retimes_record_id"] = r.retimes_record_id();
  return j;
}

}  // namespace

std::string RecordHead(size_t rank, int64_t id, bool best, int64_t retimes) {
  std::string head = absl::StrCat("#", rank, " record ", id);
  if (best) absl::StrAppend(&head, " (best)");
  if (retimes > 0) absl::StrAppend(&head, " (re-measures record ", retimes, ")");
  if (retimes == 0) absl::StrAppend(&head, " (a re-measurement)");
  return head;
}

int RunRecordsOnServer(const ClientOptions& options, const RemoteRecordsQuery& q) {
  std::string label;
  absl::StatusOr<PrimFunc> func = q.source.Load(&label);
  if (!func.ok()) return ReportError(func.status());
  if (q.k <= 0) return ReportError(absl::InvalidArgumentError("-k must be positive"));
  std::string spec = q.source.workload;
  if (!q.source.shape.empty()) absl::StrAppend(&spec, ":", q.source.shape);
  absl::StatusOr<std::string> workload = ServerWorkload(spec, q.source.dtype, *func);
  if (!workload.ok()) return ReportError(workload.status());
  absl::StatusOr<Client> client = Connect(options);
  if (!client.ok()) return ReportError(client.status());
  auto stub = v1::TuningService::NewStub(client->channel);
  grpc::ClientContext context;
  client->Prepare(&context);
  std::vector<v1::Record> records;
  std::optional<v1::Record> passed_over;
  int64_t best_id = -1;
  if (q.topk) {
    v1::GetTopKRequest request;
    request.set_workload(*workload);
    request.set_target(q.target);
    request.set_k(q.k);
    request.set_include_unverified(q.all);
    v1::GetTopKResponse response;
    grpc::Status s = stub->GetTopK(&context, request, &response);
    if (!s.ok()) return ReportRpcError(s, absl::StrCat("topk ", label));
    records.assign(response.records().begin(), response.records().end());
    if (response.best_record_id() > 0) best_id = response.best_record_id();
  } else {
    v1::GetBestRequest request;
    request.set_workload(*workload);
    request.set_target(q.target);
    request.set_include_unverified(q.all);
    v1::GetBestResponse response;
    grpc::Status s = stub->GetBest(&context, request, &response);
    if (!s.ok()) return ReportRpcError(s, absl::StrCat("best ", label));
    if (response.found()) records.push_back(response.record());
    if (response.has_passed_over()) passed_over = response.passed_over();
  }
  if (records.empty()) {
    return ReportError(
        absl::NotFoundError(absl::StrCat("no ", q.all ? "" : "verified ", "record of ", label,
                                         " for target ", q.target, " on ", options.server)));
  }
  std::string target = records.front().target();
  double flops = std::max(1.0, EstimateFlops(*func));
  if (q.json) {
    nlohmann::json out = {{"function", label}, {"target", target}, {"server", options.server}};
    for (const v1::Record& r : records) {
      out["records"].push_back(RecordJson(r, flops, !q.topk || r.id() == best_id));
    }
    if (passed_over) out["passed_over"] = RecordJson(*passed_over, flops, false);
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("%s on %s\n", label.c_str(), target.c_str());
  for (size_t i = 0; i < records.size(); ++i) {
    const v1::Record& r = records[i];
    const std::string head = RecordHead(i + 1, r.id(), q.topk && r.id() == best_id,
                                        r.has_retimes_record_id() ? r.retimes_record_id() : -1);
    std::printf("%s: %s, %.2f GFLOP/s%s (%s, %s; job %s, worker %s)\n", head.c_str(),
                FormatSeconds(r.mean_seconds()).c_str(),
                r.mean_seconds() > 0 ? flops / r.mean_seconds() / 1e9 : 0.0,
                r.verified() ? ", verified" : ", NOT verified", r.provenance().device().c_str(),
                r.provenance().compiler().c_str(), r.job_id().empty() ? "-" : r.job_id().c_str(),
                r.provenance().worker_id().empty() ? "-" : r.provenance().worker_id().c_str());
    if (q.trace) std::printf("%s\n", r.trace_json().c_str());
  }
  if (passed_over) {
    std::printf("%s\n", PassedOverLine(passed_over->id(), passed_over->mean_seconds()).c_str());
  }
  return 0;
}

std::string PassedOverLine(int64_t record_id, double seconds) {
  return absl::StrCat("the default schedule: record ", record_id, " (", FormatSeconds(seconds),
                      ") was measured faster by less than ",
                      static_cast<int>(kDefaultScheduleMargin * 100),
                      "%, within the timings' noise");
}

int RunApplyOnServer(const ClientOptions& options, const FunctionList& functions,
                     const MeasureOptions& measure, bool run, bool no_default) {
  absl::StatusOr<std::vector<FunctionList::Entry>> entries = functions.Load();
  if (!entries.ok()) return ReportError(entries.status());
  std::optional<Target> target;
  if (run) {
    absl::StatusOr<Target> resolved = ResolveRunnableTarget(measure.target);
    if (!resolved.ok()) return ReportError(resolved.status());
    target = *resolved;
  }
  v1::ApplyBestRequest request;
  for (size_t i = 0; i < entries->size(); ++i) {
    absl::StatusOr<std::string> workload =
        ServerWorkload(functions.specs[i], functions.dtype, (*entries)[i].func);
    if (!workload.ok()) return ReportError(workload.status());
    request.add_workloads(*workload);
  }
  request.set_target(measure.target);
  absl::StatusOr<Client> client = Connect(options);
  if (!client.ok()) return ReportError(client.status());
  auto stub = v1::TuningService::NewStub(client->channel);
  grpc::ClientContext context;
  client->Prepare(&context);
  v1::ApplyBestResponse response;
  grpc::Status s = stub->ApplyBest(&context, request, &response);
  if (!s.ok()) return ReportRpcError(s, "apply");
  if (response.functions_size() != static_cast<int>(entries->size())) {
    return ReportError(
        absl::InternalError(absl::StrCat("apply: the server returned ", response.functions_size(),
                                         " functions for ", entries->size(), " workloads")));
  }
  int exit_code = 0;
  for (size_t i = 0; i < entries->size(); ++i) {
    const FunctionList::Entry& e = (*entries)[i];
    const v1::AppliedFunction& applied = response.functions(static_cast<int>(i));
    PrimFunc scheduled = e.func;
    std::string how;
    if (applied.source() == "record") {
      how = absl::StrCat("tuned record ", applied.record_id(), " (",
                         FormatSeconds(applied.record_seconds()), " when measured)");
    } else if (no_default) {
      how = "miss: no tuned record; left unscheduled";
    } else {
      how = applied.default_rule().empty()
                ? "miss: no tuned record; left unscheduled"
                : absl::StrCat("miss: no tuned record; default rule ", applied.default_rule());
    }
    if (applied.source() == "record" || !no_default) {
      absl::StatusOr<PrimFunc> parsed = ParseFunc(applied.ir_text());
      if (!parsed.ok()) {
        return ReportError(absl::Status(
            parsed.status().code(),
            absl::StrCat("apply: the server's IR of ", e.label, ": ", parsed.status().message())));
      }
      scheduled = *parsed;
    }
    std::printf("%s: %s\n", e.label.c_str(), how.c_str());
    if (!run) {
      std::printf("%s\n", PrintFunc(scheduled).c_str());
      continue;
    }
    absl::StatusOr<Measurement> m = BuildAndMeasure(scheduled, e.func, *target, measure);
    if (!m.ok()) return ReportError(m.status());
    std::printf("%s", m->ToText().c_str());
    exit_code = std::max(exit_code, m->ExitCode());
  }
  return exit_code;
}

absl::StatusOr<std::unique_ptr<Database>> FetchServerRecords(
    const ClientOptions& options, const std::string& command,
    const std::vector<std::string>& workload_hashes) {
  TESSERA_ASSIGN_OR_RETURN(Client client, Connect(options));
  std::unique_ptr<Database> db = NewMemoryDatabase();
  std::vector<NumberedLine> lines;
  auto stub = v1::TuningService::NewStub(client.channel);
  grpc::ClientContext context;
  client.Prepare(&context, /*timeout_override=*/0);  // a stream as long as the records
  v1::ExportRecordsRequest request;
  for (const std::string& hash : workload_hashes) request.add_workload_hashes(hash);
  std::unique_ptr<grpc::ClientReader<v1::RecordLine>> reader =
      stub->ExportRecords(&context, request);
  v1::RecordLine line;
  for (int64_t n = 1; reader->Read(&line); ++n) {
    nlohmann::json j = nlohmann::json::parse(line.json(), nullptr, /*allow_exceptions=*/false);
    absl::StatusOr<JsonLineRecord> entry =
        j.is_discarded() ? absl::InvalidArgumentError("malformed JSON") : RecordFromJsonLine(j);
    if (!entry.ok()) {
      context.TryCancel();
      return absl::InvalidArgumentError(absl::StrCat(
          command, ": record line ", n, " from ", options.server, ": ", entry.status().message()));
    }
    lines.push_back({n, *std::move(entry)});
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) {
    return FromGrpcStatus(status, absl::StrCat("ExportRecords from ", options.server));
  }
  // The server's records as they are: what the server stored is not judged again here.
  TESSERA_RETURN_IF_ERROR(ImportRecordLines(
                              db.get(), std::move(lines),
                              [&](int64_t n) {
                                return absl::StrCat(command, ": record line ", n, " from ",
                                                    options.server);
                              },
                              /*check=*/false)
                              .status());
  return db;
}

}  // namespace cli
}  // namespace tessera
