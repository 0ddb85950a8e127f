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

}  // namespace

std::vector<EnvVar> OpenMpEnvDefaults(const std::function<const char*(const char*)>& lookup) {
  if (IsSet(lookup, "OMP_WAIT_POLICY") || IsSet(lookup, "GOMP_SPINCOUNT")) return {};
  return {EnvVar{"GOMP_SPINCOUNT", "1000"}};
}

bool ApplyOpenMpEnvDefaults() {
  for (const EnvVar& v : OpenMpEnvDefaults([](const char* name) { return std::getenv(name); })) {
    setenv(v.name.c_str(), v.value.c_str(), /*overwrite=*/1);
  }
  return LibgompLoaded();
}

absl::Status ReexecWithOpenMpEnvDefaults(char** argv) {
  bool missing = !OpenMpEnvDefaults([](const char* name) { return std::getenv(name); }).empty();
  if (!ApplyOpenMpEnvDefaults() || !missing) return absl::OkStatus();
  // After this, the variables are set: the new process finds nothing missing and goes on.
  execv("/proc/self/exe", argv);
  return absl::InternalError(absl::StrCat(
      "openmp env: cannot execute /proc/self/exe again to give libgomp OMP_WAIT_POLICY: ",
      std::strerror(errno)));
}

}  // namespace tessera
