#include "worker/cuda_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_bytes.h"
#include "base/status_macros.h"
#include "cuda/module_file.h"
#include "worker/runner_internal.h"

#if TESSERA_WITH_CUDA
#include "cuda/driver.h"
#include "cuda/module.h"
#endif

namespace tessera {

#if TESSERA_WITH_CUDA
namespace {

using internal::AlignUp;

constexpr size_t kErrorBytes = 1024;
constexpr int kStickyErrorExit = 4;

// Written by the child, read by the parent (also while the child runs: `finished`).
struct BatchHeader {
  internal::ChildMessage message;  // why the child failed before measuring anything
  int64_t finished;                // inputs done; the child's progress counter
  int32_t setup_done;              // the context is up: a later failure is an input's
  int32_t gave_up;                 // the child left after a sticky error it has recorded
};

enum SlotState : int32_t { kPending = 0, kDone = 1, kFailed = 2 };

struct Slot {
  int32_t state;
  char error[kErrorBytes];
};

// One measurement, prepared by the parent.
struct Job {
  std::string cubin;
  CudaModuleFile module;
  std::vector<ArgInfo> args;
  std::vector<void*> host;  // the argument data in shared memory, or empty: random data
  bool copy_back = false;   // copy the arguments back into `host` after the last run
};

int64_t LoadFinished(const BatchHeader* h) {
  return __atomic_load_n(&h->finished, __ATOMIC_ACQUIRE);
}
void StoreFinished(BatchHeader* h, int64_t v) {
  __atomic_store_n(&h->finished, v, __ATOMIC_RELEASE);
}

// Reads the module and checks it against the arguments. Errors name the file.
absl::StatusOr<Job> PrepareJob(const std::string& cubin_path, std::vector<ArgInfo> args) {
  Job job;
  TESSERA_ASSIGN_OR_RETURN(job.cubin, ReadFileBytes(cubin_path));
  if (job.cubin.empty()) return absl::InvalidArgumentError(absl::StrCat(cubin_path, " is empty"));
  TESSERA_ASSIGN_OR_RETURN(job.module, ReadCudaManifest(cubin_path));
  for (size_t i = 0; i < args.size(); ++i) {
    for (int64_t extent : args[i].shape) {
      if (extent < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("cuda runner: argument ", i, " has a non-constant or negative shape"));
      }
    }
  }
  for (const CudaKernel& k : job.module.kernels) {
    for (int index : k.param_indices) {
      if (index >= static_cast<int>(args.size())) {
        return absl::InvalidArgumentError(absl::StrCat("cuda runner: kernel ", k.name,
                                                       " takes parameter ", index, " but ",
                                                       args.size(), " arguments were given"));
      }
    }
  }
  job.args = std::move(args);
  return job;
}

// The state of one child: the driver, its context and the L2 flush buffer.
class ChildDevice {
 public:
  explicit ChildDevice(const CudaDriver& d) : d_(d) {}

