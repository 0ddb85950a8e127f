// What a compiled CUDA image (cubin) holds, read with cuobjdump, for the tests that check the
// code a schedule compiles to without a GPU: per kernel its registers, stack and local memory
// (bytes per thread above zero are spills or local arrays), static shared memory, and the SASS
// opcodes (HMMA, LDSM, LDGSTS, ...). The toolkit here has no cuobjdump; scripts/setup.sh puts
// PyPI's nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm into build/test-venv.
#ifndef TESSERA_TESTS_TESTING_CUBIN_INSPECTION_H_
#define TESSERA_TESTS_TESTING_CUBIN_INSPECTION_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera {
namespace testing {

struct KernelImage {
  std::string name;
  int registers = 0;
  int stack_bytes = 0;
  int local_bytes = 0;
  int shared_bytes = 0;           // static shared memory
  std::set<std::string> opcodes;  // the first word of each SASS instruction: "HMMA.16816.F32"
};

// $TESSERA_CUOBJDUMP, else the toolkit's bin/cuobjdump, else one in the site-packages of the
// virtualenv `venv` (nvidia/cu*/bin/cuobjdump, with nvdisasm beside it); empty if none.
std::string FindCuobjdump(const std::string& venv);

// The kernels of `cubin` as `cuobjdump` reads them; `scratch_dir` holds the files.
// kInternal with cuobjdump's message when it fails.
absl::StatusOr<std::vector<KernelImage>> InspectCubin(const std::string& cubin,
                                                      const std::string& cuobjdump,
                                                      const std::string& scratch_dir);

}  // namespace testing
}  // namespace tessera

#endif  // TESSERA_TESTS_TESTING_CUBIN_INSPECTION_H_
