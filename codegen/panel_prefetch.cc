#include "codegen/panel_prefetch.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/arith/simplify.h"
#include "ir/cpu_intrinsics.h"
#include "ir/functor.h"
#include "ir/loop_annotations.h"
#include "ir/printer.h"

namespace tessera {
namespace {

// More copies than this of one load (the product of the enumerated loops' extents) and the load
// is left alone: a panel's tile reads a few vectors per step.
constexpr int64_t kMaxPrefetchesPerLoad = 16;

bool Annotated(const ForNode* op) { return IntAnnotation(op, kPrefetchNextPanel) != 0; }

// The loops of `body`, by their variables.
std::unordered_map<const VarNode*, const ForNode*> LoopsOf(const Stmt& body) {
  std::unordered_map<const VarNode*, const ForNode*> inner;
  PostOrderVisitStmts(body, [&](const Stmt& s) {
    if (const auto* f = s.as<ForNode>()) inner[f->loop_var.get()] = f;
  });
  return inner;
}

// The prefetches of one load, and which iterations issue them.
struct LoadPrefetches {
  std::vector<Expr> addresses;
  // The panel's first index is floordiv(tile, tiles) (times a constant): `tiles` consecutive
  // iterations of the loop binding `tile` share the panel.
  Var tile;
  int64_t tiles = 0;
};

// The loop variable `v` and divisor n of the one floordiv(v, n) in `index` with v bound above
// the annotated loop; nullopt if there is none or more than one.
std::optional<std::pair<Var, int64_t>> TileRun(
    const Expr& index, const std::unordered_map<const VarNode*, const ForNode*>& inner,
    const Var& loop_var) {
  std::optional<std::pair<Var, int64_t>> run;
  int found = 0;
  PostOrderVisitExprs(index, [&](const Expr& e) {
    const auto* div = e.as<BinaryNode>();
    if (div == nullptr || div->op != BinaryOp::kFloorDiv) return;
    const auto* var = div->a.as<VarNode>();
    const int64_t* n = AsConstInt(div->b);
    if (var == nullptr || n == nullptr || *n < 1 || var == loop_var.get() ||
        inner.find(var) != inner.end()) {
      return;
    }
    ++found;
    run = std::make_pair(Var(std::static_pointer_cast<const VarNode>(div->a.node_ptr())), *n);
  });
  return found == 1 ? run : std::nullopt;
}

// The addresses a vector loop's copies of `load` read in one iteration of the loop whose body's
// loops are `inner`: vectorized loops at lane 0 (one prefetch per vector), unrolled ones
// enumerated, every combination; nullopt for a load of a buffer in registers, a load whose
// address a serial loop of the body moves, or more than kMaxPrefetchesPerLoad copies.
std::optional<std::vector<std::vector<Expr>>> AddressesPerIteration(
    const BufferLoadNode* load, const std::unordered_map<const VarNode*, const ForNode*>& inner) {
  if (load->buffer.scope() != "global" || load->indices.empty()) return std::nullopt;
  std::vector<const ForNode*> enumerated;
  VarMap first_lane;
  bool movable = true;
  for (const Expr& index : load->indices) {
    PostOrderVisitExprs(index, [&](const Expr& e) {
      const auto* var = e.as<VarNode>();
      if (var == nullptr) return;
      auto it = inner.find(var);
      if (it == inner.end()) return;
      const ForNode* loop = it->second;
      if (loop->for_kind == ForKind::kVectorized) {
        first_lane[loop->loop_var] = IntImm(loop->loop_var.dtype(), 0);
      } else if (loop->for_kind == ForKind::kUnrolled && AsConstInt(loop->extent) != nullptr) {
        if (std::find(enumerated.begin(), enumerated.end(), loop) == enumerated.end()) {
          enumerated.push_back(loop);
        }
      } else {
        movable = false;
      }
    });
  }
  if (!movable) return std::nullopt;
  int64_t copies = 1;
  for (const ForNode* loop : enumerated) copies *= *AsConstInt(loop->extent);
  if (copies > kMaxPrefetchesPerLoad) return std::nullopt;
  std::vector<std::vector<Expr>> addresses;
  for (int64_t c = 0; c < copies; ++c) {
    VarMap values = first_lane;
    int64_t rest = c;
    for (const ForNode* loop : enumerated) {
      const int64_t extent = *AsConstInt(loop->extent);
      values[loop->loop_var] = IntImm(loop->loop_var.dtype(), rest % extent);
      rest /= extent;
    }
    std::vector<Expr> indices;
    for (const Expr& index : load->indices) {
      indices.push_back(arith::Simplify(Substitute(index, values)));
    }
    addresses.push_back(std::move(indices));
  }
  return addresses;
}

// The prefetches of one load, or none (see the header for when).
std::optional<LoadPrefetches> PrefetchesOf(
    const BufferLoadNode* load, const std::unordered_map<const VarNode*, const ForNode*>& inner,
    const Var& loop_var) {
  std::optional<std::vector<std::vector<Expr>>> addresses = AddressesPerIteration(load, inner);
  if (!addresses.has_value()) return std::nullopt;
  // Only panels that several tiles in a row read, picked by a loop above this one: the first of
  // them waits for memory. Panels picked otherwise (floormod(t, n): channel blocks innermost of
  // the tile loop, chosen where all the weights stay in L2) are cached already, and fetching
  // them again costs L1 misses; a constant first index (an image's batch) picks no panel.
  const Expr& first = addresses->front().front();
  std::optional<std::pair<Var, int64_t>> run = TileRun(first, inner, loop_var);
  if (!run.has_value() || run->second < 2) return std::nullopt;
  // The next panel is the one the run of tiles after this one reads: the first index's step
  // from tile t to tile t + n (a GEMM's panel spans more vectors than one tile's: the tiles
  // beside it read the rest).
  const Var& tile = run->first;
  VarMap next_run;
  next_run[tile] = tile + IntImm(tile.dtype(), run->second);
  const int64_t* step = AsConstInt(arith::Simplify(Substitute(first, next_run) - first));
  if (step == nullptr || *step < 1) return std::nullopt;
  LoadPrefetches prefetches;
  prefetches.tile = tile;
  prefetches.tiles = run->second;
  for (std::vector<Expr>& indices : *addresses) {
    indices.front() = arith::Simplify(indices.front() + IntImm(first.dtype(), *step));
    prefetches.addresses.push_back(load->buffer.Load(std::move(indices)));
  }
  return prefetches;
}

class PrefetchInserter : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt visited = IRMutator::VisitStmt_(op, self);
    if (!Annotated(op)) return visited;
    const auto* loop = visited.as<ForNode>();
    const std::unordered_map<const VarNode*, const ForNode*> inner = LoopsOf(loop->body);
    std::vector<Stmt> seq;
    std::set<std::string> issued;
    PostOrderVisitExprs(loop->body, [&](const Expr& e) {
      const auto* load = e.as<BufferLoadNode>();
      if (load == nullptr) return;
      std::optional<LoadPrefetches> prefetches = PrefetchesOf(load, inner, loop->loop_var);
      if (!prefetches.has_value()) return;
      std::vector<Stmt> calls;
      for (Expr& address : prefetches->addresses) {
        if (!issued.insert(PrintExpr(address)).second) continue;
        calls.push_back(
            Evaluate(CallExtern(DataType::Int32(), kPrefetchCall, {std::move(address)})));
      }
      if (calls.empty()) return;
      // The tiles of a panel share the next panel out: iteration k of the tile t fetches when
      // k = t modulo the tiles, so the next panel is fetched once, spread over the panel's time
      // (in every tile, each line was fetched `tiles` times: 14% slower on a core whose L3
      // held the weights).
      const Expr tiles = IntImm(loop->loop_var.dtype(), prefetches->tiles);
      seq.push_back(IfThenElse(
          EQ(FloorMod(loop->loop_var, tiles),
             FloorMod(prefetches->tile, IntImm(prefetches->tile.dtype(), prefetches->tiles))),
          SeqStmt(std::move(calls))));
    });
    if (seq.empty()) return visited;
    seq.push_back(loop->body);
    return For(loop->loop_var, loop->extent, loop->for_kind, SeqStmt(std::move(seq)),
               loop->thread_tag, loop->annotations);
  }
};

