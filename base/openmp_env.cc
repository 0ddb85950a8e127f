#include "base/openmp_env.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace tessera {
namespace {

bool IsSet(const std::function<const char*(const char*)>& lookup, const char* name) {
  const char* value = lookup(name);
  return value != nullptr && value[0] != '\0';
}

bool LibgompLoaded() {
  void* handle = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);  // drops only the reference RTLD_NOLOAD took
  return true;
}

std::vector<EnvVar> DefaultsHere(KernelUse use) {
  return OpenMpEnvDefaults([](const char* name) { return std::getenv(name); }, use);
}

bool SetAll(const std::vector<EnvVar>& vars) {
  for (const EnvVar& v : vars) setenv(v.name.c_str(), v.value.c_str(), /*overwrite=*/1);
  return LibgompLoaded();
}

}  // namespace

std::vector<EnvVar> OpenMpEnvDefaults(const std::function<const char*(const char*)>& lookup,
                                      KernelUse use) {
  if (IsSet(lookup, "OMP_WAIT_POLICY") || IsSet(lookup, "GOMP_SPINCOUNT")) return {};
  return {EnvVar{"GOMP_SPINCOUNT", use == KernelUse::kModel ? "30000" : "1000"}};
}

bool ApplyOpenMpEnvDefaults(KernelUse use) { return SetAll(DefaultsHere(use)); }

absl::Status ReexecWithOpenMpEnvDefaults(char** argv, KernelUse use) {
  const std::vector<EnvVar> vars = DefaultsHere(use);
  if (!SetAll(vars) || vars.empty()) return absl::OkStatus();
  // After this, the variables are set: the new process finds nothing missing and goes on.
  execv("/proc/self/exe", argv);
  return absl::InternalError(absl::StrCat(
      "openmp env: cannot execute /proc/self/exe again to give libgomp OMP_WAIT_POLICY: ",
      std::strerror(errno)));
}

}  // namespace tessera
