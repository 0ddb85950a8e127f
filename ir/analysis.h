// Small whole-function analyses shared by the command line, the runners and the tuner.
#ifndef TESSERA_IR_ANALYSIS_H_
#define TESSERA_IR_ANALYSIS_H_

#include <vector>

#include "ir/function.h"

namespace tessera {

// Indices (into func.params()) of the parameters some statement stores into: the outputs
// a correctness check compares. Sorted ascending.
std::vector<int> WrittenParamIndices(const PrimFunc& func);

}  // namespace tessera

#endif  // TESSERA_IR_ANALYSIS_H_
