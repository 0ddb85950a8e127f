#include "worker/daemon.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "grpcpp/client_context.h"
#include "ir/serialize.h"
#include "ir/target.h"
#include "proto/convert.h"
#include "proto/tessera.grpc.pb.h"
#include "worker/devices.h"
#include "worker/grpc_status.h"
#include "worker/host.h"
#include "worker/measurer.h"

namespace tessera {
namespace {

namespace pb = ::tessera::v1;
using Clock = std::chrono::steady_clock;

constexpr size_t kMaxLogBytes = 64 * 1024;  // CandidateResult.log

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::chrono::system_clock::time_point DeadlineIn(double seconds) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(
             std::chrono::duration<double>(seconds));
}

// Errors that reconnecting cannot fix.
bool IsFatal(absl::StatusCode code) {
  return code == absl::StatusCode::kUnauthenticated ||
         code == absl::StatusCode::kPermissionDenied ||
         code == absl::StatusCode::kInvalidArgument || code == absl::StatusCode::kUnimplemented;
}

// What gRPC says of a failed TLS handshake ("SSL_ERROR_SSL: ... certificate verify failed",
// "Peer name H is not in peer certificate"), or nullopt when `status` is not one.
std::optional<std::string> HandshakeFailure(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kUnavailable) return std::nullopt;
  const absl::string_view message = status.message();
  constexpr absl::string_view kFailed = "andshake failed";
  if (size_t at = message.find(kFailed); at != absl::string_view::npos) {
    absl::string_view detail = message.substr(at + kFailed.size());
    absl::ConsumePrefix(&detail, ":");
    detail = absl::StripLeadingAsciiWhitespace(detail);
    return std::string(detail.empty() ? message : detail);
  }
  if (size_t at = message.find("Peer name ");
      at != absl::string_view::npos && absl::StrContains(message, "not in peer certificate")) {
    return std::string(message.substr(at));
  }
  return std::nullopt;
}

std::string Truncate(std::string text, size_t max_bytes) {
  if (text.size() > max_bytes) {
    text.resize(max_bytes - 16);
    text += "\n... (truncated)";
  }
  return text;
}

// The settings a measurer is created with; a batch with other settings gets a new measurer.
using MeasurerKey = std::tuple<int, int, int, int, bool, double, double, int64_t>;

MeasureConfig ConfigFor(const pb::RunnerSettings& s, int64_t seed,
                        const WorkerDaemonOptions& options) {
  MeasureConfig c = FromProto(s);  // defaults and clamps (proto/convert.h)
  c.runner.seed = static_cast<uint64_t>(seed);
  c.build_parallelism = options.build_parallelism;
  c.work_dir = options.work_dir;
  return c;
}

MeasurerKey KeyOf(const MeasureConfig& c) {
  return {c.runner.warmup,
          c.runner.number,
          c.runner.repeat,
          c.runner.min_repeat_ms,
          c.runner.enable_cpu_cache_flush,
          c.runner.timeout_sec,
          c.build_timeout_sec,
          static_cast<int64_t>(c.runner.seed)};
}

// --device N of a cuda worker: the process sees only that GPU (as device 0), so the builders,
// runners and checks, which use GPU 0, use it. A CUDA_VISIBLE_DEVICES already set is a list
// of which N picks an entry.
absl::Status SelectCudaDevice(int device) {
  if (device < 0) return absl::InvalidArgumentError(absl::StrCat("--device ", device, " < 0"));
  std::string chosen = std::to_string(device);
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
    std::vector<std::string> list = absl::StrSplit(visible, ',');
    if (device >= static_cast<int>(list.size())) {
      return absl::NotFoundError(absl::StrCat("--device ", device, ": CUDA_VISIBLE_DEVICES=",
                                              visible, " has ", list.size(), " entries"));
    }
    chosen = list[device];
  }
  setenv("CUDA_VISIBLE_DEVICES", chosen.c_str(), 1);
  return absl::OkStatus();
}

int64_t HostMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_size > 0 ? static_cast<int64_t>(pages) * page_size : 0;
}

std::string HostName() {
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

// A measurement running on its own thread, so that a stop can give up waiting for it.
struct PendingMeasure {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  absl::StatusOr<MeasuredBatch> result = absl::UnknownError("not measured");
};

}  // namespace

