#include "frontend/compute.h"

#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/functor.h"

namespace tessera {
namespace {

// The inputs of the compute function being evaluated on this thread (innermost last).
thread_local std::vector<std::vector<Tensor>*> g_recorders;

void Record(const Tensor& t) {
  if (g_recorders.empty()) return;
  std::vector<Tensor>* inputs = g_recorders.back();
  for (const Tensor& seen : *inputs) {
    if (seen.same_as(t)) return;
  }
  inputs->push_back(t);
}

std::vector<Expr> ToExprs(const std::vector<int64_t>& shape) {
  std::vector<Expr> out;
  for (int64_t d : shape) out.push_back(Expr(d));
  return out;
}

Reduction MakeReduction(ReduceKind kind, Expr source, std::vector<IterVar> axes) {
  TESSERA_CHECK(source.defined()) << "reduction of an undefined expression";
  TESSERA_CHECK(!axes.empty()) << "reduction without axes";
  for (const IterVar& iv : axes) {
    TESSERA_CHECK(iv.kind == IterKind::kReduction) << "axis " << iv.var.name() << " of a "
                                                   << "reduction is not a ReduceAxis";
  }
  return Reduction{kind, std::move(source), std::move(axes)};
}

// ---- Read/write regions -------------------------------------------------------------------

// `sum(coeffs[v] * v) + constant` when an index is affine in variables; ok=false otherwise.
struct AffineForm {
  bool ok = true;
  std::map<const VarNode*, int64_t> coeffs;
  int64_t constant = 0;
  bool SameLinearPart(const AffineForm& o) const { return ok && o.ok && coeffs == o.coeffs; }
};

AffineForm ToAffine(const Expr& e) {
  AffineForm f;
  if (const int64_t* v = AsConstInt(e)) {
    f.constant = *v;
  } else if (const auto* var = e.as<VarNode>()) {
    f.coeffs[var] = 1;
  } else if (const auto* bin = e.as<BinaryNode>();
             bin != nullptr && (bin->op == BinaryOp::kAdd || bin->op == BinaryOp::kSub ||
                                bin->op == BinaryOp::kMul)) {
    AffineForm a = ToAffine(bin->a), b = ToAffine(bin->b);
    if (!a.ok || !b.ok) return AffineForm{false, {}, 0};
    if (bin->op == BinaryOp::kMul) {
      if (!a.coeffs.empty() && !b.coeffs.empty()) return AffineForm{false, {}, 0};
      const AffineForm& scale = a.coeffs.empty() ? a : b;
      f = a.coeffs.empty() ? b : a;
      for (auto& [var, c] : f.coeffs) c *= scale.constant;
      f.constant *= scale.constant;
    } else {
      const int64_t sign = bin->op == BinaryOp::kAdd ? 1 : -1;
      f = a;
      for (const auto& [var, c] : b.coeffs) f.coeffs[var] += sign * c;
      f.constant += sign * b.constant;
    }
    for (auto it = f.coeffs.begin(); it != f.coeffs.end();) {
      it = it->second == 0 ? f.coeffs.erase(it) : std::next(it);
    }
  } else {
    f.ok = false;
  }
  return f;
}

// The region of `buffer` covered by `accesses` (index tuples): per dimension a point when all
// accesses agree, the hull when they differ by constants, the whole extent otherwise.
BufferRegion RegionOf(const Buffer& buffer, const std::vector<std::vector<Expr>>& accesses) {
  BufferRegion region;
  region.buffer = buffer;
  for (int d = 0; d < buffer.ndim(); ++d) {
    const Expr& first = accesses[0][d];
    AffineForm base = ToAffine(first);
    Expr lo = first;
    int64_t min_c = base.constant, max_c = base.constant;
    bool hull = true;
    for (size_t a = 1; a < accesses.size() && hull; ++a) {
      const Expr& idx = accesses[a][d];
      if (idx.same_as(first)) continue;
      AffineForm f = ToAffine(idx);
      if (!f.SameLinearPart(base)) {
        hull = false;
        break;
      }
      if (f.constant < min_c) {
        min_c = f.constant;
        lo = idx;
      }
      max_c = std::max(max_c, f.constant);
    }
    if (hull) {
      region.region.push_back(Range{lo, Expr(max_c - min_c + 1)});
    } else {
      region.region.push_back(Range{Expr(0), buffer.shape()[d]});
    }
  }
  return region;
}

// Regions of every buffer loaded in `expr`, in first-use order.
std::vector<BufferRegion> ReadRegions(const Expr& expr) {
  std::vector<Buffer> order;
  std::unordered_map<const BufferNode*, std::vector<std::vector<Expr>>> accesses;
  PostOrderVisitExprs(expr, [&](const Expr& e) {
    if (const auto* load = e.as<BufferLoadNode>()) {
      auto [it, inserted] = accesses.try_emplace(load->buffer.get());
      if (inserted) order.push_back(load->buffer);
      it->second.push_back(load->indices);
    }
  });
  std::vector<BufferRegion> regions;
  for (const Buffer& b : order) regions.push_back(RegionOf(b, accesses[b.get()]));
  return regions;
}

// ---- Stages -------------------------------------------------------------------------------

Stmt BuildStage(const TensorNode& t) {
  const Buffer& buffer = t.buffer;
  VarMap vmap;
  std::vector<IterVar> iter_vars;
  std::vector<Expr> bindings;
  std::vector<std::pair<Var, int64_t>> loops;
  auto add_axis = [&](const Var& axis, int64_t extent, IterKind kind) {
    Var loop(axis.name());
    Var block_var("v_" + axis.name());
    vmap[axis] = block_var;
    iter_vars.push_back(IterVar{block_var, Range{Expr(0), Expr(extent)}, kind});
    bindings.push_back(loop);
    loops.emplace_back(loop, extent);
  };
  for (int d = 0; d < buffer.ndim(); ++d) add_axis(t.axes[d], t.shape[d], IterKind::kSpatial);
  std::vector<Expr> out_index;
  for (const IterVar& iv : iter_vars) out_index.push_back(iv.var);

  BlockNode block;
  block.name = buffer.name();
  block.annotations = t.attrs;
  Expr value;
  if (t.body.is_reduction()) {
    const Reduction& r = t.body.reduction();
    for (const IterVar& axis : r.axes) {
      add_axis(axis.var, *AsConstInt(axis.dom.extent), IterKind::kReduction);
    }
    Expr source = Substitute(r.source, vmap);
    Expr current = buffer.Load(out_index);
    Expr init;
    switch (r.kind) {
      case ReduceKind::kSum:
        value = current + source;
        init = MakeConst(buffer.dtype(), 0);
        break;
      case ReduceKind::kMax:
        value = Max(current, source);
        init = MinValue(buffer.dtype());
        break;
      case ReduceKind::kMin:
        value = Min(current, source);
        init = MaxValue(buffer.dtype());
        break;
    }
    block.init = BufferStore(buffer, init, out_index);
  } else {
    value = Substitute(t.body.value(), vmap);
  }
  block.iter_vars = iter_vars;
  block.reads = ReadRegions(value);
  block.writes = {RegionOf(buffer, {out_index})};
  block.body = BufferStore(buffer, value, out_index);
  Stmt stmt = BlockRealize(bindings, True(), MakeBlock(block));
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
    stmt = For(it->first, Expr(it->second), ForKind::kSerial, stmt);
  }
  return stmt;
}

// Post-order over the compute graph from `t`: producers before consumers.
void TopoVisit(const Tensor& t, std::unordered_set<const TensorNode*>* visited,
               std::vector<Tensor>* order) {
  if (!visited->insert(t.get()).second) return;
  for (const Tensor& input : t->inputs) TopoVisit(input, visited, order);
  order->push_back(t);
}

}  // namespace

