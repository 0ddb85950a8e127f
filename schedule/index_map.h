// An IndexMap maps an index space to another: initial index variables and one final index
// expression per output dimension, e.g. `lambda i, j: (floordiv(i, 16), j, floormod(i, 16))`.
// Layout primitives use it to re-shape buffers (TransformLayout) and iteration spaces
// (TransformBlockLayout).
//
// Text form (what ToString writes and Parse reads, also the trace form):
//   lambda <var>, <var>, ...: (<expr>, <expr>, ...)
// Expressions are integer index arithmetic over the variables: integer literals, `+ - *`,
// unary `-`, parentheses, `floordiv(a, b)`, `floormod(a, b)`, `min(a, b)`, `max(a, b)`, and
// Python's `a // b` and `a % b` (the same as floordiv / floormod). ToString writes the function
// forms; a one-element tuple is written `(e,)`. Trace JSON stores an IndexMap input as this
// text, unquoted: an input string that starts with "lambda " is an IndexMap (schedule/trace.cc).
// Expressions nest at most 64 levels (nodes on a root-to-leaf path of a final index; parentheses,
// unary minus and calls in the text), far below what any walk over them needs from the stack, so
// hostile maps are errors rather than crashes.
#ifndef TESSERA_SCHEDULE_INDEX_MAP_H_
#define TESSERA_SCHEDULE_INDEX_MAP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/arith/analyzer.h"
#include "ir/expr.h"

namespace tessera {

class IndexMap {
 public:
  // The prefix every text form starts with.
  static constexpr const char* kTextPrefix = "lambda ";

  // A map from `initial_indices` (distinct index variables, at least one) to `final_indices`
  // (at least one). kInvalidArgument if a final index is not integer index arithmetic (see the
  // header comment) over the initial variables or nests too deeply.
  static absl::StatusOr<IndexMap> Make(std::vector<Var> initial_indices,
                                       std::vector<Expr> final_indices);
  // Parses the text form. kInvalidArgument "index map: column C: <what>" on malformed text,
  // unknown or repeated variable names, or expressions that nest too deeply.
  static absl::StatusOr<IndexMap> Parse(const std::string& text);
  // True if `text` starts with kTextPrefix (how traces recognise an IndexMap).
  static bool IsIndexMapText(const std::string& text);

  const std::vector<Var>& initial_indices() const { return initial_; }
  const std::vector<Expr>& final_indices() const { return final_; }
  size_t num_inputs() const { return initial_.size(); }
  size_t num_outputs() const { return final_.size(); }

  // The final indices with the initial variables replaced by `indices` (one per initial
  // variable: a precondition, checked). Simplified by `analyzer` if given.
  std::vector<Expr> MapIndices(const std::vector<Expr>& indices,
                               arith::Analyzer* analyzer = nullptr) const;

  // The shape of the final index space when initial index d ranges over [0, shape[d]):
  // extent_k = max(final_k) + 1. kInvalidArgument if the arity differs, the shape is not
  // constant, or some final index is unbounded or can be negative.
  absl::StatusOr<std::vector<Expr>> MapShape(const std::vector<Expr>& shape) const;

  // The inverse map, from the final index space (of shape MapShape(shape)) back to the
  // initial one, for a map that is a bijection from [0, shape) onto that space (detected with
  // arith::DetectIterMap). kInvalidArgument naming the reason if the map is not bijective
  // there (no padding support: every split must divide its extent exactly).
  absl::StatusOr<IndexMap> Inverse(const std::vector<Expr>& shape) const;

  // The text form (see the header comment); Parse(ToString()) is an equal map.
  std::string ToString() const;

 private:
  IndexMap(std::vector<Var> initial, std::vector<Expr> final_indices)
      : initial_(std::move(initial)), final_(std::move(final_indices)) {}

  std::vector<Var> initial_;
  std::vector<Expr> final_;
};

}  // namespace tessera

#endif  // TESSERA_SCHEDULE_INDEX_MAP_H_