class WorkerDaemon::Impl {
 public:
  Impl(std::shared_ptr<grpc::Channel> channel, WorkerDaemonOptions options)
      : options_(std::move(options)), stub_(pb::WorkerService::NewStub(channel)) {}
  ~Impl() {
    if (!measure_thread_.joinable()) return;
    // An abandoned measurement may run for long: Run()'s caller ends the process instead.
    if (abandoned_) {
      measure_thread_.detach();
    } else {
      measure_thread_.join();
    }
  }

  absl::Status Init();
  absl::Status Run();
  void Stop();
  bool abandoned() const { return abandoned_.load(); }
  const std::string& target() const { return target_string_; }

 private:
  // One registration: register, heartbeat, pull and measure until an RPC fails, the server
  // forgets the worker, or Stop(). *registered says whether the registration went through.
  absl::Status Session(bool* registered);
  absl::Status Register();
  void HeartbeatLoop(double interval);
  // Measures and reports one batch. An error only when the batch was abandoned on stop.
  absl::Status HandleBatch(const pb::WorkBatch& batch);
  // Fills `results` (one per candidate of `batch`, in order).
  void MeasureBatch(const pb::WorkBatch& batch, std::vector<pb::CandidateResult>* results,
                    bool* abandoned);
  void Report(const pb::WorkBatch& batch, const std::vector<pb::CandidateResult>& results);
  void Prepare(grpc::ClientContext* context, double timeout) const;
  // Sleeps up to `seconds`, returning early on Stop(); false when stopped.
  bool SleepUnlessStopped(double seconds);
  bool stopping() const { return stopping_.load(); }
  void Log(const std::string& line);

  const WorkerDaemonOptions options_;
  std::unique_ptr<pb::WorkerService::Stub> stub_;
  Target target_;
  std::string target_string_;
  pb::DeviceInfo device_;
  Provenance provenance_;
  std::unique_ptr<LocalMeasurer> measurer_;
  std::optional<MeasurerKey> measurer_key_;
  std::thread measure_thread_;

  std::atomic<bool> stopping_{false};
  std::atomic<bool> abandoned_{false};
  Clock::time_point stop_time_;

  mutable std::mutex mu_;
  std::condition_variable cv_;   // Stop(), the heartbeat's stop
  std::string worker_id_;        // guarded by mu_
  std::string lease_id_;         // the batch being measured; guarded by mu_
  bool lease_revoked_ = false;   // guarded by mu_
  // Stops the measurement of lease_id_ (MeasureRequest::cancel) when it is revoked; guarded
  // by mu_ (the flag itself is atomic).
  std::shared_ptr<std::atomic<bool>> lease_cancel_;
  bool forgotten_ = false;       // the server no longer knows worker_id_; guarded by mu_
  bool heartbeat_stop_ = false;  // guarded by mu_
  grpc::ClientContext* pull_context_ = nullptr;  // the PullWork in flight; guarded by mu_
  double lease_seconds_ = 30;
  double heartbeat_interval_ = 10;
};

absl::Status WorkerDaemon::Impl::Init() {
  bool cuda = options_.target.rfind("cuda", 0) == 0;
  if (cuda) {
    TESSERA_RETURN_IF_ERROR(SelectCudaDevice(options_.device));
    TESSERA_ASSIGN_OR_RETURN(target_, ResolveCudaTarget(options_.target, 0));
    TESSERA_ASSIGN_OR_RETURN(std::vector<CudaDeviceInfo> devices, ListCudaDevices());
    device_.set_name(devices.front().name);
    device_.set_memory_bytes(devices.front().total_memory_bytes);
    device_.set_ordinal(options_.device);
  } else {
    TESSERA_ASSIGN_OR_RETURN(target_, ResolveTarget(options_.target));
    if (!target_.is_cpu()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--target ", options_.target, ": a worker measures on cpu or cuda"));
    }
    device_.set_name(HostCpuName());
    device_.set_memory_bytes(HostMemoryBytes());
    device_.set_ordinal(-1);
  }
  target_string_ = target_.ToString();
  device_.set_target(target_string_);
  // A measurer with the default settings now: it gives the provenance to register with, and
  // fails early on a machine that cannot measure (no compiler, no GPU).
  MeasureConfig config = ConfigFor(pb::RunnerSettings(), 0, options_);
  TESSERA_ASSIGN_OR_RETURN(measurer_, LocalMeasurer::Create(target_, config));
  measurer_key_ = KeyOf(config);
  provenance_ = measurer_->provenance();
  return absl::OkStatus();
}

