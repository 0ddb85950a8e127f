// NumPy .npy files (format versions 1.0-3.0, little-endian, C order) as NDArrays, and .npz
// archives of them (np.savez / np.savez_compressed: a zip of NAME.npy members, stored or
// deflated): model inputs and outputs of `tessera exec` and the frontend tests.
#ifndef TESSERA_FRONTEND_NPY_H_
#define TESSERA_FRONTEND_NPY_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/ndarray.h"

namespace tessera {

// kNotFound when the file cannot be read; kInvalidArgument naming the file for a malformed
// header, Fortran order, a big-endian or unsupported dtype, or a size mismatch.
absl::StatusOr<NDArray> ReadNpy(const std::string& path);
// Writes version 1.0. kInternal naming the file when it cannot be written.
absl::Status WriteNpy(const std::string& path, const NDArray& array);

// Arrays with their names, in archive order.
using NamedArrays = std::vector<std::pair<std::string, NDArray>>;

// Reads every NAME.npy member of an .npz (the name without ".npy"). kNotFound when the file
// cannot be read; kInvalidArgument naming the file (and member) for what is not a zip, a
// member that is not a supported .npy, a compression other than stored or deflate, zip64
// sizes, or a CRC mismatch.
absl::StatusOr<NamedArrays> ReadNpz(const std::string& path);
// Writes an uncompressed .npz (as np.savez does) of NAME.npy members. kInvalidArgument for a
// dtype .npy lacks; kInternal naming the file when it cannot be written.
absl::Status WriteNpz(const std::string& path, const NamedArrays& arrays);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_NPY_H_
