#include "cuda/module.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace tessera {
namespace {

constexpr int64_t kStaticSharedLimit = 48 * 1024;  // above it a kernel must opt in

// The tensor map `m` describes over the device buffer at `address` (cuda/module_file.h).
absl::StatusOr<CUtensorMap> EncodeTensorMap(const CudaDriver& driver, const CudaTensorMap& m,
                                            CUdeviceptr address, const std::string& what) {
  const CUtensorMapDataType type = m.dtype == "float16"    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                   : m.dtype == "bfloat16" ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                           : CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
  const int64_t bytes = m.dtype == "float32" ? 4 : 2;
  const size_t rank = m.dims.size();
  std::vector<cuuint64_t> dims(m.dims.begin(), m.dims.end()), strides;  // strides of dims 1..
  std::vector<cuuint32_t> box(m.box.begin(), m.box.end()), element_strides(rank, 1);
  int64_t stride = bytes;
  for (size_t d = 0; d + 1 < rank; ++d) {
    stride *= m.dims[d];
    strides.push_back(static_cast<cuuint64_t>(stride));
  }
  CUtensorMap map;
  TESSERA_RETURN_IF_ERROR(
      CudaCheck(driver,
                driver.cuTensorMapEncodeTiled(
                    &map, type, static_cast<cuuint32_t>(rank), reinterpret_cast<void*>(address),
                    dims.data(), strides.data(), box.data(), element_strides.data(),
                    CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                    CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                what));
  return map;
}

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
  std::vector<CUtensorMap> maps;
  for (size_t k = 0; k < functions_.size(); ++k) {
    const CudaKernel& kd = manifest_.kernels[k];
    args.clear();
    maps.clear();
    auto param = [&](int index) -> absl::StatusOr<const CUdeviceptr*> {
      if (index < 0 || static_cast<size_t>(index) >= params.size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where_, ": kernel ", kd.name, " takes parameter ", index, " of ", params.size()));
      }
      return &params[index];
    };
    for (int index : kd.param_indices) {
      TESSERA_ASSIGN_OR_RETURN(const CUdeviceptr* p, param(index));
      // cuLaunchKernel reads each argument through its address and never writes it.
      args.push_back(const_cast<CUdeviceptr*>(p));
    }
    // Encoded per launch: a map holds the buffer's address (a host call of about a microsecond).
    maps.reserve(kd.tensor_maps.size());
    for (size_t i = 0; i < kd.tensor_maps.size(); ++i) {
      TESSERA_ASSIGN_OR_RETURN(const CUdeviceptr* p, param(kd.tensor_maps[i].param));
      TESSERA_ASSIGN_OR_RETURN(
          CUtensorMap map,
          EncodeTensorMap(driver_, kd.tensor_maps[i], *p,
                          absl::StrCat(where_, ": kernel ", kd.name, ": tensor map ", i)));
      maps.push_back(map);
    }
    for (CUtensorMap& map : maps) args.push_back(&map);
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