void WorkerDaemon::Impl::Log(const std::string& line) {
  std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::string id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = worker_id_.empty() ? "(unregistered)" : worker_id_;
  }
  std::fprintf(stderr, "%s tessera worker %s: %s\n", stamp, id.c_str(), line.c_str());
  std::fflush(stderr);
}

void WorkerDaemon::Impl::Prepare(grpc::ClientContext* context, double timeout) const {
  context->set_deadline(DeadlineIn(timeout));
  if (!options_.token.empty()) context->AddMetadata("authorization", "Bearer " + options_.token);
}

bool WorkerDaemon::Impl::SleepUnlessStopped(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, Seconds(seconds), [this] { return stopping(); });
  return !stopping();
}

void WorkerDaemon::Impl::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_.exchange(true)) return;
  stop_time_ = Clock::now();
  if (pull_context_ != nullptr) pull_context_->TryCancel();
  cv_.notify_all();
}

absl::Status WorkerDaemon::Impl::Run() {
  Log(absl::StrCat("serving ", target_string_, " (", device_.name(), ") for ",
                   options_.server_label));
  double backoff = options_.min_backoff_sec;
  int handshake_failures = 0;  // in a row
  while (!stopping()) {
    bool registered = false;
    absl::Status s = Session(&registered);
    if (abandoned_) return absl::OkStatus();
    if (stopping()) break;
    if (IsFatal(s.code())) return s;
    if (registered) backoff = options_.min_backoff_sec;
    std::optional<std::string> handshake = registered ? std::nullopt : HandshakeFailure(s);
    handshake_failures = handshake ? handshake_failures + 1 : 0;
    if (handshake && handshake_failures == options_.max_handshake_failures) {
      return absl::FailedPreconditionError(absl::StrCat(
          "register with ", options_.server_label, ": the TLS handshake failed ",
          handshake_failures, " times in a row (", *handshake,
          "): the server's certificate is probably not signed by the CA of ",
          options_.tls_ca.empty() ? "--tls-ca (none given)" : "--tls-ca " + options_.tls_ca,
          ", or does not name ", options_.server_label));
    }
    Log(absl::StrFormat("%s; reconnecting in %.1f s", s.message(), backoff));
    if (!SleepUnlessStopped(backoff)) break;
    backoff = std::min(backoff * 2, options_.max_backoff_sec);
  }
  Log("stopped");
  return absl::OkStatus();
}

absl::Status WorkerDaemon::Impl::Register() {
  pb::RegisterWorkerRequest request;
  request.set_host(HostName());
  *request.add_devices() = device_;
  ToProto(provenance_, request.mutable_software());
  request.set_build_parallelism(options_.build_parallelism > 0
                                    ? options_.build_parallelism
                                    : static_cast<int>(std::thread::hardware_concurrency()));
  pb::RegisterWorkerResponse response;
  grpc::ClientContext context;
  Prepare(&context, options_.rpc_timeout_sec);
  context.set_wait_for_ready(false);
  TESSERA_RETURN_IF_ERROR(FromGrpcStatus(stub_->RegisterWorker(&context, request, &response),
                                         absl::StrCat("register with ", options_.server_label)));
  if (response.worker_id().empty()) {
    return absl::InternalError("register: the server answered without a worker id");
  }
  lease_seconds_ = response.lease_seconds() > 0 ? response.lease_seconds() : 30;
  // The server's interval, but never so long that a lease could lapse between two beats.
  double interval =
      response.heartbeat_interval() > 0 ? response.heartbeat_interval() : lease_seconds_ / 3;
  heartbeat_interval_ = std::clamp(interval, 0.2, std::max(0.2, lease_seconds_ / 3));
  {
    std::lock_guard<std::mutex> lock(mu_);
    worker_id_ = response.worker_id();
    forgotten_ = false;
  }
  Log(absl::StrFormat("registered with %s (heartbeat every %.1f s, leases of %.1f s)",
                      options_.server_label, heartbeat_interval_, lease_seconds_));
  return absl::OkStatus();
}

