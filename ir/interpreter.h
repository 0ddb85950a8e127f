// The reference interpreter: runs any PrimFunc, scheduled or not, on host arrays. It is the
// oracle of every correctness check (design principle P3), so it follows the IR's meaning
// literally: block predicates, init on the first reduction step, thread-bound loops run as
// serial loops, allocations zero-filled, float16/bfloat16 values rounded on every store.
#ifndef TESSERA_IR_INTERPRETER_H_
#define TESSERA_IR_INTERPRETER_H_

#include <vector>

#include "absl/status/status.h"
#include "ir/function.h"
#include "ir/ndarray.h"

namespace tessera {

// Runs `func` with args[i] bound to func.params()[i]; outputs are written in place.
// kInvalidArgument if the argument count, a dtype or a shape does not match the params;
// kOutOfRange naming the buffer and index on an out-of-bounds access.
absl::Status Interpret(const PrimFunc& func, const std::vector<NDArray*>& args);

}  // namespace tessera

#endif  // TESSERA_IR_INTERPRETER_H_
