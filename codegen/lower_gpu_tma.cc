// Step 5a of LowerForGpu: whole-tile copies into TMA tiles become cp.async.bulk.tensor calls
// (lower_gpu_internal.h LowerTmaCopies).
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/lower_gpu_internal.h"
#include "ir/arith/analyzer.h"
#include "ir/arith/linear.h"
#include "ir/functor.h"
#include "ir/printer.h"
#include "ir/tensor_core_fragments.h"

namespace tessera {
namespace lower_gpu_internal {

Expr TmaTileOffset(const Buffer& tile, int64_t rows, const Expr& r, const Expr& c) {
  const Expr width(TmaBlockWidth(tile.dtype()));
  return FloorDiv(c, width) * Expr(rows) * width + r * width + FloorMod(c, width);
}

Expr TmaTileElement(const Buffer& tile, const Expr& offset) {
  std::vector<Expr> indices(tile.ndim(), Expr(0));
  indices.back() = offset;
  return tile.Load(indices);
}

namespace {

// TMA's limits: 5 dimensions, boxes of at most 256 elements a side.
constexpr int kMaxTmaRank = 5;
constexpr int64_t kMaxTmaBox = 256;

class TmaCopyLowerer : public IRMutator {
 public:
  const absl::Status& status() const { return status_; }

 protected:
  Stmt VisitStmt_(const ForNode* op, const Stmt& self) override {
    std::vector<const ForNode*> nest;
    Stmt inner = self;
    while (const auto* f = inner.as<ForNode>()) {
      nest.push_back(f);
      inner = f->body;
    }
    const auto* store = inner.as<BufferStoreNode>();
    if (store == nullptr || store->buffer.scope() != kTmaSharedScope) {
      return IRMutator::VisitStmt_(op, self);
    }
    absl::StatusOr<Stmt> lowered = Lower(nest, store);
    if (!lowered.ok()) {
      Fail(std::string(lowered.status().message()));
      return self;
    }
    return *lowered;
  }

  Stmt VisitStmt_(const BufferStoreNode* op, const Stmt& self) override {
    if (op->buffer.scope() == kTmaSharedScope) {
      Fail(absl::StrCat("lower_gpu: ", op->buffer.name(), " (", kTmaSharedScope,
                        ") is written outside a loop nest copying a whole tile"));
      return self;
    }
    return IRMutator::VisitStmt_(op, self);
  }

  Expr VisitExpr_(const CallNode* op, const Expr& self) override {
    ++in_call_;
    Expr out = IRMutator::VisitExpr_(op, self);
    --in_call_;
    return out;
  }

  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    if (op->buffer.scope() == kTmaSharedScope && in_call_ == 0) {
      Fail(absl::StrCat("lower_gpu: ", op->buffer.name(), " (", kTmaSharedScope,
                        ") is read element-wise; only wgmma reads TMA tiles"));
      return self;
    }
    return IRMutator::VisitExpr_(op, self);
  }

 private:
  absl::Status Invalid(const Buffer& tile, const std::string& why) const {
    return absl::InvalidArgumentError(
        absl::StrCat("lower_gpu: the TMA copy into ", tile.name(), " ", why));
  }

