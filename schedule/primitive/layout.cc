// Layout and padding: TransformLayout re-shapes a buffer through an IndexMap and rewrites
// every access to it; TransformBlockLayout re-maps a block's iteration space and regenerates
// its loop nest; PadEinsum pads the iteration space of an einsum-like block to multiples of
// given sizes, with zero-filled copies of the inputs and a cropping copy of the output.
// Index maps must be bijections over the shapes they apply to (no padding through maps).
#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "ir/arith/int_set.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "schedule/index_map.h"
#include "schedule/instruction_kinds.h"
#include "schedule/primitive/apply_util.h"
#include "schedule/primitive/util.h"
#include "schedule/schedule.h"

namespace tessera {

extern const InstructionKind kTransformLayout;
extern const InstructionKind kTransformBlockLayout;
extern const InstructionKind kPadEinsum;

namespace {

using primitive::Invalid;
using primitive::WithPrimitive;

// Rewrites every access to `old_buffer` into an access to `new_buffer` at the mapped indices.
class LayoutRewriter : public IRMutator {
 public:
  LayoutRewriter(Buffer old_buffer, Buffer new_buffer, const IndexMap& map)
      : old_(std::move(old_buffer)), new_(std::move(new_buffer)), map_(map) {}

  Buffer VisitBuffer(const Buffer& buffer) override { return buffer.same_as(old_) ? new_ : buffer; }

 protected:
  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    if (!op->buffer.same_as(old_)) return IRMutator::VisitExpr_(op, self);
    bool changed = false;
    std::vector<Expr> indices = VisitExprs(op->indices, &changed);
    return new_.Load(map_.MapIndices(indices, &analyzer_));
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (!op->buffer.same_as(old_)) return IRMutator::VisitStmt_(op, self);
    bool changed = false;
    std::vector<Expr> indices = VisitExprs(op->indices, &changed);
    return BufferStore(new_, VisitExpr(op->value), map_.MapIndices(indices, &analyzer_));
  }

  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    analyzer_.Bind(op->loop_var, Range{Expr(0), op->extent});
    return IRMutator::VisitStmt_(op, self);
  }

  Stmt VisitStmt_(const BlockNode* op, const Stmt& self) override {
    for (const IterVar& iv : op->iter_vars) analyzer_.Bind(iv.var, iv.dom);
    Stmt result = IRMutator::VisitStmt_(op, self);
    const auto* block = result.as<BlockNode>();
    auto node = std::make_shared<BlockNode>(*block);
    bool changed = false;
    for (std::vector<BufferRegion>* regions : {&node->reads, &node->writes}) {
      for (BufferRegion& r : *regions) {
        if (r.buffer.same_as(new_) && r.region.size() == map_.num_inputs()) {
          r.region = MapRegion(r.region);
          changed = true;
        }
      }
    }
    return changed ? Stmt(MakeBlock(*node)) : result;
  }

 private:
  // The box the map sends `region` to (a hull; exact for point regions).
  std::vector<Range> MapRegion(const std::vector<Range>& region) {
    arith::VarIntSetMap dom;
    for (size_t d = 0; d < region.size(); ++d) {
      const Range& r = region[d];
      dom[map_.initial_indices()[d]] =
          IsConstInt(r.extent, 1)
              ? arith::IntSet::SinglePoint(r.min)
              : arith::IntSet::Interval(r.min, analyzer_.Simplify(r.min + r.extent - Expr(1)));
    }
    std::vector<Range> out;
    for (size_t k = 0; k < map_.num_outputs(); ++k) {
      arith::IntSet set = arith::EvalSet(map_.final_indices()[k], dom, &analyzer_);
      out.push_back(set.IsBounded() ? set.ToRange(&analyzer_) : Range{Expr(0), new_.shape()[k]});
    }
    return out;
  }

  Buffer old_;
  Buffer new_;
  const IndexMap& map_;
  arith::Analyzer analyzer_;
};

