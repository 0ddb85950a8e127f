// A whole file read into memory: a cubin, a compiled model's weights.
#ifndef TESSERA_BASE_FILE_BYTES_H_
#define TESSERA_BASE_FILE_BYTES_H_

#include <string>

#include "absl/status/statusor.h"

namespace tessera {

// The whole file as bytes. kNotFound "cannot read <path>".
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace tessera

#endif  // TESSERA_BASE_FILE_BYTES_H_