absl::Status WorkerDaemon::Impl::Session(bool* registered) {
  TESSERA_RETURN_IF_ERROR(Register());
  *registered = true;
  double interval = heartbeat_interval_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeat_stop_ = false;
  }
  std::thread heartbeat([this, interval] { HeartbeatLoop(interval); });
  absl::Status status = absl::OkStatus();
  while (!stopping()) {
    std::string worker_id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (forgotten_) {
        status = absl::UnavailableError("the server no longer knows this worker");
        break;
      }
      worker_id = worker_id_;
    }
    pb::PullWorkRequest request;
    request.set_worker_id(worker_id);
    request.set_max_candidates(options_.max_candidates);
    request.set_wait_seconds(options_.pull_wait_sec);
    pb::PullWorkResponse response;
    grpc::ClientContext context;
    Prepare(&context, options_.pull_wait_sec + options_.rpc_timeout_sec);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping()) break;
      pull_context_ = &context;
    }
    grpc::Status pulled = stub_->PullWork(&context, request, &response);
    {
      std::lock_guard<std::mutex> lock(mu_);
      pull_context_ = nullptr;
    }
    if (stopping()) break;
    if (!pulled.ok()) {
      status = FromGrpcStatus(pulled, "pull work");
      if (status.code() == absl::StatusCode::kInvalidArgument) {
        // A request the server finds malformed is a bug on one side; reconnecting (and
        // registering again) is all a worker can do about it.
        status = absl::UnavailableError(status.message());
      }
      break;
    }
    if (!response.has_work()) continue;
    status = HandleBatch(response.batch());
    if (!status.ok()) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    heartbeat_stop_ = true;
    cv_.notify_all();
  }
  heartbeat.join();
  return status;
}

void WorkerDaemon::Impl::HeartbeatLoop(double interval) {
  bool failing = false;
  while (true) {
    pb::HeartbeatRequest request;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Keeps beating after Stop() while a batch drains, so that its lease stays alive.
      cv_.wait_for(lock, Seconds(interval), [this] { return heartbeat_stop_; });
      if (heartbeat_stop_) return;
      request.set_worker_id(worker_id_);
      if (!lease_id_.empty()) request.add_lease_ids(lease_id_);
    }
    pb::HeartbeatResponse response;
    grpc::ClientContext context;
    Prepare(&context, std::max(interval, 2.0));
    grpc::Status s = stub_->Heartbeat(&context, request, &response);
    if (!s.ok()) {
      if (!failing) Log(std::string(FromGrpcStatus(s, "heartbeat").message()));
      failing = true;
      continue;
    }
    if (failing) Log("heartbeat: the server answers again");
    failing = false;
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::string& revoked : response.revoked_lease_ids()) {
      if (revoked == lease_id_ && !lease_revoked_) {
        // Its candidates are queued again or dropped (a cancelled job): measuring on would
        // only delay the next batch.
        lease_revoked_ = true;
        if (lease_cancel_ != nullptr) lease_cancel_->store(true);
        std::fprintf(stderr, "tessera worker %s: lease %s: revoked by the server, stopping\n",
                     worker_id_.c_str(), revoked.c_str());
      }
    }
    if (!response.known() && !forgotten_) {
      forgotten_ = true;
      // Out of the long poll now: the worker must register again.
      if (pull_context_ != nullptr) pull_context_->TryCancel();
    }
  }
}

