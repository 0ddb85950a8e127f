#include "model/executor.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "base/file_bytes.h"
#include "base/openmp_env.h"
#include "base/status_macros.h"

namespace tessera {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void Executor::AlignedFree::operator()(void* p) const { std::free(p); }

absl::StatusOr<std::unique_ptr<Executor>> Executor::Load(const std::string& dir,
                                                         const ExecutorOptions& options) {
  TESSERA_ASSIGN_OR_RETURN(CompiledModel model, ReadCompiledModel(dir));
  TESSERA_ASSIGN_OR_RETURN(std::string weights, ReadFileBytes(dir + "/weights.bin"));
  return Create(std::move(model), dir, weights, options);
}

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(CompiledModel model,
                                                           const std::string& dir,
                                                           const std::string& weights,
                                                           const ExecutorOptions& options) {
  std::unique_ptr<Executor> e(new Executor());
  e->model_ = std::move(model);
  e->options_ = options;
  if (options.num_threads <= 0) e->cpu_share_ = std::make_unique<CpuShare>(DefaultMaxThreads());
  // The memory points into model_.plan, which therefore never moves again.
  TESSERA_ASSIGN_OR_RETURN(e->memory_, PlanMemory::Create(e->model_.plan, weights));
  if (IsCudaTargetString(e->model_.target)) {
    TESSERA_ASSIGN_OR_RETURN(
        e->cuda_, CudaPlanRunner::Create(e->model_, dir, &e->memory_, options.cuda_device));
    return e;
  }
  TESSERA_RETURN_IF_ERROR(e->LoadKernels(dir));
  TESSERA_RETURN_IF_ERROR(e->PackWeights());
  return e;
}

Executor::~Executor() {
  for (void* handle : handles_) dlclose(handle);
}

absl::Status Executor::LoadKernels(const std::string& dir) {
  // The kernels bring libgomp in with them: give it the wait policy that `tessera exec` uses
  // (base/openmp_env.h), unless the application set one or loaded libgomp itself already.
  ApplyOpenMpEnvDefaults(KernelUse::kModel);
  for (const CompiledKernel& k : model_.kernels) {
    const std::string path = (std::filesystem::path(dir) / k.artifact).string();
    // RTLD_NODELETE: dlclose must never unmap a kernel, nor the OpenMP runtime it brought in,
    // while that runtime's idle threads may still be parked in it.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      return absl::InternalError(absl::StrCat("cannot load ", path, ": ", dlerror()));
    }
    handles_.push_back(handle);
    auto symbol = [&](const std::string& name) -> absl::StatusOr<KernelFn> {
      void* sym = dlsym(handle, name.c_str());
      if (sym == nullptr) return absl::InternalError(absl::StrCat(path, ": no symbol ", name));
      return reinterpret_cast<KernelFn>(sym);
    };
    Kernel kernel;
    TESSERA_ASSIGN_OR_RETURN(kernel.whole, symbol(k.symbol));
    if (k.prepack.has_value()) {
      TESSERA_ASSIGN_OR_RETURN(kernel.pack, symbol(k.prepack->symbol));
      TESSERA_ASSIGN_OR_RETURN(kernel.packed, symbol(k.prepack->kernel_symbol));
    }
    kernels_.push_back(kernel);
    if (omp_set_num_threads_ == nullptr) {
      // The kernels' OpenMP runtime, found through their dependencies (RTLD_LOCAL keeps it out
      // of the global scope), so the runtime library itself needs no OpenMP.
      omp_set_num_threads_ = reinterpret_cast<void (*)(int)>(dlsym(handle, "omp_set_num_threads"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<void*>> Executor::SplitArgs(int call, const std::vector<int>& which,
                                                       const std::vector<void*>& args) {
  std::vector<void*> out;
  for (int a : which) {
    if (a >= 0 && static_cast<size_t>(a) < args.size()) {
      out.push_back(args[a]);
    } else if (a < 0 && static_cast<size_t>(-1 - a) < packed_[call].size()) {
      out.push_back(packed_[call][-1 - a].get());
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("plan: call ", model_.plan.calls[call].function, ": no argument ", a));
    }
  }
  return out;
}

absl::Status Executor::PackWeights() {
  const int ncalls = static_cast<int>(model_.plan.calls.size());
  packed_.resize(ncalls);
  if (options_.num_threads > 0 && omp_set_num_threads_ != nullptr) {
    omp_set_num_threads_(options_.num_threads);
  }
  for (int c = 0; c < ncalls; ++c) {
    const CompiledKernel& k = model_.kernels[model_.plan.calls[c].task];
    if (!k.prepack.has_value()) continue;
    for (int64_t bytes : k.prepack->packed_bytes) {
      // 64-byte aligned, as the kernels' own buffers (aligned_alloc wants a multiple).
      void* buffer = std::aligned_alloc(64, (std::max<int64_t>(bytes, 1) + 63) / 64 * 64);
      if (buffer == nullptr) {
        return absl::ResourceExhaustedError(
            absl::StrCat("cannot allocate ", bytes, " bytes of packed weights"));
      }
      packed_[c].emplace_back(buffer);
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<void*> args,
                             SplitArgs(c, k.prepack->args, memory_.Args(c)));
    const auto start = std::chrono::steady_clock::now();
    if (kernels_[model_.plan.calls[c].task].pack(args.data()) != 0) {
      return absl::InternalError(
          absl::StrCat(model_.plan.calls[c].function, ": packing its weights failed"));
    }
    packing_seconds_ += SecondsSince(start);
    ++packed_calls_;
  }
  return absl::OkStatus();
}

absl::Status Executor::SetInput(int index, const NDArray& value) {
  if (index < 0 || static_cast<size_t>(index) >= model_.plan.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("input ", index, " out of range: the model has ",
                                                   model_.plan.inputs.size(), " inputs"));
  }
  return memory_.SetInput(index, value);
}

absl::Status Executor::Run(std::vector<double>* call_seconds) {
  if (cuda_ != nullptr) return cuda_->Run(&memory_, call_seconds);
  if (omp_set_num_threads_ != nullptr) {
    if (options_.num_threads > 0) {
      omp_set_num_threads_(options_.num_threads);
    } else {
      omp_set_num_threads_(cpu_share_->Threads());
    }
  }
  if (call_seconds != nullptr) call_seconds->assign(model_.plan.calls.size(), 0.0);
  return ExecutePlan(model_.plan, &memory_, [&](int call, const std::vector<void*>& args) {
    const PlanCall& c = model_.plan.calls[call];
    const Kernel& kernel = kernels_[c.task];
    const std::optional<KernelPrepack>& prepack = model_.kernels[c.task].prepack;
    std::vector<void*> kernel_args = args;
    if (prepack.has_value()) {
      TESSERA_ASSIGN_OR_RETURN(kernel_args, SplitArgs(call, prepack->kernel_args, args));
    }
    const auto start = std::chrono::steady_clock::now();
    const int32_t rc =
        prepack.has_value() ? kernel.packed(kernel_args.data()) : kernel.whole(kernel_args.data());
    if (call_seconds != nullptr) (*call_seconds)[call] = SecondsSince(start);
    if (rc != 0) return absl::InternalError(absl::StrCat(c.function, ": kernel returned ", rc));
    return absl::OkStatus();
  });
}

}  // namespace tessera
