// The compute DSL, after TVM's tensor expressions (TE): declare placeholders, describe each
// computed tensor by a function of its axes (with reduction axes and reducers), then turn a
// list of tensors into a TensorIR PrimFunc with CreatePrimFunc, as `te.create_prim_func`
// does: one block per computed tensor under the root block, intermediates allocated there.
//
//   Tensor A = Placeholder({64, 32}, DataType::Float32(), "A");
//   Tensor B = Placeholder({32, 16}, DataType::Float32(), "B");
//   IterVar k = ReduceAxis(32, "k");
//   Tensor C = Compute({64, 16}, [&](const std::vector<Var>& i) {
//     return Sum(A({i[0], k.var}) * B({k.var, i[1]}), {k});
//   }, "C", {}, {"i", "j"});
//   absl::StatusOr<PrimFunc> f = CreatePrimFunc("main", {A, B, C});
//
// Tensors are cheap immutable handles. Indexing a tensor inside a compute function records
// it as an input of the tensor being computed, so the graph needs no other bookkeeping.
#ifndef TESSERA_FRONTEND_COMPUTE_H_
#define TESSERA_FRONTEND_COMPUTE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/function.h"

namespace tessera {

enum class ReduceKind : uint8_t { kSum, kMax, kMin };

// A reduction of `source` over `axes`: the body of a reducing compute.
struct Reduction {
  ReduceKind kind = ReduceKind::kSum;
  Expr source;
  std::vector<IterVar> axes;
};

// What a compute function returns: a plain expression or a reduction (implicit from both).
class ComputeBody {
 public:
  ComputeBody(Expr value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  ComputeBody(Reduction reduction)                       // NOLINT
      : is_reduction_(true), reduction_(std::move(reduction)) {}
  bool is_reduction() const { return is_reduction_; }
  const Expr& value() const { return value_; }
  const Reduction& reduction() const { return reduction_; }

 private:
  Expr value_;
  bool is_reduction_ = false;
  Reduction reduction_;
};

struct TensorNode;

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> node) : node_(std::move(node)) {}

  bool defined() const { return node_ != nullptr; }
  const TensorNode* get() const { return node_.get(); }
  const TensorNode* operator->() const { return node_.get(); }
  bool same_as(const Tensor& other) const { return node_ == other.node_; }

  const std::string& name() const;
  DataType dtype() const;
  const std::vector<int64_t>& shape() const;
  int ndim() const { return static_cast<int>(shape().size()); }
  // The buffer that holds this tensor in the created PrimFunc.
  const Buffer& buffer() const;
  // Load `this[indices...]`; inside a compute function, also records the dependence.
  Expr operator()(std::vector<Expr> indices) const;

 private:
  std::shared_ptr<const TensorNode> node_;
};

struct TensorNode {
  Buffer buffer;
  std::vector<int64_t> shape;  // the buffer's shape, as integers
  bool is_placeholder = true;
  // For computed tensors: axis variables (one per dimension), the body over them, the
  // tensors the body reads (in first-use order) and block annotations.
  std::vector<Var> axes;
  ComputeBody body = Expr();
  std::vector<Tensor> inputs;
  Annotations attrs;
};

using ComputeFn = std::function<ComputeBody(const std::vector<Var>&)>;

// An input tensor. Extents must be positive (checked: programming error otherwise).
Tensor Placeholder(std::vector<int64_t> shape, DataType dtype, std::string name);

// A computed tensor: element `i` is `fcompute(i)`. `axis_names` name the loops ("i", "j"...);
// by default axes are "i0", "i1", ... `attrs` become the block's annotations. The dtype is
// the body's dtype.
Tensor Compute(std::vector<int64_t> shape, const ComputeFn& fcompute, std::string name,
               Annotations attrs = {}, std::vector<std::string> axis_names = {});

// A reduction axis [0, extent) (an IterVar of kind R). Use `.var` in index expressions.
IterVar ReduceAxis(int64_t extent, std::string name);

// Reducers. Initial values: 0, the lowest finite value of the type, the highest one.
Reduction Sum(Expr source, std::vector<IterVar> axes);
Reduction MaxReduce(Expr source, std::vector<IterVar> axes);
Reduction MinReduce(Expr source, std::vector<IterVar> axes);

// Builds the TensorIR function computing `args` (inputs and outputs, in parameter order), as
// te.create_prim_func: a root block "root" allocating the intermediates (computed tensors not
// in `args`), then per computed tensor in dependence order a serial loop nest (spatial axes,
// then reduction axes) around a block named after the tensor with iteration variables
// `v_<axis>` bound one to one to the loops, init for reductions, and point read/write regions.
// kInvalidArgument if a placeholder the outputs need is missing from `args` or an argument
// repeats.
absl::StatusOr<PrimFunc> CreatePrimFunc(const std::string& name, const std::vector<Tensor>& args);

}  // namespace tessera

#endif  // TESSERA_FRONTEND_COMPUTE_H_