  // `nest` (outermost first) ends in `store`; its loops whose variables index the tile copy it,
  // the loops above them stay around the calls.
  absl::StatusOr<Stmt> Lower(const std::vector<const ForNode*>& nest,
                             const BufferStoreNode* store) {
    const Buffer& tile = store->buffer;
    const int nd = tile.ndim();
    const auto* value = store->value.as<BufferLoadNode>();
    if (value == nullptr || value->buffer.scope() != "global" ||
        value->buffer.dtype() != tile.dtype()) {
      return Invalid(tile, "must read one global buffer of the same dtype");
    }
    const Buffer& global = value->buffer;
    arith::Analyzer analyzer;
    for (const ForNode* f : nest) analyzer.Bind(f->loop_var, Range{Expr(0), f->extent});
    // The tile's indices: leading ones 0, then a row loop and a column loop.
    std::vector<Expr> index;
    for (const Expr& i : store->indices) index.push_back(analyzer.Simplify(i));
    const int64_t* rows = nd >= 2 ? AsConstInt(tile.shape()[nd - 2]) : nullptr;
    const int64_t* cols = nd >= 2 ? AsConstInt(tile.shape()[nd - 1]) : nullptr;
    const int64_t width = TmaBlockWidth(tile.dtype());
    if (rows == nullptr || cols == nullptr || *cols * tile.dtype().bytes() % 16 != 0 ||
        *rows % 8 != 0 || *rows > kMaxTmaBox) {
      std::vector<std::string> shape;
      for (const Expr& e : tile.shape()) shape.push_back(PrintExpr(e));
      return Invalid(tile,
                     absl::StrCat("needs rows a multiple of 16 bytes long and a multiple of "
                                  "8 rows up to 256; its tile is [",
                                  absl::StrJoin(shape, ", "), "] of ", tile.dtype().ToString()));
    }
    for (int d = 0; d + 2 < nd; ++d) {
      if (!IsConstInt(tile.shape()[d], 1) || !analyzer.CanProveEqual(index[d], Expr(0))) {
        return Invalid(tile, "has leading dimensions other than 1");
      }
    }
    const auto* row_var = index[nd - 2].as<VarNode>();
    const auto* col_var = index[nd - 1].as<VarNode>();
    std::optional<Var> row, col;
    VarMap unit_loops;           // dropped with the copy's loops: they stand for 0
    size_t first = nest.size();  // the outermost loop of the copy
    for (size_t l = 0; l < nest.size(); ++l) {
      const Var& v = nest[l]->loop_var;
      if (v.get() == row_var && IsConstInt(nest[l]->extent, *rows)) {
        row = v;
      } else if (v.get() == col_var && IsConstInt(nest[l]->extent, *cols)) {
        col = v;
      } else if (first < nest.size() && IsConstInt(nest[l]->extent, 1)) {
        unit_loops[v] = Expr(0);
        continue;
      } else if (first < nest.size()) {
        return Invalid(tile, absl::StrCat("is nested in loop ", v.name(),
                                          ", which indexes no tile dimension"));
      } else {
        continue;
      }
      first = std::min(first, l);
    }
    if (!row.has_value() || !col.has_value()) {
      return Invalid(tile, "must store tile[.., r, c] over loops of the tile's extents");
    }
    // The global buffer: the column loop walks its last dimension, the row loop one other.
    const int rank = global.ndim();
    if (rank < 2 || rank > kMaxTmaRank) {
      return Invalid(
          tile, absl::StrCat("reads ", global.name(), ", of rank ", rank, " (TMA takes 2 to 5)"));
    }
    std::vector<int64_t> dims(rank), box(rank, 1);
    std::vector<Expr> origin(rank);
    int row_dim = -1;
    for (int d = 0; d < rank; ++d) {
      const int64_t* extent = AsConstInt(global.shape()[d]);
      if (extent == nullptr) {
        return Invalid(tile, absl::StrCat("reads ", global.name(), ", of non-constant shape"));
      }
      dims[d] = *extent;
      std::optional<arith::LinearEquation> eq =
          arith::DetectLinearEquation(value->indices[d], {*row, *col}, &analyzer);
      if (!eq.has_value()) {
        return Invalid(tile, absl::StrCat("indexes ", global.name(), " non-linearly"));
      }
      const bool by_row = !IsConstInt(eq->coeffs[0], 0);
      const bool by_col = !IsConstInt(eq->coeffs[1], 0);
      if ((by_row && !IsConstInt(eq->coeffs[0], 1)) || (by_col && !IsConstInt(eq->coeffs[1], 1)) ||
          (by_row && by_col) || (by_col && d != rank - 1) || (by_row && row_dim >= 0)) {
        return Invalid(tile, absl::StrCat("must copy a box of ", global.name(),
                                          " whose rows run along its last dimension"));
      }
      if (by_row) row_dim = d;
      if (by_col) box[d] = width;
      origin[d] = analyzer.Simplify(Substitute(eq->base, unit_loops));
    }
    if (row_dim < 0 || box[rank - 1] != width) {
      return Invalid(tile, absl::StrCat("must copy a box of ", global.name(),
                                        " whose rows run along its last dimension"));
    }
    box[row_dim] = *rows;
    if (dims[rank - 1] * global.dtype().bytes() % 16 != 0) {
      return Invalid(tile, absl::StrCat("reads ", global.name(), ", whose rows of ",
                                        dims[rank - 1] * global.dtype().bytes(),
                                        " bytes are no multiple of 16 (TMA's stride unit)"));
    }
    // One copy per 128-byte column block of the tile; a last block the tile fills only in part
    // is copied whole (the columns past the tile are stored and never read; past the buffer,
    // TMA stores zeros), which its padded storage holds (PadTmaTiles).
    std::vector<Stmt> calls;
    for (int64_t block = 0; block < (*cols + width - 1) / width; ++block) {
      std::vector<Expr> args = {TmaTileElement(tile, Expr(block * *rows * width)),
                                global.Load(std::vector<Expr>(rank, Expr(0))), Expr(rank)};
      for (int d = rank; d-- > 0;) args.push_back(Expr(box[d]));
      for (int d = rank; d-- > 0;) args.push_back(Expr(dims[d]));
      for (int d = rank; d-- > 0;) {
        args.push_back(d == rank - 1 ? analyzer.Simplify(origin[d] + Expr(block * width))
                                     : origin[d]);
      }
      calls.push_back(Evaluate(CallExtern(DataType::Int32(), kTmaLoad, args)));
    }
    Stmt out = SeqStmt(calls);
    for (size_t l = first; l-- > 0;) {
      const ForNode* f = nest[l];
      out = For(f->loop_var, f->extent, f->for_kind, out, f->thread_tag, f->annotations);
    }
    return out;
  }