  absl::Status SetUp(int ordinal, bool flush_l2) {
    TESSERA_RETURN_IF_ERROR(CudaCheck(d_, d_.cuInit(0), "cuInit"));
    CUdevice dev;
    TESSERA_RETURN_IF_ERROR(
        CudaCheck(d_, d_.cuDeviceGet(&dev, ordinal), absl::StrCat("cuDeviceGet(", ordinal, ")")));
    CUcontext ctx;
    TESSERA_RETURN_IF_ERROR(
        CudaCheck(d_, d_.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain"));
    TESSERA_RETURN_IF_ERROR(CudaCheck(d_, d_.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"));
    if (flush_l2) {
      int l2 = 0;
      TESSERA_RETURN_IF_ERROR(CudaCheck(
          d_, d_.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), "L2 size"));
      flush_bytes_ = 2 * static_cast<size_t>(std::max(l2, 1 << 20));
      TESSERA_RETURN_IF_ERROR(
          CudaCheck(d_, d_.cuMemAlloc_v2(&flush_, flush_bytes_), "allocating the L2 flush buffer"));
    }
    return absl::OkStatus();
  }

  // Times `job`, writing config.repeat seconds-per-run into `secs`.
  absl::Status Measure(const Job& job, const RunnerConfig& config, double* secs) {
    std::vector<std::function<void()>> cleanup;
    absl::Status status = MeasureWith(job, config, secs, &cleanup);
    for (auto it = cleanup.rbegin(); it != cleanup.rend(); ++it) (*it)();
    return status;
  }

  // True when the context still works after a failure (the error was not sticky).
  bool Healthy() const { return d_.cuCtxSynchronize() == CUDA_SUCCESS; }

 private:
  absl::Status Check(CUresult r, const std::string& what) const {
    return CudaCheck(d_, r, absl::StrCat("cuda runner: ", what));
  }

  absl::Status MeasureWith(const Job& job, const RunnerConfig& config, double* secs,
                           std::vector<std::function<void()>>* cleanup) {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<LoadedCudaModule> module,
                             LoadedCudaModule::Load(d_, job.cubin, job.module, "cuda runner"));
    // Host data: the caller's (in shared memory) or the seeded random arrays.
    std::vector<NDArray> random;
    std::vector<void*> host = job.host;
    if (host.empty()) {
      TESSERA_ASSIGN_OR_RETURN(random,
                               internal::RandomArguments(job.args, config.seed, "cuda runner"));
      for (NDArray& a : random) host.push_back(a.data());
    }
    std::vector<CUdeviceptr> buffers(job.args.size(), 0);
    std::vector<size_t> sizes(job.args.size());
    for (size_t i = 0; i < job.args.size(); ++i) {
      int64_t elements = 1;
      for (int64_t e : job.args[i].shape) elements *= e;
      sizes[i] = static_cast<size_t>(elements * job.args[i].dtype.bytes());
      TESSERA_RETURN_IF_ERROR(
          Check(d_.cuMemAlloc_v2(&buffers[i], std::max<size_t>(sizes[i], 1)),
                absl::StrCat("allocating ", sizes[i], " bytes for argument ", i)));
      CUdeviceptr p = buffers[i];
      cleanup->push_back([this, p]() { d_.cuMemFree_v2(p); });
      if (sizes[i] > 0) {
        TESSERA_RETURN_IF_ERROR(Check(d_.cuMemcpyHtoD_v2(buffers[i], host[i], sizes[i]),
                                      absl::StrCat("copying argument ", i, " to the device")));
      }
    }
    auto launch_all = [&]() { return module->Launch(buffers); };
    const std::string running = absl::StrCat("kernel ", module->KernelNames());

    for (int i = 0; i < config.warmup; ++i) TESSERA_RETURN_IF_ERROR(launch_all());
    TESSERA_RETURN_IF_ERROR(Check(d_.cuCtxSynchronize(), running));
    CUevent start, end;
    TESSERA_RETURN_IF_ERROR(Check(d_.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate"));
    cleanup->push_back([this, start]() { d_.cuEventDestroy_v2(start); });
    TESSERA_RETURN_IF_ERROR(Check(d_.cuEventCreate(&end, CU_EVENT_DEFAULT), "cuEventCreate"));
    cleanup->push_back([this, end]() { d_.cuEventDestroy_v2(end); });

    int64_t number = std::max(1, config.number);
    for (int r = 0; r < config.repeat; ++r) {
      double elapsed = 0;
      while (true) {
        if (flush_ != 0) {
          TESSERA_RETURN_IF_ERROR(
              Check(d_.cuMemsetD8_v2(flush_, static_cast<unsigned char>(r & 0xff), flush_bytes_),
                    "flushing the L2"));
        }
        TESSERA_RETURN_IF_ERROR(Check(d_.cuEventRecord(start, nullptr), "cuEventRecord"));
        for (int64_t i = 0; i < number; ++i) TESSERA_RETURN_IF_ERROR(launch_all());
        TESSERA_RETURN_IF_ERROR(Check(d_.cuEventRecord(end, nullptr), "cuEventRecord"));
        TESSERA_RETURN_IF_ERROR(Check(d_.cuEventSynchronize(end), running));
        float ms = 0;
        TESSERA_RETURN_IF_ERROR(Check(d_.cuEventElapsedTime_v2(&ms, start, end), "timing"));
        elapsed = static_cast<double>(ms) / 1000;
        if (config.min_repeat_ms <= 0 || elapsed * 1000 >= config.min_repeat_ms) break;
        number = internal::GrowNumber(elapsed, number, config.min_repeat_ms);
      }
      secs[r] = elapsed / static_cast<double>(number);
    }
    if (job.copy_back) {
      for (size_t i = 0; i < buffers.size(); ++i) {
        if (sizes[i] == 0) continue;
        TESSERA_RETURN_IF_ERROR(Check(d_.cuMemcpyDtoH_v2(job.host[i], buffers[i], sizes[i]),
                                      absl::StrCat("copying argument ", i, " back")));
      }
    }
    return absl::OkStatus();
  }

  const CudaDriver& d_;
  CUdeviceptr flush_ = 0;
  size_t flush_bytes_ = 0;
};

// The child: measures jobs[first..] in order. Returns the exit code: 0 when all are done,
// kStickyErrorExit after an error that broke the context.
int BatchChild(const CudaDriver& d, int ordinal, const std::vector<Job>& jobs, size_t first,
               const RunnerConfig& config, BatchHeader* header, Slot* slots, double* secs) {
  ChildDevice device(d);
  absl::Status setup = device.SetUp(ordinal, config.enable_cpu_cache_flush);
  if (!setup.ok()) internal::ExitChildWithMessage(&header->message, std::string(setup.message()));
  header->setup_done = 1;
  for (size_t i = first; i < jobs.size(); ++i) {
    absl::Status status =
        device.Measure(jobs[i], config, secs + i * static_cast<size_t>(config.repeat));
    if (status.ok()) {
      slots[i].state = kDone;
    } else {
      std::snprintf(slots[i].error, kErrorBytes, "%s", std::string(status.message()).c_str());
      slots[i].state = kFailed;
    }
    StoreFinished(header, static_cast<int64_t>(i + 1));
    if (!status.ok() && !device.Healthy()) {
      header->gave_up = 1;
      return kStickyErrorExit;
    }
  }
  return 0;
}

// Runs `jobs` (each an ok job or the reason it is not) in as many children as it takes.
absl::StatusOr<std::vector<RunResult>> RunJobs(std::vector<absl::StatusOr<Job>> prepared,
                                               const RunnerConfig& config, int ordinal) {
  TESSERA_RETURN_IF_ERROR(internal::ValidateRunnerConfig(config, "cuda runner"));
  std::vector<RunResult> results(prepared.size());
  std::vector<Job> jobs;
  std::vector<size_t> where;  // result index of each job
  for (size_t i = 0; i < prepared.size(); ++i) {
    if (!prepared[i].ok()) {
      results[i].error_msg = std::string(prepared[i].status().message());
      continue;
    }
    jobs.push_back(*std::move(prepared[i]));
    where.push_back(i);
  }
  if (jobs.empty()) return results;
  TESSERA_ASSIGN_OR_RETURN(const CudaDriver* driver, LoadCudaDriver());

  size_t repeat = static_cast<size_t>(config.repeat);
  size_t slots_offset = AlignUp(sizeof(BatchHeader));
  size_t secs_offset = AlignUp(slots_offset + sizeof(Slot) * jobs.size());
  size_t total = secs_offset + sizeof(double) * repeat * jobs.size();
  TESSERA_ASSIGN_OR_RETURN(internal::SharedMemory shared,
                           internal::SharedMemory::Map(total, "cuda runner"));
  auto* header = reinterpret_cast<BatchHeader*>(shared.data());
  auto* slots = reinterpret_cast<Slot*>(shared.data() + slots_offset);
  auto* secs = reinterpret_cast<double*>(shared.data() + secs_offset);

  size_t next = 0;
  while (next < jobs.size()) {
    StoreFinished(header, static_cast<int64_t>(next));
    header->setup_done = 0;
    header->gave_up = 0;
    absl::StatusOr<std::string> failure = internal::RunInChildProcess(
        [&]() { return BatchChild(*driver, ordinal, jobs, next, config, header, slots, secs); },
        config.timeout_sec, &header->message, [header]() { return LoadFinished(header); });
    if (!failure.ok()) {
      return absl::Status(failure.status().code(),
                          absl::StrCat("cuda runner: ", failure.status().message()));
    }
    size_t done = static_cast<size_t>(LoadFinished(header));
    if (failure->empty()) break;
    if (!header->setup_done) {
      // Nothing can run: the same reason for every input left.
      for (size_t i = done; i < jobs.size(); ++i) {
        std::snprintf(slots[i].error, kErrorBytes, "%s", failure->c_str());
        slots[i].state = kFailed;
      }
      break;
    }
    if (!header->gave_up && done < jobs.size() && slots[done].state == kPending) {
      // The child died (crash, timeout) measuring this input.
      std::snprintf(slots[done].error, kErrorBytes, "%s", failure->c_str());
      slots[done].state = kFailed;
      ++done;
    }
    next = done;
  }

  for (size_t j = 0; j < jobs.size(); ++j) {
    RunResult& result = results[where[j]];
    if (slots[j].state == kDone) {
      result.run_secs.assign(secs + j * repeat, secs + (j + 1) * repeat);
    } else {
      slots[j].error[kErrorBytes - 1] = '\0';
      result.error_msg = slots[j].state == kFailed ? std::string(slots[j].error)
                                                   : "cuda runner: the measurement did not run";
    }
  }
  return results;
}

class CudaRunner final : public Runner {
 public:
  explicit CudaRunner(CudaRunnerOptions options) : options_(options) {}

  std::vector<RunResult> Run(const std::vector<RunInput>& inputs,
                             const RunnerConfig& config) override {
    std::vector<absl::StatusOr<Job>> prepared;
    for (const RunInput& input : inputs)
      prepared.push_back(PrepareJob(input.artifact_path, input.args));
    absl::StatusOr<std::vector<RunResult>> results =
        RunJobs(std::move(prepared), config, options_.device);
    if (results.ok()) return *std::move(results);
    std::vector<RunResult> failed(inputs.size());
    for (RunResult& r : failed) r.error_msg = std::string(results.status().message());
    return failed;
  }

 private:
  CudaRunnerOptions options_;
};

}  // namespace

std::unique_ptr<Runner> NewCudaRunner(CudaRunnerOptions options) {
  return std::make_unique<CudaRunner>(options);
}

absl::StatusOr<RunResult> RunCudaKernel(const std::string& cubin_path, std::vector<NDArray>* args,
                                        const RunnerConfig& config, CudaRunnerOptions options) {
  if (args == nullptr) return absl::InvalidArgumentError("cuda runner: no argument list");
  std::vector<ArgInfo> infos;
  size_t total = 0;
  for (const NDArray& a : *args) {
    infos.push_back(ArgInfo{a.dtype(), a.shape()});
    total += AlignUp(std::max<size_t>(static_cast<size_t>(a.nbytes()), 1));
  }
  TESSERA_ASSIGN_OR_RETURN(Job job, PrepareJob(cubin_path, infos));
  // The arrays travel through shared memory: the child copies them in and back out.
  TESSERA_ASSIGN_OR_RETURN(internal::SharedMemory data,
                           internal::SharedMemory::Map(total, "cuda runner"));
  size_t offset = 0;
  for (NDArray& a : *args) {
    std::memcpy(data.data() + offset, a.data(), static_cast<size_t>(a.nbytes()));
    job.host.push_back(data.data() + offset);
    offset += AlignUp(std::max<size_t>(static_cast<size_t>(a.nbytes()), 1));
  }
  job.copy_back = true;
  std::vector<absl::StatusOr<Job>> jobs;
  jobs.push_back(std::move(job));
  TESSERA_ASSIGN_OR_RETURN(std::vector<RunResult> results,
                           RunJobs(std::move(jobs), config, options.device));
  RunResult result = results[0];
  if (result.ok()) {
    offset = 0;
    for (NDArray& a : *args) {
      std::memcpy(a.data(), data.data() + offset, static_cast<size_t>(a.nbytes()));
      offset += AlignUp(std::max<size_t>(static_cast<size_t>(a.nbytes()), 1));
    }
  }
  return result;
}

#else  // !TESSERA_WITH_CUDA

namespace {

constexpr char kNoCuda[] = "cuda runner: tessera was built without CUDA";

class CudaRunner final : public Runner {
 public:
  std::vector<RunResult> Run(const std::vector<RunInput>& inputs,
                             const RunnerConfig& /*config*/) override {
    std::vector<RunResult> results(inputs.size());
    for (RunResult& r : results) r.error_msg = kNoCuda;
    return results;
  }
};

}  // namespace

std::unique_ptr<Runner> NewCudaRunner(CudaRunnerOptions /*options*/) {
  return std::make_unique<CudaRunner>();
}

absl::StatusOr<RunResult> RunCudaKernel(const std::string& /*cubin_path*/,
                                        std::vector<NDArray>* /*args*/,
                                        const RunnerConfig& /*config*/,
                                        CudaRunnerOptions /*options*/) {
  return absl::FailedPreconditionError(kNoCuda);
}

#endif  // TESSERA_WITH_CUDA

}  // namespace tessera
