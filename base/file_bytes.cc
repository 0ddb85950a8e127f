#include "base/file_bytes.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tessera {

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream bytes;
  bytes << file.rdbuf();
  return bytes.str();
}

}  // namespace tessera
