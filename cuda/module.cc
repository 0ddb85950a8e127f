#include "cuda/module.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace tessera {
namespace {

constexpr int64_t kStaticSharedLimit = 48 * 1024;  // above it a kernel must opt in

}  // namespace

absl::StatusOr<std::unique_ptr<LoadedCudaModule>> LoadedCudaModule::Load(const CudaDriver& driver,
                                                                         const std::string& cubin,
                                                                         CudaModuleFile manifest,
                                                                         const std::string& where) {
  std::unique_ptr<LoadedCudaModule> m(new LoadedCudaModule(driver, std::move(manifest), where));
  auto check = [&](CUresult r, const std::string& what) {
    return CudaCheck(driver, r, absl::StrCat(where, ": ", what));
  };
  TESSERA_RETURN_IF_ERROR(
      check(driver.cuModuleLoadData(&m->module_, cubin.data()), "loading the module"));
  for (const CudaKernel& k : m->manifest_.kernels) {
    CUfunction f;
    TESSERA_RETURN_IF_ERROR(check(driver.cuModuleGetFunction(&f, m->module_, k.name.c_str()),
                                  absl::StrCat("kernel ", k.name, " not in the module")));
    if (k.dynamic_shared_bytes > kStaticSharedLimit) {
      TESSERA_RETURN_IF_ERROR(
          check(driver.cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                          static_cast<int>(k.dynamic_shared_bytes)),
                absl::StrCat("kernel ", k.name, ": ", k.dynamic_shared_bytes,
                             " bytes of dynamic shared memory")));
    }
    m->functions_.push_back(f);
  }
  return m;
}

LoadedCudaModule::~LoadedCudaModule() {
  if (module_ != nullptr) driver_.cuModuleUnload(module_);
}

absl::Status LoadedCudaModule::Launch(const std::vector<CUdeviceptr>& params,
                                      CUstream stream) const {
  std::vector<void*> args;
  for (size_t k = 0; k < functions_.size(); ++k) {
    const CudaKernel& kd = manifest_.kernels[k];
    args.clear();
    for (int index : kd.param_indices) {
      if (index < 0 || static_cast<size_t>(index) >= params.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where_, ": kernel ", kd.name, " takes parameter ", index, " of ", params.size()));
      }
      // cuLaunchKernel reads each argument through its address and never writes it.
      args.push_back(const_cast<CUdeviceptr*>(&params[index]));
    }
    TESSERA_RETURN_IF_ERROR(CudaCheck(
        driver_,
        driver_.cuLaunchKernel(
            functions_[k], static_cast<unsigned>(kd.grid[0]), static_cast<unsigned>(kd.grid[1]),
            static_cast<unsigned>(kd.grid[2]), static_cast<unsigned>(kd.block[0]),
            static_cast<unsigned>(kd.block[1]), static_cast<unsigned>(kd.block[2]),
            static_cast<unsigned>(kd.dynamic_shared_bytes), stream, args.data(), nullptr),
        absl::StrCat(where_, ": kernel ", kd.name, ": launch")));
  }
  return absl::OkStatus();
}

std::string LoadedCudaModule::KernelNames() const {
  std::vector<std::string> names;
  for (const CudaKernel& k : manifest_.kernels) names.push_back(k.name);
  return absl::StrJoin(names, ", ");
}

}  // namespace tessera
