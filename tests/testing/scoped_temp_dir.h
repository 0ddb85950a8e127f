// Scratch directories for tests that remove themselves: every test that writes files makes
// them under a ScopedTempDir, so that a test run leaves nothing behind in $TMPDIR.
//
// A directory is removed with its contents when its owner ends, except when the running test
// has failed: then it is kept, and its path is printed, because the files a failed test wrote
// (databases, server and worker logs) are what one needs to see why.
#ifndef TESSERA_TESTS_TESTING_SCOPED_TEMP_DIR_H_
#define TESSERA_TESTS_TESTING_SCOPED_TEMP_DIR_H_

#include <string>

namespace tessera {
namespace testing {

class ScopedTempDir {
 public:
  // A fresh directory ::testing::TempDir()/<prefix>_XXXXXX (mkdtemp); a failed mkdtemp fails
  // the test and leaves path() empty.
  explicit ScopedTempDir(const std::string& prefix = "tessera_test");
  // Removes the directory, unless the running test (or suite) has failed.
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }
  // path()/name.
  std::string Path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A ScopedTempDir that lives until the current test ends, for tests that want a path rather
// than an object; made outside a test (in SetUpTestSuite), until its test suite ends. Removed
// then, unless the test (or a test of the suite) failed.
std::string ScratchDirUntilTestEnds(const std::string& prefix);

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TESTING_SCOPED_TEMP_DIR_H_
