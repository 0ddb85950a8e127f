// NumPy .npy files (format versions 1.0-3.0, little-endian, C order) as NDArrays: model
// inputs and reference outputs of `tessera exec` and the frontend tests.
#ifndef TESSERA_FRONTEND_NPY_H_
#define TESSERA_FRONTEND_NPY_H_

#include <string>

#include "absl/status/statusor.h"
#include "ir/ndarray.h"

namespace tessera {

// kNotFound when the file cannot be read; kInvalidArgument naming the file for a malformed
// header, Fortran order, a big-endian or unsupported dtype, or a size mismatch.
absl::StatusOr<NDArray> ReadNpy(const std::string& path);
// Writes version 1.0. kInternal naming the file when it cannot be written.
absl::Status WriteNpy(const std::string& path, const NDArray& array);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_NPY_H_
