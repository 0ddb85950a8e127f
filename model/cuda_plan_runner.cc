#include "model/cuda_plan_runner.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/file_bytes.h"
#include "base/status_macros.h"

#if TESSERA_WITH_CUDA
#include "cuda/driver.h"
#include "cuda/module.h"
#include "cuda/module_file.h"
#endif

namespace tessera {

bool IsCudaTargetString(const std::string& target) {
  return target.rfind("cuda", 0) == 0 && (target.size() == 4 || target[4] == ' ');
}

#if TESSERA_WITH_CUDA

struct CudaPlanRunner::State {
  const CudaDriver* d = nullptr;
  const CompiledModel* model = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::vector<std::unique_ptr<LoadedCudaModule>> modules;  // per task
  std::vector<CUdeviceptr> allocations;                    // freed with the state
  std::vector<CUdeviceptr> storages;                       // per plan storage
  CUevent start = nullptr, end = nullptr;

  absl::Status Check(CUresult r, const std::string& what) const {
    return CudaCheck(*d, r, absl::StrCat("cuda model: ", what));
  }

  absl::StatusOr<CUdeviceptr> Allocate(int64_t bytes, const std::string& what) {
    CUdeviceptr p = 0;
    TESSERA_RETURN_IF_ERROR(
        Check(d->cuMemAlloc_v2(&p, static_cast<size_t>(std::max<int64_t>(bytes, 1))),
              absl::StrCat("allocating ", bytes, " bytes for ", what)));
    allocations.push_back(p);
    return p;
  }

  ~State() {
    if (context == nullptr) return;
    d->cuCtxSetCurrent(context);
    if (start != nullptr) d->cuEventDestroy_v2(start);
    if (end != nullptr) d->cuEventDestroy_v2(end);
    modules.clear();
    for (CUdeviceptr p : allocations) d->cuMemFree_v2(p);
    d->cuDevicePrimaryCtxRelease_v2(device);
  }
};

CudaPlanRunner::CudaPlanRunner(std::unique_ptr<State> state) : state_(std::move(state)) {}
CudaPlanRunner::~CudaPlanRunner() = default;

absl::StatusOr<std::unique_ptr<CudaPlanRunner>> CudaPlanRunner::Create(const CompiledModel& model,
                                                                       const std::string& dir,
                                                                       PlanMemory* memory,
                                                                       int device) {
  auto s = std::make_unique<State>();
  TESSERA_ASSIGN_OR_RETURN(s->d, LoadCudaDriver());
  s->model = &model;
  TESSERA_RETURN_IF_ERROR(s->Check(s->d->cuInit(0), "cuInit"));
  TESSERA_RETURN_IF_ERROR(
      s->Check(s->d->cuDeviceGet(&s->device, device), absl::StrCat("device ", device)));
  CUcontext context = nullptr;
  TESSERA_RETURN_IF_ERROR(s->Check(s->d->cuDevicePrimaryCtxRetain(&context, s->device),
                                   "retaining the device's context"));
  s->context = context;
  TESSERA_RETURN_IF_ERROR(s->Check(s->d->cuCtxSetCurrent(context), "cuCtxSetCurrent"));

  for (const CompiledKernel& k : model.kernels) {
    const std::string path = (std::filesystem::path(dir) / k.artifact).string();
    TESSERA_ASSIGN_OR_RETURN(std::string cubin, ReadFileBytes(path));
    TESSERA_ASSIGN_OR_RETURN(CudaModuleFile manifest, ReadCudaManifest(path));
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<LoadedCudaModule> module,
                             LoadedCudaModule::Load(*s->d, cubin, std::move(manifest), k.task));
    s->modules.push_back(std::move(module));
  }

  const ModelPlan& plan = model.plan;
  TESSERA_ASSIGN_OR_RETURN(CUdeviceptr arena, s->Allocate(plan.arena_bytes, "the arena"));
  for (size_t i = 0; i < plan.storages.size(); ++i) {
    const PlanStorage& storage = plan.storages[i];
    if (storage.kind == StorageKind::kIntermediate) {
      s->storages.push_back(arena + static_cast<CUdeviceptr>(storage.offset));
      continue;
    }
    TESSERA_ASSIGN_OR_RETURN(CUdeviceptr p, s->Allocate(storage.bytes, storage.name));
    s->storages.push_back(p);
    if (storage.kind == StorageKind::kConstant && storage.bytes > 0) {
      TESSERA_RETURN_IF_ERROR(
          s->Check(s->d->cuMemcpyHtoD_v2(p, memory->StorageData(static_cast<int>(i)),
                                         static_cast<size_t>(storage.bytes)),
                   absl::StrCat("copying constant ", storage.name, " to the device")));
    }
  }
  return std::unique_ptr<CudaPlanRunner>(new CudaPlanRunner(std::move(s)));
}