// The bytes a cache line holds: loads that move by at least this much per iteration stream.
constexpr int64_t kCacheLineBytes = 64;

// The offset of `indices` in `buffer`'s elements (row-major), or nullopt where a dimension
// after the first is not a constant.
std::optional<Expr> FlatOffset(const Buffer& buffer, const std::vector<Expr>& indices) {
  Expr offset = indices.front();
  for (size_t d = 1; d < indices.size(); ++d) {
    const int64_t* extent = AsConstInt(buffer.shape()[d]);
    if (extent == nullptr) return std::nullopt;
    offset = offset * IntImm(offset.dtype(), *extent) + indices[d];
  }
  return offset;
}

// Whether one of `load`'s indices uses a vectorized loop of `inner` (a vector load).
bool ReadsVectors(const BufferLoadNode* load,
                  const std::unordered_map<const VarNode*, const ForNode*>& inner) {
  bool vector = false;
  for (const Expr& index : load->indices) {
    PostOrderVisitExprs(index, [&](const Expr& e) {
      const auto* var = e.as<VarNode>();
      auto it = var != nullptr ? inner.find(var) : inner.end();
      vector = vector || (it != inner.end() && it->second->for_kind == ForKind::kVectorized);
    });
  }
  return vector;
}

// InsertPrefetchesAhead (see the header).
class AheadInserter : public IRMutator {
 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    Stmt visited = IRMutator::VisitStmt_(op, self);
    const int64_t distance = IntAnnotation(op, kPrefetchAhead);
    if (distance < 1) return visited;
    const auto* loop = visited.as<ForNode>();
    const std::unordered_map<const VarNode*, const ForNode*> inner = LoopsOf(loop->body);
    const Var& k = loop->loop_var;
    VarMap next, ahead;
    next[k] = k + IntImm(k.dtype(), 1);
    ahead[k] = k + IntImm(k.dtype(), distance);
    // The rows the dot products read (their arguments: a vector of C, a group of A, a 64-byte
    // row of B) are vector loads too.
    std::set<const BufferLoadNode*> call_vectors;
    PostOrderVisitExprs(loop->body, [&](const Expr& e) {
      const auto* call = e.as<CallNode>();
      if (call == nullptr || !IsCpuDotCall(call->name)) return;
      for (const Expr& arg : call->args) {
        if (const auto* element = arg.as<BufferLoadNode>()) call_vectors.insert(element);
      }
    });
    std::vector<Stmt> seq;
    std::set<std::string> issued;
    PostOrderVisitExprs(loop->body, [&](const Expr& e) {
      const auto* load = e.as<BufferLoadNode>();
      if (load == nullptr || (!ReadsVectors(load, inner) && call_vectors.count(load) == 0)) return;
      std::optional<std::vector<std::vector<Expr>>> addresses = AddressesPerIteration(load, inner);
      std::optional<Expr> offset = FlatOffset(load->buffer, load->indices);
      if (!addresses.has_value() || !offset.has_value()) return;
      // Only streams: a vector that moves by less than a line per iteration reads each line in
      // several iterations, the first of which the hardware prefetcher covers.
      const int64_t* step = AsConstInt(arith::Simplify(Substitute(*offset, next) - *offset));
      if (step == nullptr ||
          std::abs(*step) * (load->buffer.dtype().bits() / 8) < kCacheLineBytes) {
        return;
      }
      for (std::vector<Expr>& indices : *addresses) {
        for (Expr& index : indices) index = arith::Simplify(Substitute(index, ahead));
        Expr address = load->buffer.Load(std::move(indices));
        if (!issued.insert(PrintExpr(address)).second) continue;
        seq.push_back(Evaluate(CallExtern(DataType::Int32(), kPrefetchCall,
                                          {std::move(address), IntImm(DataType::Int32(), 3)})));
      }
    });
    if (seq.empty()) return visited;
    seq.push_back(loop->body);
    return For(loop->loop_var, loop->extent, loop->for_kind, SeqStmt(std::move(seq)),
               loop->thread_tag, loop->annotations);
  }
};

