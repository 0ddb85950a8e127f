// Tests of base/openmp_env.cc: the processes that measure kernels spin a bounded 1,000 times at
// OpenMP barriers, those that run models 30,000 times, unless the user
// chose otherwise, and the CPU runner's kernel process is where that takes effect (libgomp prints
// what it read with OMP_DISPLAY_ENV=verbose).
#include "base/openmp_env.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/worker/cpu_backend_testing.h"
#include "worker/runner.h"

namespace tessera {
namespace {

std::function<const char*(const char*)> Lookup(const std::map<std::string, std::string>& env) {
  return [env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

TEST(OpenMpEnvTest, BoundedSpinWhenTheUserSetNothing) {
  for (const auto& env : {std::map<std::string, std::string>{},
                          std::map<std::string, std::string>{{"OMP_WAIT_POLICY", ""}},
                          std::map<std::string, std::string>{{"OMP_NUM_THREADS", "2"}}}) {
    std::vector<EnvVar> vars = OpenMpEnvDefaults(Lookup(env), KernelUse::kMeasured);
    ASSERT_EQ(vars.size(), 1u);
    EXPECT_EQ(vars[0].name, "GOMP_SPINCOUNT");
    EXPECT_EQ(vars[0].value, "1000");
  }
}

// A model's plan, whose executor fits its team to the cores, spins longer between kernels.
TEST(OpenMpEnvTest, ModelsSpinLonger) {
  std::vector<EnvVar> vars = OpenMpEnvDefaults(Lookup({}), KernelUse::kModel);
  ASSERT_EQ(vars.size(), 1u);
  EXPECT_EQ(vars[0].name, "GOMP_SPINCOUNT");
  EXPECT_EQ(vars[0].value, "30000");
}

TEST(OpenMpEnvTest, TheUsersOwnSettingWins) {
  for (KernelUse use : {KernelUse::kMeasured, KernelUse::kModel}) {
    EXPECT_TRUE(OpenMpEnvDefaults(Lookup({{"OMP_WAIT_POLICY", "active"}}), use).empty());
    EXPECT_TRUE(OpenMpEnvDefaults(Lookup({{"GOMP_SPINCOUNT", "5000"}}), use).empty());
  }
}

// Restores a variable of this process's environment when it goes.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old;
    had_ = old != nullptr;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

// What libgomp printed in the CPU runner's child for the given user settings.
std::string LibgompSettingsInKernelProcess(const char* wait_policy, const char* spin_count) {
  ScopedEnv policy("OMP_WAIT_POLICY", wait_policy);
  ScopedEnv spin("GOMP_SPINCOUNT", spin_count);
  ScopedEnv display("OMP_DISPLAY_ENV", "verbose");
  // A parallel loop, so that the kernel's shared object needs libgomp (linked --as-needed); long
  // enough to be emitted as one (shorter ones run serially, codegen_c.cc).
  Buffer a = Buffer::Make("A", DataType::Float32(), {1 << 18});
  PrimFunc func = testing_funcs::MakeFunc(
      "parallel_fill", {a},
      testing_funcs::ElementwiseNest("A", a, {ForKind::kParallel}, [](const std::vector<Var>& v) {
        return Cast(DataType::Float32(), v[0]);
      }));
  std::unique_ptr<Builder> builder = NewCBuilder();
  BuildResult built = testing::BuildAll(builder.get(), {func})[0];
  EXPECT_TRUE(built.ok()) << built.error_msg;
  std::string path = std::filesystem::temp_directory_path() /
                     ("tessera-openmp-env-" + std::to_string(getpid()) + ".txt");
  int file = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  EXPECT_GE(file, 0);
  std::fflush(stderr);
  int saved = dup(STDERR_FILENO);
  dup2(file, STDERR_FILENO);  // the child inherits it: libgomp prints there when loaded
  std::vector<RunResult> results = NewCpuRunner()->Run(
      {RunInput{built.artifact_path, built.symbol, ArgInfosOf(func)}}, testing::Once());
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(file);
  EXPECT_TRUE(results[0].ok()) << results[0].error_msg;
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::filesystem::remove(path);
  return text.str();
}

bool LibgompLoadedHere() {
  void* handle = dlopen("libgomp.so.1", RTLD_LAZY | RTLD_NOLOAD);
  if (handle != nullptr) dlclose(handle);
  return handle != nullptr;
}

TEST(OpenMpEnvTest, KernelProcessSpinsBoundedUnlessTheUserSaidOtherwise) {
  // The runner's child loads libgomp with the kernel only if this process has not.
  ASSERT_FALSE(LibgompLoadedHere()) << "this test binary must not link libgomp";

  std::string unset = LibgompSettingsInKernelProcess(nullptr, nullptr);
  EXPECT_NE(unset.find("GOMP_SPINCOUNT = '1000'"), std::string::npos) << unset;

  std::string active = LibgompSettingsInKernelProcess("active", nullptr);
  EXPECT_NE(active.find("OMP_WAIT_POLICY = 'ACTIVE'"), std::string::npos) << active;

  std::string spin = LibgompSettingsInKernelProcess(nullptr, "5000");
  EXPECT_NE(spin.find("GOMP_SPINCOUNT = '5000'"), std::string::npos) << spin;

  // The choice is made in the child: this process's environment is as the user left it.
  EXPECT_EQ(std::getenv("GOMP_SPINCOUNT"), nullptr);
}

TEST(OpenMpEnvTest, WithoutLibgompLoadedMainSetsTheEnvironmentWithoutReexecuting) {
  ASSERT_FALSE(LibgompLoadedHere());
  ScopedEnv policy("OMP_WAIT_POLICY", nullptr);
  ScopedEnv spin("GOMP_SPINCOUNT", nullptr);
  char* argv[] = {const_cast<char*>("openmp_env_test"), nullptr};
  // returned: no re-execution
  EXPECT_TRUE(ReexecWithOpenMpEnvDefaults(argv, KernelUse::kMeasured).ok());
  ASSERT_NE(std::getenv("GOMP_SPINCOUNT"), nullptr);
  EXPECT_STREQ(std::getenv("GOMP_SPINCOUNT"), "1000");
}

}  // namespace
}  // namespace tessera