absl::Status CudaPlanRunner::Run(PlanMemory* memory, std::vector<double>* call_seconds) {
  State& s = *state_;
  const ModelPlan& plan = s.model->plan;
  TESSERA_RETURN_IF_ERROR(s.Check(s.d->cuCtxSetCurrent(s.context), "cuCtxSetCurrent"));
  for (const auto& [name, value] : plan.inputs) {
    const PlanStorage& storage = plan.storages[value.storage];
    if (storage.bytes == 0) continue;
    TESSERA_RETURN_IF_ERROR(
        s.Check(s.d->cuMemcpyHtoD_v2(s.storages[value.storage], memory->StorageData(value.storage),
                                     static_cast<size_t>(storage.bytes)),
                absl::StrCat("copying input ", name, " to the device")));
  }
  if (call_seconds != nullptr) {
    call_seconds->assign(plan.calls.size(), 0.0);
    if (s.start == nullptr) {
      TESSERA_RETURN_IF_ERROR(s.Check(s.d->cuEventCreate(&s.start, CU_EVENT_DEFAULT), "events"));
      TESSERA_RETURN_IF_ERROR(s.Check(s.d->cuEventCreate(&s.end, CU_EVENT_DEFAULT), "events"));
    }
  }
  std::vector<CUdeviceptr> params;
  for (size_t c = 0; c < plan.calls.size(); ++c) {
    const PlanCall& call = plan.calls[c];
    params.clear();
    for (const PlanValue& v : call.args) params.push_back(s.storages[v.storage]);
    if (call_seconds != nullptr) {
      TESSERA_RETURN_IF_ERROR(s.Check(s.d->cuEventRecord(s.start, nullptr), "cuEventRecord"));
    }
    TESSERA_RETURN_IF_ERROR(s.modules[call.task]->Launch(params));
    if (call_seconds != nullptr) {
      TESSERA_RETURN_IF_ERROR(s.Check(s.d->cuEventRecord(s.end, nullptr), "cuEventRecord"));
      TESSERA_RETURN_IF_ERROR(s.Check(s.d->cuEventSynchronize(s.end), call.function));
      float ms = 0;
      TESSERA_RETURN_IF_ERROR(
          s.Check(s.d->cuEventElapsedTime_v2(&ms, s.start, s.end), "cuEventElapsedTime"));
      (*call_seconds)[c] = static_cast<double>(ms) / 1000;
    }
  }
  TESSERA_RETURN_IF_ERROR(s.Check(s.d->cuCtxSynchronize(), "running the model"));
  for (size_t o = 0; o < plan.outputs.size(); ++o) {
    const auto& [name, value] = plan.outputs[o];
    const PlanStorage& storage = plan.storages[value.storage];
    if (storage.bytes == 0) continue;
    TESSERA_RETURN_IF_ERROR(
        s.Check(s.d->cuMemcpyDtoH_v2(memory->StorageData(value.storage), s.storages[value.storage],
                                     static_cast<size_t>(storage.bytes)),
                absl::StrCat("copying output ", name, " back")));
  }
  return absl::OkStatus();
}

#else  // !TESSERA_WITH_CUDA

struct CudaPlanRunner::State {};
CudaPlanRunner::CudaPlanRunner(std::unique_ptr<State> state) : state_(std::move(state)) {}
CudaPlanRunner::~CudaPlanRunner() = default;

absl::StatusOr<std::unique_ptr<CudaPlanRunner>> CudaPlanRunner::Create(const CompiledModel&,
                                                                       const std::string&,
                                                                       PlanMemory*, int) {
  return absl::FailedPreconditionError(
      "cuda model: tessera was built without CUDA; its runtime runs cpu models only");
}

absl::Status CudaPlanRunner::Run(PlanMemory*, std::vector<double>*) {
  return absl::FailedPreconditionError("cuda model: tessera was built without CUDA");
}

#endif  // TESSERA_WITH_CUDA

}  // namespace tessera