  void Fail(std::string_view message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(std::string(message));
  }

  int in_call_ = 0;
  absl::Status status_;
};

// Gives every TMA tile whose columns do not fill whole 128-byte blocks the storage of whole
// blocks: the same buffer with its last extent rounded up. Only the copies and the wgmma
// operands address it, by TmaTileOffset, which does not depend on that extent.
class TmaTilePadder : public IRMutator {
 protected:
  Stmt VisitStmt_(const AllocateNode* op, const Stmt& self) override {
    const Buffer& b = op->buffer;
    const int64_t* cols = b.ndim() >= 2 ? AsConstInt(b.shape().back()) : nullptr;
    const int64_t width = TmaBlockWidth(b.dtype());
    if (b.scope() != kTmaSharedScope || cols == nullptr || *cols % width == 0) {
      return IRMutator::VisitStmt_(op, self);
    }
    std::vector<Expr> shape = b.shape();
    shape.back() = Expr((*cols + width - 1) / width * width);
    const Buffer padded = b.WithShape(shape);
    padded_.emplace(b.get(), padded);
    return Allocate(padded, VisitStmt(op->body));
  }

  Expr VisitExpr_(const BufferLoadNode* op, const Expr& self) override {
    Expr visited = IRMutator::VisitExpr_(op, self);
    const auto* load = visited.as<BufferLoadNode>();
    auto it = padded_.find(load->buffer.get());
    return it == padded_.end() ? visited : it->second.Load(load->indices);
  }

 private:
  std::unordered_map<const BufferNode*, Buffer> padded_;
};

}  // namespace

absl::StatusOr<Stmt> LowerTmaCopies(const Stmt& kernel) {
  TmaCopyLowerer lowerer;
  Stmt out = lowerer.VisitStmt(kernel);
  if (!lowerer.status().ok()) return lowerer.status();
  return TmaTilePadder().VisitStmt(out);
}

}  // namespace lower_gpu_internal
}  // namespace tessera