void WorkerDaemon::Impl::MeasureBatch(const pb::WorkBatch& batch,
                                      std::vector<pb::CandidateResult>* results, bool* abandoned) {
  const std::string lease = batch.lease_id();
  results->resize(batch.candidates_size());
  for (int i = 0; i < batch.candidates_size(); ++i) {
    (*results)[i].set_candidate_id(batch.candidates(i).candidate_id());
  }
  auto fail_all = [&](const std::string& message) {
    Log(absl::StrCat("lease ", lease, ": ", message));
    for (pb::CandidateResult& r : *results) {
      r.set_error_kind(MeasureErrorName(MeasureError::kBuild));
      r.set_error_msg(message);
      r.set_log(Truncate(message, kMaxLogBytes));
    }
  };
  absl::StatusOr<Target> batch_target = Target::Parse(batch.target());
  if (!batch_target.ok() || batch_target->ToString() != target_string_) {
    return fail_all(absl::StrCat("build: lease ", lease, " asks for target '", batch.target(),
                                 "' but this worker measures on '", target_string_, "'"));
  }
  absl::StatusOr<PrimFunc> workload = LoadPrimFuncJson(batch.workload_json());
  if (!workload.ok()) {
    return fail_all(
        absl::StrCat("build: lease ", lease, ": workload_json: ", workload.status().message()));
  }
  MeasureRequest request;
  request.target = target_;
  request.workload = *workload;
  request.best_secs = batch.best_seconds();
  request.verify = batch.verify();
  request.check_seed = batch.check_seed();
  request.measure_fully = batch.measure_fully();
  {
    std::lock_guard<std::mutex> lock(mu_);
    request.cancel = lease_cancel_;
  }
  const std::set<std::string> check_always(batch.check_always_hashes().begin(),
                                           batch.check_always_hashes().end());
  std::vector<int> measured;  // indices into the batch of request.candidates
  for (int i = 0; i < batch.candidates_size(); ++i) {
    absl::StatusOr<PrimFunc> func = LoadPrimFuncJson(batch.candidates(i).func_json());
    if (!func.ok()) {
      std::string message = absl::StrCat("build: candidate ", batch.candidates(i).candidate_id(),
                                         ": func_json: ", func.status().message());
      (*results)[i].set_error_kind(MeasureErrorName(MeasureError::kBuild));
      (*results)[i].set_error_msg(message);
      (*results)[i].set_log(Truncate(message, kMaxLogBytes));
      continue;
    }
    if (check_always.count(batch.candidates(i).hash())) {
      request.check_always.push_back(request.candidates.size());
    }
    request.candidates.push_back(*func);
    measured.push_back(i);
  }
  if (request.candidates.empty()) return;

  MeasureConfig config = ConfigFor(batch.runner(), batch.check_seed(), options_);
  if (!measurer_key_ || *measurer_key_ != KeyOf(config)) {
    absl::StatusOr<std::unique_ptr<LocalMeasurer>> m = LocalMeasurer::Create(target_, config);
    if (!m.ok()) {
      return fail_all(absl::StrCat("build: lease ", lease,
                                   ": cannot set up the measurer: ", m.status().message()));
    }
    measurer_ = std::move(*m);
    measurer_key_ = KeyOf(config);
  }

  auto pending = std::make_shared<PendingMeasure>();
  if (measure_thread_.joinable()) measure_thread_.join();
  measure_thread_ = std::thread([pending, measurer = measurer_.get(), request]() {
    absl::StatusOr<MeasuredBatch> result = measurer->Measure(request);
    std::lock_guard<std::mutex> lock(pending->mu);
    pending->result = std::move(result);
    pending->done = true;
    pending->cv.notify_all();
  });
  bool announced = false;
  {
    std::unique_lock<std::mutex> lock(pending->mu);
    while (!pending->done) {
      pending->cv.wait_for(lock, std::chrono::milliseconds(200));
      if (pending->done || !stopping()) continue;
      if (!announced) {
        lock.unlock();
        Log(absl::StrFormat("lease %s: stopping after this batch (at most %.0f s more)", lease,
                            options_.drain_timeout_sec));
        lock.lock();
        announced = true;
      }
      if (SecondsSince(stop_time_) > options_.drain_timeout_sec) {
        *abandoned = true;
        return;
      }
    }
  }
  measure_thread_.join();
  // Revoked while measuring: HandleBatch drops the batch.
  if (pending->result.status().code() == absl::StatusCode::kCancelled) return;
  if (!pending->result.ok()) {
    // Nothing was measured (e.g. the work dir cannot be written): no result is reported, so
    // that the candidates are not recorded as failures of their own; the lease expires and
    // they go back to the queue.
    *abandoned = true;
    Log(absl::StrCat("lease ", lease, ": measuring failed, leaving the lease to expire: ",
                     pending->result.status().message()));
    return;
  }
  const MeasuredBatch& done = *pending->result;
  for (size_t j = 0; j < measured.size() && j < done.outcomes.size(); ++j) {
    const MeasureOutcome& o = done.outcomes[j];
    pb::CandidateResult& r = (*results)[measured[j]];
    ToProto(o, &r);
    r.set_log(Truncate(o.error_msg, kMaxLogBytes));
  }
}

