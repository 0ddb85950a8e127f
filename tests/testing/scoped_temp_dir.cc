#include "tests/testing/scoped_temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <vector>

namespace tessera {
namespace testing {
namespace {

// Whether the running test, or the suite whose set-up or tear-down is running, has failed.
bool RunningTestFailed() {
  const ::testing::UnitTest* unit = ::testing::UnitTest::GetInstance();
  if (::testing::Test::HasFailure()) return true;
  const ::testing::TestSuite* suite = unit->current_test_suite();
  return suite != nullptr && suite->Failed();
}

// Owns the directories of ScratchDirUntilTestEnds and ends them when their test, or their
// suite, ends (a gtest listener, added on first use; gtest deletes it at exit).
class ScratchDirs : public ::testing::EmptyTestEventListener {
 public:
  static ScratchDirs* Get() {
    static ScratchDirs* dirs = [] {
      auto* d = new ScratchDirs;
      ::testing::UnitTest::GetInstance()->listeners().Append(d);
      return d;
    }();
    return dirs;
  }
  std::string Add(const std::string& prefix) {
    auto dir = std::make_unique<ScopedTempDir>(prefix);
    std::string path = dir->path();
    std::lock_guard<std::mutex> lock(mu_);
    const bool in_test = ::testing::UnitTest::GetInstance()->current_test_info() != nullptr;
    (in_test ? test_dirs_ : suite_dirs_).push_back(std::move(dir));
    return path;
  }
  // The fixture is deleted before OnTestEnd, so the processes a fixture ran in the directory
  // are gone by now; the test's result is still the current one.
  void OnTestEnd(const ::testing::TestInfo& /*info*/) override { Clear(&test_dirs_); }
  void OnTestSuiteEnd(const ::testing::TestSuite& /*suite*/) override { Clear(&suite_dirs_); }

 private:
  void Clear(std::vector<std::unique_ptr<ScopedTempDir>>* dirs) {
    std::vector<std::unique_ptr<ScopedTempDir>> ending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ending.swap(*dirs);
    }
  }
  std::mutex mu_;
  std::vector<std::unique_ptr<ScopedTempDir>> test_dirs_;
  std::vector<std::unique_ptr<ScopedTempDir>> suite_dirs_;
};

}  // namespace

ScopedTempDir::ScopedTempDir(const std::string& prefix) {
  std::string pattern = ::testing::TempDir();
  if (!pattern.empty() && pattern.back() != '/') pattern += '/';
  pattern += prefix + "_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern << " failed";
    return;
  }
  path_ = pattern;
}

ScopedTempDir::~ScopedTempDir() {
  if (path_.empty()) return;
  if (RunningTestFailed()) {
    std::fprintf(stderr, "kept %s: the test failed\n", path_.c_str());
    return;
  }
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string ScratchDirUntilTestEnds(const std::string& prefix) {
  return ScratchDirs::Get()->Add(prefix);
}

}  // namespace testing
}  // namespace tessera
