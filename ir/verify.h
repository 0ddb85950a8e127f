// Well-formedness of TensorIR functions: the structural rules every pass, primitive and
// reader must preserve. Used by tests after each transformation and by the database before it
// trusts a stored function.
#ifndef TESSERA_IR_VERIFY_H_
#define TESSERA_IR_VERIFY_H_

#include "absl/status/status.h"
#include "ir/function.h"

namespace tessera {

// OK if `f` is well-formed, else kInvalidArgument naming the function and the offending block,
// loop or buffer. The rules:
//  - the body is the BlockRealize of a root block without iteration variables; every other
//    Block sits in a BlockRealize whose iter_values match its iter_vars one to one;
//  - every variable used is defined: parameter shape/stride variables anywhere, loop variables
//    inside their loop, iteration variables inside their block; a loop variable is not used
//    inside a block (with iteration variables) nested in its loop, except through that
//    block's iter_values and predicate;
//  - no loop or iteration variable is defined twice; block names are unique;
//  - every buffer used is a parameter or allocated by an enclosing block, is not allocated
//    twice, and an allocated buffer is not a parameter;
//  - loads, stores and regions give as many indices as the buffer has dimensions, stores
//    have the buffer's dtype, conditions and predicates are bool, binary operands agree;
//  - constant loop extents and iteration-domain extents are positive; loop and iteration
//    variables are integers; thread tags are blockIdx.[xyz], threadIdx.[xyz] or vthread.[xyz]
//    and are set exactly on thread_binding loops;
//  - each non-root block declares the buffers its own body stores to in `writes`, and the
//    buffers it loads in `reads` (or `writes`, for read-modify-write accumulators); buffers
//    the block allocates itself are exempt; accesses of nested blocks are checked against
//    those blocks only;
//  - a block with an init statement has a reduction iteration variable.
absl::Status VerifyWellFormed(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_IR_VERIFY_H_
