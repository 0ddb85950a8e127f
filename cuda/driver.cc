#include "cuda/driver.h"

#include <dlfcn.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

constexpr char kLibrary[] = "libcuda.so.1";

absl::StatusOr<const CudaDriver*> Load() {
  const char* override_path = std::getenv("TESSERA_LIBCUDA");
  const char* library =
      override_path != nullptr && *override_path != '\0' ? override_path : kLibrary;
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace. Never dlclosed.
  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA driver: ", why != nullptr ? why : library));
  }
  auto* driver = new CudaDriver();
#define TESSERA_CUDA_DRIVER_RESOLVE(symbol, fallback)                           \
  {                                                                             \
    void* address = dlsym(handle, #symbol);                                     \
    const char* other = fallback;                                               \
    if (address == nullptr && other != nullptr) address = dlsym(handle, other); \
    if (address == nullptr) {                                                   \
      delete driver;                                                            \
      return absl::FailedPreconditionError(                                     \
          absl::StrCat("no CUDA driver: ", library, " lacks ", #symbol));       \
    }                                                                           \
    driver->symbol = reinterpret_cast<decltype(&::symbol)>(address);            \
  }
  TESSERA_CUDA_DRIVER_FUNCTIONS(TESSERA_CUDA_DRIVER_RESOLVE)
#undef TESSERA_CUDA_DRIVER_RESOLVE
  return driver;
}

}  // namespace

absl::StatusOr<const CudaDriver*> LoadCudaDriver() {
  static const absl::StatusOr<const CudaDriver*>* const loaded =
      new absl::StatusOr<const CudaDriver*>(Load());
  return *loaded;
}

std::string CudaErrorText(const CudaDriver& driver, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (driver.cuGetErrorName(result, &name) != CUDA_SUCCESS || name == nullptr) {
    return absl::StrCat("CUDA error ", static_cast<int>(result));
  }
  if (driver.cuGetErrorString(result, &text) != CUDA_SUCCESS || text == nullptr) return name;
  return absl::StrCat(name, " (", text, ")");
}

absl::Status CudaCheck(const CudaDriver& driver, CUresult result, const std::string& what) {
  if (result == CUDA_SUCCESS) return absl::OkStatus();
  std::string message = absl::StrCat(what, ": ", CudaErrorText(driver, result));
  if (result == CUDA_ERROR_NO_DEVICE || result == CUDA_ERROR_STUB_LIBRARY) {
    return absl::FailedPreconditionError(absl::StrCat("no CUDA device: ", message));
  }
  return absl::InternalError(message);
}

}  // namespace tessera
