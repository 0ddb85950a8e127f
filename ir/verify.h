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

// OK unless some buffer access of `f` provably leaves its buffer, or some block's binding
// provably leaves its iteration domain: what a function whose buffer shapes contradict its loops
// does (`A: Buffer((1, 2, 4))` indexed by a loop of 4). An index counts when it is affine in
// loop and iteration variables of constant extents and the buffer's extent is constant; its
// values are those variables' ranges, narrowed by the conditions of enclosing selects and ifs
// of the form `v < c`, `v >= c`, `v + c <= d`, ... joined by `&&` (so padding reads guarded by
// `select(3 <= h && h < 227, A[h - 3], 0)` pass). Accesses under a condition that does not
// narrow so (an else branch, `floormod(h, 2) == 0`) and bindings under a predicate are not
// judged: the check refuses only what is out of bounds for sure. kInvalidArgument names the
// block, the buffer, the index and its range: `verify main: block "C": load of A: index 1
// takes values 0..3, outside its extent 2`. Call VerifyWellFormed first: this check assumes a
// well-formed function.
absl::Status VerifyAccessesInBounds(const PrimFunc& f);

}  // namespace tessera

#endif  // TESSERA_IR_VERIFY_H_