// Replaces buffers everywhere (loads, stores, regions, allocations).
class LayoutBufferReplacer : public IRMutator {
 public:
  explicit LayoutBufferReplacer(
      std::unordered_map<Buffer, Buffer, BufferIdentityHash, BufferIdentityEqual> map)
      : map_(std::move(map)) {}
  Buffer VisitBuffer(const Buffer& buffer) override {
    auto it = map_.find(buffer);
    return it == map_.end() ? buffer : it->second;
  }

 private:
  std::unordered_map<Buffer, Buffer, BufferIdentityHash, BufferIdentityEqual> map_;
};

// The loops of a block that has them to itself: each loop's body is the next loop (the
// innermost's is the block), loops are serial, and each iteration variable (domain [0, e)) is
// bound to exactly one loop of extent e.
struct OwnLoopNest {
  std::vector<Stmt> loops;                   // outermost first
  std::vector<const ForNode*> loop_of_iter;  // per iteration variable
  std::vector<int64_t> extents;              // per iteration variable
};

absl::StatusOr<OwnLoopNest> CheckOwnLoopNest(const char* primitive, const StmtPath& path) {
  const auto* realize = path.back().as<BlockRealizeNode>();
  const Block& block = realize->block;
  const std::string& name = block->name;
  if (path.size() == 1 || block->iter_vars.empty()) {
    return Invalid(primitive, absl::StrCat("block ", name, " has no iteration variables"));
  }
  if (!IsConstInt(realize->predicate, 1)) {
    return Invalid(primitive, absl::StrCat("block ", name, " has a predicate (",
                                           PrintExpr(realize->predicate), ")"));
  }
  OwnLoopNest nest;
  nest.loops = LoopsOnPath(path);
  std::unordered_map<const VarNode*, const ForNode*> loop_by_var;
  for (size_t i = 0; i < nest.loops.size(); ++i) {
    const auto* loop = nest.loops[i].as<ForNode>();
    const Stmt& inner = i + 1 < nest.loops.size() ? nest.loops[i + 1] : path.back();
    if (!loop->body.same_as(inner)) {
      return Invalid(primitive,
                     absl::StrCat("block ", name, " is not the only statement under loop ",
                                  loop->loop_var.name()));
    }
    if (loop->for_kind != ForKind::kSerial) {
      return Invalid(primitive, absl::StrCat("loop ", loop->loop_var.name(), " above block ", name,
                                             " is ", ForKindName(loop->for_kind),
                                             "; only serial loops can be regenerated"));
    }
    loop_by_var[loop->loop_var.get()] = loop;
  }
  std::set<const ForNode*> used;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    const IterVar& iv = block->iter_vars[k];
    const int64_t* extent = AsConstInt(iv.dom.extent);
    if (!IsConstInt(iv.dom.min, 0) || extent == nullptr) {
      return Invalid(primitive, absl::StrCat("iteration variable ", iv.var.name(), " of block ",
                                             name, " does not range over [0, constant)"));
    }
    const auto* var = realize->iter_values[k].as<VarNode>();
    auto it = var == nullptr ? loop_by_var.end() : loop_by_var.find(var);
    if (it == loop_by_var.end() || !used.insert(it->second).second ||
        !IsConstInt(it->second->extent, *extent)) {
      return Invalid(
          primitive,
          absl::StrCat("block ", name, " does not have trivial bindings: ", iv.var.name(),
                       " is bound to ", PrintExpr(realize->iter_values[k]),
                       " (each iteration variable must be bound to its own loop of the "
                       "same extent)"));
    }
    nest.loop_of_iter.push_back(it->second);
    nest.extents.push_back(*extent);
  }
  if (used.size() != nest.loops.size()) {
    return Invalid(primitive, absl::StrCat("block ", name,
                                           " has loops that bind none of its iteration variables"));
  }
  return nest;
}

// Loop nest `for l_k in range(extents[k])` around a block bound to the loop variables.
Stmt MakeNest(const std::vector<Var>& loop_vars, const std::vector<Expr>& extents,
              const Block& block) {
  Stmt body = BlockRealize(std::vector<Expr>(loop_vars.begin(), loop_vars.end()), True(), block);
  for (size_t k = loop_vars.size(); k-- > 0;) {
    body = For(loop_vars[k], extents[k], ForKind::kSerial, body);
  }
  return body;
}