absl::Status WorkerDaemon::Impl::HandleBatch(const pb::WorkBatch& batch) {
  const std::string lease = batch.lease_id();
  {
    std::lock_guard<std::mutex> lock(mu_);
    lease_id_ = lease;
    lease_revoked_ = false;
    lease_cancel_ = std::make_shared<std::atomic<bool>>(false);
  }
  Log(absl::StrFormat("lease %s: %d candidates of job %s on %s", lease, batch.candidates_size(),
                      batch.job_id(), batch.target()));
  Clock::time_point start = Clock::now();
  std::vector<pb::CandidateResult> results;
  bool abandoned = false;
  MeasureBatch(batch, &results, &abandoned);
  bool revoked;
  {
    std::lock_guard<std::mutex> lock(mu_);
    revoked = lease_revoked_;
    lease_cancel_.reset();
  }
  if (abandoned) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      lease_id_.clear();
    }
    if (stopping()) {
      abandoned_ = true;
      Log(absl::StrCat("lease ", lease, ": abandoned on stop; it expires on the server"));
      return absl::CancelledError("stopped");
    }
    SleepUnlessStopped(options_.min_backoff_sec);
    return absl::OkStatus();
  }
  if (revoked) {
    Log(absl::StrFormat("lease %s: revoked, stopped measuring after %.1f s; results dropped", lease,
                        SecondsSince(start)));
    std::lock_guard<std::mutex> lock(mu_);
    lease_id_.clear();
    return absl::OkStatus();
  }
  int failed = 0, verified = 0;
  for (const pb::CandidateResult& r : results) {
    failed += !r.error_kind().empty();
    verified += r.verified();
  }
  Log(absl::StrFormat("lease %s: measured %d candidates in %.1f s (%d failed, %d verified)", lease,
                      static_cast<int>(results.size()), SecondsSince(start), failed, verified));
  Report(batch, results);
  std::lock_guard<std::mutex> lock(mu_);
  lease_id_.clear();
  return absl::OkStatus();
}

void WorkerDaemon::Impl::Report(const pb::WorkBatch& batch,
                                const std::vector<pb::CandidateResult>& results) {
  pb::ReportResultsRequest request;
  {
    std::lock_guard<std::mutex> lock(mu_);
    request.set_worker_id(worker_id_);
  }
  request.set_lease_id(batch.lease_id());
  for (const pb::CandidateResult& r : results) *request.add_results() = r;
  // The server may be restarting: retry while the lease could still be alive.
  Clock::time_point give_up = Clock::now() + Seconds(std::max(lease_seconds_, 5.0));
  double backoff = options_.min_backoff_sec;
  while (true) {
    pb::ReportResultsResponse response;
    grpc::ClientContext context;
    Prepare(&context, options_.rpc_timeout_sec);
    grpc::Status s = stub_->ReportResults(&context, request, &response);
    if (s.ok()) {
      Log(absl::StrFormat("lease %s: reported, %d of %d results accepted", batch.lease_id(),
                          response.accepted(), request.results_size()));
      return;
    }
    bool transient = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                     s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
    if (!transient || Clock::now() + Seconds(backoff) > give_up ||
        (stopping() && SecondsSince(stop_time_) > options_.drain_timeout_sec)) {
      Log(absl::StrCat("lease ", batch.lease_id(),
                       ": results not reported: ", FromGrpcStatus(s, "report").message()));
      return;
    }
    std::this_thread::sleep_for(Seconds(backoff));
    backoff = std::min(backoff * 2, 5.0);
  }
}

WorkerDaemon::WorkerDaemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
WorkerDaemon::~WorkerDaemon() = default;

absl::StatusOr<std::unique_ptr<WorkerDaemon>> WorkerDaemon::Create(
    std::shared_ptr<grpc::Channel> channel, WorkerDaemonOptions options) {
  auto impl = std::make_unique<Impl>(std::move(channel), std::move(options));
  TESSERA_RETURN_IF_ERROR(impl->Init());
  return std::unique_ptr<WorkerDaemon>(new WorkerDaemon(std::move(impl)));
}

absl::Status WorkerDaemon::Run() { return impl_->Run(); }
void WorkerDaemon::Stop() { impl_->Stop(); }
bool WorkerDaemon::abandoned() const { return impl_->abandoned(); }
const std::string& WorkerDaemon::target() const { return impl_->target(); }

}  // namespace tessera
