// Small whole-function analyses shared by the command line, the runners and the tuner.
#ifndef TESSERA_IR_ANALYSIS_H_
#define TESSERA_IR_ANALYSIS_H_

#include <cstdint>
#include <vector>

#include "ir/dtype.h"
#include "ir/function.h"

namespace tessera {

// The type and shape of one kernel argument (runners allocate arguments from these; tuning
// records store them).
struct ArgInfo {
  DataType dtype;
  std::vector<int64_t> shape;
};

// One ArgInfo per parameter of `f`. A non-constant extent is -1, which runners reject with
// an error naming the argument.
std::vector<ArgInfo> ArgInfosOf(const PrimFunc& f);

// Indices (into func.params()) of the parameters some statement stores into: the outputs
// a correctness check compares. Sorted ascending.
std::vector<int> WrittenParamIndices(const PrimFunc& func);

}  // namespace tessera

#endif  // TESSERA_IR_ANALYSIS_H_