// A spatial copy block `dst[w] = value(w)` over `extents`, named `name`.
Stmt MakeCopyNest(const std::string& name, const std::vector<std::string>& var_names,
                  const std::vector<int64_t>& extents, const Buffer& dst, const Buffer& src,
                  const std::function<Expr(const std::vector<Expr>&)>& value) {
  std::vector<Var> loop_vars;
  std::vector<Expr> extent_exprs, w;
  BlockNode node;
  node.name = name;
  for (size_t d = 0; d < extents.size(); ++d) {
    loop_vars.push_back(Var(var_names[d]));
    extent_exprs.push_back(Expr(extents[d]));
    Var v(absl::StrCat("v_", var_names[d]));
    node.iter_vars.push_back(IterVar{v, Range{Expr(0), Expr(extents[d])}, IterKind::kSpatial});
    w.push_back(v);
  }
  std::vector<Range> point;
  for (const Expr& e : w) point.push_back(Range{e, Expr(1)});
  node.reads = {BufferRegion{src, point}};
  node.writes = {BufferRegion{dst, point}};
  node.body = BufferStore(dst, value(w), w);
  return MakeNest(loop_vars, extent_exprs, MakeBlock(node));
}

// The copy of `src` into its padded buffer `pad` (shape `extents`; `original` are the unpadded
// iteration extents): src[w] where w lies inside both the original iteration space and src's
// shape, zero elsewhere. An einsum-like block may read a buffer smaller than its iteration
// space under a guard of its own (e.g. the zero-filling copy block of an earlier PadEinsum),
// so the copy must bound every dimension by the source's extent, not only the padded ones.
Stmt MakePadCopyNest(const std::string& name, const std::vector<std::string>& var_names,
                     const std::vector<int64_t>& original, const std::vector<int64_t>& extents,
                     const Buffer& pad, const Buffer& src) {
  return MakeCopyNest(name, var_names, extents, pad, src, [&](const std::vector<Expr>& w) {
    Expr inside;
    auto require = [&](const Expr& c) { inside = inside.defined() ? And(inside, c) : c; };
    for (size_t d = 0; d < w.size(); ++d) {
      const int64_t* src_extent = AsConstInt(src.shape()[d]);
      const int64_t bound =
          src_extent == nullptr ? original[d] : std::min(original[d], *src_extent);
      if (bound < extents[d]) require(LT(w[d], Expr(bound)));
      if (src_extent == nullptr) require(LT(w[d], src.shape()[d]));
    }
    Expr load = src.Load(w);
    return inside.defined() ? Select(inside, load, MakeConst(src.dtype(), 0)) : load;
  });
}

// ---- PadEinsum analysis ------------------------------------------------------------------

struct EinsumInfo {
  Buffer output;
  // Buffers in order of first access, with the iteration variable (position) of each index.
  std::vector<Buffer> buffers;
  std::unordered_map<Buffer, std::vector<int>, BufferIdentityHash, BufferIdentityEqual> pattern;
  // The block has no init and its body loads the output (it accumulates into what is there).
  bool body_reads_output = false;
};