bool IsPrefetch(const Stmt& s) {
  if (const auto* group = s.as<IfThenElseNode>(); group != nullptr && !group->else_case.defined()) {
    const auto* calls = group->then_case.as<SeqStmtNode>();
    if (calls == nullptr) return IsPrefetch(group->then_case);
    return std::all_of(calls->seq.begin(), calls->seq.end(), IsPrefetch);
  }
  const auto* eval = s.as<EvaluateNode>();
  const auto* call = eval != nullptr ? eval->value.as<CallNode>() : nullptr;
  return call != nullptr && call->op == CallOp::kExtern && call->name == kPrefetchCall;
}

}  // namespace

Stmt InsertPanelPrefetches(const Stmt& body) { return PrefetchInserter().VisitStmt(body); }

Stmt InsertPrefetchesAhead(const Stmt& body) { return AheadInserter().VisitStmt(body); }

Stmt PrefetchesIntoGuard(const Stmt& body) {
  const auto* seq = body.as<SeqStmtNode>();
  if (seq == nullptr || seq->seq.size() < 2) return body;
  const auto* guard = seq->seq.back().as<IfThenElseNode>();
  if (guard == nullptr || guard->else_case.defined()) return body;
  std::vector<Stmt> then_case(seq->seq.begin(), seq->seq.end() - 1);
  for (const Stmt& s : then_case) {
    if (!IsPrefetch(s)) return body;
  }
  then_case.push_back(guard->then_case);
  return IfThenElse(guard->condition, SeqStmt(std::move(then_case)));
}

}  // namespace tessera