const std::string& Tensor::name() const { return node_->buffer.name(); }
DataType Tensor::dtype() const { return node_->buffer.dtype(); }
const Buffer& Tensor::buffer() const { return node_->buffer; }

const std::vector<int64_t>& Tensor::shape() const { return node_->shape; }

Expr Tensor::operator()(std::vector<Expr> indices) const {
  TESSERA_CHECK(defined()) << "indexing an undefined tensor";
  TESSERA_CHECK_EQ(static_cast<int>(indices.size()), node_->buffer.ndim())
      << "indices of tensor " << name();
  Record(*this);
  return node_->buffer.Load(std::move(indices));
}

Tensor Placeholder(std::vector<int64_t> shape, DataType dtype, std::string name) {
  for (int64_t d : shape) TESSERA_CHECK(d > 0) << "placeholder " << name << " extent " << d;
  auto node = std::make_shared<TensorNode>();
  node->buffer = Buffer::Make(std::move(name), dtype, ToExprs(shape));
  node->shape = std::move(shape);
  node->is_placeholder = true;
  return Tensor(std::move(node));
}

Tensor Compute(std::vector<int64_t> shape, const ComputeFn& fcompute, std::string name,
               Annotations attrs, std::vector<std::string> axis_names) {
  for (int64_t d : shape) TESSERA_CHECK(d > 0) << "compute " << name << " extent " << d;
  TESSERA_CHECK(axis_names.empty() || axis_names.size() == shape.size())
      << "compute " << name << ": " << axis_names.size() << " axis names for " << shape.size()
      << " dimensions";
  auto node = std::make_shared<TensorNode>();
  node->is_placeholder = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    node->axes.push_back(Var(axis_names.empty() ? absl::StrCat("i", d) : axis_names[d]));
  }
  g_recorders.push_back(&node->inputs);
  ComputeBody body = fcompute(node->axes);
  g_recorders.pop_back();
  const Expr& value = body.is_reduction() ? body.reduction().source : body.value();
  TESSERA_CHECK(value.defined()) << "compute " << name << " returned an undefined expression";
  const DataType dtype = value.dtype();
  node->body = std::move(body);
  node->attrs = std::move(attrs);
  node->buffer = Buffer::Make(std::move(name), dtype, ToExprs(shape));
  node->shape = std::move(shape);
  return Tensor(std::move(node));
}