absl::StatusOr<EinsumInfo> AnalyzeEinsum(const char* primitive, const Block& block) {
  const std::string not_einsum = absl::StrCat("block ", block->name, " is not einsum-like: ");
  std::unordered_map<const VarNode*, int> position;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    position[block->iter_vars[k].var.get()] = static_cast<int>(k);
  }
  EinsumInfo info;
  absl::Status status;
  auto record = [&](const Buffer& buffer, const std::vector<Expr>& indices) {
    std::vector<int> pat;
    for (const Expr& index : indices) {
      const auto* v = index.as<VarNode>();
      auto it = v == nullptr ? position.end() : position.find(v);
      if (it == position.end()) {
        status =
            Invalid(primitive, absl::StrCat(not_einsum, "buffer ", buffer.name(), " is indexed by ",
                                            PrintExpr(index), ", not by an iteration variable"));
        return;
      }
      if (std::find(pat.begin(), pat.end(), it->second) != pat.end()) {
        status = Invalid(primitive, absl::StrCat(not_einsum, "buffer ", buffer.name(),
                                                 " is indexed twice by ", v->name));
        return;
      }
      pat.push_back(it->second);
    }
    auto [entry, inserted] = info.pattern.try_emplace(buffer, pat);
    if (inserted) {
      info.buffers.push_back(buffer);
    } else if (entry->second != pat) {
      status = Invalid(primitive, absl::StrCat(not_einsum, "buffer ", buffer.name(),
                                               " is accessed with different indices"));
    }
  };
  const auto* store = block->body.as<BufferStoreNode>();
  if (store == nullptr || block->writes.size() != 1 || !block->alloc_buffers.empty()) {
    return Invalid(primitive,
                   absl::StrCat(not_einsum, "its body must be a single store to its one output"));
  }
  info.output = store->buffer;
  record(store->buffer, store->indices);
  const auto* init = block->init.defined() ? block->init.as<BufferStoreNode>() : nullptr;
  if (block->init.defined()) {
    if (init == nullptr || !init->buffer.same_as(info.output)) {
      return Invalid(primitive,
                     absl::StrCat(not_einsum, "its init must be a store to ", info.output.name()));
    }
    record(init->buffer, init->indices);
  }
  for (const Stmt& s : {block->init, block->body}) {
    if (!s.defined()) continue;
    PostOrderVisitExprs(s, [&](const Expr& e) {
      if (!status.ok()) return;
      if (const auto* load = e.as<BufferLoadNode>()) {
        record(load->buffer, load->indices);
        if (s.same_as(block->body) && !block->init.defined() && load->buffer.same_as(info.output)) {
          info.body_reads_output = true;
        }
      }
      const auto* bin = e.as<BinaryNode>();
      if (bin != nullptr && !e.dtype().is_float() &&
          (bin->op == BinaryOp::kDiv || bin->op == BinaryOp::kFloorDiv ||
           bin->op == BinaryOp::kFloorMod)) {
        // Integer division of loaded values could divide by the zero padding.
        bool loads = false;
        PostOrderVisitExprs(bin->b,
                            [&](const Expr& x) { loads |= x.kind() == ExprKind::kBufferLoad; });
        if (loads) {
          status =
              Invalid(primitive, absl::StrCat(not_einsum, "integer division by a loaded value (",
                                              PrintExpr(e), ") could divide by the padding"));
        }
      }
    });
  }
  TESSERA_RETURN_IF_ERROR(status);
  // The output is indexed by exactly the spatial iteration variables.
  std::vector<int> spatial;
  for (size_t k = 0; k < block->iter_vars.size(); ++k) {
    if (block->iter_vars[k].kind == IterKind::kSpatial) spatial.push_back(static_cast<int>(k));
  }
  std::vector<int> out = info.pattern[info.output];
  std::sort(out.begin(), out.end());
  if (out != spatial) {
    return Invalid(primitive, absl::StrCat(not_einsum, "output ", info.output.name(),
                                           " must be indexed by exactly its spatial iteration "
                                           "variables"));
  }
  return info;
}

// True if `e` (through multiplications and casts) has a factor loading a buffer other than
// `output` that is indexed by iteration variable `r` (per `info`).
bool HasFactorIndexedBy(const Expr& e, const EinsumInfo& info, int r) {
  if (const auto* cast = e.as<CastNode>()) return HasFactorIndexedBy(cast->value, info, r);
  if (const auto* bin = e.as<BinaryNode>(); bin != nullptr && bin->op == BinaryOp::kMul) {
    return HasFactorIndexedBy(bin->a, info, r) || HasFactorIndexedBy(bin->b, info, r);
  }
  if (const auto* load = e.as<BufferLoadNode>()) {
    if (load->buffer.same_as(info.output)) return false;
    const std::vector<int>& pat = info.pattern.at(load->buffer);
    return std::find(pat.begin(), pat.end(), r) != pat.end();
  }
  return false;
}