IterVar ReduceAxis(int64_t extent, std::string name) {
  TESSERA_CHECK(extent > 0) << "reduce axis " << name << " extent " << extent;
  return IterVar{Var(std::move(name)), Range{Expr(0), Expr(extent)}, IterKind::kReduction};
}

Reduction Sum(Expr source, std::vector<IterVar> axes) {
  return MakeReduction(ReduceKind::kSum, std::move(source), std::move(axes));
}
Reduction MaxReduce(Expr source, std::vector<IterVar> axes) {
  return MakeReduction(ReduceKind::kMax, std::move(source), std::move(axes));
}
Reduction MinReduce(Expr source, std::vector<IterVar> axes) {
  return MakeReduction(ReduceKind::kMin, std::move(source), std::move(axes));
}

absl::StatusOr<PrimFunc> CreatePrimFunc(const std::string& name, const std::vector<Tensor>& args) {
  std::unordered_set<const TensorNode*> is_arg;
  for (const Tensor& t : args) {
    if (!t.defined()) {
      return absl::InvalidArgumentError(
          absl::StrCat("create_prim_func ", name, ": undefined tensor in the arguments"));
    }
    if (!is_arg.insert(t.get()).second) {
      return absl::InvalidArgumentError(absl::StrCat("create_prim_func ", name, ": tensor ",
                                                     t.name(), " appears twice in the arguments"));
    }
  }
  std::unordered_set<const TensorNode*> visited;
  std::vector<Tensor> order;
  for (const Tensor& t : args) TopoVisit(t, &visited, &order);

  std::vector<Buffer> intermediates;
  std::vector<Stmt> stages;
  for (const Tensor& t : order) {
    if (t->is_placeholder) {
      if (!is_arg.count(t.get())) {
        return absl::InvalidArgumentError(absl::StrCat("create_prim_func ", name, ": placeholder ",
                                                       t.name(),
                                                       " is read but missing from the arguments"));
      }
      continue;
    }
    if (!is_arg.count(t.get())) intermediates.push_back(t.buffer());
    stages.push_back(BuildStage(*t.get()));
  }
  BlockNode root;
  root.name = "root";
  root.alloc_buffers = std::move(intermediates);
  root.body = SeqStmt(std::move(stages));
  if (!root.body.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("create_prim_func ", name, ": nothing to compute"));
  }
  std::vector<Buffer> params;
  for (const Tensor& t : args) params.push_back(t.buffer());
  Annotations attrs;
  attrs["global_symbol"] = name;
  return PrimFunc::Make(name, std::move(params), BlockRealize({}, True(), MakeBlock(root)),
                        std::move(attrs));
}

}  // namespace tessera