// For a padded reduction variable r the update must be `out = out + (product with a factor
// read from a zero-padded buffer indexed by r)`, so that padded steps add zero.
absl::Status CheckPaddedReduction(const char* primitive, const Block& block, const EinsumInfo& info,
                                  int r) {
  const auto* store = block->body.as<BufferStoreNode>();
  const auto* add = store->value.as<BinaryNode>();
  auto is_self = [&](const Expr& e) {
    const auto* load = e.as<BufferLoadNode>();
    return load != nullptr && load->buffer.same_as(info.output);
  };
  bool ok = add != nullptr && add->op == BinaryOp::kAdd &&
            ((is_self(add->a) && HasFactorIndexedBy(add->b, info, r)) ||
             (is_self(add->b) && HasFactorIndexedBy(add->a, info, r)));
  if (!ok) {
    return Invalid(primitive,
                   absl::StrCat("block ", block->name, ": padding reduction variable ",
                                block->iter_vars[r].var.name(), " needs an update ",
                                info.output.name(), " = ", info.output.name(),
                                " + a product with a factor read from a buffer indexed by it, so "
                                "that padded steps add zero"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Schedule::TransformLayout(BlockRV block_rv, int buffer_index, int buffer_index_type,
                                       const IndexMap& index_map) {
  constexpr const char* kPrimitive = "transform_layout";
  absl::StatusOr<StmtPath> path = GetPath(block_rv);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  const Block& block = path->back().as<BlockRealizeNode>()->block;
  if (buffer_index_type != 0 && buffer_index_type != 1) {
    return Invalid(kPrimitive, absl::StrCat("buffer_index_type is ", buffer_index_type,
                                            "; use 0 (read) or 1 (write)"));
  }
  const std::vector<BufferRegion>& regions = buffer_index_type == 0 ? block->reads : block->writes;
  const char* what = buffer_index_type == 0 ? "read" : "write";
  if (buffer_index < 0 || buffer_index >= static_cast<int>(regions.size())) {
    return Invalid(kPrimitive,
                   absl::StrCat("block ", block->name, " has ", regions.size(), " ", what,
                                " buffers; index ", buffer_index, " is out of range"));
  }
  const Buffer buffer = regions[buffer_index].buffer;
  const std::string where = absl::StrCat("buffer ", buffer.name(), " (", what, " ", buffer_index,
                                         " of block ", block->name, ")");
  if (index_map.num_inputs() != static_cast<size_t>(buffer.ndim())) {
    return Invalid(kPrimitive, absl::StrCat(where, " has ", buffer.ndim(),
                                            " dimensions but the index map takes ",
                                            index_map.num_inputs(), " indices"));
  }
  if (!buffer->strides.empty()) {
    return Invalid(kPrimitive, absl::StrCat(where,
                                            " has explicit strides (storage_align); "
                                            "transform its layout before aligning it"));
  }
  absl::StatusOr<std::vector<Expr>> shape = index_map.MapShape(buffer.shape());
  absl::Status bijective = shape.ok() ? index_map.Inverse(buffer.shape()).status() : shape.status();
  if (!bijective.ok()) {
    return Invalid(kPrimitive, absl::StrCat(where, ": ", bijective.message(),
                                            " (padding layouts are not supported)"));
  }
  const Buffer new_buffer = buffer.WithShape(*shape);
  LayoutRewriter rewriter(buffer, new_buffer, index_map);
  Stmt body = rewriter.VisitStmt(func_.body());
  std::vector<Buffer> params = func_.params();
  for (Buffer& p : params) {
    if (p.same_as(buffer)) p = new_buffer;
  }
  func_ = PrimFunc::Make(func_.name(), std::move(params), std::move(body), func_.attrs());
  Record(kTransformLayout, {InstValue::Of(block_rv), InstValue::String(index_map.ToString())},
         {InstValue::Int(buffer_index), InstValue::Int(buffer_index_type), InstValue()}, {});
  return absl::OkStatus();
}

absl::Status Schedule::TransformBlockLayout(BlockRV block_rv, const IndexMap& index_map) {
  constexpr const char* kPrimitive = "transform_block_layout";
  absl::StatusOr<StmtPath> path = GetPath(block_rv);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  TESSERA_ASSIGN_OR_RETURN(OwnLoopNest nest, CheckOwnLoopNest(kPrimitive, *path));
  const Block& block = path->back().as<BlockRealizeNode>()->block;
  const std::vector<IterVar>& ivs = block->iter_vars;
  if (index_map.num_inputs() != ivs.size()) {
    return Invalid(kPrimitive, absl::StrCat("block ", block->name, " has ", ivs.size(),
                                            " iteration variables but the index map takes ",
                                            index_map.num_inputs(), " indices"));
  }
  std::vector<Expr> shape;
  for (int64_t e : nest.extents) shape.push_back(Expr(e));
  absl::StatusOr<std::vector<Expr>> new_shape = index_map.MapShape(shape);
  absl::StatusOr<IndexMap> inverse =
      new_shape.ok() ? index_map.Inverse(shape) : absl::StatusOr<IndexMap>(new_shape.status());
  if (!inverse.ok()) {
    return Invalid(kPrimitive,
                   absl::StrCat("block ", block->name, ": ", inverse.status().message()));
  }
  // New iteration variables: the kind of the old ones they depend on (never both kinds).
  std::vector<IterVar> new_ivs;
  std::vector<Var> loop_vars;
  for (size_t k = 0; k < index_map.num_outputs(); ++k) {
    const Expr& e = index_map.final_indices()[k];
    bool spatial = false, reduction = false;
    for (size_t d = 0; d < ivs.size(); ++d) {
      const VarNode* var = index_map.initial_indices()[d].get();
      if (UsesVar(e, [var](const VarNode* v) { return v == var; })) {
        (ivs[d].kind == IterKind::kReduction ? reduction : spatial) = true;
      }
    }
    if (spatial && reduction) {
      return Invalid(kPrimitive,
                     absl::StrCat("block ", block->name, ": final index ", k, " (", PrintExpr(e),
                                  ") mixes spatial and reduction iteration variables"));
    }
    new_ivs.push_back(IterVar{Var(absl::StrCat("v", k)), Range{Expr(0), (*new_shape)[k]},
                              reduction ? IterKind::kReduction : IterKind::kSpatial});
    loop_vars.push_back(Var(absl::StrCat("ax", k)));
  }
  // Old iteration variables as expressions of the new ones.
  arith::Analyzer analyzer;
  std::vector<Expr> new_vars;
  for (const IterVar& iv : new_ivs) {
    analyzer.Bind(iv.var, iv.dom);
    new_vars.push_back(iv.var);
  }
  std::vector<Expr> old_values = inverse->MapIndices(new_vars, &analyzer);
  VarMap vmap;
  for (size_t d = 0; d < ivs.size(); ++d) vmap[ivs[d].var] = old_values[d];
  BlockNode node = *block.get();
  node.iter_vars = new_ivs;
  for (std::vector<BufferRegion>* regions : {&node.reads, &node.writes}) {
    for (BufferRegion& r : *regions) {
      for (Range& range : r.region) {
        range = Range{analyzer.Simplify(Substitute(range.min, vmap)),
                      analyzer.Simplify(Substitute(range.extent, vmap))};
      }
    }
  }
  if (node.init.defined()) node.init = Substitute(node.init, vmap);
  node.body = Substitute(node.body, vmap);
  Stmt new_nest = MakeNest(loop_vars, *new_shape, MakeBlock(node));
  func_ = ReplaceStmt(func_, nest.loops.empty() ? path->back() : nest.loops[0], new_nest);
  Record(kTransformBlockLayout, {InstValue::Of(block_rv)},
         {InstValue::String(index_map.ToString())}, {});
  return absl::OkStatus();
}

absl::Status Schedule::PadEinsum(BlockRV block_rv, const std::vector<int64_t>& padding) {
  constexpr const char* kPrimitive = "pad_einsum";
  absl::StatusOr<StmtPath> path = GetPath(block_rv);
  if (!path.ok()) return WithPrimitive(kPrimitive, path.status());
  TESSERA_ASSIGN_OR_RETURN(OwnLoopNest nest, CheckOwnLoopNest(kPrimitive, *path));
  const Block& block = path->back().as<BlockRealizeNode>()->block;
  const std::vector<IterVar>& ivs = block->iter_vars;
  if (padding.size() != ivs.size()) {
    return Invalid(kPrimitive, absl::StrCat("block ", block->name, " has ", ivs.size(),
                                            " iteration variables but ", padding.size(),
                                            " padding sizes were given"));
  }
  std::vector<int64_t> padded;
  for (size_t k = 0; k < ivs.size(); ++k) {
    if (padding[k] <= 0) {
      return Invalid(kPrimitive, absl::StrCat("padding ", k, " of block ", block->name, " is ",
                                              padding[k], "; sizes must be positive"));
    }
    padded.push_back((nest.extents[k] + padding[k] - 1) / padding[k] * padding[k]);
  }
  TESSERA_ASSIGN_OR_RETURN(EinsumInfo info, AnalyzeEinsum(kPrimitive, block));
  for (size_t k = 0; k < ivs.size(); ++k) {
    if (ivs[k].kind == IterKind::kReduction && padded[k] != nest.extents[k]) {
      TESSERA_RETURN_IF_ERROR(CheckPaddedReduction(kPrimitive, block, info, static_cast<int>(k)));
    }
  }
  auto needs_pad = [&](const Buffer& b) {
    for (int k : info.pattern.at(b)) {
      if (padded[k] != nest.extents[k]) return true;
    }
    return false;
  };
  // Padded buffers, their copy-in blocks (inputs) and the cropping copy-out (output).
  std::set<std::string> taken;
  auto unique_name = [&](const std::string& base) {
    std::string name = UniqueBlockName(func_, base);
    for (int i = 1; taken.count(name); ++i)
      name = UniqueBlockName(func_, absl::StrCat(base, "_", i));
    taken.insert(name);
    return name;
  };
  std::unordered_map<Buffer, Buffer, BufferIdentityHash, BufferIdentityEqual> replace;
  std::vector<Buffer> allocs, output_alloc;  // in the order of their blocks
  std::vector<Stmt> before, output_copy_in, after;
  for (const Buffer& b : info.buffers) {
    if (!needs_pad(b)) continue;
    const std::vector<int>& pat = info.pattern.at(b);
    std::vector<int64_t> extents, original;
    std::vector<std::string> names;
    std::vector<Expr> shape;
    for (int k : pat) {
      extents.push_back(padded[k]);
      original.push_back(nest.extents[k]);
      names.push_back(nest.loop_of_iter[k]->loop_var.name());
      shape.push_back(Expr(padded[k]));
    }
    const std::string name = unique_name(absl::StrCat(b.name(), "_pad"));
    Buffer pad = Buffer::Make(name, b.dtype(), shape, b.scope());
    replace[b] = pad;
    if (b.same_as(info.output)) {
      output_alloc.push_back(pad);
      // An accumulation without init (e.g. the update block of DecomposeReduction) starts from
      // the output's values, so the padded output starts from them too.
      if (info.body_reads_output) {
        output_copy_in.push_back(MakePadCopyNest(name, names, original, extents, pad, b));
      }
      after.push_back(MakeCopyNest(unique_name(absl::StrCat(b.name(), "_unpad")), names, original,
                                   b, pad,
                                   [&](const std::vector<Expr>& w) { return pad.Load(w); }));
      continue;
    }
    allocs.push_back(pad);
    before.push_back(MakePadCopyNest(name, names, original, extents, pad, b));
  }
  // The block on the padded domain, under loops of the padded extents.
  LayoutBufferReplacer replacer(replace);
  Stmt new_block_stmt = replacer.VisitStmt(block);
  BlockNode node = *new_block_stmt.as<BlockNode>();
  for (size_t k = 0; k < ivs.size(); ++k) node.iter_vars[k].dom = Range{Expr(0), Expr(padded[k])};
  Stmt body =
      BlockRealize(path->back().as<BlockRealizeNode>()->iter_values, True(), MakeBlock(node));
  for (size_t i = nest.loops.size(); i-- > 0;) {
    const auto* loop = nest.loops[i].as<ForNode>();
    int64_t extent = 0;
    for (size_t k = 0; k < ivs.size(); ++k) {
      if (nest.loop_of_iter[k] == loop) extent = padded[k];
    }
    body = For(loop->loop_var, Expr(extent), loop->for_kind, body, loop->thread_tag,
               loop->annotations);
  }
  allocs.insert(allocs.end(), output_alloc.begin(), output_alloc.end());
  before.insert(before.end(), output_copy_in.begin(), output_copy_in.end());
  before.push_back(body);
  before.insert(before.end(), after.begin(), after.end());
  const Stmt scope = EnclosingBlockRealize(*path);
  const std::string scope_name = scope.as<BlockRealizeNode>()->block->name;
  PrimFunc func = ReplaceStmt(func_, nest.loops[0], SeqStmt(before));
  // Allocate the padded buffers in the scope block.
  absl::StatusOr<StmtPath> scope_path = FindBlockPath(func, scope_name);
  TESSERA_CHECK(scope_path.ok()) << scope_path.status();
  const auto* scope_realize = scope_path->back().as<BlockRealizeNode>();
  BlockNode scope_node = *scope_realize->block.get();
  scope_node.alloc_buffers.insert(scope_node.alloc_buffers.end(), allocs.begin(), allocs.end());
  func_ = ReplaceStmt(
      func, scope_path->back(),
      BlockRealize(scope_realize->iter_values, scope_realize->predicate, MakeBlock(scope_node)));
  Record(kPadEinsum, {InstValue::Of(block_rv)}, {InstValue::IntArray(padding)}, {});
  return absl::OkStatus();
}

namespace {

using namespace apply_util;  // NOLINT: decoding helpers

absl::StatusOr<IndexMap> AsIndexMap(const InstValue& v) {
  TESSERA_ASSIGN_OR_RETURN(std::string text, AsString(v));
  return IndexMap::Parse(text);
}

Outputs ApplyTransformLayout(Schedule* sch, const Values& inputs, const Values& attrs,
                             const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 2, attrs, 3));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(IndexMap map, AsIndexMap(inputs[1]));
  TESSERA_ASSIGN_OR_RETURN(int64_t buffer_index, AsInt(attrs[0]));
  TESSERA_ASSIGN_OR_RETURN(int64_t buffer_index_type, AsInt(attrs[1]));
  // Trace JSON writes None attrs as "None", which reads back as that string.
  const bool no_pad = attrs[2].is_none() || (attrs[2].type() == InstValue::Type::kString &&
                                             attrs[2].as_string() == "None");
  if (!no_pad) return absl::InvalidArgumentError("pad_value is not supported");
  TESSERA_RETURN_IF_ERROR(sch->TransformLayout(block, static_cast<int>(buffer_index),
                                               static_cast<int>(buffer_index_type), map));
  return Values{};
}

Outputs ApplyTransformBlockLayout(Schedule* sch, const Values& inputs, const Values& attrs,
                                  const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 1));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  TESSERA_ASSIGN_OR_RETURN(IndexMap map, AsIndexMap(attrs[0]));
  TESSERA_RETURN_IF_ERROR(sch->TransformBlockLayout(block, map));
  return Values{};
}

Outputs ApplyPadEinsum(Schedule* sch, const Values& inputs, const Values& attrs, const InstValue&) {
  TESSERA_RETURN_IF_ERROR(Arity(inputs, 1, attrs, 1));
  TESSERA_ASSIGN_OR_RETURN(BlockRV block, AsBlock(inputs[0]));
  if (!attrs[0].is_array()) return absl::InvalidArgumentError("expected an array of paddings");
  for (const InstValue& item : attrs[0].items()) {
    if (!item.is_int()) return absl::InvalidArgumentError("paddings must be integers");
  }
  TESSERA_RETURN_IF_ERROR(sch->PadEinsum(block, attrs[0].AsIntArray()));
  return Values{};
}

}  // namespace

const InstructionKind kTransformLayout = {"TransformLayout", false, &ApplyTransformLayout};
const InstructionKind kTransformBlockLayout = {"TransformBlockLayout", false,
                                               &ApplyTransformBlockLayout};
const InstructionKind kPadEinsum = {"PadEinsum", false, &ApplyPadEinsum};

const std::vector<const InstructionKind*>& LayoutInstructionKinds() {
  static const std::vector<const InstructionKind*> kinds = {&kTransformLayout,
                                                            &kTransformBlockLayout, &kPadEinsum};
  return kinds;
}

}  // namespace tessera
